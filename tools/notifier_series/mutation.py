"""Mutation tests of the kernel tests.  Each patch in tests/kernel-mutations
puts back a bug that the core patch fixes; booted with it, the KUnit tests
named by its "Expect-Fail:" lines must fail, a splat must show each text
of its "Expect-Splat:" lines, and the warning that a test announces with
each text of its "Expect-Missing:" lines must not come, or the boot test
could not catch it."""

import glob
import os
import re

from . import boottest, output, patches, runtime, tree
from .progress import Error, say

FOLDER = os.path.join(tree.REPO, "tests", "kernel-mutations")
CAUGHT = ("FAIL", "ERROR")


def expectations(patch):
    """{"fail": [KUnit tests that must fail], "splat": [texts that splats
    must show], "missing": [texts of announced warnings that must not
    come]}."""
    with open(patch, encoding="utf-8") as f:
        text = f.read()
    found = {"fail": re.findall(r"(?m)^Expect-Fail: (\S+)$", text),
             "splat": re.findall(r"(?m)^Expect-Splat: (.+?)\s*$", text),
             "missing": re.findall(r"(?m)^Expect-Missing: (.+?)\s*$", text)}
    if not any(found.values()):
        raise Error(f"{patch}: no Expect-Fail:, Expect-Splat: or "
                    "Expect-Missing: line says how the boot test must catch "
                    "this mutation")
    return found


def judge(result, expected):
    """What caught the mutant, {expectation: evidence or None}."""
    tests = result.kunit["tests"]
    seen = [s["text"] for s in result.splats if not s["expected"]]
    found = {f"test {t}": (tests.get(t) if tests.get(t) in CAUGHT else None)
             for t in expected["fail"]}
    for text in expected["splat"]:
        found[f"splat {text!r}"] = next((s for s in seen if text in s), None)
    for text in expected["missing"]:
        found[f"missing warning {text!r}"] = next(
            (f"console.log:{b['line']}: announced, never came"
             for b in result.expected_warnings
             if text in b["text"] and not b["seen"] and b.get("closed")),
            None)
    return found


def runtime_mutant(kver, out):
    """The runtime test's mutant (runtime.mutant()) on the last runtime
    boot of `kver`, or on the recorded one: a chain that the boot saw
    called in atomic context, declared blocking in a copy of the YAML."""
    name = "runtime-misclassified-chain"
    boot = runtime.last_boot(kver, out)
    if boot is None:
        say(f"==> mutant {name}: no runtime boot of {kver} to look at "
            f"(make runtime-test KVER={kver}, or a recording in "
            f"{os.path.relpath(runtime.RECORDED, tree.REPO)}/{kver}/)")
        return {"mutant": name, "caught": False, "outcome": None,
                "boot_seconds": None,
                "caught_by": {"a runtime boot to analyse": None}}
    where = boot.source
    say(f"==> mutant {name}: on the runtime boot of {where}")
    m = runtime.mutant(boot.console, boot.details, runtime.yaml_classes(kver),
                       trace_port=boot.trace_port)
    what = (f"{m['chain']} ({m['defined']}) declared blocking" if m
            else "an atomic chain called in atomic context to flip")
    return {"mutant": name, "caught": bool(m and m["caught_by"]),
            "outcome": None, "boot_seconds": None, "source": where,
            "caught_by": {what: (m["caught_by"][0] if m and m["caught_by"]
                                 else None)}}


def stale(kver, work, mutants):
    """Why each mutant that does not apply on the core patches fails,
    checked on a scratch index before any build, so that a core patch
    that moved a mutant's context stops the run at once."""
    kernel_tree = tree.prepare(kver, work)
    core = patches.apply(kernel_tree, patches.core_patches(kver))
    return [why for why in (patches.scratch_apply(kernel_tree.path, core,
                                                  [m])[1] for m in mutants)
            if why]


def run(kver, *, work=None, out=None, timeout=600, jobs=None, slow=False):
    """Boots each mutant of `kver`, and with `slow` those of the slow/
    folder too, whose change to a header rebuilds most of the kernel;
    returns 0 when every one was caught."""
    out = tree.out_folder(out)
    mutants = sorted(glob.glob(os.path.join(FOLDER, "*.patch")))
    if slow:
        mutants += sorted(glob.glob(os.path.join(FOLDER, "slow", "*.patch")))
    unapplied = stale(kver, work, mutants)
    if unapplied:
        raise Error("mutants that no longer apply to the core patches of "
                    f"{kver} (rebase them):\n  " + "\n  ".join(unapplied))
    summary = []
    for patch in mutants:
        name = os.path.basename(patch)[:-len(".patch")]
        expected = expectations(patch)
        say(f"==> mutant {name}: expecting "
            + ", ".join([f"{t} to fail" for t in expected["fail"]]
                        + [f"a splat with {t!r}" for t in expected["splat"]]
                        + [f"no warning {t!r}"
                           for t in expected["missing"]]))
        # Without the torture test, which would crash the mutant's kernel
        # before its KUnit tests run; torture-baseline covers the torture.
        # Without checkpatch and sparse: the core patches are the boot
        # test's, and a mutant is judged by its boot.
        result = boottest.run(kver, work=work, out=out, timeout=timeout,
                              jobs=jobs, extra=[patch],
                              name=f"mutants/{name}", torture_seconds=0,
                              checks=False)
        found = judge(result, expected)
        summary.append({"mutant": name, "caught_by": found,
                        "caught": all(found.values()),
                        "outcome": result.outcome,
                        "boot_seconds": result.boot_seconds})
    summary.append(runtime_mutant(kver, out))
    path = os.path.join(out, kver, "mutants", "summary.json")
    output.write_json(path, summary)
    for m in summary:
        verdict = "caught" if m["caught"] else "NOT CAUGHT"
        evidence = "; ".join(f"{k}: {v or 'missing'}"
                             for k, v in m["caught_by"].items())
        say(f"mutant {m['mutant']}: {verdict} ({evidence})")
    return 0 if summary and all(m["caught"] for m in summary) else 1
