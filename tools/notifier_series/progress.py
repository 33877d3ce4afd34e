"""Progress lines and timings for the long steps of the pipeline."""

import os
import subprocess
import sys
import threading
import time


class Error(Exception):
    """A failure to report to the user as one clear line, without a traceback."""


def say(message):
    print(message, flush=True)


class Step:
    """Prints a step's start and its time taken; `seconds` holds the latter."""

    def __init__(self, label):
        self.label = label
        self.seconds = 0.0

    def __enter__(self):
        say(f"==> {self.label}")
        self._start = time.monotonic()
        return self

    def __exit__(self, kind, value, tb):
        self.seconds = time.monotonic() - self._start
        outcome = "done" if kind is None else "failed"
        say(f"    {self.label}: {outcome} in {self.seconds:.1f}s")
        return False


def run_logged(cmd, log_path, label, cwd=None, env=None, count=None,
               heartbeat=30.0, errors_path=None):
    """Runs `cmd` with its output appended to `log_path`, printing a line
    every `heartbeat` seconds with the time elapsed and, when `count` is
    (what, predicate), how many output lines matched the predicate so far.
    With `errors_path`, its standard error goes there instead, for output
    that must not be mixed with it (two processes writing to one pipe may
    split each other's lines).  Returns the exit status."""
    counted = [0]
    with open(log_path, "a", encoding="utf-8", errors="replace") as log, \
            open(errors_path or os.devnull, "a", encoding="utf-8",
                 errors="replace") as errors:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=errors if errors_path else
                                subprocess.STDOUT, text=True,
                                errors="replace")
        start = time.monotonic()
        done = threading.Event()

        def beat():
            while not done.wait(heartbeat):
                extra = f", {counted[0]} {count[0]}" if count else ""
                say(f"    {label}: {time.monotonic() - start:.0f}s{extra}")

        beater = threading.Thread(target=beat, daemon=True)
        beater.start()
        for line in proc.stdout:
            log.write(line)
            if count and count[1](line):
                counted[0] += 1
        rc = proc.wait()
        done.set()
        beater.join()
    return rc


def tail(path, lines=20):
    """The last lines of a log, for an error message."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# Every command's exit status (README, "Exit status"; the CLI's --help).
EXIT_STATUS = (
    (0, "pass: every check of the command is green"),
    (1, "a check failed: a test, checkpatch, sparse, the compile-test, the "
        "gate; for convert, spatch reported problems"),
    (2, "a splat on a console: an oops, a lockdep, KASAN, RCU or "
        "sleep-in-atomic report"),
    (3, "a timeout: a kernel that did not finish in time"),
    (4, "a harness or input error: bad input (named by file and line), a "
        "usage error, a failed build, a missing tool, an unexpected "
        "exception"),
    (130, "interrupted (Ctrl-C)"),
)
HARNESS_ERROR = 4
INTERRUPTED = 130


def fail(message, code=HARNESS_ERROR):
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)
