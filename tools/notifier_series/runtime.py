"""The runtime test: an integration kernel (defconfig, kvm_guest.config,
debug.config and runtime-test.config) of the core-patched tree and of the
series' final tree, booted in QEMU with a workload (tools/runtime-init on
Debian's busybox-static) under lockdep, KASAN and DEBUG_ATOMIC_SLEEP.  The
notifier tracepoints of the core patch say which chains ran and in which
context; a context that contradicts the chain's class in the YAML, or a
splat, fails the test."""

import glob
import gzip
import os
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass

from . import (arches, boottest, classification, console, distcc, ftrace,
               kconfig, output, patches, qemu, tree)
from .progress import Error, Step, run_logged, say, tail

TOOLS = os.path.join(tree.REPO, "tools")
# defconfig, then kvm_guest.config (merged as `make kvm_guest.config`
# does, but checked option by option like ours) and our fragments.
BASE = ("defconfig",)
KVM_GUEST = os.path.join("kernel", "configs", "kvm_guest.config")
FRAGMENTS = [arches.DEBUG_FRAGMENT, os.path.join(TOOLS, "runtime-test.config")]
INIT = os.path.join(TOOLS, "runtime-init")
BUSYBOX = "/bin/busybox"
# The workload prints the trace buffer on the second serial port, which
# QEMU writes to trace.log: on the console, the kernel's messages would
# cut its lines.  The kernel passes the parameter to /init as $trace_port.
TRACE_PORT = "/dev/ttyS1"
# trace_buf_size is per CPU.  trace_clock=global from the start: the
# kernel switches to it when it finds TCG's clocks unstable, and a switch
# empties the buffer.
APPEND = ("console=ttyS0 panic=-1 softlockup_panic=1 "
          f"trace_event=notifier:*,task:{ftrace.BOOT_ENDS} trace_buf_size=16M "
          f"trace_clock=global trace_port={TRACE_PORT}")
# The module that prints the trace buffer when the machine powers off
# (the power-off path's events have no task left to read them).
MODULE = os.path.join(TOOLS, "runtime-module")
NETWORK = ["-netdev", "user,id=net0", "-device",
           "virtio-net-pci,netdev=net0"]
# The trees booted: the pristine one with the core patches, on which the
# typed API is an alias of struct notifier_head, and the series' last.
TREES = ("core", "series")
OUTCOMES = boottest.OUTCOMES
# Boots recorded for the tests and the mutation test, per version:
# console.log.gz and details.json (the audit's chains, trimmed to what
# identify() reads).
RECORDED = os.path.join(tree.REPO, "tests", "fixtures", "runtime")
STEP = re.compile(r"runtime: step (\S+) (meant: (.*)|done|failed: (.*))$")


def _series_patches(kver, out, folder=None):
    """The series' patches: out/<kver>/series/ unless `folder` says."""
    folder = folder or os.path.join(out, kver, "series")
    found = sorted(glob.glob(os.path.join(folder, "[0-9]*.patch")))
    found = [p for p in found if not os.path.basename(p).startswith("0000")]
    if not found:
        raise Error(f"no series in {folder}: run `make series KVER={kver}` "
                    "first")
    return found


def detail_key(d):
    """The (chain, defined file) key of an audit's chain record, whose
    "defined" holds the line too."""
    return d["chain"], d["defined"].rsplit(":", 1)[0]


def audit_details(kver, out):
    """{(chain, defined file): the audit's record} of out/<kver>/audit.json,
    whose sites and callouts tell a head inside a structure by the
    functions that use it."""
    path = os.path.join(out, kver, "audit.json")
    if not os.path.exists(path):
        raise Error(f"{path} is missing: run `make classify KVER={kver}` "
                    "first")
    details = output.read_json(path).get("details")
    if not isinstance(details, list):
        raise Error(f"{path}: no chain details; run `make classify "
                    f"KVER={kver}` again")
    return {detail_key(d): d for d in details}


