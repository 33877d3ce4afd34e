"""scripts/checkpatch.pl --strict of the tree, run on patch files."""

import concurrent.futures
import os
import re
import subprocess

TOTAL = re.compile(r"total: (\d+) errors?, (\d+) warnings?, (?:(\d+) "
                   r"checks?, )?\d+ lines checked")


def run(tree_path, patch_files, jobs=1):
    """{"errors", "warnings", "checks", "patches": {name: report}}."""
    # checkpatch calls scripts/spdxcheck.py, which needs Debian's python3.
    env = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))
    totals = {"errors": 0, "warnings": 0, "checks": 0, "patches": {}}

    def check(patch):
        return subprocess.run(
            [os.path.join(tree_path, "scripts/checkpatch.pl"), "--strict",
             "--no-color", "--show-types", patch],
            cwd=tree_path, env=env, capture_output=True, text=True)

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        procs = list(pool.map(check, patch_files))
    for patch, proc in zip(patch_files, procs):
        m = TOTAL.search(proc.stdout)
        if not m:
            totals["errors"] += 1
            totals["patches"][os.path.basename(patch)] = (
                "checkpatch.pl gave no verdict:\n" + proc.stdout
                + proc.stderr)
            continue
        totals["errors"] += int(m.group(1))
        totals["warnings"] += int(m.group(2))
        totals["checks"] += int(m.group(3) or 0)
        totals["patches"][os.path.basename(patch)] = proc.stdout
    return totals
