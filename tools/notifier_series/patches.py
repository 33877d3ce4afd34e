"""The hand-written core patches, applied with git am onto a tree."""

import contextlib
import glob
import os
import re
import subprocess

from . import memo
from .progress import Error, Step, say
from .tree import PRISTINE, REPO, git, local_changes

CORE_BRANCH = "notifier-series/core"
# The series of make series: the core patches and the conversion.
SERIES_BRANCH = "notifier-series/series"


def patch_text(patch):
    """A patch file's text but what a series made again changes and no
    check reads: its Date: line, and its number in the series' subject
    ([PATCH 12/114])."""
    with open(patch, "rb") as f:
        text = re.sub(rb"(?m)^Date: .*\n", b"", f.read(), count=1)
    return re.sub(rb"(?m)^(Subject: \[PATCH) \d+/\d+\]", rb"\1]", text,
                  count=1)


def digest(files):
    """One digest of the patches `files` (patch_text())."""
    return memo.key(*(patch_text(f) for f in files))


def core_patches(kver):
    """core-patch/<kver>/*.patch in order; the versions differ where the
    trees do (see core-patch/README.md)."""
    folder = os.path.join(REPO, "core-patch", kver)
    patches = sorted(glob.glob(os.path.join(folder, "*.patch")))
    if not patches:
        raise Error(f"no core patch for Linux {kver}: {folder} holds no "
                    "*.patch file")
    return patches


def touched_files(patch):
    """The files a patch file changes."""
    with open(patch, encoding="utf-8", errors="replace") as f:
        return sorted(set(re.findall(r"^diff --git a/(\S+) b/", f.read(),
                                     re.M)))


def subject_of(patch):
    """A patch file's subject, without its [PATCH] prefix."""
    with open(patch, encoding="utf-8", errors="replace") as f:
        text = f.read()
    m = re.search(r"^Subject: (?:\[[^]]*\] )?(.*(?:\n [^\n]*)*)", text,
                  re.M)
    return " ".join(m.group(1).split()) if m else os.path.basename(patch)


def _patch_id(text):
    out = subprocess.run(["git", "patch-id", "--stable"], input=text,
                         capture_output=True, text=True).stdout.split()
    return out[0] if out else None


def patch_id_of(patch):
    """The stable patch-id of a patch file."""
    with open(patch, encoding="utf-8", errors="replace") as f:
        return _patch_id(f.read())


def commit_ids(path, base, branch):
    """The stable patch-ids of the commits base..branch, in order (None
    for a commit that changes nothing)."""
    commits = git(path, "rev-list", "--reverse", f"{base}..{branch}").split()
    ids = dict(reversed(line.split()) for line in subprocess.run(
        ["git", "patch-id", "--stable"], input=git(
            path, "log", "-p", "--format=commit %H", f"{base}..{branch}"),
        capture_output=True, text=True, check=True).stdout.splitlines())
    return [ids.get(c) for c in commits]


def scratch_apply(path, base, patches):
    """Applies `patches` in order onto `base` in a scratch index, leaving
    the tree and its branches untouched: (the tree object they give, None)
    or (None, why the first that does not apply fails)."""
    index = os.path.join(path, ".git", "notifier-series-apply-check")
    env = dict(os.environ, GIT_INDEX_FILE=index)
    try:
        git(path, "read-tree", base, env=env)
        for patch in patches:
            proc = subprocess.run(["git", "-C", path, "apply", "--cached",
                                   os.path.abspath(patch)], env=env,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                return None, (f"{os.path.basename(patch)} does not apply: "
                              f"{proc.stderr.strip()}")
        return git(path, "write-tree", env=env).strip(), None
    finally:
        if os.path.exists(index):
            os.unlink(index)


def apply(tree, patches, branch=CORE_BRANCH, base=PRISTINE, checkout=True):
    """Checks out `branch` holding `patches` on top of `base`.  A branch
    that already holds the same changes is reused as it is, so that
    nothing is rebuilt; otherwise it is made again with git am.  Without
    `checkout`, a branch reused is left as it is and the checkout keeps
    its files (for patches applied next on top of `branch`)."""
    changes = local_changes(tree.path)
    if changes:
        raise Error(f"{tree.path} has local changes; refusing to apply "
                    "patches:\n  " + "\n  ".join(changes[:10]))
    names = [os.path.relpath(p, REPO) for p in patches]
    listed = (", ".join(names) if len(names) < 3 else
              f"the {len(names)} patches {names[0]} to {names[-1]}")
    with Step(f"applying {len(patches)} patches to Linux {tree.version} "
              f"on branch {branch}"):
        wanted = [patch_id_of(p) for p in patches]
        exists = git(tree.path, "rev-parse", "-q", "--verify",
                     "refs/heads/" + branch, check=False).strip()
        if exists and commit_ids(tree.path, base, branch) == wanted:
            if not checkout:
                say(f"    {branch} already holds {listed}; not checked out")
                return git(tree.path, "rev-parse", branch).strip()
            git(tree.path, "checkout", "-q", branch)
            say(f"    {branch} already holds {listed}")
        else:
            with stamps_kept(tree.path, base):
                git(tree.path, "checkout", "-q", "-B", branch, base)
                proc = subprocess.run(["git", "-C", tree.path, "am", "-q",
                                       "--no-3way"] + patches,
                                      stdin=subprocess.DEVNULL,
                                      capture_output=True, text=True) \
                    if patches else None
                if proc and proc.returncode != 0:
                    subprocess.run(["git", "-C", tree.path, "am", "--abort"],
                                   capture_output=True)
                    raise Error("git am failed on Linux "
                                f"{tree.version}:\n{proc.stdout}"
                                f"{proc.stderr}")
            say(f"    applied {listed or 'nothing'}")
        return git(tree.path, "rev-parse", "HEAD").strip()


@contextlib.contextmanager
def stamps_kept(path, base=PRISTINE):
    """Whatever the checkouts inside do, a file that ends with the text it
    had on the way in (and differs from `base`) gets back its time then,
    so that make does not rebuild what was built from the same text.
    Safe because no build runs inside: a build older than that time was
    made from that text."""
    before = _stamps(path, base)
    try:
        yield
    finally:
        _restore(path, base, before)


def _stamps(path, base):
    """{file: (blob, mtime)} of the files the checkout changes from
    `base`."""
    names = git(path, "diff", "--name-only", base, "HEAD").split()
    return {name: (blob, os.lstat(os.path.join(path, name)).st_mtime_ns)
            for name, blob in _blobs(path, names).items()}


def _blobs(path, names):
    if not names:
        return {}
    return {line.split("\t", 1)[1]: line.split()[1] for line in
            git(path, "ls-files", "-s", "--", *names).splitlines()}


def _restore(path, base, before):
    """Gives back their time to the files that the new checkout has as
    they were (`before`, _stamps()), so that make does not rebuild what
    was built from the same text."""
    # A file that differs from its index entry (a run stopped mid-way)
    # is not the blob it stands for.
    dirty = set(git(path, "diff", "--name-only").split())
    now = _blobs(path, [n for n in git(path, "diff", "--name-only", base,
                                       "HEAD").split() if n in before])
    for name, blob in now.items():
        if before[name][0] == blob and name not in dirty:
            full = os.path.join(path, name)
            os.utime(full, ns=(os.lstat(full).st_atime_ns, before[name][1]),
                     follow_symlinks=False)