def initramfs(build_dir, stage, log_path, kernel_path):
    """The workload's initramfs, made with the kernel's own gen_init_cpio
    from busybox, tools/runtime-init and the kernel's modules."""
    if not os.path.exists(BUSYBOX):
        raise Error(f"{BUSYBOX} is missing: install busybox-static "
                    "(make deps)")
    modules = os.path.join(stage, "modules")
    shutil.rmtree(modules, ignore_errors=True)
    cmd = ["make", "-C", kernel_path, f"O={build_dir}",
           f"INSTALL_MOD_PATH={modules}", "INSTALL_MOD_STRIP=1",
           "modules_install"]
    if run_logged(cmd, log_path, "installing modules") != 0:
        raise Error(f"modules_install failed; the end of {log_path}:\n"
                    + tail(log_path))
    module = os.path.join(stage, "runtime-module")
    shutil.rmtree(module, ignore_errors=True)
    shutil.copytree(MODULE, module)
    cmd = ["make", "-C", kernel_path, f"O={build_dir}", f"M={module}",
           "modules"]
    if run_logged(cmd, log_path, "building the power-off module") != 0:
        raise Error(f"the module of {MODULE} did not build; the end of "
                    f"{log_path}:\n" + tail(log_path))
    entries = ["dir /dev 0755 0 0", "nod /dev/console 0600 0 0 c 5 1",
               "file /notifier_runtime.ko "
               f"{os.path.join(module, 'notifier_runtime.ko')} 0644 0 0",
               "dir /bin 0755 0 0", f"file /bin/busybox {BUSYBOX} 0755 0 0",
               "slink /bin/sh busybox 0777 0 0",
               f"file /init {INIT} 0755 0 0"]
    for d in ("proc", "sys", "mnt", "tmp", "root"):
        entries.append(f"dir /{d} 0755 0 0")
    for root, _, files in sorted(os.walk(modules)):
        rel = "/" + os.path.relpath(root, modules)
        if rel != "/.":
            entries.append(f"dir {rel} 0755 0 0")
        for name in sorted(files):
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            entries.append(f"file {os.path.join(rel, name)} {path} 0644 0 0")
    listing = os.path.join(stage, "initramfs.list")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("\n".join(entries) + "\n")
    image = os.path.join(stage, "initramfs.cpio")
    with open(image, "wb") as f:
        proc = subprocess.run(
            [os.path.join(build_dir, "usr", "gen_init_cpio"), listing],
            stdout=f, stderr=subprocess.PIPE, text=False)
    if proc.returncode != 0:
        raise Error("gen_init_cpio failed: "
                    + proc.stderr.decode(errors="replace"))
    shutil.rmtree(modules)
    shutil.rmtree(module)
    return image


def compiled_in(detail, build_dir):
    """Whether the chain's code is in the build: the file defining its
    head, or for a head defined in a header, a file that uses it, has an
    object (built in or in a module).  None when there is no such file to
    look at: a header's head that the audit finds no site of (one reached
    only through a pointer, say)."""
    defined = detail["defined"].rsplit(":", 1)[0]
    files = [f for f in ([defined] if defined.endswith(".c") else sorted(
        {s["at"].rsplit(":", 1)[0] for s in detail["sites"]}))
        if f.endswith(".c")]
    if not files:
        return None
    return any(os.path.exists(os.path.join(build_dir, f[:-2] + ".o"))
               for f in files)


