"""Kernel trees: Debian's linux-source tarball extracted into a git
repository outside this one, with one pristine baseline commit."""

import ast
import contextlib
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import time

from . import output
from .progress import Error, Step, say

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PRISTINE = "refs/tags/pristine"
RECORD = "notifier-series.json"     # in .git: what the baseline came from


def default_work():
    return os.environ.get("NOTIFIER_SERIES_WORK") or os.path.join(
        os.path.expanduser("~"), ".cache", "notifier-series")


def clean(path):
    """Whether the checkout `path` is exactly its commit: no modified,
    untracked or ignored file (a result kept under its tree object
    would not hold them)."""
    return not git(path, "status", "--porcelain", "--ignored=matching",
                   "--untracked-files=all").strip()


def blobs(path):
    """{path: blob} of the index of the checkout `path`."""
    found = {}
    for entry in git(path, "ls-files", "-s", "-z").split("\0"):
        meta, _, name = entry.partition("\t")
        if name:
            found[name] = meta.split()[1]
    return found


def out_folder(out=None):
    """The output folder, absolute: `out`, else out/ of the repository."""
    return os.path.abspath(out or os.path.join(REPO, "out"))


def jobs(count=None):
    """How many processes run at once: `count`, else this machine's
    CPUs."""
    return count or os.cpu_count() or 1


def check_kver(kver):
    if not re.fullmatch(r"\d+\.\d+", kver or ""):
        raise Error(f"kernel version {kver!r}: expected MAJOR.MINOR, "
                    "such as 6.1 or 6.12")


def tarball_path(kver):
    return f"/usr/src/linux-source-{kver}.tar.xz"


def git(path, *args, check=True, capture=True, env=None, input=None):
    """git's output in `path`.  A failure is an Error with check, else the
    caller's to read; but a tree that is gone (removed while the toolkit
    ran) is an Error always, so that no caller takes it for a missing
    ref or an empty answer."""
    proc = subprocess.run(["git", "-C", path] + list(args), text=True,
                          capture_output=capture, env=env, input=input)
    if proc.returncode != 0 and not os.path.isdir(path):
        raise Error(f"{path}: no such folder: was it removed while this ran? "
                    f"(git {' '.join(args)})")
    if check and proc.returncode != 0:
        raise Error(f"git {' '.join(args)} in {path} failed: "
                    f"{(proc.stderr or '').strip()}")
    return proc.stdout if capture else ""


# The toolkit's own refs: its branches, the b4 branch of the series and
# the tags of its revisions (mail.py).
OWN_REFS = ("refs/heads/notifier-series/", "refs/heads/b4/notifier-series-",
            "refs/tags/sent/notifier-series-")


def local_changes(path):
    """What a user may have done in a tree: uncommitted changes, untracked
    or ignored files (Debian's top-level .gitignore ignores every untracked
    file), and branches or tags of their own that hold other commits than
    the baseline."""
    out = git(path, "status", "--porcelain=v1", "--ignored=matching",
              "--untracked-files=all")
    changes = out.splitlines()
    pristine = git(path, "rev-parse", "-q", "--verify", PRISTINE + "^{}",
                   check=False).strip()
    refs = git(path, "for-each-ref", "--format=%(refname) %(objectname)",
               "refs/heads", "refs/tags")
    for line in refs.splitlines():
        ref, sha = line.split()
        if ref.startswith(OWN_REFS) or ref == PRISTINE or sha == pristine:
            continue
        changes.append(f"ref {ref} at {sha[:12]}")
    return changes


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


PACKAGE = os.path.join(REPO, "tools", "notifier_series")


def imported(*modules):
    """The paths of `modules` (names of modules of the package) and of
    the package's modules they import, directly or not."""
    paths, todo = set(), list(modules)
    while todo:
        path = os.path.join(PACKAGE, todo.pop() + ".py")
        if path in paths:
            continue
        paths.add(path)
        with open(path, encoding="utf-8") as f:
            for node in ast.walk(ast.parse(f.read(), path)):
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    todo += ([node.module.split(".")[0]] if node.module
                             else [a.name for a in node.names])
    return paths


def code_state(*modules, files=()):
    """The digest of the toolkit's own code, configuration fragments and
    semantic patches: a result kept between runs depends on them too.
    With `modules`, only of those and what they import (imported()), and
    of `files`: for a result that depends on no other code."""
    if modules:
        paths = imported(*modules) | set(files)
    else:
        paths = (glob.glob(os.path.join(PACKAGE, "*.py"))
                 + glob.glob(os.path.join(REPO, "tools", "*.config"))
                 + glob.glob(os.path.join(REPO, "cocci", "*")))
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(f"{os.path.relpath(path, REPO)} {sha256(path)}\n".encode())
    return h.hexdigest()


