"""The notifier events of a console log: the trace buffer that the runtime
test's workload prints (ftrace's text format, with the context flags of
each event) and the events the kernel prints as they come (tp_printk,
without flags) while it powers off."""

import re
from dataclasses import dataclass

# "    modprobe-85   [001] d..1.   12.345678: notifier_call: chain=..."
# The flags are irqs-off/BH-disabled, need-resched, hardirq/softirq,
# preempt-depth and (6.1 and later) migrate-disable.
TRACE_LINE = re.compile(
    r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?"
    r"\[(?P<cpu>\d+)\]\s+(?P<flags>[^\s]{4,5})\s+(?P<time>\d+\.\d+):\s+"
    r"(?P<event>notifier_\w+):\s+(?P<fields>.*)$")
# "[   80.123456] notifier_call: chain=..." (tp_printk).
PRINTK_LINE = re.compile(
    r"^(?:\[\s*(?P<time>\d+\.\d+)\]\s+)?(?P<event>notifier_\w+):\s+"
    r"(?P<fields>chain=.*)$")
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


@dataclass(frozen=True)
class Event:
    event: str          # one of EVENTS
    chain: str          # the head's symbol, or its address (0x...)
    cb: str             # the callout (%ps), for register/unregister/run
    caller: str         # the caller of the chain API (%pS), or ""
    contexts: tuple     # of ATOMIC_CONTEXTS, ("process",), or () when the
                        # event came without flags (tp_printk)
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
    fields = FIELDS.match(m.group("fields").strip())
    if not fields or m.group("event") not in EVENTS:
        return None
    return Event(m.group("event"), fields.group("chain"),
                 fields.group("cb") or "", fields.group("caller") or "",
                 contexts(flags) if flags is not None else (),
                 m.groupdict().get("task") or "", number)


def parse(lines, begin="runtime: trace begins", end="runtime: trace ends",
          printk_after="runtime: step poweroff"):
    """The events of a console log, as a list of Event: the trace buffer's
    between `begin` and `end`, with their flags, and those the kernel
    printed after `printk_after`, without (tp_printk also prints the boot's
    events, which the buffer holds already).  Also returns whether the
    buffer's dump was complete (both markers seen)."""
    events = []
    state = "before"
    complete = False
    for number, line in enumerate(lines, 1):
        text = line.rstrip("\r\n")
        if state == "before" and text.strip() == begin:
            state = "trace"
        elif state == "trace" and text.strip() == end:
            state, complete = "after", True
        elif state == "trace":
            m = TRACE_LINE.match(text)
            if m:
                e = _event(m, number, m.group("flags"))
                if e:
                    events.append(e)
        elif state == "after" and printk_after in text:
            state = "printk"
        elif state == "printk":
            m = PRINTK_LINE.search(text)
            if m:
                e = _event(m, number, None)
                if e:
                    events.append(e)
    return events, complete