def candidates(events, details):
    """The keys of the audit, (chain, defined file), that each of `events`
    may belong to, best first: a list per event, which identify() narrows
    to one.  Event by event, as a heap address may hold one chain and
    later another.

    A static head prints as its symbol (a module's with " [module]"):
    the chains of the audit of that name, narrowed to those whose sites
    or callers hold the event's caller when there are several.  A head
    inside a structure prints as its address, or as the symbol of the
    static structure that holds it (%ps drops the offset: init_net for
    init_net's netdev chain): the member chains of the audit ("struct
    T.member", "var.member") whose sites or callers hold the event's
    caller, those of that symbol ("init_net.member") first.  (The caller
    is best effort: a wrapper that ends in a tail call leaves its own
    caller in the event, which the audit lists as the wrapper's caller.)
    An event without a caller (a callout run) belongs to the chain of the
    call or write before it on the same head by the same task (pid, and
    CPU for the idle tasks, which all have pid 0); not when the head
    prints as a structure's symbol, which all its member chains share (a
    callout of one may call another on the same object).

    A chain the audit reaches through a pointer member (struct
    pm_qos_constraints.notifiers) stands, as in the audit, for every head
    that pointer holds (struct freq_constraints.min_freq_notifiers...):
    those heads' events are its own.  The pointer's type is theirs, so
    what contradicts one class contradicts the other."""
    by_name = defaultdict(list)
    by_function = defaultdict(set)
    for key, d in details.items():
        by_name[d["chain"]].append(key)
        for s in d["sites"] + d["callers"]:
            by_function[s["in"]].add(key)
    found, last = [], {}
    for e in events:
        symbol = "" if e.chain.startswith("0x") else e.chain.split(" ", 1)[0]
        named = by_name.get(symbol, [])
        callers = by_function.get(e.function, set()) if e.caller else set()
        task = (e.pid, e.cpu if e.pid == 0 else None, e.chain)
        if len(named) == 1:
            keys = named
        elif not e.caller:
            keys = [] if symbol and not named else last.get(task, [])
        elif named:
            keys = [k for k in named if k in callers]
        else:
            members = sorted(k for k in callers if "." in k[0])
            keys = [k for k in members if k[0].startswith(symbol + ".")] \
                if symbol else []
            keys = keys or members
        if e.caller:
            last[task] = keys
        found.append(keys)
    return found


def identify(events, details):
    """The key of the audit for each of `events`: its only candidate, or
    None."""
    return [keys[0] if len(keys) == 1 else None
            for keys in candidates(events, details)]


# The record's operations, by the event that says each; and the classes
# that each contradicts when it happens in atomic context: a blocking
# chain called there, a writer of an atomic or blocking chain there.
OPS = {"notifier_call": "calls", "notifier_register": "registrations",
       "notifier_unregister": "unregistrations"}
BROKEN_BY = {"calls": ("blocking",),
             "registrations": ("atomic", "blocking"),
             "unregistrations": ("atomic", "blocking")}


def _context_record(events):
    contexts = Counter()
    samples = {}
    for e in events:
        for c in e.contexts:
            contexts[c] += 1
            samples.setdefault(c, f"{e.caller} ({e.where})")
    return {"count": len(events), "contexts": dict(contexts),
            "samples": samples}


def record(events, details, classes, build_dir):
    """chains.json: per chain of the audit, what ran; the events of
    chains that could not be told apart under "unidentified", with the
    chains they may be."""
    by_key = defaultdict(list)
    unidentified = defaultdict(list)
    maybe = defaultdict(set)
    against = defaultdict(list)

    def class_of(key):
        return classes.get(key, details[key].get("class"))

    for e, keys in zip(events, candidates(events, details)):
        if len(keys) == 1:
            by_key[keys[0]].append(e)
            continue
        unidentified[e.chain].append(e)
        maybe[e.chain].update(keys)
        said = _against(e, [(k, class_of(k)) for k in keys])
        if said:
            against[e.chain].append(said)
    chains = []
    for key, d in sorted(details.items()):
        mine = by_key.get(key, [])
        ops = defaultdict(list)
        for e in mine:
            ops[e.event].append(e)
        chains.append({
            "chain": key[0], "defined": key[1],
            "class": class_of(key),
            # A chain seen running is compiled in, whatever the files say.
            "compiled_in": (True if mine else compiled_in(d, build_dir))
            if build_dir else None,
            "seen": bool(mine),
            "steps": sorted({e.step for e in mine if e.step}),
            "heads": sorted({e.chain for e in mine}),
            **{op: _context_record(ops[event])
               for event, op in OPS.items()},
            "callouts": dict(Counter(e.cb for e in ops["notifier_run"])),
        })
    return {"chains": chains,
            "unidentified": [
                {"head": token, "events": len(evs),
                 "callers": sorted({e.function for e in evs if e.caller}),
                 "callouts": sorted({e.cb for e in evs if e.cb}),
                 "candidates": [{"chain": k[0], "defined": k[1],
                                 "class": class_of(k)}
                                for k in sorted(maybe[token])],
                 "atomic": sorted({f"{e.event} in "
                                   f"{', '.join(e.contexts)} at {e.where}"
                                   for e in evs if e.atomic})[:5],
                 "contradictions": against[token]}
                for token, evs in sorted(unidentified.items())]}


