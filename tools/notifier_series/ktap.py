"""KUnit results, read by the tree's own KTAP parser (kunit.py parse)."""

import json
import os
import re
import subprocess

from .progress import Error

SUMMARY = re.compile(r"Ran (\d+) tests?(?:: (.*))?$")
STATUS = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped",
          "ERROR": "failed"}


def leaves(group, prefix=""):
    """(dotted name, status) of every test case in kunit.py's JSON."""
    name = group.get("name", "")
    here = prefix + name + "." if prefix or name != "KUnit Test Group" else ""
    for case in group.get("test_cases", []):
        yield here + case["name"], case["status"]
    for sub in group.get("sub_groups", []):
        yield from leaves(sub, here)


def summary_counts(text):
    """{"passed": n, ...} from kunit.py's "Ran N tests: ..." line; crashed
    tests and parser errors count as failed."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "total": 0}
    for line in text.splitlines():
        m = SUMMARY.search(line)
        if not m:
            continue
        counts["total"] = int(m.group(1))
        for part in (m.group(2) or "").split(","):
            key, _, value = part.strip().partition(": ")
            key = {"crashed": "failed", "errors": "failed"}.get(key, key)
            if key in counts and value.isdigit():
                counts[key] += int(value)
    return counts


def complaints(output):
    """The lines of kunit.py parse's output that report an error, a crash
    or a failure, without their timestamps."""
    return [m.group(1) for m in re.finditer(
        r"^(?:\[[\d:]+\] )?(\[(?:ERROR|CRASHED|FAILED)\].*)$", output,
        re.M)]


def parse(tree_path, console_log, json_path):
    """Runs the tree's kunit.py parse on `console_log`; returns
    {"passed", "failed", "skipped", "total", "tests": {name: status},
    "parser_ok": bool, "parser_output": text}."""
    kunit = os.path.join(tree_path, "tools/testing/kunit/kunit.py")
    if not os.path.isfile(kunit):
        raise Error(f"{kunit} not found")
    proc = subprocess.run(["/usr/bin/python3", kunit, "parse",
                           f"--json={json_path}", console_log],
                          capture_output=True, text=True)
    output = proc.stdout + proc.stderr
    result = summary_counts(output)
    result["tests"] = {}
    try:
        with open(json_path, encoding="utf-8") as f:
            result["tests"] = dict(leaves(json.load(f)))
    except (OSError, ValueError):
        pass
    result["parser_ok"] = proc.returncode == 0
    result["parser_output"] = output
    return result
