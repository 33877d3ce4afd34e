"""The in-kernel microbenchmark of make bench: the same benchmark source
(tests/kernel-bench/*.patch, written against the typed API) built into
two kernels with tools/bench.config, one on the pristine tree (mainline's
atomic_ and blocking_notifier_call_chain()) and one with the core patches
(notifier_call_chain()).  Each kernel boots twice:

- icount: one vCPU under QEMU's deterministic instruction counting, where
  a guest nanosecond is one instruction: repeatable to the instruction,
  whatever the host does, but blind to cache and lock contention;
- smp: two vCPUs under multi-threaded TCG, in host time: the readers on
  every vCPU, and figures as noisy as the host.

Figures are medians over the benchmark's rounds, with their spread;
new/mainline is the ratio of the medians."""

import glob
import os
import re
import statistics

from . import boottest, distcc, output, patches, qemu, tree
from .progress import Error, Step, say

FOLDER = os.path.join(tree.REPO, "tests", "kernel-bench")
FRAGMENT = os.path.join(tree.REPO, "tools", "bench.config")
# rcu_normal: unregistration waits for a normal grace period, as it does
# once the system runs, not for the expedited ones of boot time.
# tsc=reliable: the TSC stays the clocksource although TCG's vCPUs do not
# keep their TSCs in step; otherwise the guest's clock ticks in jiffies.
APPEND = ("console=ttyS0 panic=-1 rcupdate.rcu_normal=1 tsc=reliable "
          "notifier_bench.reboot=1")
# new: the core patches; untraced: the same without the patch that adds
# the chain and the caller to the notifier tracepoints; mainline: none.
SIDES = ("new", "untraced", "mainline")
TRACE_HEADER = "include/trace/events/notifier.h"
MODES = {
    "icount": {"accel": qemu.ICOUNT, "cpus": 1,
               "append": "notifier_bench.rounds=3"},
    "smp": {"accel": qemu.MULTI, "cpus": 2,
            "append": "notifier_bench.rounds=7 notifier_bench.loops=100000"},
}
TSC_CLOCK = re.compile(r"clocksource: Switched to clocksource tsc$")
LINE = re.compile(r"notifier_bench: op=(?P<op>\w+) type=(?P<type>\w+) "
                  r"callouts=(?P<callouts>\d+) readers=(?P<readers>\d+) "
                  r"round=(?P<round>\d+) loops=(?P<loops>\d+) "
                  r"ns=(?P<ns>\d+)")
END = re.compile(r"notifier_bench: end: ms=(\d+)")
# The goals of the call path against mainline's (issue 7).
GOAL_CALL = 1.05
GOAL_EMPTY_CALL = 1.0


def parse(lines, mode):
    """({(mode, op, type, callouts, readers): [ns per operation, one per
    round]}, whether the benchmark ended, whether the TSC was the guest's
    clocksource)."""
    cases, ended, tsc = {}, False, False
    for line in lines:
        m = LINE.search(line)
        if m:
            key = (mode, m["op"], m["type"], int(m["callouts"]),
                   int(m["readers"]))
            cases.setdefault(key, []).append(int(m["ns"]) / int(m["loops"]))
        elif END.search(line):
            ended = True
        elif TSC_CLOCK.search(line):
            tsc = True
    return cases, ended, tsc


