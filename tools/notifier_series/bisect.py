"""Bisectability of a generated series: the boot-test configuration is
built after every patch of branch notifier-series/series; the record goes
to out/<kver>/bisect.json, which the series report quotes while it is of
the same patches.  A patch that only modifies .c, .h or .S files that
the last build did not read (Kbuild's .cmd files name every source and
header an object was built from) leaves the build as it was, and is not
built again."""

import datetime
import glob
import os
import shutil
import time

from . import boottest, distcc, output, patches, series, tree
from .progress import Error, Step, say


def read_by_build(kernel_path, build_dir):
    """The files of the tree, relative to it, that the last build in
    `build_dir` read: the sources and headers its .cmd files name."""
    prefix = os.path.join(os.path.abspath(kernel_path), "")
    read = set()
    for folder, _, names in os.walk(build_dir):
        for name in names:
            if name.startswith(".") and name.endswith(".cmd"):
                with open(os.path.join(folder, name), encoding="utf-8",
                          errors="replace") as f:
                    read.update(word[len(prefix):] for word in f.read().split()
                                if word.startswith(prefix))
    return read


def can_change_build(changes, read):
    """Whether a patch can change the build: it does unless it only
    modifies .c, .h and .S files the build did not read.  `changes`:
    the lines of git diff-tree --name-status."""
    for line in changes:
        status, path = line.split("\t")[:2]
        if (status != "M" or not path.endswith((".c", ".h", ".S"))
                or path in read):
            return True
    return False


def run(kver, *, work=None, out=None, jobs=None):
    out = tree.out_folder(out)
    jobs = distcc.build_jobs(jobs)
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
    failures, unchanged = [], []
    read, last = set(), None    # last: the failure of the last build
    try:
        for number, commit in enumerate(commits, 1):
            subject = tree.git(git, "log", "-1", "--format=%s",
                               commit).strip()
            changes = tree.git(git, "diff-tree", "--no-commit-id", "-r",
                               "--name-status", commit).splitlines()
            if number > 1 and not can_change_build(changes, read):
                say(f"bisect {number}/{len(commits)}: {subject}: touches "
                    "no file the build read")
                unchanged.append(number)
                if last:        # the same build as the patch before
                    failures.append(dict(last, patch=number,
                                         subject=subject))
                continue
            tree.git(git, "checkout", "-q", commit)
            last = None
            try:
                with Step(f"bisect {number}/{len(commits)}: {subject}"):
                    boottest.build(kernel_tree, build_dir, log, jobs,
                                   declared_only=True)
            except Error as e:
                kept = os.path.join(out, kver, f"bisect-{number:04d}.log")
                shutil.copyfile(log, kept)
                last = {"error": str(e).splitlines()[0], "log": kept,
                        "built_at_patch": number}
                failures.append(dict(last, patch=number, subject=subject))
            read = read_by_build(git, build_dir)
    finally:
        tree.git(git, "checkout", "-q", "-f", series.BRANCH)
    record = {"when": datetime.datetime.now(datetime.timezone.utc)
              .strftime("%Y-%m-%d %H:%M UTC"),
              "patches": len(commits), "built": len(commits) - len(failures),
              "failures": failures, "unchanged": unchanged,
              "seconds": round(time.monotonic() - start, 1),
              "patch_ids": patches.commit_ids(git, tree.PRISTINE,
                                              series.BRANCH)}
    path = os.path.join(out, kver, "bisect.json")
    output.write_json(path, record)
    say(f"bisect: {record['built']}/{record['patches']} patches build, "
        f"{len(commits) - len(unchanged)} built, the others touch no file "
        f"the build read ({record['seconds']:.0f}s); {path}")
    say(f"    make series KVER={kver} quotes it (report.json, the cover "
        "letter, the b4 branch) while the series has the same patches")
    return 0 if not failures else 1
