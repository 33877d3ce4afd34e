"""The Debian packages the toolkit needs, installed when missing."""

import os
import shutil
import subprocess

from . import arches, compiletest
from .progress import Error, Step, say

PACKAGES = [
    # kernel sources
    "linux-source-6.1", "linux-source-6.12", "xz-utils",
    # building a kernel
    "gcc", "make", "flex", "bison", "bc", "libelf-dev", "libssl-dev",
    "cpio", "ccache", "perl", "git",
    # spreading the builds over a farm (--distcc)
    "distcc",
    # the series as a b4 branch (git-filter-repo: b4 prep --edit-cover)
    "b4", "git-filter-repo",
    # checking and converting
    "coccinelle", "sparse", "python3-yaml", "python3-ply", "python3-git",
    # the runtime test's guest userland, and depmod for its modules
    "busybox-static", "kmod",
] + [
    # booting it, on each architecture of the boot test
    arch.package for arch in arches.ARCHES.values()
] + [
    # compile-testing the files of other architectures
    "gcc-" + prefix[:-1] for prefix in sorted(compiletest.CROSS.values())
    if prefix
]


def missing(packages=PACKAGES):
    """The packages of `packages` that dpkg does not report installed."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n"] + packages,
        capture_output=True, text=True).stdout
    installed = {line.split()[0] for line in out.splitlines()
                 if len(line.split()) > 1 and line.split()[1] == "ii"}
    return [p for p in packages if p not in installed]


def _apt(args):
    cmd = ["apt-get", "-q", "-y"] + args
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            raise Error("installing Debian packages needs root or sudo: "
                        + " ".join(cmd))
        cmd = ["sudo", "-E"] + cmd
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(cmd, env=env).returncode


def ensure(packages=PACKAGES):
    """Installs the missing packages; refreshes the package lists once if
    the first attempt fails."""
    todo = missing(packages)
    if not todo:
        return
    with Step(f"installing {len(todo)} Debian packages: {' '.join(todo)}"):
        install = ["install", "--no-install-recommends"] + todo
        if _apt(install) != 0:
            say("    refreshing the package lists and trying again")
            if _apt(["update"]) != 0 or _apt(install) != 0:
                raise Error("apt-get could not install: " + " ".join(todo))
    still = missing(packages)
    if still:
        raise Error("still missing after apt-get: " + " ".join(still))
