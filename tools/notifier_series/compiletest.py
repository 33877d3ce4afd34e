"""Compile-test of the files a series touches: every touched .c file that
x86_64 can build is compiled, one object each, under allmodconfig, so
that the config enables it; files of other architectures are compiled
with a Debian cross compiler when one is installed, and listed as not
compiled otherwise.  A file that fails is compiled on the pristine tree
too: failing there as well, it is listed as not compilable, not as a
failure of the series."""

import os
import re
import shutil
import subprocess
import time

from . import kconfig
from .progress import Step, run_logged, say

# Debug options of allmodconfig that only slow the compile-test down.
SLOW = ("KASAN", "KCSAN", "UBSAN", "KCOV", "GCOV_KERNEL", "DEBUG_INFO",
        "DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT", "DEBUG_INFO_DWARF4",
        "DEBUG_INFO_DWARF5", "DEBUG_INFO_BTF", "KMSAN", "WERROR")
# Architectures and the prefix of the Debian cross compiler that builds
# them (its package: gcc-<prefix without the last dash>); um builds with
# the machine's own gcc.
CROSS = {"alpha": "alpha-linux-gnu-", "arm": "arm-linux-gnueabi-",
         "arm64": "aarch64-linux-gnu-", "mips": "mips-linux-gnu-",
         "parisc": "hppa-linux-gnu-", "powerpc": "powerpc64le-linux-gnu-",
         "riscv": "riscv64-linux-gnu-", "s390": "s390x-linux-gnu-",
         "sh": "sh4-linux-gnu-", "sparc": "sparc64-linux-gnu-", "um": ""}


def ccache(cross):
    if not shutil.which("ccache"):
        return []
    return [f"CC=ccache {cross or ''}gcc"]


