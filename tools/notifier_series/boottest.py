"""The boot test: the core-patched tree built with a small debug config and
booted in QEMU; KUnit's results and the console's splats give the verdict.
"""

import os
import re
import shutil
import time

from . import (arches, checkpatch, console, distcc, kconfig, ktap, output,
               patches, qemu, torture, tree)
from .progress import Error, Step, run_logged, say, tail
from .records import BootResult

SUITES = ("notifier", "notifier_torture")
# Files whose __rcu annotations sparse must accept without a warning.
SPARSE_FILES = ("kernel/notifier.o", "kernel/notifier_kunit.o",
                "kernel/notifier_torture.o")
# A hang (a chain turned into a cycle spins a CPU) is a soft lockup report
# within 20 s, and the panic that follows ends the boot.
APPEND = ("kunit_shutdown=reboot panic=-1 softlockup_panic=1 "
          "notifier_kunit_early notifier_kunit.expect_warnings=1")
# The torture test (CONFIG_NOTIFIER_TORTURE_TEST) runs these chain types in
# turn at boot, for TORTURE_SECONDS each unless told otherwise.
TORTURE_TYPES = ("atomic", "blocking")
TORTURE_SECONDS = 5
# Milliseconds between the torture's CPU hotplug operations.
ONOFF_MS = 200


def append(torture_seconds=TORTURE_SECONDS, torture_types=TORTURE_TYPES,
           arch=None):
    """The kernel command line of a boot test.  With torture_seconds 0 the
    torture's KUnit cases skip without starting a thread: a kernel with a
    broken chain (a mutant) then lives on to run its other KUnit tests."""
    arch = arch or arches.get(arches.DEFAULT)
    line = (f"console={arch.console} {APPEND} {arch.cmdline} "
            f"notifier_torture.duration={torture_seconds} "
            f"notifier_torture.torture_type={','.join(torture_types)}")
    if torture_seconds:
        line += f" notifier_torture.onoff_interval={ONOFF_MS}"
    return line

# Exit status of each outcome; when several apply, the highest wins.
OUTCOMES = {"pass": 0, "test-failure": 1, "splat": 2, "timeout": 3,
            "harness-error": 4}


def build(kernel_tree, build_dir, log_path, jobs, declared_only=False,
          fragments=None, arch=None, base=("tinyconfig",), targets=(),
          declared=None):
    """Configures and builds the kernel of `arch` in `build_dir` from the
    `base` make targets and `fragments` (default: the boot test's for
    `arch`), and the image with `targets` (say, modules); returns the
    image's path.  declared_only, declared: see kconfig.make_config()."""
    arch = arch or arches.get(arches.DEFAULT)
    args = arch.make_args()
    with open(log_path, "w", encoding="utf-8") as log:
        kconfig.make_config(kernel_tree.path, build_dir,
                            fragments or arch.fragments, args, log,
                            declared_only, base, declared)
    cmd = (["make", "-C", kernel_tree.path, f"O={build_dir}", f"-j{jobs}"]
           + args + [arch.target] + list(targets))
    rc = run_logged(cmd, log_path, "building",
                    count=("files compiled",
                           lambda line: line.lstrip().startswith("CC ")))
    if rc != 0:
        raise Error(f"the kernel build failed; the end of {log_path}:\n"
                    + tail(log_path))
    return os.path.join(build_dir, arch.image)


def sparse(kernel_tree, build_dir, log_path, arch):
    """Runs sparse (make C=2) on SPARSE_FILES; returns its warnings."""
    cmd = (["make", "-C", kernel_tree.path, f"O={build_dir}", "C=2"]
           + arch.make_args() + list(SPARSE_FILES))
    if run_logged(cmd, log_path, "sparse") != 0:
        raise Error(f"make C=2 failed; the end of {log_path}:\n"
                    + tail(log_path))
    with open(log_path, encoding="utf-8", errors="replace") as f:
        return [line.strip() for line in f
                if re.search(r": (warning|error): ", line)]


class Verdict:
    """An outcome of OUTCOMES and its reasons, made worse reason by
    reason: the highest exit status wins."""

    def __init__(self):
        self.outcome, self.reasons = "pass", []

    def worse(self, new, why):
        self.reasons.append(why)
        if OUTCOMES[new] > OUTCOMES[self.outcome]:
            self.outcome = new


