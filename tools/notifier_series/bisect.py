"""Bisectability of a generated series: the boot-test configuration is
built after every patch of branch notifier-series/series; the record goes
to out/<kver>/bisect.json, which the series report quotes while it is of
the same patches."""

import datetime
import glob
import os
import shutil
import time

from . import boottest, output, patches, series, tree
from .progress import Error, Step, say


def run(kver, work=None, out=None, jobs=None):
    out = os.path.abspath(out or os.path.join(tree.REPO, "out"))
    jobs = jobs or os.cpu_count() or 1
    kernel_tree = tree.prepare(kver, work)
    git = kernel_tree.path
    if not tree.git(git, "rev-parse", "-q", "--verify",
                    "refs/heads/" + series.BRANCH, check=False).strip():
        raise Error(f"no {series.BRANCH} branch in {git}: make series "
                    f"KVER={kver} first")
    commits = tree.git(git, "rev-list", "--reverse",
                       f"{tree.PRISTINE}..{series.BRANCH}").split()
    build_dir = os.path.join(os.path.dirname(git), f"build-{kver}")
    log = os.path.join(out, kver, "bisect.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    for old in glob.glob(os.path.join(out, kver, "bisect*.log")):
        os.unlink(old)
    start = time.monotonic()
    failures = []
    try:
        for number, commit in enumerate(commits, 1):
            subject = tree.git(git, "log", "-1", "--format=%s",
                               commit).strip()
            tree.git(git, "checkout", "-q", commit)
            try:
                with Step(f"bisect {number}/{len(commits)}: {subject}"):
                    boottest.build(kernel_tree, build_dir, log, jobs,
                                   declared_only=True)
            except Error as e:
                kept = os.path.join(out, kver, f"bisect-{number:04d}.log")
                shutil.copyfile(log, kept)
                failures.append({"patch": number, "subject": subject,
                                 "error": str(e).splitlines()[0],
                                 "log": kept})
    finally:
        tree.git(git, "checkout", "-q", "-f", series.BRANCH)
    record = {"when": datetime.datetime.now(datetime.timezone.utc)
              .strftime("%Y-%m-%d %H:%M UTC"),
              "patches": len(commits), "built": len(commits) - len(failures),
              "failures": failures,
              "seconds": round(time.monotonic() - start, 1),
              "patch_ids": patches.commit_ids(git, tree.PRISTINE,
                                              series.BRANCH)}
    path = os.path.join(out, kver, "bisect.json")
    output.write_json(path, record)
    say(f"bisect: {record['built']}/{record['patches']} patches build "
        f"({record['seconds']:.0f}s); {path}")
    if series.record_bisect(out, kver, record):
        say(f"    quoted in {os.path.join(out, kver, 'series')}: "
            "report.json and the cover letter")
    else:
        say("    out/<kver>/series/ is of other patches: the next "
            f"make series KVER={kver} quotes this run")
    return 0 if not failures else 1
