"""Kernel splats in a console log.

A splat is a report the kernel prints when something went wrong: WARN(),
BUG(), an oops, a panic, lockdep, KASAN, RCU and sleep-in-atomic reports,
stalls and hung tasks.  Tests that trigger a warning on purpose print
"EXPECTED WARNING BEGIN: <text>" before it and "EXPECTED WARNING END"
after it; a WARNING or BUG report between the two that contains <text> is
expected and not counted, and a bracket without such a warning is itself
a failure: the warning it announced never came.
"""

import re

# Optional printk timestamp, then the report's first line.
PREFIX = r"^(?:\[\s*\d+\.\d+\]\s*)?"
HEADLINES = [
    ("WARNING", re.compile(PREFIX + r"WARNING: ")),
    ("BUG", re.compile(PREFIX + r"(?:\S+: )?BUG: ")),
    ("BUG", re.compile(PREFIX + r"kernel BUG at ")),
    ("OOPS", re.compile(PREFIX + r"Oops: ")),
    ("OOPS", re.compile(PREFIX + r"general protection fault")),
    ("PANIC", re.compile(PREFIX + r"Kernel panic - not syncing")),
    ("UBSAN", re.compile(PREFIX + r"UBSAN: ")),
    ("HUNG", re.compile(PREFIX + r"INFO: task \S+ blocked for more than")),
    ("STALL", re.compile(PREFIX + r"rcu: INFO: \S+ detected (?:expedited )?"
                         r"stalls")),
    ("STALL", re.compile(PREFIX + r"INFO: rcu_\S+ detected stalls")),
]
CUT_HERE = re.compile(PREFIX + r"-+\[ cut here \]-+")
END_TRACE = re.compile(PREFIX + r"---\[ end trace")
BEGIN = re.compile(r"EXPECTED WARNING BEGIN: (.*?)\s*$")
END = re.compile(r"EXPECTED WARNING END")
KTAP_RESULT = re.compile(r"^\s*(?:not )?ok \d+ (\S.*?)(?:\s+#.*)?$")
SUBTEST = re.compile(r"^\s*# Subtest: (\S+)")

# The reports a test may announce: WARN()s, and the "BUG: sleeping function
# called from invalid context" of DEBUG_ATOMIC_SLEEP, which is no oops.
EXPECTABLE = ("WARNING", "BUG")

# A report's lines run from its "cut here" line or headline to its "end
# trace" line; reports without one are cut short at this many lines.
MAX_REPORT = 80


def headline(line):
    """The kind of splat that `line` starts, or None."""
    for kind, pattern in HEADLINES:
        if pattern.search(line):
            return kind
    return None


def scan(lines):
    """Returns (splats, brackets) for the console `lines`.

    splats: [{"line": n, "end": n, "kind", "text", "expected": bool,
    "during"}], one per report (a WARN's "cut here" block counts once),
    "end" its last line.  brackets: [{"line": n, "text", "seen": count,
    "closed": bool}] for each EXPECTED WARNING bracket, closed when its END
    line came.
    """
    splats, brackets = [], []
    bracket = None          # the open bracket, if any
    cut = None              # line index of a "cut here" awaiting its report
    report = None           # the splat whose report is being read
    during = None           # the last KTAP subtest or result seen
    for i, line in enumerate(lines):
        m = BEGIN.search(line)
        if m:
            bracket = {"line": i + 1, "text": m.group(1), "seen": 0,
                       "closed": False}
            brackets.append(bracket)
            continue
        if END.search(line):
            if bracket:
                bracket["closed"] = True
            bracket = None
            continue
        m = SUBTEST.match(line) or KTAP_RESULT.match(line)
        if m:
            during = m.group(1)
        if CUT_HERE.search(line):
            cut = i
            continue
        kind = headline(line)
        if kind:
            if report:
                _close(report, lines[report["_start"]:i], i)
            start = cut if cut is not None and i - cut <= 3 else i
            report = {"line": i + 1, "kind": kind, "text": line.strip(),
                      "expected": False, "during": during,
                      "_start": start, "_bracket": bracket}
            splats.append(report)
            cut = None
        if report and (END_TRACE.search(line)
                       or i - report["_start"] >= MAX_REPORT):
            _close(report, lines[report["_start"]:i + 1], i + 1)
            report = None
    if report:
        _close(report, lines[report["_start"]:], len(lines))
    for s in splats:
        del s["_start"], s["_bracket"]
    return splats, brackets


def _close(report, block, end):
    report["end"] = end
    bracket = report["_bracket"]
    if (bracket and report["kind"] in EXPECTABLE
            and any(bracket["text"] in line for line in block)):
        report["expected"] = True
        bracket["seen"] += 1
