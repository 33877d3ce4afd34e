"""Compile-test of the files a series touches: every touched .c and .S
file that x86_64 can build is compiled, one object each, under
allmodconfig, so that the config enables it; files of other
architectures are compiled with a Debian cross compiler when one is
installed, and listed as not compiled otherwise, and so are the files
outside arch/ that x86_64 allmodconfig leaves out, on the first
architecture whose allmodconfig builds them.  A file that fails is
compiled on the pristine tree too: failing there as well, it is listed
as not compilable, not as a failure of the series."""

import contextlib
import os
import re
import shutil
import subprocess

from . import kconfig, memo, tree
from .arches import cc
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

# Where a file outside arch/ that x86_64 allmodconfig leaves out is tried,
# in this order: the architectures with the most drivers first; alpha
# last, as its allmodconfig does not build on 6.1.
ELSEWHERE = ("arm64", "powerpc", "s390", "riscv", "arm", "mips", "sparc",
             "parisc", "sh", "alpha")


def arch_of(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "arch" and len(parts) > 2 else "x86"


def configure(kernel_path, build_dir, log, arch="x86_64", cross=None):
    """allmodconfig without the slow debug options, in `build_dir`."""
    os.makedirs(build_dir, exist_ok=True)
    args = [f"ARCH={arch}"] + ([f"CROSS_COMPILE={cross}"] if cross else [])
    make = (["make", "-C", kernel_path, f"O={build_dir}"] + args
            + cc(cross or ""))
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
                  arch="x86_64", cross=None, kept=None):
    """{file: True when its object was built now, or was built before
    from the same inputs (`kept`, a Built, asked after `make prepare`
    has brought the configuration and the generated headers up to
    date)}.  The objects that parallel jobs did not build are built
    again by one job: for single targets Kbuild may reach one folder
    twice (um does), and two jobs then race to write the same object."""
    args = [f"ARCH={arch}"] + ([f"CROSS_COMPILE={cross}"] if cross else [])
    make = (["make", "-C", kernel_path, f"O={build_dir}", f"-j{jobs}", "-k"]
            + args + cc(cross or ""))
    if kept and run_logged(make + ["prepare"], log, f"{label}, prepare"):
        say(f"    make prepare failed (see {log}): every file is compiled, "
            "and none is kept")
        kept = None
    if kept and not kept.load():
        kept = None
    known = {f for f in files if kept and kept.built(f)}
    todo = [f for f in files if f not in known]
    if known:
        say(f"    {len(known)} of {len(files)} files built before from the "
            "same inputs (their .cmd's)")
    objects = [f[:-2] + ".o" for f in todo]
    # Each is compiled now (ccache answers what it compiled before): an
    # object that make found up to date would not say whether its file
    # still builds.
    for o in objects:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(build_dir, o))
    built = dict.fromkeys(known, True)
    if todo:
        run_logged(make + objects, log, label)
        built.update((f, os.path.exists(os.path.join(build_dir, o)))
                     for f, o in zip(todo, objects))
    again = [f for f in todo if not built[f]]
    if again and jobs > 1:
        built.update(build_objects(kernel_path, build_dir, again, 1, log,
                                   f"{label}, again by one job", arch,
                                   cross))
    if kept and todo and kept.reload():     # what the build left
        for f in todo:
            if built[f]:
                kept.keep(f)
    return built