def _against(e, candidates):
    """What an event not told apart says against the YAML whichever of
    its `candidates` [(key, class)] it belongs to: a call in atomic
    context when they are all blocking, a write in atomic context when
    they are all atomic or blocking; else None."""
    op = OPS.get(e.event)
    if not e.atomic or not candidates or not op:
        return None
    if all(c in BROKEN_BY[op] for _, c in candidates):
        return (f"{e.event} in {', '.join(e.contexts)} at {e.caller} "
                f"({e.where}), not told apart from "
                + ", ".join(f"{k[0]} ({k[1]}, {c})"
                            for k, c in candidates))
    return None


def observations(chain):
    """What the integration boot saw of one chain of chains.json, in words,
    one line per operation."""
    found = []
    for op, what in (("calls", "called"), ("registrations", "registered"),
                     ("unregistrations", "unregistered")):
        r = chain[op]
        for ctx, n in sorted(r["contexts"].items()):
            found.append(f"seen {what} {n} times in {ctx} context, e.g. at "
                         f"{r['samples'][ctx]}, in the integration boot")
    if chain["callouts"]:
        found.append("callouts run: " + ", ".join(
            f"{cb} ({n})" for cb, n in sorted(chain["callouts"].items())))
    return found


def load_observations(kver, out):
    """{(chain, defined): observations} of out/<kver>/runtime/chains.json,
    or None when there is no such file."""
    path = os.path.join(out, kver, "runtime", "chains.json")
    if not os.path.exists(path):
        return None
    return {(c["chain"], c["defined"]): observations(c)
            for c in output.read_json(path)["chains"] if c["seen"]}


def contradictions(chains, splats, lines, unidentified=()):
    """What the observed contexts say against the YAML: a blocking chain
    called in atomic context, a writer in atomic context, an atomic
    chain's callout in a splat's report (it slept, or worse); and an
    event not told apart that contradicts every chain it may belong to
    (whichever it is, the YAML is wrong)."""
    found = []
    for u in unidentified:
        found += [f"{u['head']}: {c}" for c in u["contradictions"]]
    for c in chains:
        name = f"{c['chain']} ({c['defined']}, {c['class']})"
        for op in [op for op, broken in BROKEN_BY.items()
                   if c["class"] in broken]:
            samples = c[op]["samples"]
            bad = [ctx for ctx in samples if ctx in ftrace.ATOMIC_CONTEXTS]
            if bad:
                what = {"calls": "called", "registrations": "registration",
                        "unregistrations": "unregistration"}[op]
                found.append(f"{name}: {what} in atomic context "
                             f"({', '.join(bad)}) at {samples[bad[0]]}")
    callouts = {cb: c for c in chains if c["class"] == "atomic"
                for cb in c["callouts"] if not cb.startswith("0x")}
    for s in splats:
        if s["expected"]:
            continue
        report = "\n".join(lines[s["line"] - 1:s.get("end", s["line"])])
        for cb, c in sorted(callouts.items()):
            if re.search(rf"\b{re.escape(ftrace.function_of(cb))}\b",
                         report):
                found.append(f"{c['chain']} ({c['defined']}, atomic): its "
                             f"callout {ftrace.function_of(cb)}() is in "
                             "the report at "
                             f"console.log:{s['line']}: {s['text']}")
    return found


