"""The notifier torture test (kernel/notifier_torture.c) as its console
lines tell it: for each chain type, "notifier_torture: <type>: Start of
test: ..." and "notifier_torture: <type>: End of test:
SUCCESS|FAILURE|HOTPLUG: key=value ...", with "notifier_torture: <type>:
first failure: ..." at the first failed check; HOTPLUG when the chain
passed but CPU hotplug failed."""

import re

TAG = r"notifier_torture: (\S+): "
TAG_LINE = re.compile(TAG)
START = re.compile(TAG + r"Start of test: (.*?)\s*$")
END = re.compile(TAG + r"End of test: (SUCCESS|FAILURE|HOTPLUG): "
                 r"(.*?)\s*$")
FIRST = re.compile(TAG + r"first failure: (.*?)\s*$")
FIELD = re.compile(r"(\w+)=(-?\d+)")
FAILURES = ("stale", "disorder", "errors", "lost")


def fields(text):
    return {k: int(v) for k, v in FIELD.findall(text)}


def parse(lines):
    """{chain type: result} of the torture runs in console `lines`.  A
    result is {"verdict": "SUCCESS", "FAILURE", "HOTPLUG" or "unfinished",
    "start_line", "end_line", "seconds", "operations", "failures",
    "per_second": {...}, "first_failure": text or None, and the counts of
    the end line}."""
    runs = {}
    for number, line in enumerate(lines, 1):
        m = START.search(line)
        if m:
            runs[m.group(1)] = {"verdict": "unfinished", "start_line": number,
                                "end_line": None, "params": fields(m.group(2)),
                                "first_failure": None}
            continue
        m = FIRST.search(line)
        if m and m.group(1) in runs:
            runs[m.group(1)]["first_failure"] = m.group(2)
            runs[m.group(1)]["first_failure_line"] = number
            continue
        m = END.search(line)
        if m and m.group(1) in runs:
            run = runs[m.group(1)]
            counts = fields(m.group(3))
            seconds = counts.get("ms", 0) / 1000
            operations = {"registers": counts.get("registers", 0),
                          "unregisters": counts.get("unregisters", 0),
                          "calls": counts.get("calls", 0)}
            run.update(counts)
            run.update({
                "verdict": m.group(2), "end_line": number,
                "seconds": seconds,
                "operations": sum(operations.values()),
                "failures": sum(counts.get(k, 0) for k in FAILURES),
                "per_second": {k: round(v / seconds) if seconds else None
                               for k, v in operations.items()},
            })
    return runs


def problems(runs, expected):
    """Why the torture runs of the `expected` chain types did not pass, one
    line each; empty when they all did."""
    out = []
    for kind in expected:
        run = runs.get(kind)
        if run is None:
            out.append(f"torture of {kind} chains: never started")
        elif run["verdict"] == "unfinished":
            out.append(f"torture of {kind} chains: started at console line "
                       f"{run['start_line']} but never ended")
        elif run["verdict"] == "HOTPLUG":
            out.append(f"torture of {kind} chains: CPU hotplug failed "
                       f"(console line {run['end_line']}); the chain "
                       "passed its checks")
        elif run["verdict"] != "SUCCESS":
            counts = ", ".join(f"{k} {run.get(k, 0)}" for k in FAILURES)
            out.append(f"torture of {kind} chains: FAILURE ({counts}) at "
                       f"console line {run['end_line']}")
    return out


def time_failures(runs, splats, arrivals):
    """Adds to each run that failed "first_failure_console_line" and
    "seconds_to_first_failure": from its start line to the first sign of
    failure (its own first-failure line, or an unexpected splat after the
    start), by `arrivals`, the host's clock when each console line came."""
    for run in runs.values():
        start = run["start_line"]
        end = run["end_line"] or float("inf")
        signs = [s["line"] for s in splats
                 if not s["expected"] and start < s["line"] <= end]
        if run.get("first_failure_line"):
            signs.append(run["first_failure_line"])
        if not signs:
            continue
        first = min(signs)
        run["first_failure_console_line"] = first
        if first <= len(arrivals):
            run["seconds_to_first_failure"] = round(
                arrivals[first - 1] - arrivals[start - 1], 2)