def verdict(result):
    """The outcome of a boot from its result, and the reasons for it."""
    v = Verdict()
    worse = v.worse
    kunit = result.kunit
    cp = result.checkpatch
    if cp and (cp["errors"] or cp["warnings"]):
        worse("test-failure", f"checkpatch.pl --strict: {cp['errors']} "
              f"errors, {cp['warnings']} warnings (checkpatch.txt)")
    for warning in result.sparse or []:
        worse("test-failure", "sparse: " + warning)
    if result.qemu_status:
        worse("harness-error", f"QEMU exited with status "
              f"{result.qemu_status} (console.log)")
    if result.timed_out:
        worse("timeout", result.killed or
              f"QEMU still ran after {result.timeout}s")
    for s in result.splats:
        if not s["expected"]:
            worse("splat", f"console.log:{s['line']}: {s['text']}")
    for b in result.expected_warnings:
        if not b["seen"]:
            worse("splat", f"console.log:{b['line']}: the expected warning "
                  f"{b['text']!r} never came")
    for why in torture.problems(result.torture,
                                result.torture_types):
        worse("test-failure", why)
    for suite in SUITES:
        if not any(name.startswith(suite + ".") for name in kunit["tests"]):
            worse("test-failure", f"KUnit suite {suite} did not run")
    failed = [n for n, s in kunit["tests"].items() if s not in ("PASS",)]
    for name in failed:
        worse("test-failure", f"{name}: {kunit['tests'][name]}")
    if kunit["failed"] or kunit["skipped"] or not kunit["parser_ok"]:
        worse("test-failure", f"kunit.py parse: {kunit['passed']} passed, "
              f"{kunit['failed']} failed, {kunit['skipped']} skipped")
        # What the parser said of the failures no test result names (a
        # crashed or missing subtest, a test plan that does not match).
        for line in ktap.complaints(kunit.get("parser_output", "")):
            worse("test-failure", "kunit.py parse: " + line)
    return v.outcome, v.reasons


def _print_line(line):
    if console.KTAP_RESULT.match(line) or console.headline(line) or \
            console.BEGIN.search(line) or torture.TAG_LINE.search(line):
        say("    | " + line)


def build_folder(kernel_tree, arch, branch=patches.CORE_BRANCH):
    """The build folder of the boot test of `branch` for `arch`, in the
    work folder: one per checkout (linux-6.1 builds in build-6.1, its
    worktree linux-6.1-series-boot in build-6.1-series-boot) and core
    branch, whatever goes on top of it."""
    name = os.path.basename(kernel_tree.path).partition("-")[2]
    return os.path.join(os.path.dirname(kernel_tree.path),
                        arch.folder(f"build-{name}")
                        + ("" if branch == patches.CORE_BRANCH
                           else "-" + branch.rpartition("/")[2]))


def run(kver, *, work=None, out=None, timeout=600, jobs=None, extra=(),
        name="boot", torture_seconds=TORTURE_SECONDS,
        torture_types=TORTURE_TYPES, arch=None, core=None, branch=None,
        checks=True, extra_branch=None, worktree=None):
    """Builds and boots the tree of `kver` with its core patches (or the
    `core` ones, on `branch`) and the `extra` ones (on `extra_branch`, by
    default one named after `name`), for `arch`; writes
    out/<kver>/<name>[-<arch>]/{console.log,build.log,config,kunit.json,
    kunit.txt,result.json} and returns the result.  The torture test runs
    `torture_types` for `torture_seconds` each.  Without `checks`,
    checkpatch and sparse do not run (a mutant's or a baseline's boot:
    the same core patches, checked by the boot test).  With `worktree`,
    the kernel is built in that worktree of the tree (tree.worktree())
    and its own build folder, which the other boots' checkouts leave
    alone: a boot of the same patches again rebuilds nothing."""
    arch = arches.get(arch or arches.DEFAULT)
    out = tree.out_folder(out)
    jobs = distcc.build_jobs(jobs)
    kernel_tree = tree.prepare(kver, work)
    core = core or patches.core_patches(kver)
    branch = branch or patches.CORE_BRANCH
    if worktree:
        # The core branch is made in the tree, which may have it checked
        # out (git checks a branch out in one worktree at most).
        patches.apply(kernel_tree, core, branch, checkout=False)
        kernel_tree = tree.worktree(kernel_tree, worktree)
    extra = list(extra) + arch.harness(kver)
    # With extra patches the core branch is only made, not checked out:
    # they go on top of it, and a checkout would rewrite the files they
    # touch, which would then rebuild even when their branch is reused.
    head = patches.apply(kernel_tree, core, branch, checkout=not extra)
    if extra:
        head = patches.apply(
            kernel_tree, extra,
            arch.folder(extra_branch or "notifier-series/" + name), branch)
    final = os.path.join(out, kver, arch.folder(name))
    stage = output.stage(final)
    build_dir = build_folder(kernel_tree, arch, branch)
    kernel = os.path.join(build_dir, arch.image)
    cmdline = append(torture_seconds, torture_types, arch)
    result = BootResult(
        kernel=kernel_tree.version, package=kernel_tree.record["package"],
        arch=arch.name, commit=head, torture_types=list(torture_types),
        timeout=timeout, reproduce={
            "build": f"make -C {kernel_tree.path} O={build_dir} -j{jobs} "
                     f"{' '.join(arch.make_args())} {arch.target}",
            "boot": " ".join(qemu.command(kernel, repr(cmdline), arch=arch)),
        })
    try:
        _build_and_boot(kernel_tree, arch, core if checks else None,
                        build_dir, kernel, cmdline, stage, result, timeout,
                        jobs)
    except Error as e:
        result.reasons = [str(e)]
        raise
    finally:
        output.publish(stage, final, "result.json", result)
        report(result, final, mutant=name.startswith("mutants/"))
    return result


