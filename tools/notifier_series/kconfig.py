"""Kernel configurations: a fragment merged onto tinyconfig with the
kernel's own merge_config.sh, then checked option by option, since Kconfig
silently drops an option whose dependencies are missing."""

import os
import re
import subprocess

from .progress import Error

SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse_fragment(path):
    """[(line number, symbol, value)] with value None for "is not set".
    A line that is neither an option, a comment nor blank is an error."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = SET.match(line) or UNSET.match(line)
            if m:
                value = m.group(2) if m.re is SET else None
                entries.append((number, m.group(1), value))
            elif line.strip() and not line.startswith("#"):
                raise Error(f"{path}:{number}: not a Kconfig option: "
                            f"{line!r}")
    return entries


def parse_config(path):
    """{symbol: value} of a .config, None for "is not set"."""
    values = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = SET.match(line) or UNSET.match(line)
            if m:
                values[m.group(1)] = m.group(2) if m.re is SET else None
    return values


def defined(tree_path, symbol):
    """Whether some Kconfig file of the tree declares `symbol`."""
    name = symbol[len("CONFIG_"):]
    proc = subprocess.run(
        ["git", "grep", "-q", "-E", rf"^\s*(menu)?config\s+{name}\s*$",
         "--", "*Kconfig*"], cwd=tree_path, check=False)
    return proc.returncode == 0


def declared_for(tree_path, symbol, arch):
    """Whether a Kconfig file of the tree that another architecture's
    folder does not hold declares `symbol` (kvm_guest.config asks for
    S390_GUEST on every architecture)."""
    name = symbol[len("CONFIG_"):]
    proc = subprocess.run(
        ["git", "grep", "-l", "-E", rf"^\s*(menu)?config\s+{name}\s*$",
         "--", "*Kconfig*"], cwd=tree_path, capture_output=True, text=True,
        check=False)
    if proc.returncode not in (0, 1):
        raise Error(f"git grep for the Kconfig of {symbol} in {tree_path} "
                    f"failed: {proc.stderr.strip()}")
    return any(not f.startswith("arch/") or f.startswith(f"arch/{arch}/")
               for f in proc.stdout.split())


def unmet(fragment, config, declared=lambda symbol: True):
    """The options of `fragment` (a path) that the .config at `config` does
    not hold, one message each with the fragment's file and line; an
    option missing for want of declared(symbol) is not counted."""
    have = parse_config(config)
    problems = []
    for number, symbol, value in parse_fragment(fragment):
        got = have.get(symbol)
        if got is None and value is not None and not declared(symbol):
            continue
        if value is None:
            if got not in (None, "n"):
                problems.append(f"{fragment}:{number}: {symbol} should be "
                                f"unset, .config has {symbol}={got}")
        elif got != value:
            shown = "it unset" if got is None else f"{symbol}={got}"
            problems.append(f"{fragment}:{number}: {symbol}={value} "
                            f"requested, .config has {shown} (missing "
                            "dependencies?)")
    return problems


def make_config(tree_path, build_dir, fragments, make_args, log,
                declared_only=False, base=("tinyconfig",), declared=None):
    """Writes build_dir/.config: the `base` make targets (tinyconfig, or
    say defconfig and kvm_guest.config), the fragments merged in order,
    olddefconfig; raises Error listing every option that did not land.
    With declared_only, options the tree does not declare yet (the KUnit
    test's, before the patch that adds it) are let pass; `declared`, a
    predicate of the symbol, lets pass those it says are not declared."""
    os.makedirs(build_dir, exist_ok=True)
    steps = [
        ["make", "-C", tree_path, f"O={build_dir}"] + make_args
        + list(base),
        [os.path.join(tree_path, "scripts/kconfig/merge_config.sh"), "-m",
         "-O", build_dir, os.path.join(build_dir, ".config")] + fragments,
        ["make", "-C", tree_path, f"O={build_dir}"] + make_args
        + ["olddefconfig"],
    ]
    for cmd in steps:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                              cwd=tree_path)
        if proc.returncode != 0:
            raise Error(f"{' '.join(cmd[:4])} failed; see {log.name}")
    if declared is None:
        declared = ((lambda symbol: defined(tree_path, symbol))
                    if declared_only else (lambda symbol: True))
    problems = []
    for fragment in fragments:
        problems += unmet(fragment, os.path.join(build_dir, ".config"),
                          declared)
    if problems:
        raise Error("the kernel configuration lacks requested options:\n  "
                    + "\n  ".join(problems))
