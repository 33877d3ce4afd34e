"""The notifier events of a boot: the trace buffer that the runtime test's
workload prints (ftrace's text format, with the context flags of each
event) on the trace port (or, in older recordings, on the console), and
the one that the kernel prints with ftrace_dump() as it powers off (the
same lines after printk's timestamp, on the console)."""

import bisect
import dataclasses
import re
from dataclasses import dataclass, field

# "    modprobe-85   [001] d..1.   12.345678: notifier_call: chain=..."
# The flags are irqs-off/BH-disabled, need-resched, hardirq/softirq,
# preempt-depth and (6.1 and later) migrate-disable.  ftrace_dump() prints
# the same after printk's timestamp, or in the latency format, the CPU
# glued to the flags: "poweroff-95   1d..1. 1234us : notifier_call: ...".
TRACE_LINE = re.compile(
    r"^(?:\[\s*\d+\.\d+\]\s)?\s*(?P<task>.+?)-(?P<pid>\d+)\s+"
    r"(?:\(\s*[\d-]+\)\s+)?"
    r"(?:\[(?P<cpu>\d+)\]\s+(?P<flags>[^\s]{4,5})\s+(?P<time>\d+\.\d+):"
    r"|(?P<lcpu>\d+)(?P<lflags>[^\s\d][^\s]{3,4})\s+(?P<ltime>\d+)us"
    r"[ !#$@*+]?\s*:)"
    r"\s+(?P<event>\w+):\s+(?P<fields>.*)$")
# A line that names one of our events: one that TRACE_LINE or FIELDS
# cannot read (say, cut by a console message) is a harness error, not a
# line to skip.
NAMES_EVENT = re.compile(r":\s+notifier_\w+:\s")
# "# entries-in-buffer/entries-written: 1101/1101   #P:2": fewer kept
# than written means the buffer overflowed.
ENTRIES = re.compile(r"entries-in-buffer/entries-written: (?P<kept>\d+)/"
                     r"(?P<written>\d+)")
# A reader that finds events overwritten says so in their place: the
# trace file (a reader that does not consume) without a count,
# ftrace_dump() with one.
LOST = re.compile(r"\[LOST (?:(?P<lost>\d+) )?EVENTS\]")
# printk dropped lines of the dump: it is cut.
PRINTK_DROPPED = re.compile(r"printk messages dropped|messages suppressed")
# ftrace_dump()'s frame (kernel/trace/trace.c): a header line, a line of
# dashes, the events and a line of dashes, or "(ftrace buffer empty)"
# in their place.
DUMP_BEGINS = "Dumping ftrace buffer:"
DUMP_RULE = re.compile(r"^(?:\[[^]]*\]\s)?-{10,}$")
DUMP_EMPTY = "(ftrace buffer empty)"
# The fields of each event; a symbol of a module (%ps, %pS) ends with
# " [module]".
SYMBOL = r"\S+(?: \[\S+\])?"
FIELDS = re.compile(rf"^chain=(?P<chain>{SYMBOL})(?: cb=(?P<cb>{SYMBOL}))?"
                    rf"(?: val=(?P<val>\d+))?(?: caller=(?P<caller>.+))?$")
EVENTS = ("notifier_register", "notifier_unregister", "notifier_call",
          "notifier_run")
# The first fork, rest_init() creating the init task (pid 1): the end of
# start_kernel(), so of the boot task's early boot.  The workload turns
# the event off as it starts.  Its line: the boot task (pid 0) on CPU 0
# forking pid 1.
BOOT_ENDS = "task_newtask"
BOOT_ENDS_FIELDS = re.compile(r"^pid=1\s")
# The workload's trace_marker writes around each step.
MARKER = "tracing_mark_write"
STEP_MARK = re.compile(r"^runtime: step (?P<step>\S+) (?P<edge>begins|ends)$")
# The workload's copy of a module's /proc/kallsyms lines before it is
# unloaded: the trace prints that module's addresses raw once it is gone.
KALLSYMS = re.compile(r"runtime: kallsyms (?P<addr>[0-9a-f]+) \w "
                      r"(?P<name>\S+)\s+\[(?P<module>[^]]+)\]")
ADDRESS = re.compile(r"^0x(?P<addr>[0-9a-f]+)$")
# Contexts, from the flags; "process" when none applies.
ATOMIC_CONTEXTS = ("nmi", "hardirq", "softirq", "irqs-off", "bh-off",
                   "preempt-off")