def steps(lines, power_off_dump=False):
    """The workload's steps: [{"step", "meant", "status"}].  The power-off
    step has no end to print: it is done when the power-off dump was."""
    found = {}
    for line in lines:
        m = STEP.search(line)
        if not m:
            continue
        name = m.group(1)
        if m.group(3) is not None:
            found[name] = {"step": name, "meant": [
                c.strip() for c in m.group(3).split(",")
                if c.strip() not in ("", "-")],
                "status": "did not end"}
        elif name in found:
            found[name]["status"] = ("done" if m.group(2) == "done"
                                     else "failed: " + m.group(4))
    if power_off_dump and ftrace.POWER_OFF_STEP in found:
        found[ftrace.POWER_OFF_STEP]["status"] = "done"
    return list(found.values())


def analyse(lines, details, classes, build_dir=None, trace_port=None):
    """The record and verdict of one boot: its console `lines`, and the
    lines of its trace port (None for the first recordings, whose trace
    was on the console)."""
    trace = ftrace.parse(lines, trace_port)
    rec = record(trace.events, details, classes, build_dir)
    splats, _ = console.scan(lines)
    seen = {(c["chain"], c["defined"]) for c in rec["chains"] if c["seen"]}
    compiled = [c for c in rec["chains"] if c["compiled_in"]]
    unknown = sorted(c["chain"] for c in rec["chains"]
                     if build_dir and c["compiled_in"] is None)
    dumped = trace.dump == "complete"
    workload = steps(lines, dumped)
    names = {c["chain"] for c in rec["chains"]}
    for s in workload:
        # What ran between the step's trace_marker writes, by any task
        # (the power-off step: what the dump holds).
        s["marked"] = s["step"] in trace.marked or \
            s["step"] == ftrace.POWER_OFF_STEP
        s["reached"] = sorted({c["chain"] for c in rec["chains"]
                               if s["step"] in c["steps"]
                               and c["chain"] in s["meant"]})
        s["unknown"] = sorted(set(s["meant"]) - names)
    result = {
        "events": len(trace.events), "trace_complete": trace.complete,
        "trace_header": trace.header, "trace_lost": trace.lost,
        "unparsed": trace.unparsed, "early_boot_ends": trace.boot_ends,
        "power_off_dump": dumped, "dump": trace.dump,
        "splats": splats, "steps": workload,
        "coverage": {"seen": len(seen),
                     "compiled_in": len(compiled) if build_dir else None,
                     "seen_compiled_in": sum(c["seen"] for c in compiled),
                     "compiled_in_unknown": len(unknown) if build_dir
                     else None,
                     "yaml_chains": len(rec["chains"])},
        "contradictions": contradictions(rec["chains"], splats, lines,
                                         rec["unidentified"]),
        "compiled_in_not_seen": sorted(c["chain"] for c in compiled
                                       if not c["seen"]),
        # Headers' heads with no site in a .c file: whether they are built
        # could not be told, so they count neither way.
        "compiled_in_unknown": unknown,
        "unidentified": len(rec["unidentified"]),
    }
    return rec, result


def trim(details):
    """The audit's chain details as identify() and compiled_in() read
    them, for a recorded boot."""
    def sites(listed):
        return [{"in": f, "at": a} for f, a in sorted(
            {(s["in"], s["at"].rsplit(":", 1)[0] + ":0") for s in listed})]
    return [{"chain": d["chain"], "defined": d["defined"],
             "class": d["class"], "sites": sites(d["sites"]),
             "callers": sites(d["callers"])} for d in details.values()]


@dataclass
class Boot:
    """A runtime boot to analyse again: its console's lines, its trace
    port's (None when the trace was on the console), the audit's chain
    details it was read with, and where it comes from."""
    console: list
    trace_port: list
    details: dict
    source: str