class Built:
    """The files of a tree whose objects were built before from the same
    inputs, in a build folder: a file's key is what its object's .cmd
    names (the command, the source and each file it included, by
    content, and the CONFIG_ options it read, by whether their file
    exists), with the build's configuration (`.config` and `auto.conf`),
    the list of the tree's files (a new header may shadow another), every
    file of it that no compiler of the kernel reads (Makefiles, Kconfig)
    and every file of the host tools that run in an object's rule
    (scripts/, tools/: fixdep, genksyms, objtool), and `state`, the
    compilers' versions and the environment.  Only a file built now is
    kept; a tree with local changes, even ignored ones, keeps nothing."""

    def __init__(self, folder, kernel_path, build_dir, state):
        self.folder, self.tree, self.build_dir = (folder, kernel_path,
                                                  build_dir)
        self.state = state
        self.blobs = None

    def reload(self):
        """load() again after a build, True when the tree is as it was
        before (a checkout meanwhile, say by make bisect, would key what
        was compiled under files that were not)."""
        before = self.blobs
        return before is not None and self.load() and self.blobs == before

    def load(self):
        """Reads the tree's files and the build's configuration; False
        when the tree has local changes or the build no configuration."""
        self.blobs, self.contents = None, {}
        if not tree.clean(self.tree):
            return False
        blobs = tree.blobs(self.tree)
        configs = []
        for name in (".config", os.path.join("include", "config",
                                             "auto.conf")):
            try:
                with open(os.path.join(self.build_dir, name), "rb") as f:
                    configs.append(f.read())
            except OSError:
                return False
        self.blobs = blobs
        self.base = memo.key(
            "object", self.state, *configs, *sorted(blobs),
            *(f"{p} {b}" for p, b in sorted(blobs.items())
              if not p.endswith((".c", ".h", ".S"))
              or p.startswith(("scripts/", "tools/"))))
        return True

    def key(self, source):
        """The key of `source` by its object's .cmd, or None."""
        if self.blobs is None or source not in self.blobs:
            return None
        obj = source[:-2] + ".o"
        cmd = os.path.join(self.build_dir, os.path.dirname(obj),
                           f".{os.path.basename(obj)}.cmd")
        try:
            with open(cmd, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
        m = re.search(r"^deps_\S+ := ((?:.*\\\n)*.*)$", text, re.M)
        command = re.search(r"^(?:saved)?cmd_\S+ := (.*)$", text, re.M)
        if not m or not command:
            return None
        parts = [self.base, source, self.blobs[source], command.group(1)]
        for dep in re.findall(r"\$\(wildcard (\S+)\)|(\S+)", m.group(1)):
            if dep[0]:
                there = os.path.exists(os.path.join(self.build_dir, dep[0]))
                parts.append(f"{dep[0]} {there}")
            elif dep[1] != "\\":
                content = self._content(dep[1])
                if content is None:
                    return None
                parts.append(f"{dep[1]} {content}")
        return memo.key(*parts)

    def _content(self, dep):
        """A dependency's blob in the tree, else the digest of its
        content: a compiler's file, or one of the build folder that make
        prepare made (under GENERATED; one that the object's own rule
        may make again from a source of the tree, as lib/crc32table.h,
        gives no key).  None when it is missing."""
        prefix = self.tree.rstrip("/") + "/"
        if dep.startswith(prefix):
            return self.blobs.get(dep[len(prefix):])
        if not os.path.isabs(dep) and not GENERATED.match(dep):
            return None
        if dep not in self.contents:
            try:
                self.contents[dep] = tree.sha256(os.path.join(
                    self.build_dir, dep))     # dep when it is absolute
            except OSError:
                self.contents[dep] = None
        return self.contents[dep]

    def built(self, source):
        """Whether `source`'s object, there, was built from these inputs."""
        digest = self.key(source)
        return bool(digest and os.path.exists(os.path.join(
            self.build_dir, source[:-2] + ".o"))
            and memo.get(self.folder, digest))

    def keep(self, source):
        digest = self.key(source)
        if digest:
            memo.put(self.folder, digest, True)


# The files of a build folder that make prepare makes: the configuration
# and the generated headers.
GENERATED = re.compile(r"(?:arch/[^/]+/)?include/(?:generated|config)/")


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


def toolchain(arch):
    """(make's ARCH, CROSS_COMPILE) that build `arch`, or None when no
    compiler for it is installed."""
    if arch == "x86":
        return "x86_64", None
    if arch in CROSS and shutil.which(CROSS[arch] + "gcc"):
        return arch, CROSS[arch] or None
    return None


class CompileTest:
    """The compile-test of one series: a build folder per architecture,
    configured once, and the result."""

    def __init__(self, kernel_tree, build_dir, pristine, log, jobs,
                 objects=None):
        self.tree, self.build_dir, self.pristine = (kernel_tree.path,
                                                    build_dir, pristine)
        self.log, self.jobs, self.objects = log, jobs, objects
        self.tools = None
        self.configs = {}
        self.result = {"compiled": 0, "touched": 0, "failed": [],
                       "not_compiled": [], "x86_touched": 0,
                       "x86_compiled": 0, "compiled_on": {}}

    def config(self, arch):
        """The .config values of `arch`'s allmodconfig, None when it
        failed."""
        if arch not in self.configs:
            make_arch, cross = toolchain(arch)
            folder = f"{self.build_dir}-{arch}"
            ok = configure(self.tree, folder, self.log, make_arch, cross)
            self.configs[arch] = (kconfig.parse_config(
                os.path.join(folder, ".config")) if ok else None)
        return self.configs[arch]

    def compile(self, arch, group):
        """Compiles `group` on `arch`; returns the files compiled and
        {file: (why not, Kconfig symbol left unset or None)} of the
        rest.  A file the series breaks goes to result["failed"]."""
        make_arch, cross = toolchain(arch)
        with Step(f"compile-test: {len(group)} files on {arch} under "
                  "allmodconfig"):
            values = self.config(arch)
            if values is None:
                return [], {f: (f"allmodconfig failed for {arch}", None)
                            for f in group}
            folder = f"{self.build_dir}-{arch}"
            built = build_objects(self.tree, folder, group, self.jobs,
                                  self.log, f"compile-test {arch}",
                                  make_arch, cross,
                                  self.kept(self.tree, folder, arch))
        left, failed = {}, []
        for f in (f for f in group if not built[f]):
            symbol = kconfig_symbol(self.tree, f)
            if symbol and not values.get(symbol):
                left[f] = (f"needs {symbol}, which {make_arch} allmodconfig "
                           "leaves unset (a dependency is not met)", symbol)
            else:
                failed.append((f, symbol))
        if failed:
            with Step(f"compiling the {len(failed)} files that failed on the "
                      "pristine tree"):
                base = f"{self.build_dir}-{arch}-pristine"
                ok = configure(self.pristine, base, self.log, make_arch,
                               cross)
                before = (build_objects(self.pristine, base,
                                        [f for f, _ in failed], self.jobs,
                                        self.log, "pristine", make_arch,
                                        cross, self.kept(self.pristine,
                                                         base, arch))
                          if ok else None)
            for f, symbol in failed:
                # Without the pristine tree's answer, the series broke it.
                if before is None or before.get(f):
                    self.result["failed"].append(f)
                else:
                    left[f] = ("does not build under allmodconfig on the "
                               "pristine tree either"
                               + (f" ({symbol}={values.get(symbol)})"
                                  if symbol else ""), None)
        return [f for f in group if built[f]], left

    def kept(self, kernel_path, folder, arch):
        """The Built of `kernel_path` in the build folder `folder`, or
        None without a cache."""
        if self.objects is None:
            return None
        self.tools = self.tools or tools_state()
        return Built(self.objects, kernel_path, folder,
                     memo.key(self.tools, arch))


def state(kernel_path, pristine, files, arches):
    """What the compile-test's answer depends on: the content of both
    trees, the files, the architectures and tools_state(); None when a
    tree has changes that are not committed, untracked or ignored files
    (then nothing is kept)."""
    parts = [tools_state(), " ".join(sorted(files)),
             repr(sorted(arches) if arches is not None else None)]
    for path in (kernel_path, pristine):
        if not tree.clean(path):
            return None
        parts.append(tree.git(path, "rev-parse", "HEAD^{tree}"))
    return memo.key(*parts)


def tools_state():
    """What a compile depends on beside the tree: each compiler's
    version, make's, what the environment gives make, and the toolkit's
    code.  Not MAKEFLAGS: make's jobserver changes it at every run."""
    parts = [tree.code_state("compiletest"), _version("make")]
    for arch in sorted(set(CROSS) | {"x86"}):
        chain = toolchain(arch)
        parts += [_version((chain[1] or "") + tool)
                  for tool in (("gcc", "as", "ld") if chain else ())]
    parts += sorted(f"{k}={v}" for k, v in os.environ.items()
                    if k.startswith(("K", "ARCH", "CROSS", "CC", "HOST",
                                     "PATH", "LLVM")))
    return memo.key(*parts)


def _version(tool):
    """`tool --version`, or that it is missing."""
    try:
        return subprocess.run([tool, "--version"], capture_output=True,
                              text=True).stdout
    except OSError as e:
        return f"{tool}: {e.strerror}"


def cached_run(cache, kernel_tree, files, build_dir, pristine, log, jobs,
               arches=None):
    """run(), or its answer and log from `cache` for the same state();
    only answers without a failure are kept."""
    digest = state(kernel_tree.path, pristine, files, arches)
    kept = memo.get(cache, digest) if digest else None
    if kept:
        with open(log, "w", encoding="utf-8") as f:
            f.write(kept["log"])
        say(f"    compile-test: the answer of the same trees and compilers "
            f"(cache {cache}): {kept['result']['compiled']}/"
            f"{kept['result']['touched']} touched files compiled, "
            f"{len(kept['result']['failed'])} broken by the series")
        return kept["result"]
    result = run(kernel_tree, files, build_dir, pristine, log, jobs, arches,
                 os.path.join(cache, "objects"))
    # A failure may be the machine's (a killed compiler): never kept;
    # nor an answer of trees that changed while it was made.
    if digest and not result["failed"] and digest == state(
            kernel_tree.path, pristine, files, arches) and not any(
            "allmodconfig failed" in n["why"]
            for n in result["not_compiled"]):
        with open(log, encoding="utf-8", errors="replace") as f:
            memo.put(cache, digest, {"result": result, "log": f.read()})
    return result


def run(kernel_tree, files, build_dir, pristine, log, jobs, arches=None,
        objects=None):
    """{"compiled": N, "touched": N, "x86_compiled": N, "x86_touched": N,
    "failed": [...], "not_compiled": [{"file", "why"}], "compiled_on":
    {file: arch}, "arches": [...]}: each file on its own architecture, x86
    for those outside arch/; one that x86_64 allmodconfig leaves out on
    the first other architecture whose allmodconfig builds it.  With
    `arches`, only those architectures are built, and the files of the
    others are listed as not compiled, with that reason.  With `objects`
    (a cache folder), a file built before from the same inputs is not
    compiled again (Built)."""
    def chosen(arch):
        return toolchain(arch) and (arches is None or arch in arches)
    limited = ("; this run compiled only on " + ", ".join(sorted(arches))
               if arches is not None else "")
    sources = sorted(f for f in files if f.endswith((".c", ".S")))
    by_arch = {}
    for f in sources:
        by_arch.setdefault(arch_of(f), []).append(f)
    test = CompileTest(kernel_tree, build_dir, pristine, log, jobs, objects)
    result = test.result
    result["touched"] = len(sources)
    result["x86_touched"] = len(by_arch.get("x86", []))
    not_compiled = {}
    elsewhere = {}          # x86's files whose symbol x86_64 leaves unset
    for arch, group in sorted(by_arch.items()):
        if toolchain(arch) is None:
            not_compiled.update(
                (f, f"no cross compiler for arch/{arch} is installed"
                 + (f" ({CROSS[arch]}gcc)" if arch in CROSS else ""))
                for f in group)
            continue
        if not chosen(arch):
            not_compiled.update((f, f"not compiled{limited}")
                                for f in group)
            continue
        done, left = test.compile(arch, group)
        result["compiled"] += len(done)
        if arch == "x86":
            result["x86_compiled"] = len(done)
        for f, (why, symbol) in left.items():
            not_compiled[f] = why
            if arch == "x86" and symbol:
                # Not counted as a file of x86: tried elsewhere.
                result["x86_touched"] -= 1
                elsewhere[f] = symbol
    for arch in (a for a in ELSEWHERE if chosen(a)):
        values = test.config(arch) if elsewhere else None
        here = [f for f, symbol in sorted(elsewhere.items())
                if values and values.get(symbol)]
        if not here:
            continue
        done, left = test.compile(arch, here)
        result["compiled"] += len(done)
        for f in here:
            if f in left:
                not_compiled[f] += f"; on {arch}: {left[f][0]}"
            else:       # compiled, or broken by the series
                del not_compiled[f]
                if f in done:
                    result["compiled_on"][f] = arch
            del elsewhere[f]
    for f in elsewhere:
        not_compiled[f] += limited
    result["not_compiled"] = [{"file": f, "why": why}
                              for f, why in sorted(not_compiled.items())]
    result["arches"] = sorted(arches) if arches is not None else "all"
    say(f"    compile-test: {result['compiled']}/{result['touched']} touched "
        f"files compiled, {len(result['failed'])} broken by the series")
    return result