# The boot task in start_kernel(), on CPU 0 before rest_init() forks the
# init task: interrupts or preemption are off there, and the core patch
# lets it write chains (system_state is SYSTEM_BOOTING), as might_sleep()
# does.
EARLY_BOOT = "early-boot"
# The power-off dump's events, in no step of the trace.
POWER_OFF_STEP = "poweroff"
# What tools/runtime-module prints (in the kernel, so in order) before
# its ftrace_dump().
POWER_OFF_DUMP = "notifier_runtime: power-off events follow"


@dataclass(frozen=True)
class Event:
    event: str          # one of EVENTS
    chain: str          # the head's symbol, or its address (0x...)
    cb: str             # the callout (%ps), for register/unregister/run
    caller: str         # the caller of the chain API (%pS), or ""
    contexts: tuple     # of ATOMIC_CONTEXTS, ("process",) or
                        # (EARLY_BOOT,)
    task: str
    line: int           # in its file
    where: str = ""     # "file:line"
    step: str = ""      # the workload's step it happened in, or ""
    pid: int = -1
    cpu: int = -1

    @property
    def atomic(self):
        return any(c in ATOMIC_CONTEXTS for c in self.contexts)

    @property
    def function(self):
        """The caller's function name, without offset and module."""
        return function_of(self.caller)


@dataclass
class Trace:
    """What parse() read."""
    events: list = field(default_factory=list)
    complete: bool = False      # the trace's begin and end markers seen
    header: bool = False        # its entries-in-buffer line seen
    lost: int = 0               # entries written but not kept
    unparsed: list = field(default_factory=list)    # "file:line"
    boot_ends: str = None       # "file:line" of BOOT_ENDS, if seen
    marked: set = field(default_factory=set)    # steps whose begin and
                                                # end markers were seen
    # The power-off dump: None when it did not begin, "complete" when
    # its closing rule was seen, "empty" or "cut" (no closing rule).
    dump: str = None


def function_of(symbol):
    """'foo+0x12/0x80 [mod]' and 'foo [mod]' -> 'foo'; an address stays as
    it is."""
    return symbol.split("+", 1)[0].split(" ", 1)[0] if symbol else ""


def contexts(flags):
    """The contexts that ftrace's flags column says, as a tuple."""
    flags = flags.ljust(5, ".")
    irqs, _, irq_kind, depth = flags[0], flags[1], flags[2], flags[3]
    found = []
    if irq_kind in "zZ":
        found.append("nmi")
    if irq_kind in "hHZ":
        found.append("hardirq")
    if irq_kind in "sH":
        found.append("softirq")
    if irqs in "dD":
        found.append("irqs-off")
    if irqs in "bD":
        found.append("bh-off")
    if depth not in ".0":
        found.append("preempt-off")
    return tuple(found) or ("process",)


PAGE = 0x1000


class Symbols:
    """Modules' symbols that the workload copied before unloading them,
    to name the addresses the trace prints raw."""

    def __init__(self):
        self.table = []     # sorted (address, name, module)

    def add(self, m):
        bisect.insort(self.table, (int(m["addr"], 16), m["name"],
                                   m["module"]))

    def name(self, token, offset):
        """`token` named as %pS (offset) or %ps would have, when it is a
        raw address inside a copied module; else `token`.  An address is
        inside a module when the next symbol of the table is the same
        module's, or when it is less than a page past the symbol before
        it: past a module's last symbol, or in a gap between two of its
        areas (text, data), the address may be another module's, or an
        init symbol's that kallsyms no longer lists."""
        m = ADDRESS.match(token)
        if not m or not self.table:
            return token
        addr = int(m["addr"], 16)
        i = bisect.bisect_right(self.table, (addr, "\xff", "")) - 1
        if i < 0:
            return token
        start, name, module = self.table[i]
        following = self.table[i + 1][2] if i + 1 < len(self.table) else None
        if addr - start >= PAGE and following != module:
            return token
        return (f"{name}+{addr - start:#x} [{module}]" if offset
                else f"{name} [{module}]")