def _lines(path):
    """The lines of a log, gzipped or not; None when it does not exist."""
    for name, opener in ((path, open), (path + ".gz", gzip.open)):
        if os.path.exists(name):
            with opener(name, "rt", encoding="utf-8",
                        errors="replace") as f:
                return f.read().splitlines()
    return None


def last_boot(kver, out):
    """The Boot of the last runtime test of `kver`: out/<kver>/runtime/
    when it exists, else the boot recorded in
    tests/fixtures/runtime/<kver>/; None when neither does."""
    live = os.path.join(out, kver, "runtime")
    if os.path.exists(os.path.join(live, "console.log")) and \
            os.path.exists(os.path.join(out, kver, "audit.json")):
        return Boot(_lines(os.path.join(live, "console.log")),
                    _lines(os.path.join(live, "trace.log")),
                    audit_details(kver, out), live)
    folder = os.path.join(RECORDED, kver)
    if not os.path.isdir(folder):
        return None
    details = {detail_key(d): d for d in output.read_json(
        os.path.join(folder, "details.json"))}
    return Boot(_lines(os.path.join(folder, "console.log")),
                _lines(os.path.join(folder, "trace.log")), details,
                os.path.relpath(folder, tree.REPO))


def yaml_classes(kver):
    """{(chain, defined): class} of classify/linux-<kver>.yaml."""
    _, entries = classification.load(classification.yaml_path(kver))
    return {e.key: e["class"] for e in entries}


# The chain the mutant declares blocking: the keyboard step's, called
# with interrupts off under kbd_event_lock (drivers/tty/vt/keyboard.c).
MUTANT_CHAIN = "keyboard_notifier_list"


def mutant(lines, details, classes, chain=MUTANT_CHAIN, trace_port=None):
    """A misclassification the runtime test must catch: `chain`, which the
    workload reaches, declared blocking in a copy of the classification.
    Returns {"chain", "defined", "caught_by": the contradictions naming
    it}, or None when the YAML has no such atomic chain."""
    key = next((k for k in details if k[0] == chain
                and classes.get(k) == "atomic"), None)
    if not key:
        return None
    flipped = {**classes, key: "blocking"}
    _, result = analyse(lines, details, flipped, trace_port=trace_port)
    prefix = f"{key[0]} ({key[1]}, blocking)"
    return {"chain": key[0], "defined": key[1],
            "caught_by": [c for c in result["contradictions"]
                          if c.startswith(prefix)]}