def host_tsc_khz():
    """The host's TSC rate, the guest's under TCG without icount: the
    guest's own calibration against the PIT fails when the host is busy.
    None when /proc/cpuinfo does not say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            m = re.search(r"^cpu MHz\s*:\s*([\d.]+)", f.read(), re.M)
    except OSError:
        return None
    return round(float(m.group(1)) * 1000) if m else None


def stats(values):
    median = statistics.median(values)
    return {"median_ns": round(median, 1), "min_ns": round(min(values), 1),
            "max_ns": round(max(values), 1),
            "spread_percent": round(100 * (max(values) - min(values))
                                    / median, 2) if median else 0.0,
            "rounds": len(values)}


def goal(mode, op, callouts):
    """The greatest ratio new/mainline the issue allows, or None.  Only
    the instruction counts are held to it: host time under TCG carries
    artefacts of the emulator (README, "Benchmarks")."""
    if mode != "icount" or op != "call":
        return None
    return GOAL_EMPTY_CALL if callouts == 0 else GOAL_CALL


def compare(new, mainline):
    """One record per case measured on both sides, in a stable order."""
    order = {"call": 0, "register": 1, "unregister": 2}
    cases = []
    for key in sorted(set(new) & set(mainline), key=lambda k: (
            k[0], order.get(k[1], 9), k[2], k[3], k[4])):
        mode, op, kind, callouts, readers = key
        a, b = stats(new[key]), stats(mainline[key])
        ratio = (round(a["median_ns"] / b["median_ns"], 3)
                 if b["median_ns"] else None)
        limit = goal(mode, op, callouts)
        cases.append({"mode": mode, "op": op, "type": kind,
                      "callouts": callouts,
                      "readers": readers, "new": a, "mainline": b,
                      "ratio": ratio, "goal": limit,
                      "meets_goal": (None if limit is None or ratio is None
                                     else ratio <= limit)})
    return cases


def trace_cost(new, untraced):
    """The cases of the new kernel against the same kernel without the
    tracepoint patch: what the notifier events cost while off."""
    return [{**{k: c[k] for k in ("mode", "op", "type", "callouts",
                                  "readers", "new", "ratio")},
             "untraced": c["mainline"]} for c in compare(new, untraced)]


def stack(kver, name):
    """The core patches of side `name`."""
    if name == "mainline":
        return []
    core = patches.core_patches(kver)
    if name == "new":
        return core
    return [p for p in core if TRACE_HEADER not in patches.touched_files(p)]


def table(cases, other="mainline"):
    """The cases as text lines, for the terminal and the README."""
    lines = [f"{'case':<41} {'new ns':>12} {other + ' ns':>12} "
             f"{'new/' + other[:4]:>8}  goal"]
    for c in cases:
        who = (f"{c['readers']} reader{'s' if c['readers'] > 1 else ''}"
               if c["op"] == "call" else f"chain of {c['callouts']}")
        name = (f"{c['mode']}: " +
                (f"{c['op']} {c['type']} x{c['callouts']}, {who}"
                 if c["op"] == "call" else f"{c['op']} {c['type']}, {who}"))
        verdict = ("" if c.get("goal") is None else
                   f"<= {c['goal']:.2f} "
                   + ("met" if c["meets_goal"] else "MISSED"))
        lines.append(f"{name:<41} {c['new']['median_ns']:>12.1f} "
                     f"{c[other]['median_ns']:>12.1f} "
                     f"{c['ratio']:>8.3f}  {verdict}")
    return lines


def side(kver, kernel_tree, name, folder, jobs, timeout):
    """Builds one side's kernel and boots it in each of MODES; returns
    (its cases as parse() gives them, {mode: QEMU command})."""
    bench = sorted(glob.glob(os.path.join(FOLDER, "*.patch")))
    if not bench:
        raise Error(f"no benchmark patch in {FOLDER}")
    checkout = tree.worktree(kernel_tree, f"bench-{name}")
    patches.apply(checkout, stack(kver, name) + bench,
                  f"notifier-series/bench-{name}")
    build_dir = os.path.join(os.path.dirname(kernel_tree.path),
                             f"build-{kver}-bench-{name}")
    os.makedirs(folder)
    with Step(f"building the {name} kernel with "
              f"{os.path.relpath(FRAGMENT, tree.REPO)}"):
        kernel = boottest.build(checkout, build_dir,
                                os.path.join(folder, "build.log"), jobs,
                                fragments=[FRAGMENT])
    measured, commands = {}, {}
    khz = host_tsc_khz()
    for mode, how in MODES.items():
        log = os.path.join(folder, f"console-{mode}.log")
        append = f"{APPEND} {how['append']}"
        if how["accel"] is qemu.MULTI and khz:
            append += f" tsc_early_khz={khz}"
        cmd = qemu.command(kernel, append, how["accel"], how["cpus"])
        with Step(f"benchmarking the {name} kernel in QEMU ({mode}: "
                  f"-smp {how['cpus']} {' '.join(how['accel'][1:])}, "
                  f"{timeout}s limit)"):
            rc, _, killed, _ = qemu.boot(cmd, log, timeout, lambda line: (
                say("    | " + line) if "notifier_bench:" in line and
                "round=1 " in line or END.search(line) else None))
        with open(log, encoding="utf-8", errors="replace") as f:
            cases, ended, tsc = parse(f.read().splitlines(), mode)
        if rc is None or not ended:
            raise Error(f"the {name} kernel's benchmark did not finish "
                        f"({killed or f'QEMU status {rc}'}); see {log}")
        if not tsc:
            raise Error(f"the {name} kernel did not take the TSC as its "
                        f"clocksource, so its timings count jiffies; see "
                        f"{log}")
        measured.update(cases)
        commands[mode] = " ".join(cmd)
    return measured, commands


def run(kver, *, work=None, out=None, jobs=None, timeout=1200):
    """Writes the consoles of the kernels to out/<kver>/bench/<side>/ and
    returns the benchmark's record for bench.json."""
    out = tree.out_folder(out)
    jobs = distcc.build_jobs(jobs)
    kernel_tree = tree.prepare(kver, work)
    final = os.path.join(out, kver, "bench")
    stage = output.stage(final)
    measured, commands = {}, {}
    for name in SIDES:
        measured[name], commands[name] = side(
            kver, kernel_tree, name, os.path.join(stage, name), jobs,
            timeout)
    cases = compare(measured["new"], measured["mainline"])
    traced = trace_cost(measured["new"], measured["untraced"])
    missing = sorted((set(measured["new"]) ^ set(measured["mainline"]))
                     | (set(measured["new"]) ^ set(measured["untraced"])))
    if missing or not cases:
        raise Error(f"the kernels measured different cases: {missing}")
    record = {"kernel": kernel_tree.version,
              "core": patches.digest(patches.core_patches(kver)),
              "config": os.path.relpath(FRAGMENT, tree.REPO),
              "qemu": commands, "unit": "ns of guest time per operation; "
              "under icount one instruction is one ns",
              "cases": cases, "tracepoints_off": traced}
    # The record itself goes to bench.json, with the toolkit's.
    output.publish(stage, final)
    for line in table(cases):
        say("  " + line)
    say("  the notifier tracepoints, off:")
    for line in table(traced, "untraced"):
        say("  " + line)
    return record