def package_version(kver):
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}",
                           f"linux-source-{kver}"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def kernel_version(path):
    """VERSION.PATCHLEVEL.SUBLEVEL from the tree's Makefile."""
    fields = {}
    with open(os.path.join(path, "Makefile"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)", line)
            if m:
                fields[m.group(1)] = m.group(2)
            if len(fields) == 3:
                break
    if len(fields) != 3:
        raise Error(f"{path}/Makefile: no kernel version found")
    return "{VERSION}.{PATCHLEVEL}.{SUBLEVEL}".format(**fields)


class Tree:
    def __init__(self, kver, path, record):
        self.kver = kver
        self.path = path
        self.record = record

    @property
    def version(self):
        return self.record["kernel"]

    def __repr__(self):
        return f"Tree({self.kver}, {self.path})"


def _read_record(path):
    try:
        with open(os.path.join(path, ".git", RECORD), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def verify(path):
    """Why the tree at `path` is not a pristine baseline we made, or None.
    Checks what it claims against git rather than trusting it."""
    record = _read_record(path)
    if record is None:
        return f"{path} was not prepared by this tool (no .git/{RECORD})"
    tree = git(path, "rev-parse", "-q", "--verify", PRISTINE + "^{tree}",
               check=False).strip()
    if tree != record.get("tree"):
        return (f"{path}: the pristine tag does not point at the baseline "
                f"that was extracted (tree {tree or 'missing'}, recorded "
                f"{record.get('tree')})")
    parents = git(path, "rev-list", "--parents", "-n", "1",
                  PRISTINE).split()
    if len(parents) != 1:
        return f"{path}: the pristine commit is not a root commit"
    return None


def _extract(tarball, dest, label):
    """Extracts `tarball` into `dest`, printing progress by bytes read."""
    total = os.path.getsize(tarball)
    proc = subprocess.Popen(["tar", "-xJf", "-", "--strip-components=1",
                             "-C", dest], stdin=subprocess.PIPE)
    done, shown, start = 0, 0, time.monotonic()
    try:
        with open(tarball, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                proc.stdin.write(chunk)
                done += len(chunk)
                if time.monotonic() - start >= shown + 10:
                    shown += 10
                    say(f"    {label}: {100 * done // total}% "
                        f"({time.monotonic() - start:.0f}s)")
        proc.stdin.close()
    except BrokenPipeError:
        pass
    if proc.wait() != 0:
        raise Error(f"tar could not extract {tarball}")


def _baseline(kver, tarball, digest, dest):
    """Extracts the tarball into `dest` and commits it as the baseline."""
    os.makedirs(dest)
    _extract(tarball, dest, "extracting")
    version = kernel_version(dest)
    package = f"linux-source-{kver} {package_version(kver)}"
    git(dest, "init", "-q")
    git(dest, "config", "core.autocrlf", "false")
    git(dest, "config", "gc.auto", "0")     # no repack of 80k files mid-run
    say(f"    committing the baseline of Linux {version}")
    # Debian's .gitignore ignores everything at the top: add by force.
    git(dest, "add", "-A", "-f")
    stamp = str(int(os.path.getmtime(tarball))) + " +0000"
    ident = {"GIT_AUTHOR_NAME": "Debian " + package.split()[0],
             "GIT_AUTHOR_EMAIL": "debian-kernel@lists.debian.org",
             "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    ident["GIT_COMMITTER_NAME"] = ident["GIT_AUTHOR_NAME"]
    ident["GIT_COMMITTER_EMAIL"] = ident["GIT_AUTHOR_EMAIL"]
    message = (f"Linux {version} from Debian {package}\n\n"
               f"{tarball} extracted as it is.\n\n"
               f"Source-Package: {package}\n"
               f"Source-Tarball-SHA256: {digest}\n")
    git(dest, "commit", "-q", "--no-verify", "-m", message,
        env=dict(os.environ, **ident))
    git(dest, "tag", "-f", "pristine")
    record = {"kver": kver, "kernel": version, "package": package,
              "tarball": tarball, "sha256": digest,
              "tree": git(dest, "rev-parse", "HEAD^{tree}").strip()}
    output.write_json(os.path.join(dest, ".git", RECORD), record)
    return record


def prepare(kver, work=None, tarball=None):
    """Returns the pristine tree of `kver`, extracting it when it is missing
    or was made from another tarball.  Never replaces a tree that has local
    changes."""
    check_kver(kver)
    work = os.path.abspath(work or default_work())
    if os.path.commonpath([work, REPO]) == REPO:
        raise Error(f"work folder {work} is inside the repository {REPO}; "
                    "kernel trees must live outside it")
    tarball = tarball or tarball_path(kver)
    if not os.path.isfile(tarball):
        raise Error(f"{tarball} not found: install the Debian package "
                    f"linux-source-{kver} (make deps)")
    path = os.path.join(work, f"linux-{kver}")
    with Step(f"preparing the Linux {kver} tree in {path}"):
        digest = sha256(tarball)
        if os.path.exists(path):
            problem = verify(path)
            changes = [] if problem else local_changes(path)
            if changes:
                raise Error(
                    f"{path} has local changes, which this tool will not "
                    f"overwrite: commit, stash or remove them first "
                    f"(git -C {path} status):\n  "
                    + "\n  ".join(changes[:10]))
            if problem:
                raise Error(problem + f"; remove {path} to let it be "
                            "extracted again")
            record = _read_record(path)
            if record["sha256"] == digest:
                say(f"    reusing the pristine tree of Linux "
                    f"{record['kernel']} ({record['package']})")
                return Tree(kver, path, record)
            sent = git(path, "for-each-ref", "--format=%(refname:short)",
                       "refs/tags/sent/", "refs/heads/b4/").split()
            if sent:
                raise Error(
                    f"{tarball} changed since {record['package']}, but "
                    f"{path} holds its b4 series and the revisions of it "
                    f"({', '.join(sent)}), which extracting it again "
                    f"would lose: keep them (git -C {path} bundle create "
                    f"FILE --tags='sent/*' --branches='b4/*'; git fetch "
                    f"FILE 'refs/*:refs/*' brings them back), then delete "
                    "them")
            say(f"    {tarball} changed since {record['package']}: "
                "extracting it again")
        os.makedirs(work, exist_ok=True)
        new = os.path.join(work, f".linux-{kver}.new")
        old = os.path.join(work, f".linux-{kver}.old")
        for leftover in (new, old):
            shutil.rmtree(leftover, ignore_errors=True)
        record = _baseline(kver, tarball, digest, new)
        if os.path.exists(path):
            os.rename(path, old)
        os.rename(new, path)
        shutil.rmtree(old, ignore_errors=True)
        say(f"    Linux {record['kernel']} ({record['package']}) is at "
            f"{path}, tagged pristine")
        return Tree(kver, path, record)


@contextlib.contextmanager
def locked(tree, name):
    """Holds an exclusive lock named `name` next to the tree while the
    body runs, waiting for another run of the toolkit that holds it."""
    path = f"{tree.path}-{name}.lock"
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


CONFIGS = (".checkpatch.conf", ".get_maintainer.conf",
           ".get_maintainer.ignore")


def scripts_state(path):
    """What the tree's own tools answer depends on besides their input
    (checkpatch.pl, get_maintainer.pl): the commit the tree was extracted
    as, and its scripts and the files they read as the checkout has them,
    by their blobs."""
    files = ("scripts", "LICENSES", "MAINTAINERS", "Documentation/process")
    state = (git(path, "rev-parse", PRISTINE)
             + git(path, "ls-files", "-s", "--", *files)
             + git(path, "diff", "HEAD", "--", *files)
             + git(path, "status", "--porcelain", "--untracked-files=all",
                   "--", *files))
    # Their configuration files, where checkpatch.pl and get_maintainer.pl
    # look for them.
    for folder in (path, os.path.expanduser("~"),
                   os.path.join(path, ".scripts")):
        for name in CONFIGS:
            try:
                with open(os.path.join(folder, name), encoding="utf-8",
                          errors="replace") as f:
                    state += f"{folder}/{name}:{f.read()}"
            except OSError:
                pass
    return state


def cache(tree, *names):
    """A path under the work folder's cache/, beside `tree`: what the
    toolkit keeps between runs, keyed by content, safe to delete."""
    return os.path.join(os.path.dirname(tree.path), "cache", *names)


def worktree(tree, suffix):
    """A git worktree of `tree` next to it, <tree>-<suffix>, made once at
    the pristine commit; it shares the tree's objects and branches, so
    that work on it leaves the tree's own checkout and builds alone."""
    path = f"{tree.path}-{suffix}"
    if not os.path.isdir(path):
        git(tree.path, "worktree", "prune")
        git(tree.path, "worktree", "add", "-q", "--detach", path,
            PRISTINE + "^{commit}")
    return Tree(tree.kver, path, tree.record)


def switch(tree, branch, start=PRISTINE):
    """Checks out `branch`, created at `start` when missing.  The tree must
    have no local changes."""
    changes = local_changes(tree.path)
    if changes:
        raise Error(f"{tree.path} has local changes; refusing to switch "
                    f"branches:\n  " + "\n  ".join(changes[:10]))
    exists = git(tree.path, "rev-parse", "-q", "--verify",
                 "refs/heads/" + branch, check=False).strip()
    if exists:
        git(tree.path, "checkout", "-q", branch)
    else:
        git(tree.path, "checkout", "-q", "-b", branch, start)