def verdict(result):
    """The outcome of a run from its boots' results, and the reasons."""
    v = boottest.Verdict()
    worse = v.worse
    for name, boot in result["boots"].items():
        if boot.get("timed_out"):
            worse("timeout", f"{name}: {boot.get('killed')}")
        if not boot.get("trace_complete"):
            worse("harness-error", f"{name}: the workload did not print "
                  "the whole trace buffer (trace.log)")
        elif not boot.get("trace_header"):
            worse("harness-error", f"{name}: the trace has no entries-in-"
                  "buffer line: whether events were lost cannot be told")
        unparsed = boot.get("unparsed", [])
        for where in unparsed[:10]:
            worse("harness-error", f"{name}: {where}: a notifier event "
                  "that does not read")
        if len(unparsed) > 10:
            worse("harness-error", f"{name}: and {len(unparsed) - 10} more "
                  "notifier events that do not read")
        if boot.get("trace_complete") and not boot.get("early_boot_ends"):
            worse("harness-error", f"{name}: no {ftrace.BOOT_ENDS} event "
                  "of the init task in the trace: where the boot task's "
                  "early boot ends cannot be told")
        if boot.get("trace_lost"):
            worse("harness-error", f"{name}: the trace buffer overflowed: "
                  f"{boot['trace_lost']} events lost")
        if not boot.get("power_off_dump"):
            worse("harness-error", f"{name}: the power-off events were not "
                  "printed whole (tools/runtime-module): the dump was "
                  f"{boot.get('dump') or 'not begun'}")
        for s in boot.get("splats", []):
            if not s["expected"]:
                worse("splat", f"{name}: console.log:{s['line']}: "
                      f"{s['text']}")
        for c in boot.get("contradictions", []):
            worse("test-failure", f"{name}: {c}")
        if boot.get("steps") is not None and ftrace.POWER_OFF_STEP not in {
                s["step"] for s in boot["steps"]}:
            worse("harness-error", f"{name}: no {ftrace.POWER_OFF_STEP} "
                  "step on the console: what the power-off path meant to "
                  "reach cannot be told")
        for s in boot.get("steps", []):
            if s["unknown"]:
                worse("harness-error", f"{name}: step {s['step']} means "
                      f"chains the YAML does not have: "
                      f"{', '.join(s['unknown'])}")
            if s["status"] != "done":
                worse("harness-error", f"{name}: step {s['step']} "
                      f"{s['status']}: what it meant was not exercised")
            elif not s.get("marked", True):
                worse("harness-error", f"{name}: step {s['step']}: its "
                      "trace_marker writes are not both in the trace: what "
                      "it reached cannot be told")
            elif s["meant"] and not s["reached"]:
                worse("harness-error", f"{name}: step {s['step']} reached "
                      f"none of what it meant ({', '.join(s['meant'])})")
    m = result.get("mutant")
    if m is None:
        worse("test-failure", f"{MUTANT_CHAIN} is no atomic chain of the "
              "YAML: the misclassification mutant has nothing to flip")
    elif not m["caught_by"]:
        worse("test-failure", f"{m['chain']} declared blocking in a copy of "
              "the YAML was not caught")
    if set(result["boots"]) == set(TREES):
        diff = result["seen_differs"]
        for what, chains in diff.items():
            if chains:
                worse("test-failure", f"chains seen only on the {what} "
                      f"tree: {', '.join(chains)}")
    return v.outcome, v.reasons


def _boot(kver, which, kernel_tree, stack, out_folder, details, classes,
          jobs, timeout):
    """Builds and boots one tree; writes its console.log and chains.json
    into out_folder and returns its result."""
    checkout = tree.worktree(kernel_tree, f"runtime-{which}")
    head = patches.apply(checkout, stack, f"notifier-series/runtime-{which}")
    build_dir = os.path.join(os.path.dirname(kernel_tree.path),
                             f"build-{kver}-runtime-{which}")
    os.makedirs(out_folder, exist_ok=True)
    log_path = os.path.join(out_folder, "build.log")
    arch = arches.get(arches.DEFAULT)
    with Step(f"building the {which} integration kernel of Linux "
              f"{kernel_tree.version} (defconfig, kvm_guest.config, "
              + ", ".join(os.path.relpath(f, tree.REPO) for f in FRAGMENTS)
              + ")") as build_step:
        kernel = boottest.build(
            checkout, build_dir, log_path, jobs,
            fragments=[os.path.join(checkout.path, KVM_GUEST)] + FRAGMENTS,
            base=BASE, targets=("modules",),
            declared=lambda symbol: kconfig.declared_for(
                checkout.path, symbol, "x86"))
        cpio = initramfs(build_dir, out_folder, log_path, checkout.path)
    shutil.copy(os.path.join(build_dir, ".config"),
                os.path.join(out_folder, "config"))
    console_log = os.path.join(out_folder, "console.log")
    trace_log = os.path.join(out_folder, "trace.log")
    base = qemu.command(kernel, APPEND, arch=arch) + [
        "-serial", f"file:{trace_log}"]
    cmd = base + ["-initrd", cpio] + NETWORK
    with Step(f"booting the {which} kernel with the workload "
              f"(-smp 2, TCG, {timeout}s limit)") as boot_step:
        rc, _, killed, _ = qemu.boot(
            cmd, console_log, timeout,
            lambda line: line.startswith("runtime: step")
            and say("    | " + line), restart_grace=10,
            activity=[trace_log])
    lines, port = _lines(console_log), _lines(trace_log) or []
    rec, result = analyse(lines, details, classes, build_dir, port)
    output.write_json(os.path.join(out_folder, "chains.json"), rec)
    os.remove(cpio)
    result["mutant"] = mutant(lines, details, classes, trace_port=port)
    result.update({
        "commit": head, "build_seconds": round(build_step.seconds, 1),
        "boot_seconds": round(boot_step.seconds, 1),
        "timed_out": rc is None, "killed": killed, "qemu_status": rc,
        "reproduce": {
            "build": f"make -C {checkout.path} O={build_dir} -j{jobs} "
                     f"{' '.join(arch.make_args())} {arch.target} modules",
            "boot": " ".join(base) + " -initrd <initramfs of "
                    "tools/runtime-init> " + " ".join(NETWORK),
        }})
    return result, rec


