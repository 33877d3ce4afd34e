"""A tiny linux-source tarball, shaped like Debian's, for the tree tests."""

import os
import subprocess
import tempfile

MAKEFILE = """# SPDX-License-Identifier: GPL-2.0
VERSION = {0}
PATCHLEVEL = {1}
SUBLEVEL = {2}
EXTRAVERSION =
"""

IDENT = ["-c", "user.name=T", "-c", "user.email=t@example.org"]

NOTIFIER_C = """// SPDX-License-Identifier: GPL-2.0-only
int notifier_call_chain(void)
{
\treturn 0;
}
"""


def make_tarball(folder, version="9.9.1", extra=None):
    """Writes folder/linux-source-X.Y.tar.xz holding linux-source-X.Y/ with
    a Makefile, kernel/notifier.c, Debian's top-level .gitignore that
    ignores everything, and `extra` {path: text}; returns its path."""
    major, minor, sub = version.split(".")
    top = f"linux-source-{major}.{minor}"
    files = {"Makefile": MAKEFILE.format(major, minor, sub),
             "kernel/notifier.c": NOTIFIER_C,
             ".gitignore": "*.o\n/*\n!/debian/\n"}
    files.update(extra or {})
    with tempfile.TemporaryDirectory() as tmp:
        for path, text in files.items():
            full = os.path.join(tmp, top, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        tarball = os.path.join(folder, f"{top}.tar.xz")
        subprocess.run(["tar", "-cJf", tarball, "-C", tmp, top], check=True)
    return tarball


def git(path, *args):
    return subprocess.run(["git", "-C", path] + list(args), check=True,
                          capture_output=True, text=True).stdout


def commit_on_branch(path, branch, message="commit"):
    """Commits nothing on a new `branch` of the tree at `path`."""
    git(path, "checkout", "-q", "-b", branch)
    git(path, *IDENT, "commit", "-q", "--allow-empty", "-m", message)
