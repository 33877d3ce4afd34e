"""The boot test on the other architectures the fixes touch, with the
proof that each fix is needed and works: the tree with the core patch
but without the fixes must report a sleeping function called from
invalid context (or lockdep's assertion that interrupts are on) with the
fixed site's function in the report's call trace, and the tree with them
must run the same initcall to its end without any report, its KUnit
suites and torture passing as on x86."""

import os
import re

from . import (arches, boottest, classification, classify, output, patches,
               tree)
from .progress import Error, say

# The reports a fix removes: DEBUG_ATOMIC_SLEEP's, and the WARNING of
# lockdep_assert_irqs_enabled() in the writers of kernel/notifier.c.
SIGNS = (re.compile(r"BUG: sleeping function called from invalid context"),
         re.compile(r"WARNING: .* at kernel/notifier\.c:\d+ "))

# Where each fixed site is proven: the architecture whose QEMU machine
# runs it after the system has booted, for which kernel versions, and the
# initcall whose end (initcall_debug) shows that the site ran.
PROVEN_ON = {
    "opal_message_notifier_register": (
        "powerpc", ("6.1", "6.12"), "__machine_initcall_powernv_opal_init"),
    "sclp_init": ("s390", ("6.1",), "sclp_initcall"),
}
# Why a site is compile-tested only: no QEMU machine runs it, or not once
# the system runs (by kernel version where that differs).
UNREACHED = {
    "nx842_remove": "removal of the pseries NX-842 compression device "
                    "(DLPAR), which QEMU does not emulate",
    "devm_usb_get_phy_by_node": "USB PHYs described in a device tree "
                                "with a notifier (ARM and MIPS boards), "
                                "none of which this QEMU setup boots",
    ("sclp_init", "6.12"): "called first from console_init() or "
                           "arch_cpu_finalize_init() while the system "
                           "boots, when writers skip the rwsem; later "
                           "calls return at once",
}


def proven_on(function, kver):
    """(architecture, initcall) of the boot that proves the fix of
    `function`, or (None, None)."""
    arch, kvers, initcall = PROVEN_ON.get(function, (None, (), None))
    return (arch, initcall) if kver in kvers else (None, None)


def fixed_sites(kver, work, jobs, out):
    """The violations of the gate that a fix removes."""
    model, _ = classify.analyse(kver, work=work, jobs=jobs, out=out)
    _, entries = classification.load(classification.yaml_path(kver))
    items, _ = classify.violation_gate(kver, work, jobs, model, entries)
    return [v for v in items if v["status"] == "fixed"]


def reported(result, function, lines):
    """Whether an unexpected report of the sort a fix removes shows
    `function` in its call trace."""
    for s in result.splats:
        if s["expected"] or not any(p.search(s["text"]) for p in SIGNS):
            continue
        block = lines[s["line"] - 1:s.get("end", s["line"])]
        if any(f" {function}+" in line for line in block):
            return True
    return False


def initcall_done(lines, initcall):
    """Whether initcall_debug says `initcall` returned 0."""
    done = re.compile(rf"initcall {re.escape(initcall)}\+\S+ returned 0 ")
    return any(done.search(line) for line in lines)


def console_lines(folder):
    with open(os.path.join(folder, "console.log"), encoding="utf-8",
              errors="replace") as f:
        return f.read().splitlines()


def proof_rows(sites, kver, arch):
    rows = []
    for v in sites:
        where, initcall = proven_on(v["function"], kver)
        row = {"site": v["site"], "function": v["function"],
               "chain": v["chain"], "rule": v["rule"],
               "fixed_by": v["fixed_by"], "proven_on": where,
               "expected_here": where == arch.name, "initcall": initcall}
        if not where:
            row["compile_tested_only"] = UNREACHED.get(
                (v["function"], kver), UNREACHED.get(
                    v["function"], "no QEMU machine of the boot test runs "
                    "it"))
        rows.append(row)
    return rows


