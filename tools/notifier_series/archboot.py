"""The boot test on the other architectures the fixes touch, with the
proof that each fix is needed and works: the tree with the core patch
but without the fixes must report a sleeping function called from
invalid context (or lockdep's interrupts-enabled assertion) with the
fixed site's function in its report, and the tree with them must boot
without any splat, its KUnit suites and torture passing as on x86."""

import os

from . import (arches, boottest, classification, classify, gate, output,
               patches, tree)
from .progress import Error, say

# The reports a fix removes: might_sleep() and lockdep's assertion that
# the writer runs with interrupts enabled.
SIGNS = ("sleeping function called from invalid context",
         "lockdep_assert_irqs_enabled", "notifier_write_begin")

# Where each fixed site is proven: the architecture whose QEMU machine
# runs it after the system has booted, and for which kernel versions; a
# site proven nowhere is compile-tested only, for the reason given.
PROVEN_ON = {
    "opal_message_notifier_register": ("powerpc", ("6.1", "6.12")),
    "sclp_init": ("s390", ("6.1",)),
}
UNREACHED = {
    "nx842_remove": "removal of the pseries NX-842 compression device "
                    "(DLPAR), which QEMU does not emulate",
    "devm_usb_get_phy_by_node": "USB PHYs described in a device tree "
                                "with a notifier (ARM and MIPS boards), "
                                "none of which this QEMU setup boots",
    "sclp_init": "called first from arch_cpu_finalize_init() while the "
                 "system boots, when writers skip the rwsem; later calls "
                 "return at once",
}


def proven_on(function, kver):
    """The architecture whose boot proves the fix of `function`, or None."""
    arch, kvers = PROVEN_ON.get(function, (None, ()))
    return arch if kver in kvers else None


def fixed_sites(kver, work, jobs, out):
    """The violations of the gate that a fix removes."""
    model, _ = classify.analyse(kver, work, jobs, out, reuse=True)
    _, entries = classification.load(classify.yaml_path(kver))
    items, _ = classify.violation_gate(kver, work, jobs, model, entries)
    return [v for v in items if v["status"] == "fixed"]


def seen(result, function, lines):
    """Whether a splat of `result` shows `function` in its report."""
    for s in result["splats"]:
        block = "\n".join(lines[s["line"] - 1:s["line"] + 80])
        if any(sign in block for sign in SIGNS) and \
                f" {function}+" in block:
            return True
    return False


def console_lines(folder):
    with open(os.path.join(folder, "console.log"), encoding="utf-8",
              errors="replace") as f:
        return f.read().splitlines()


def run(kver, arch_name, work=None, out=None, timeout=600, jobs=None,
        torture_seconds=boottest.TORTURE_SECONDS):
    """Boots the core patches on `arch_name`, and the core patches without
    the fixes; adds "proof" to the first's result.json.  Returns the exit
    status of the boot test."""
    arch = arches.get(arch_name)
    out = os.path.abspath(out or os.path.join(tree.REPO, "out"))
    jobs = jobs or os.cpu_count() or 1
    sites = fixed_sites(kver, work, jobs, out)
    fixes = gate.fix_patches(kver)
    core = patches.core_patches(kver)
    say(f"==> {arch.name}: the core patches without their {len(fixes)} "
        "fixes, which must show the bugs the fixes remove")
    before = boottest.run(kver, work, out, timeout, jobs, name="boot-nofixes",
                          torture_seconds=torture_seconds, arch=arch.name,
                          core=[p for p in core if p not in fixes],
                          branch="notifier-series/nofixes")
    say(f"==> {arch.name}: the core patches with the fixes")
    after = boottest.run(kver, work, out, timeout, jobs,
                         torture_seconds=torture_seconds, arch=arch.name)
    before_lines = console_lines(os.path.join(out, kver,
                                              arch.folder("boot-nofixes")))
    after_lines = console_lines(os.path.join(out, kver, arch.folder("boot")))
    proof = []
    for v in sites:
        where = proven_on(v["function"], kver)
        row = {"site": v["site"], "function": v["function"],
               "chain": v["chain"], "rule": v["rule"],
               "fixed_by": v["fixed_by"], "proven_on": where,
               "expected_here": where == arch.name,
               "before": seen(before, v["function"], before_lines),
               "after": seen(after, v["function"], after_lines)}
        if not where:
            row["compile_tested_only"] = UNREACHED.get(
                v["function"], "no QEMU machine of the boot test runs it")
        proof.append(row)
    after["proof"] = proof
    missing = [p for p in proof if p["expected_here"] and not p["before"]]
    still = [p for p in proof if p["after"]]
    for p in missing:
        after["reasons"].append(f"{p['site']} in {p['function']}(): no "
                                "report without the fix; the proof failed")
    for p in still:
        after["reasons"].append(f"{p['site']} in {p['function']}(): still "
                                "reported with the fix")
    if not any(p["expected_here"] for p in proof):
        after["reasons"].append(f"no fixed site is expected on {arch.name} "
                                f"for Linux {kver}: nothing was proven")
    if (missing or still or not any(p["expected_here"] for p in proof)) \
            and after["outcome"] == "pass":
        after["outcome"] = "test-failure"
    output.write_json(os.path.join(out, kver, arch.folder("boot"),
                                   "result.json"), after)
    for p in proof:
        if p["expected_here"]:
            how = ("before the fix " + ("reported" if p["before"]
                                        else "NOT reported")
                   + ", after " + ("REPORTED" if p["after"]
                                   else "not reported"))
        elif p["proven_on"]:
            how = (f"proven on {p['proven_on']}; here "
                   f"{'REPORTED' if p['after'] else 'not reported'} with "
                   "the fix")
        else:
            how = f"compile-tested only: {p['compile_tested_only']}"
        say(f"  proof: {p['site']} in {p['function']}() [{p['rule']}]: "
            + how)
    say(f"{arch.name}: {after['outcome'].upper()}")
    if not sites:
        raise Error("the gate has no fixed violation for Linux " + kver)
    return boottest.OUTCOMES[after["outcome"]]
