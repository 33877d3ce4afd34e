"""The notifier events of a console log: the trace buffer that the runtime
test's workload prints (ftrace's text format, with the context flags of
each event), and the one that the kernel prints with ftrace_dump() as it
powers off (the same lines after printk's timestamp)."""

import dataclasses
import re
from dataclasses import dataclass

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
    r"\s+(?P<event>notifier_\w+):\s+(?P<fields>.*)$")
# "# entries-in-buffer/entries-written: 1101/1101   #P:2": fewer kept
# than written means the buffer overflowed.
ENTRIES = re.compile(r"entries-in-buffer/entries-written: (?P<kept>\d+)/"
                     r"(?P<written>\d+)")
# The fields of each event; a symbol of a module (%ps, %pS) ends with
# " [module]".
SYMBOL = r"\S+(?: \[\S+\])?"
FIELDS = re.compile(rf"^chain=(?P<chain>{SYMBOL})(?: cb=(?P<cb>{SYMBOL}))?"
                    rf"(?: val=(?P<val>\d+))?(?: caller=(?P<caller>.+))?$")
EVENTS = ("notifier_register", "notifier_unregister", "notifier_call",
          "notifier_run")
# Contexts, from the flags; "process" when none applies.
ATOMIC_CONTEXTS = ("nmi", "hardirq", "softirq", "irqs-off", "bh-off",
                   "preempt-off")
# The boot task in start_kernel(), on CPU 0 before any other task ran:
# interrupts or preemption are off there, and the core patch lets it
# write chains (system_state is SYSTEM_BOOTING), as might_sleep() does.
EARLY_BOOT = "early-boot"


@dataclass(frozen=True)
class Event:
    event: str          # one of EVENTS
    chain: str          # the head's symbol, or its address (0x...)
    cb: str             # the callout (%ps), for register/unregister/run
    caller: str         # the caller of the chain API (%pS), or ""
    contexts: tuple     # of ATOMIC_CONTEXTS, ("process",) or
                        # (EARLY_BOOT,)
    task: str
    line: int           # in the console log

    @property
    def atomic(self):
        return any(c in ATOMIC_CONTEXTS for c in self.contexts)

    @property
    def function(self):
        """The caller's function name, without offset and module."""
        return function_of(self.caller)


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


def _event(m, number, flags):
    """The Event of a matched line, or None for another event's."""
    fields = FIELDS.match(m.group("fields").strip())
    if not fields or m.group("event") not in EVENTS:
        return None
    return Event(m.group("event"), fields.group("chain"),
                 fields.group("cb") or "", fields.group("caller") or "",
                 contexts(flags), m.group("task").strip(), number)


def parse(lines, begin="runtime: trace begins", end="runtime: trace ends",
          dump_after="runtime: step poweroff"):
    """The events of a console log, as a list of Event: the trace buffer's
    between `begin` and `end`, and those of the power-off path, which the
    kernel dumps after `dump_after` (the workload empties the buffer
    before).  Also returns whether the buffer's dump was complete (both
    markers seen)."""
    events = []
    state = "before"
    complete = False
    others = False      # whether a task but the boot task had an event
    for number, line in enumerate(lines, 1):
        text = line.rstrip("\r\n")
        if state == "before" and text.strip() == begin:
            state = "trace"
        elif state == "trace" and text.strip() == end:
            state, complete = "after", True
        elif state == "after" and dump_after in text:
            state = "dump"
        elif state in ("trace", "dump"):
            m = TRACE_LINE.match(text)
            e = m and _event(m, number, m.group("flags") or m.group("lflags"))
            if not e:
                continue
            if m.group("pid") != "0":
                others = True
            elif state == "trace" and not others and \
                    int(m.group("cpu") or m.group("lcpu")) == 0 and \
                    not set(e.contexts) & {"nmi", "hardirq", "softirq"}:
                e = dataclasses.replace(e, contexts=(EARLY_BOOT,))
            events.append(e)
    return events, complete
