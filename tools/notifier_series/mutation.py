"""Mutation tests of the kernel tests.  Each patch in tests/kernel-mutations
puts back a bug that the core patch fixes; booted with it, the KUnit tests
named by its "Expect-Fail:" lines must fail, or they could not catch it."""

import glob
import json
import os
import re

from . import boottest, tree
from .progress import Error, say

FOLDER = os.path.join(tree.REPO, "tests", "kernel-mutations")
CAUGHT = ("FAIL", "ERROR")


def expected_failures(patch):
    with open(patch, encoding="utf-8") as f:
        names = re.findall(r"(?m)^Expect-Fail: (\S+)$", f.read())
    if not names:
        raise Error(f"{patch}: no Expect-Fail: line names the KUnit test "
                    "that must catch this mutation")
    return names


def run(kver, work=None, out=None, timeout=600, jobs=None):
    """Boots each mutant of `kver`; returns 0 when every one was caught."""
    out = os.path.abspath(out or os.path.join(tree.REPO, "out"))
    mutants = sorted(glob.glob(os.path.join(FOLDER, "*.patch")))
    summary = []
    for patch in mutants:
        name = os.path.basename(patch)[:-len(".patch")]
        expect = expected_failures(patch)
        say(f"==> mutant {name}: expecting {', '.join(expect)} to fail")
        boottest.run(kver, work, out, timeout, jobs, extra=[patch],
                     name=f"mutants/{name}")
        with open(os.path.join(out, kver, "mutants", name, "result.json"),
                  encoding="utf-8") as f:
            result = json.load(f)
        statuses = {t: result["kunit"]["tests"].get(t, "missing")
                    for t in expect}
        caught = all(s in CAUGHT for s in statuses.values())
        summary.append({"mutant": name, "expected_failures": statuses,
                        "caught": caught, "outcome": result["outcome"],
                        "splats": [s["text"] for s in result["splats"]
                                   if not s["expected"]]})
    path = os.path.join(out, kver, "mutants", "summary.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    os.replace(path + ".tmp", path)
    for m in summary:
        verdict = "caught" if m["caught"] else "NOT CAUGHT"
        say(f"mutant {m['mutant']}: {verdict} "
            f"({', '.join(f'{t} {s}' for t, s in m['expected_failures'].items())})")
    return 0 if summary and all(m["caught"] for m in summary) else 1
