"""scripts/checkpatch.pl --strict of the tree, run on patch files."""

import concurrent.futures
import os
import re
import subprocess

from . import memo, patches, tree

TOTAL = re.compile(r"total: (\d+) errors?, (\d+) warnings?, (?:(\d+) "
                   r"checks?, )?\d+ lines checked")


ARGS = ("--strict", "--no-color", "--show-types")
NO_VERDICT = "checkpatch.pl gave no verdict:\n"


def run(tree_path, patch_files, jobs=1, cache=None):
    """{"errors", "warnings", "checks", "patches": {name: report}}.  With
    a `cache` folder, a patch whose text (patches.patch_text()) and tree (its
    checkpatch.pl and the files it reads) were checked before is not
    checked again."""
    # checkpatch calls scripts/spdxcheck.py, which needs Debian's python3.
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    totals = {"errors": 0, "warnings": 0, "checks": 0, "patches": {}}
    scripts = tree.scripts_state(tree_path) if cache else None

    def check(patch):
        proc = subprocess.run(
            [os.path.join(tree_path, "scripts/checkpatch.pl")] + list(ARGS)
            + [patch], cwd=tree_path, env=env, capture_output=True,
            text=True)
        if TOTAL.search(proc.stdout):
            return proc.stdout
        return NO_VERDICT + proc.stdout + proc.stderr

    def checked(patch):
        digest = memo.key("checkpatch.pl", *ARGS, scripts,
                          patches.patch_text(patch))
        return memo.cached(cache, digest, lambda: check(patch),
                           keep=lambda report: TOTAL.search(report))

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        reports = list(pool.map(checked, patch_files))
    for patch, report in zip(patch_files, reports):
        m = TOTAL.search(report)
        totals["patches"][os.path.basename(patch)] = report
        if not m:
            totals["errors"] += 1
            continue
        totals["errors"] += int(m.group(1))
        totals["warnings"] += int(m.group(2))
        totals["checks"] += int(m.group(3) or 0)
    return totals