def _event(m, where, number, step):
    """The Event of a matched line of EVENTS, or None when its fields do
    not read."""
    fields = FIELDS.match(m.group("fields").strip())
    if not fields:
        return None
    return Event(m.group("event"), fields.group("chain"),
                 fields.group("cb") or "", fields.group("caller") or "",
                 contexts(m["flags"] or m["lflags"]),
                 m.group("task").strip(), number, where, step,
                 int(m["pid"]), int(m["cpu"] or m["lcpu"]))


def _section(lines, source, trace, state):
    """Reads one part of a trace, appending to `trace`: `state` carries
    the step and whether the boot task's early boot is over."""
    for number, text in lines:
        where = f"{source}:{number}"
        sizes = ENTRIES.search(text)
        if sizes:
            trace.header = True
            trace.lost += int(sizes["written"]) - int(sizes["kept"])
            continue
        lost = LOST.search(text)
        if lost:
            trace.lost += int(lost["lost"] or 1)
            continue
        m = TRACE_LINE.match(text)
        if m and m["event"] == BOOT_ENDS:
            if state["early"] and m["pid"] == "0" and \
                    int(m["cpu"] or m["lcpu"]) == 0 and \
                    BOOT_ENDS_FIELDS.match(m["fields"]):
                trace.boot_ends, state["early"] = where, False
            continue
        if m and m["event"] == MARKER:
            mark = STEP_MARK.match(m["fields"].strip())
            if mark and mark["edge"] == "begins":
                state["step"] = mark["step"]
            elif mark:
                if state["step"] == mark["step"]:
                    trace.marked.add(mark["step"])
                state["step"] = ""
            continue
        e = m and m["event"] in EVENTS and _event(m, where, number,
                                                  state["step"])
        if not e:
            if NAMES_EVENT.search(text):
                trace.unparsed.append(where)
            continue
        if e.pid != 0:
            state["early"] = False
        elif state["early"] and e.cpu == 0 and \
                not set(e.contexts) & {"nmi", "hardirq", "softirq"}:
            e = dataclasses.replace(e, contexts=(EARLY_BOOT,))
        trace.events.append(e)


def _dump(console, after):
    """The numbered lines of ftrace_dump()'s output on the console past
    line `after`, and whether it was "complete", "empty" or "cut" (None
    when it did not begin)."""
    begun, rules, found = False, 0, []
    for number, line in enumerate(console[after:], after + 1):
        text = line.rstrip("\r\n")
        if not begun:
            begun = DUMP_BEGINS in text
        elif DUMP_RULE.match(text):
            rules += 1
            if rules == 2:
                return found, "complete"
        elif DUMP_EMPTY in text:
            return found, "empty"
        elif PRINTK_DROPPED.search(text):
            return found, "cut"
        else:
            found.append((number, text))
    return found, "cut" if begun else None


def parse(console, trace_port=None, begin="runtime: trace begins",
          end="runtime: trace ends", dump_after=POWER_OFF_DUMP):
    """The Trace of a boot: the trace buffer's events between `begin` and
    `end` on `trace_port` (the lines of the trace port's log, named
    trace.log; when None, on the console, as the first recordings had
    it), and those of the power-off path, which the kernel dumps on the
    console after `dump_after` (the workload empties the buffer before).
    Events take their module symbols from the workload's kallsyms lines
    on either."""
    trace = Trace()
    symbols = Symbols()
    for line in list(console) + list(trace_port or ()):
        m = KALLSYMS.search(line)
        if m:
            symbols.add(m)
    source = console if trace_port is None else trace_port
    name = "console.log" if trace_port is None else "trace.log"
    inside, after, ended = [], None, 0
    for number, line in enumerate(source, 1):
        text = line.rstrip("\r\n")
        if after is None and text.strip() == begin:
            after = False
        elif after is False and text.strip() == end:
            trace.complete, after, ended = True, True, number
        elif after is False:
            inside.append((number, text))
    state = {"step": "", "early": True}
    _section(inside, name, trace, state)
    after = next((number for number, line in enumerate(console, 1)
                  if dump_after in line and (trace_port is not None
                                             or ended and number > ended)),
                 None)
    if after is not None:
        dump, trace.dump = _dump(console, after)
        _section(dump, "console.log", trace,
                 {"step": POWER_OFF_STEP, "early": False})
    trace.events = [dataclasses.replace(
        e, chain=symbols.name(e.chain, False), cb=symbols.name(e.cb, False),
        caller=symbols.name(e.caller, True)) for e in trace.events]
    return trace