def run(kver, *, work=None, out=None, jobs=None, timeout=1800, trees=TREES,
        series=None):
    """Builds and boots the integration kernels of `trees` and writes
    out/<kver>/runtime/: chains.json and console.log of the series' tree
    (core/ holds the core-patched tree's), and result.json.  `series`: a
    folder of the series' patches other than out/<kver>/series/."""
    out = tree.out_folder(out)
    jobs = distcc.build_jobs(jobs)
    details = audit_details(kver, out)
    classes = yaml_classes(kver)
    kernel_tree = tree.prepare(kver, work)
    core = patches.core_patches(kver)
    stacks = {"core": core, "series": None}
    if "series" in trees:
        stacks["series"] = _series_patches(kver, out, series)
    final = os.path.join(out, kver, "runtime")
    stage = output.stage(final)
    result = {"kernel": kernel_tree.version, "outcome": "harness-error",
              "reasons": [], "boots": {}, "seen_differs": {}}
    records = {}
    try:
        for which in trees:
            folder = stage if which == "series" or len(trees) == 1 \
                else os.path.join(stage, which)
            result["boots"][which], records[which] = _boot(
                kver, which, kernel_tree, stacks[which], folder, details,
                classes, jobs, timeout)
        if set(trees) == set(TREES):
            seen = {w: {c["chain"] for c in records[w]["chains"]
                        if c["seen"]} for w in TREES}
            result["seen_differs"] = {
                w: sorted(seen[w] - seen[o])
                for w, o in (("core", "series"), ("series", "core"))}
        main = result["boots"].get("series") or result["boots"]["core"]
        result["coverage"] = main["coverage"]
        result["mutant"] = main["mutant"]
        result["outcome"], result["reasons"] = verdict(result)
    except Error as e:
        result["reasons"] = [str(e)]
        raise
    finally:
        output.publish(stage, final, "result.json", result)
        report(result, final)
    return OUTCOMES[result["outcome"]]


def report(result, folder):
    for which, boot in result["boots"].items():
        cov = boot["coverage"]
        say(f"Linux {result['kernel']} ({which}): {boot['events']} notifier "
            f"events, {cov['seen']} chains of the YAML seen "
            f"({cov['seen_compiled_in']} of {cov['compiled_in']} compiled "
            f"in, {cov.get('compiled_in_unknown') or 0} not told), "
            f"{boot.get('unidentified', 0)} heads not told apart, "
            f"{len(boot['contradictions'])} contradictions, "
            f"{sum(not s['expected'] for s in boot['splats'])} splats; "
            f"build {boot['build_seconds']}s, boot {boot['boot_seconds']}s")
        for s in boot["steps"]:
            say(f"  step {s['step']}: {s['status']}; meant "
                f"{', '.join(s['meant']) or '-'}; reached "
                f"{', '.join(s['reached']) or '-'}")
    m = result.get("mutant")
    if m:
        say(f"  mutant: {m['chain']} declared blocking: "
            + ("caught" if m["caught_by"] else "NOT CAUGHT"))
    say(f"runtime test: {result['outcome'].upper()}")
    for reason in result["reasons"]:
        say("  - " + reason)
    say(f"  results in {folder}/result.json and chains.json")
