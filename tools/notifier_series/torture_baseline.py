"""The 2005 baseline of the torture test: the torture module run against
a chain that uses the notifier algorithm of Linux 2.6.14 and before
(tests/kernel-baseline/*.patch, test kernels only).  The run must be caught
failing: a FAILURE verdict, or a splat (KASAN use-after-free, oops) after
the torture started, or a torture that never ended because the kernel
died.  Several boots say how often and how fast it fails."""

import datetime
import glob
import os
import statistics

from . import boottest, output, torture, tree
from .progress import Error, say

FOLDER = os.path.join(tree.REPO, "tests", "kernel-baseline")
TYPE = "2005"
BRANCH = "notifier-series/torture-baseline-runs"


def caught(result):
    """(how the baseline run was caught failing, or None; seconds from its
    start to the first sign, or None)."""
    run = result.torture.get(TYPE)
    if run is None:
        return None, None
    start = run["start_line"]
    splats = [s for s in result.splats
              if not s["expected"] and s["line"] > start]
    how = []
    if splats:
        how.append(splats[0]["text"])
    if run["verdict"] == "FAILURE":
        how.append("FAILURE: " + ", ".join(
            f"{k} {run.get(k, 0)}" for k in torture.FAILURES))
    elif run["verdict"] == "unfinished":
        how.append("the torture never ended (the kernel died)")
    return ("; ".join(how) or None), run.get("seconds_to_first_failure")


def run(kver, *, work=None, out=None, timeout=600, jobs=None, runs=3,
        seconds=60):
    """Boots the baseline `runs` times for up to `seconds` of torture each;
    writes out/<kver>/torture-baseline.json; returns 0 when every run was
    caught failing."""
    out = tree.out_folder(out)
    patches = sorted(glob.glob(os.path.join(FOLDER, "*.patch")))
    if not patches:
        raise Error(f"no baseline patch in {FOLDER}")
    record = {"when": datetime.datetime.now(datetime.timezone.utc)
              .strftime("%Y-%m-%d %H:%M UTC"),
              "patches": [os.path.relpath(p, tree.REPO) for p in patches],
              "seconds_per_run": seconds, "runs": []}
    for number in range(1, runs + 1):
        name = f"torture-baseline/run-{number}"
        say(f"==> baseline run {number}/{runs}: torture_type={TYPE} for up "
            f"to {seconds}s; it must fail")
        # One branch for every run (so that the second run rebuilds
        # nothing), not under the runs' names: a ref named like a folder
        # of older refs cannot be made.  The core patches are checked by
        # the boot test.
        result = boottest.run(kver, work=work, out=out, timeout=timeout,
                              jobs=jobs, extra=patches,
                              name=name, torture_seconds=seconds,
                              torture_types=(TYPE,), checks=False,
                              extra_branch=BRANCH)
        how, after = caught(result)
        torture_run = result.torture.get(TYPE, {})
        record["runs"].append({
            "caught": how is not None, "how": how,
            "seconds_to_first_failure": after,
            "kernel_ms_to_first_failure": torture_run.get("first_failure_ms"),
            "first_failure": torture_run.get("first_failure"),
            "verdict": torture_run.get("verdict"),
            "result": os.path.join(out, kver, name, "result.json")})
        say(f"baseline run {number}: "
            + (f"caught after {after}s: {how}" if how else "NOT CAUGHT"))
    times = [r["seconds_to_first_failure"] for r in record["runs"]
             if r["seconds_to_first_failure"] is not None]
    record["caught"] = sum(r["caught"] for r in record["runs"])
    record["median_seconds_to_first_failure"] = (
        statistics.median(times) if times else None)
    path = os.path.join(out, kver, "torture-baseline.json")
    output.write_json(path, record)
    say(f"torture baseline: caught failing in {record['caught']}/{runs} "
        f"runs, median {record['median_seconds_to_first_failure']}s to the "
        f"first failure; {path}")
    return 0 if record["caught"] == runs else 1