def judge(rows, before_lines, before, after_lines, after):
    """Fills each row's `before`, `after` and `ran`; returns the reasons
    the proof fails."""
    reasons = []
    for p in rows:
        p["before"] = reported(before, p["function"], before_lines) \
            if before else None
        p["after"] = reported(after, p["function"], after_lines)
        if not p["expected_here"]:
            continue
        p["ran"] = initcall_done(after_lines, p["initcall"])
        if not p["before"]:
            reasons.append(f"{p['site']} in {p['function']}(): no report "
                           "without the fix; the proof failed")
        if p["after"]:
            reasons.append(f"{p['site']} in {p['function']}(): still "
                           "reported with the fix")
        if not p["ran"]:
            reasons.append(f"{p['site']} in {p['function']}(): "
                           f"{p['initcall']}() did not return 0 with the "
                           "fix, so the site may not have run")
    return reasons


def run(kver, arch_name, *, work=None, out=None, timeout=600, jobs=None,
        torture_seconds=boottest.TORTURE_SECONDS):
    """Boots the core patches on `arch_name`, and, when a fixed site is
    expected there, the core patches without the fixes of those sites;
    adds "proof" to the first's result.json.  Returns the exit status of
    the boot test."""
    arch = arches.get(arch_name)
    out = tree.out_folder(out)
    sites = fixed_sites(kver, work, tree.jobs(jobs), out)
    if not sites:
        raise Error(f"the gate has no fixed violation for Linux {kver}: "
                    "nothing to prove")
    rows = proof_rows(sites, kver, arch)
    expected = [p for p in rows if p["expected_here"]]
    before = before_lines = None
    if expected:
        credited = {s for p in expected for s in p["fixed_by"]}
        core = [p for p in patches.core_patches(kver)
                if patches.subject_of(p) not in credited]
        say(f"==> {arch.name}: the core patches without "
            + "; ".join(sorted(credited))
            + ", which must show the bug it fixes")
        before = boottest.run(kver, work=work, out=out, timeout=timeout,
                              jobs=jobs, name="boot-nofixes",
                              torture_seconds=torture_seconds,
                              arch=arch.name, core=core,
                              branch="notifier-series/nofixes")
        before_lines = console_lines(os.path.join(
            out, kver, arch.folder("boot-nofixes")))
    else:
        say(f"==> {arch.name}: no fixed site runs here on Linux {kver}; "
            "a boot test of the core patches only")
    after = boottest.run(kver, work=work, out=out, timeout=timeout,
                         jobs=jobs, torture_seconds=torture_seconds,
                         arch=arch.name)
    after_lines = console_lines(os.path.join(out, kver, arch.folder("boot")))
    failed = judge(rows, before_lines, before, after_lines, after)
    after.proof = rows
    after.reasons += failed
    if failed and after.outcome == "pass":
        after.outcome = "test-failure"
    output.write_json(os.path.join(out, kver, arch.folder("boot"),
                                   "result.json"), after)
    for p in rows:
        if p["expected_here"]:
            how = ("without the fix " + ("reported" if p["before"]
                                         else "NOT reported")
                   + ", with it " + ("REPORTED" if p["after"]
                                     else "not reported")
                   + f", {p['initcall']}() "
                   + ("returned 0" if p["ran"] else "did NOT return 0"))
        elif p["proven_on"]:
            how = (f"proven on {p['proven_on']}; here "
                   f"{'REPORTED' if p['after'] else 'not reported'} with "
                   "the fix")
        else:
            how = f"compile-tested only: {p['compile_tested_only']}"
        say(f"  proof: {p['site']} in {p['function']}() [{p['rule']}]: "
            + how)
    for reason in failed:
        say("  - " + reason)
    say(f"{arch.name} with the proof: {after.outcome.upper()}")
    return boottest.OUTCOMES[after.outcome]