def arch_of(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "arch" and len(parts) > 2 else "x86"


def configure(kernel_path, build_dir, log, arch="x86_64", cross=None):
    """allmodconfig without the slow debug options, in `build_dir`."""
    os.makedirs(build_dir, exist_ok=True)
    args = [f"ARCH={arch}"] + ([f"CROSS_COMPILE={cross}"] if cross else [])
    make = ["make", "-C", kernel_path, f"O={build_dir}"] + args + ccache(cross)
    rc = run_logged(make + ["allmodconfig"], log, "allmodconfig")
    if rc != 0:
        return False
    config = [os.path.join(kernel_path, "scripts", "config"), "--file",
              os.path.join(build_dir, ".config")]
    for option in SLOW:
        subprocess.run(config + ["--disable", option], check=True)
    subprocess.run(config + ["--enable", "DEBUG_INFO_NONE"], check=True)
    return run_logged(make + ["olddefconfig"], log, "olddefconfig") == 0


def build_objects(kernel_path, build_dir, files, jobs, log, label,
                  arch="x86_64", cross=None):
    """{file: True when its object was built now}."""
    objects = [f[:-2] + ".o" for f in files]
    start = time.time()
    args = [f"ARCH={arch}"] + ([f"CROSS_COMPILE={cross}"] if cross else [])
    cmd = (["make", "-C", kernel_path, f"O={build_dir}", f"-j{jobs}", "-k"]
           + args + ccache(cross) + objects)
    run_logged(cmd, log, label)
    built = {}
    for f, o in zip(files, objects):
        path = os.path.join(build_dir, o)
        built[f] = os.path.exists(path) and os.path.getmtime(path) >= start
    return built


def kconfig_symbol(kernel_path, source):
    """The CONFIG_ symbol that builds `source`, from its directory's
    Makefile (obj-$(CONFIG_X) += file.o, or through a composite object),
    or None."""
    folder, name = os.path.split(source)
    stem = os.path.splitext(name)[0]
    try:
        with open(os.path.join(kernel_path, folder, "Makefile"),
                  encoding="utf-8", errors="replace") as f:
            text = f.read().replace("\\\n", " ")
    except OSError:
        return None
    wanted = {stem}
    for _ in range(3):
        for line in text.splitlines():
            m = re.match(r"\s*obj-\$\((CONFIG_\w+)\)\s*[:+]?=(.*)", line)
            if m and wanted & {os.path.splitext(w)[0]
                               for w in m.group(2).split()}:
                return m.group(1)
        composite = set()
        for line in text.splitlines():
            m = re.match(r"\s*([\w-]+?)-(y|objs|\$\((CONFIG_\w+)\))\s*"
                         r"[:+]?=(.*)", line)
            if m and wanted & {os.path.splitext(w)[0]
                               for w in m.group(4).split()}:
                if m.group(3):
                    return m.group(3)     # the file's own switch
                composite.add(m.group(1))
        if not composite - wanted:
            return None
        wanted |= composite
    return None


def run(kernel_tree, files, build_dir, pristine, log, jobs):
    """{"compiled": N, "touched": N, "x86_compiled": N, "x86_touched": N,
    "failed": [...], "not_compiled": [{"file", "why"}]}."""
    sources = sorted(f for f in files if f.endswith((".c", ".S")))
    by_arch = {}
    for f in sources:
        by_arch.setdefault(arch_of(f), []).append(f)
    result = {"compiled": 0, "touched": len(sources), "failed": [],
              "not_compiled": [], "x86_touched": len(by_arch.get("x86", [])),
              "x86_compiled": 0, "log": log}
    for arch, group in sorted(by_arch.items()):
        if arch == "x86":
            make_arch, cross = "x86_64", None
        elif arch in CROSS and shutil.which(CROSS[arch] + "gcc"):
            make_arch, cross = arch, CROSS[arch] or None
        else:
            why = (f"no cross compiler for arch/{arch} is installed"
                   + (f" ({CROSS[arch]}gcc)" if arch in CROSS else ""))
            result["not_compiled"] += [{"file": f, "why": why} for f in group]
            continue
        folder = f"{build_dir}-{arch}"
        with Step(f"compile-test: {len(group)} files of {arch} under "
                  "allmodconfig"):
            if not configure(kernel_tree.path, folder, log, make_arch, cross):
                result["not_compiled"] += [
                    {"file": f, "why": f"allmodconfig failed for {arch}"}
                    for f in group]
                continue
            built = build_objects(kernel_tree.path, folder, group, jobs, log,
                                  f"compile-test {arch}", make_arch, cross)
        values = kconfig.parse_config(os.path.join(folder, ".config"))
        failed = []
        for f in (f for f in group if not built[f]):
            symbol = kconfig_symbol(kernel_tree.path, f)
            if symbol and not values.get(symbol):
                # allmodconfig does not build it: not counted as a file of
                # this architecture.
                result["not_compiled"].append({
                    "file": f, "why": f"needs {symbol}, which {make_arch} "
                    "allmodconfig leaves unset (a dependency is not met)"})
                if arch == "x86":
                    result["x86_touched"] -= 1
            else:
                failed.append((f, symbol))
        if failed:
            with Step(f"compiling the {len(failed)} files that failed on the "
                      "pristine tree"):
                base = f"{build_dir}-{arch}-pristine"
                ok = configure(pristine, base, log, make_arch, cross)
                before = (build_objects(pristine, base,
                                        [f for f, _ in failed], jobs, log,
                                        "pristine", make_arch, cross)
                          if ok else {})
            for f, symbol in failed:
                if before.get(f):
                    result["failed"].append(f)
                else:
                    result["not_compiled"].append({
                        "file": f, "why": "does not build under allmodconfig "
                        "on the pristine tree either"
                        + (f" ({symbol}={values.get(symbol)})" if symbol
                           else "")})
        done = sum(1 for f in group if built[f])
        result["compiled"] += done
        if arch == "x86":
            result["x86_compiled"] = done
    say(f"    compile-test: {result['compiled']}/{result['touched']} touched "
        f"files compiled, {len(result['failed'])} broken by the series")
    return result