def _build_and_boot(kernel_tree, arch, core, build_dir, kernel, cmdline,
                    stage, result, timeout, jobs):
    """The steps of run(), filling `result`; checkpatch and sparse only
    with `core` patches to check, on x86."""
    x86 = arch.name == arches.DEFAULT and core is not None
    if x86:
        with Step("checkpatch.pl --strict on the core patches"):
            result.checkpatch = checkpatch.run(
                kernel_tree.path, core,
                cache=tree.cache(kernel_tree, "checkpatch"))
        with open(os.path.join(stage, "checkpatch.txt"), "w",
                  encoding="utf-8") as f:
            f.write("\n".join(result.checkpatch.pop("patches").values()))
    with Step(f"building Linux {kernel_tree.version} for {arch.name} with "
              + ", ".join(os.path.relpath(f, tree.REPO)
                          for f in arch.fragments)) as step:
        build(kernel_tree, build_dir, os.path.join(stage, "build.log"),
              jobs, arch=arch)
    result.build_seconds = round(step.seconds, 1)
    shutil.copy(os.path.join(build_dir, ".config"),
                os.path.join(stage, "config"))
    if x86:
        with Step("sparse on " + ", ".join(SPARSE_FILES)):
            result.sparse = sparse(kernel_tree, build_dir,
                                   os.path.join(stage, "sparse.log"), arch)
    log = os.path.join(stage, "console.log")
    arrivals = []       # when each console line came, host time
    with Step(f"booting in {arch.qemu[0]} (-smp 2, TCG, {timeout}s "
              "limit)") as step:
        rc, _, killed, stopped = qemu.boot(
            qemu.command(kernel, cmdline, arch=arch), log, timeout,
            lambda line: (arrivals.append(time.monotonic()),
                          _print_line(line)), arch.restart_grace)
    result.boot_seconds = round(step.seconds, 1)
    result.timed_out = rc is None
    result.killed = killed
    result.stopped_after_restart = stopped
    result.qemu_status = rc
    with open(log, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    m = next(filter(None, (re.search(r"Linux version (\S+)", line)
                           for line in lines)), None)
    result.kernel_release = m.group(1) if m else None
    result.splats, result.expected_warnings = console.scan(lines)
    result.torture = torture.parse(lines)
    torture.time_failures(result.torture, result.splats, arrivals)
    parsed = ktap.parse(kernel_tree.path, log,
                        os.path.join(stage, "kunit.json"))
    with open(os.path.join(stage, "kunit.txt"), "w",
              encoding="utf-8") as f:
        f.write(parsed.pop("parser_output"))
    result.kunit = parsed
    result.outcome, result.reasons = verdict(result)


def report(result, folder, mutant=False):
    k = result.kunit
    expected = sum(b["seen"] for b in result.expected_warnings)
    unexpected = sum(not s["expected"] for s in result.splats)
    cp = result.checkpatch
    checked = ("checkpatch and sparse not run; " if cp is None else
               f"checkpatch {cp.get('errors')} errors, {cp.get('warnings')} "
               f"warnings, {cp.get('checks')} checks; sparse "
               f"{len(result.sparse or [])} warnings; ")
    say(f"Linux {result.kernel}: {checked}"
        f"KUnit {k['passed']} passed, "
        f"{k['failed']} failed, {k['skipped']} skipped; {unexpected} "
        f"splats ({expected} expected warnings seen); build "
        f"{result.build_seconds}s, boot {result.boot_seconds}s: "
        f"{result.outcome.upper()}")
    for reason in result.reasons:
        say("  - " + reason)
    if mutant:
        say("  (a mutant: the mutation test wants its tests to fail)")
    elif result.outcome != "pass":
        say("  to reproduce:\n    " + result.reproduce["build"]
            + "\n    " + result.reproduce["boot"])
    say(f"  results in {folder}/result.json, console in "
        f"{folder}/console.log")
