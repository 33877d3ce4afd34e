"""`make check`: every test of the toolkit, one step after another, with a
table of the time each step took at the end (out/check.json)."""

import os
import signal
import subprocess
import sys
import time

from . import output, progress, tree
from .progress import say

UNIT_TESTS = ("python3", "-m", "unittest", "discover", "-b", "-s", "tests",
              "-t", ".")

# What `make check` runs, in order (README, "What make check runs"): what
# fits in 45 minutes on a fresh machine.  The series' compile-test builds
# x86 only: the cross compilers' cold builds would take CI past its time
# (`make series` builds every architecture).
STEPS = (
    UNIT_TESTS,
    ("boot-test", "6.1"),
    ("classify", "6.1"),
    ("series", "6.1", "--compile-arches", "x86"),
    ("boot-test", "6.12"),
)
# What does not fit: `make check-more` (README, "What make check runs",
# which quotes its last run).
MORE = (
    ("mutation-test", "6.1"),
    ("torture-baseline", "6.1"),
    ("classify", "6.12"),
    ("series", "6.12", "--compile-arches", "x86"),
)


def command_line(step):
    """A step as the README writes it."""
    if step == UNIT_TESTS:
        return " ".join(step)
    return "tools/notifier-series " + " ".join(step)


def _argv(step, work, out=None):
    if step == UNIT_TESTS:
        return [sys.executable] + list(step[1:])
    return [sys.executable, os.path.join(tree.REPO, "tools",
                                         "notifier-series"),
            "--work", work] + list(step) + (["--out", out] if out else [])


def status_of(returncode):
    """A step's exit status in the table of progress.EXIT_STATUS: a step
    killed by Ctrl-C was interrupted, any other status outside the table
    (killed by a signal, unittest's 5 when no test ran) is a harness
    error."""
    if returncode == -signal.SIGINT:
        return progress.INTERRUPTED
    if returncode in {code for code, _ in progress.EXIT_STATUS}:
        return returncode
    return progress.HARNESS_ERROR


def table(rows):
    """The timing table: one line per step, its exit status and its
    time, then the total."""
    width = max(len(row["step"]) for row in rows + [{"step": "total"}])
    lines = [f"{'step':<{width}}  {'status':>7}  time"]
    for row in rows:
        status = "not run" if row["status"] is None else str(row["status"])
        lines.append(f"{row['step']:<{width}}  {status:>7}  "
                     f"{_clock(row['seconds'])}")
    total = sum(row["seconds"] for row in rows)
    lines.append(f"{'total':<{width}}  {'':>7}  {_clock(total)}")
    return "\n".join(lines)


def _clock(seconds):
    return f"{int(seconds) // 60:3d} min {int(seconds) % 60:02d} s"


def run(work, out=None, steps=STEPS, runner=subprocess.call,
        target="check"):
    """Runs `steps` until one fails; prints the table of their times and
    writes it to <out>/<target>.json.  Returns the failing step's exit
    status (the contract of the command it ran), or 0."""
    given = out
    out = tree.out_folder(out)
    rows = [{"step": command_line(s), "status": None, "seconds": 0.0}
            for s in steps]
    status = 0
    for step, row in zip(steps, rows):
        say(f"=== {row['step']}")
        start = time.monotonic()
        status = row["status"] = status_of(runner(
            _argv(step, work, given and out), cwd=tree.REPO))
        row["seconds"] = round(time.monotonic() - start, 1)
        if status:
            break
    say(table(rows))
    if status:
        say(f"make {target}: {row['step']} failed (exit status {status}); "
            "the steps after it did not run")
    os.makedirs(out, exist_ok=True)
    output.write_json(os.path.join(out, f"{target}.json"), {"steps": rows})
    return status
