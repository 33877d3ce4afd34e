"""The runtime test's analysis, on a console log written like the kernel's
(tests/fixtures/runtime/console-small.log and its trace port's,
trace-small.log): the trace's events and their
contexts, the chains they belong to, the contradictions with the YAML and
the misclassification mutant."""

import os
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import classify, ftrace, runtime

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "runtime")


def site(function, op="call"):
    return {"at": "x.c:1", "in": function, "op": op, "context": []}


DETAILS = {
    ("module_notify_list", "kernel/module/main.c"): {
        "chain": "module_notify_list", "defined": "kernel/module/main.c:1",
        "class": "blocking",
        "sites": [site("do_init_module"),
                  site("register_module_notifier", "register")],
        "callers": [], "callouts": []},
    ("keyboard_notifier_list", "drivers/tty/vt/keyboard.c"): {
        "chain": "keyboard_notifier_list",
        "defined": "drivers/tty/vt/keyboard.c:1", "class": "atomic",
        "sites": [site("kbd_event")], "callers": [], "callouts": []},
    ("struct subsys_private.bus_notifier", "drivers/base/base.h"): {
        "chain": "struct subsys_private.bus_notifier",
        "defined": "drivers/base/base.h:49", "class": "blocking",
        "sites": [site("device_add"),
                  site("bus_register_notifier", "register")],
        "callers": [], "callouts": []},
    ("struct pm_qos_constraints.notifiers", "include/linux/pm_qos.h"): {
        "chain": "struct pm_qos_constraints.notifiers",
        "defined": "include/linux/pm_qos.h:60", "class": "blocking",
        "sites": [site("pm_qos_update_target")], "callers": [],
        "callouts": []},
    ("reboot_notifier_list", "kernel/notifier.c"): {
        "chain": "reboot_notifier_list", "defined": "kernel/notifier.c:15",
        "class": "blocking", "sites": [site("kernel_power_off")],
        "callers": [], "callouts": []},
    ("modchain", "drivers/kbd_test.c"): {
        "chain": "modchain", "defined": "drivers/kbd_test.c:3",
        # Its event's caller is none of these: the name tells it.
        "class": "blocking",
        "sites": [site("modchain_unregister", "unregister")],
        "callers": [], "callouts": []},
    # Two static heads of one name, in two files.
    ("dup_chain", "a.c"): {
        "chain": "dup_chain", "defined": "a.c:1", "class": "blocking",
        "sites": [site("a_fn")], "callers": [], "callouts": []},
    ("dup_chain", "b.c"): {
        "chain": "dup_chain", "defined": "b.c:1", "class": "blocking",
        "sites": [site("b_fn")], "callers": [], "callouts": []},
}
CLASSES = {key: d["class"] for key, d in DETAILS.items()}


def read(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read().splitlines()


def lines():
    """The console of the small boot."""
    return read("console-small.log")


def port():
    """Its trace port."""
    return read("trace-small.log")


def clean():
    """The small boot without what is wrong in it: the console and the
    trace port of a boot that passes (no splat, no step that failed or
    means a chain the YAML lacks, no writer or blocking call in atomic
    context)."""
    console = [line.replace("module_notify_list, pm_chain_head",
                            "module_notify_list")
               .replace("keyboard failed: status 1", "keyboard done")
               for line in lines() if not line.startswith("[   16.")]
    trace = [line.replace("[001] d..1.    14.000000",
                          "[001] .....    14.000000")
             for line in port() if "idle_cb" not in line
             and "late_fn" not in line]
    return console, trace


def analyse(console=None, trace=None, classes=CLASSES, details=DETAILS):
    return runtime.analyse(lines() if console is None else console, details,
                           classes, trace_port=port() if trace is None
                           else trace)


def boot_verdict(boot):
    """The verdict of a run whose series' boot is `boot`."""
    return runtime.verdict({"boots": {"series": boot}, "seen_differs": {},
                            "mutant": runtime.mutant(lines(), DETAILS,
                                                     CLASSES,
                                                     trace_port=port())})


def event(chain, caller="", pid=90, cpu=1, name="notifier_call",
          contexts=("process",)):
    return ftrace.Event(name, chain, "cb" if not caller else "", caller,
                        contexts, "sh", 1, "trace.log:1", "", pid, cpu)


class FtraceTest(unittest.TestCase):
    def test_flags_give_the_contexts(self):
        self.assertEqual(ftrace.contexts("....."), ("process",))
        self.assertEqual(ftrace.contexts("d.h1."),
                         ("hardirq", "irqs-off", "preempt-off"))
        self.assertEqual(ftrace.contexts("..s.."), ("softirq",))
        self.assertEqual(ftrace.contexts("b...."), ("bh-off",))
        self.assertEqual(ftrace.contexts(".Nz.."), ("nmi",))
        self.assertEqual(ftrace.contexts("...2."), ("preempt-off",))
        # D: irqs and BH off; H: a hard IRQ inside a softirq; Z: an NMI
        # inside a hard IRQ.
        self.assertEqual(ftrace.contexts("D.H1."),
                         ("hardirq", "softirq", "irqs-off", "bh-off",
                          "preempt-off"))
        self.assertEqual(ftrace.contexts("d.Z1."),
                         ("nmi", "hardirq", "irqs-off", "preempt-off"))

    def test_the_trace_port_and_the_power_off_dump_are_read(self):
        trace = ftrace.parse(lines(), port())
        self.assertTrue(trace.complete)
        self.assertTrue(trace.header)
        self.assertEqual((trace.lost, trace.unparsed), (0, []))
        self.assertEqual(trace.boot_ends, "trace.log:20")
        events = trace.events
        # The trace port's notifier events and the power-off dump's, not
        # task_newtask nor the step markers.
        self.assertEqual(len(events), 18)
        self.assertEqual(events[3].event, "notifier_register")
        self.assertEqual(events[3].function, "register_module_notifier")
        last = events[-1]
        self.assertEqual((last.chain, last.contexts, last.function,
                          last.where, last.step),
                         ("reboot_notifier_list", ("process",),
                          "kernel_power_off", "console.log:18", "poweroff"))
        mystery = next(e for e in events if "mystery" in e.caller)
        self.assertEqual(mystery.caller, "mystery_fn+0x1/0x2 [mystery]")
        self.assertEqual(mystery.function, "mystery_fn")

    def test_steps_are_told_by_the_trace_markers(self):
        events = ftrace.parse(lines(), port()).events
        steps = {e.where: e.step for e in events}
        self.assertEqual(steps["trace.log:22"], "")     # boot
        self.assertEqual(steps["trace.log:24"], "modules")
        self.assertEqual(steps["trace.log:30"], "keyboard")
        self.assertEqual(steps["trace.log:33"], "")

    def test_an_unloaded_module_s_addresses_are_named(self):
        events = {e.where: e for e in ftrace.parse(lines(), port()).events}
        self.assertEqual(events["trace.log:27"].cb, "mod_cb [kbd_test]")
        self.assertEqual(events["trace.log:31"].cb,
                         "kbd_cb_sleeper [kbd_test]")
        # A heap address is no module's.
        self.assertEqual(events["trace.log:33"].chain, "0xffff888003a1c218")
        symbols = ftrace.Symbols()
        self.assertEqual(symbols.name("0xffffffffc0200008", True),
                         "0xffffffffc0200008")

    def test_the_boot_task_until_the_init_task_s_fork_is_early_boot(self):
        events = ftrace.parse(lines(), port()).events
        self.assertEqual(events[0].contexts, (ftrace.EARLY_BOOT,))
        self.assertNotIn(ftrace.EARLY_BOOT, ftrace.ATOMIC_CONTEXTS)
        # Not on another CPU, nor after rest_init() forked the init task
        # (even before any other task's event), nor in an interrupt.
        idle = {e.where: e.contexts for e in events if e.task == "<idle>"}
        self.assertEqual(idle["trace.log:19"], ("irqs-off", "preempt-off"))
        self.assertEqual(idle["trace.log:21"], ("irqs-off", "preempt-off"))
        self.assertEqual(idle["trace.log:35"], ("irqs-off", "preempt-off"))
        self.assertIn("hardirq", idle["trace.log:30"])

    def test_only_the_boot_task_forking_init_on_cpu_0_ends_early_boot(self):
        newtask = next(line for line in port() if "task_newtask" in line)
        for wrong in (newtask.replace("<idle>-0 ", "<idle>-7 "),
                      newtask.replace("[000]", "[001]"),
                      newtask.replace("pid=1 ", "pid=12 ")):
            trace = ftrace.parse(lines(), [wrong if line == newtask
                                           else line for line in port()])
            self.assertIsNone(trace.boot_ends, wrong)
            # The boot task's registration after it is still early boot.
            self.assertEqual(trace.events[2].contexts, (ftrace.EARLY_BOOT,))
        # Nor one in the power-off dump, which follows the early boot.
        console = lines()
        dumped = ("[   17.000004] <idle>-0          0d..1. 16999998us : "
                  "task_newtask: pid=1 comm=swapper/0 clone_flags=800300 "
                  "oom_score_adj=0")
        at = console.index(
            "[   17.000003] ---------------------------------") + 1
        trace = ftrace.parse(console[:at] + [dumped] + console[at:],
                             [line for line in port() if line != newtask])
        self.assertIsNone(trace.boot_ends)
        self.assertEqual(trace.dump, "complete")

    def test_an_address_is_named_only_inside_a_module(self):
        symbols = ftrace.Symbols()
        for addr, kind, name, module in (
                ("ffffffffc0200000", "t", "a_fn", "a"),
                ("ffffffffc0210000", "d", "a_data", "a"),
                ("ffffffffc0300000", "t", "b_fn", "b"),
                ("ffffffffc0400000", "d", "a_late", "a")):
            symbols.add(ftrace.KALLSYMS.search(
                f"runtime: kallsyms {addr} {kind} {name}\t[{module}]"))
        # Between two symbols of one module: its own, however far.
        self.assertEqual(symbols.name("0xffffffffc0208000", True),
                         "a_fn+0x8000 [a]")
        # Less than a page past a symbol: that module's.
        self.assertEqual(symbols.name("0xffffffffc0210010", False),
                         "a_data [a]")
        # Farther, before another module's symbol or past the last one:
        # a module not copied, or an init symbol kallsyms dropped.
        self.assertEqual(symbols.name("0xffffffffc0250000", True),
                         "0xffffffffc0250000")
        # Even when the module has symbols farther on.
        self.assertEqual(symbols.name("0xffffffffc0212000", True),
                         "0xffffffffc0212000")
        self.assertEqual(symbols.name("0xffffffffc0302000", True),
                         "0xffffffffc0302000")

    def test_the_dump_is_read_whole_or_said_not_to_be(self):
        console = lines()
        rule = "[   17.000005] ---------------------------------"
        self.assertEqual(ftrace.parse(console, port()).dump, "complete")
        trace = ftrace.parse([line for line in console if line != rule],
                             port())
        self.assertEqual(trace.dump, "cut")
        # Its events are read all the same.
        self.assertEqual(trace.events[-1].step, ftrace.POWER_OFF_STEP)
        empty = console[:16] + ["[   17.000003]    (ftrace buffer empty)"]
        self.assertEqual(ftrace.parse(empty, port()).dump, "empty")
        self.assertIsNone(ftrace.parse(console[:15], port()).dump)
        lost = console[:17] + ["[   17.000004] CPU:1 [LOST 3 EVENTS]"] \
            + console[17:]
        self.assertEqual(ftrace.parse(lost, port()).lost, 3)
        dropped = console[:17] + ["[   17.000004] printk: 12 messages "
                                  "suppressed"] + console[17:]
        self.assertEqual(ftrace.parse(dropped, port()).dump, "cut")
        # The trace file's loss has no count.
        trace = port()
        trace.insert(trace.index("runtime: trace ends"),
                     "CPU:1 [LOST EVENTS]")
        self.assertEqual(ftrace.parse(console, trace).lost, 1)
        # The dump follows the kernel's line, not the workload's, which
        # the tty may print late or not at all.
        late = [line for line in console if "step poweroff" not in line]
        self.assertEqual(ftrace.parse(late, port()).dump, "complete")

    def test_a_dump_cut_short_is_incomplete(self):
        cut = [line for line in port() if "trace ends" not in line]
        self.assertFalse(ftrace.parse(lines(), cut).complete)

    def test_the_first_recordings_had_the_trace_on_the_console(self):
        console = [line for line in lines()
                   if not line.startswith("runtime: printing")]
        at = console.index("runtime: step poweroff meant: "
                           "reboot_notifier_list")
        old = console[:at] + [line for line in port()
                              if "kallsyms" not in line] + console[at:]
        trace = ftrace.parse(old)
        self.assertTrue(trace.complete)
        self.assertEqual(len(trace.events), 18)
        self.assertTrue(trace.events[0].where.startswith("console.log:"))


class RuntimeTest(unittest.TestCase):
    def identified(self):
        events = ftrace.parse(lines(), port()).events
        return {e.where: key for e, key in
                zip(events, runtime.identify(events, DETAILS))}

    def test_heads_are_told_by_symbol_or_by_their_callers(self):
        ids = self.identified()
        self.assertEqual(ids["trace.log:22"],
                         ("module_notify_list", "kernel/module/main.c"))
        bus = ("struct subsys_private.bus_notifier", "drivers/base/base.h")
        self.assertEqual(ids["trace.log:26"], bus)
        self.assertEqual(ids["trace.log:33"], bus)
        self.assertIsNone(ids["trace.log:34"])
        # An address is no static head, whatever its caller.
        self.assertIsNone(ids["trace.log:36"])

    def test_a_heap_address_used_again_is_another_chain(self):
        ids = self.identified()
        qos = ("struct pm_qos_constraints.notifiers", "include/linux/pm_qos.h")
        self.assertEqual(ids["trace.log:37"], qos)
        # The callout run after the call, which has no caller of its own.
        self.assertEqual(ids["trace.log:38"], qos)

    def test_a_callout_run_follows_its_own_task_s_call(self):
        qos = ("struct pm_qos_constraints.notifiers", "include/linux/pm_qos.h")
        head = "0xffff888003a1c218"
        # Two idle tasks (pid 0) on two CPUs call the same head, the
        # second from a function no chain lists; the first's callout.
        events = [event(head, "pm_qos_update_target+0x1/0x2", 0, 0),
                  event(head, "mystery_fn+0x1/0x2", 0, 1),
                  event(head, pid=0, cpu=0), event(head, pid=0, cpu=1)]
        self.assertEqual(runtime.identify(events, DETAILS),
                         [qos, None, qos, None])

    def test_a_static_structure_s_member_is_told_by_its_caller(self):
        details = dict(DETAILS)
        netdev = ("struct net.netdev_chain", "include/net/net_namespace.h")
        details[netdev] = {
            "chain": netdev[0], "defined": netdev[1] + ":1",
            "class": "blocking", "callers": [],
            "sites": [site("call_netdevice_notifiers_info")]}
        # A static head of that caller, which the symbol is not.
        details[("netdev_static", "x.c")] = {
            "chain": "netdev_static", "defined": "x.c:1",
            "class": "blocking", "callers": [],
            "sites": [site("call_netdevice_notifiers_info"),
                      site("kbd_event")]}
        # %ps of &init_net.netdev_chain: the structure's symbol.
        ids = runtime.identify(
            [event("init_net", "call_netdevice_notifiers_info+0x4/0x9"),
             event("init_net", "kbd_event+0x1/0x2")], details)
        self.assertEqual(ids, [netdev, None])
        # A callout run on the object is not the call's: the object's
        # member chains all print as its symbol.
        self.assertEqual(runtime.identify(
            [event("init_net", "call_netdevice_notifiers_info+0x4/0x9"),
             event("init_net")], details), [netdev, None])
        # A member chain named after the symbol is preferred.
        details[("init_net.netdev_chain", "net/core/dev.c")] = {
            "chain": "init_net.netdev_chain", "defined": "net/core/dev.c:1",
            "class": "blocking", "callers": [],
            "sites": [site("call_netdevice_notifiers_info")]}
        self.assertEqual(runtime.identify(
            [event("init_net", "call_netdevice_notifiers_info+0x4/0x9")],
            details), [("init_net.netdev_chain", "net/core/dev.c")])

    def test_static_heads_of_one_name_and_of_modules(self):
        ids = self.identified()
        self.assertEqual(ids["trace.log:39"], ("dup_chain", "b.c"))
        self.assertEqual(ids["trace.log:27"],
                         ("modchain", "drivers/kbd_test.c"))

    def test_what_is_compiled_in_and_what_cannot_be_told(self):
        with tempfile.TemporaryDirectory() as build:
            os.makedirs(os.path.join(build, "kernel/module"))
            open(os.path.join(build, "kernel/module/main.o"), "w").close()
            header_only = {"chain": "struct freq_constraints.min",
                           "defined": "include/linux/pm_qos.h:87",
                           "class": "blocking", "sites": [], "callers": []}
            details = dict(DETAILS)
            details[("struct freq_constraints.min",
                     "include/linux/pm_qos.h")] = header_only
            rec, result = runtime.analyse([], details, CLASSES, build)
        compiled = {c["chain"]: c["compiled_in"] for c in rec["chains"]}
        self.assertIs(compiled["module_notify_list"], True)
        self.assertIs(compiled["keyboard_notifier_list"], False)
        # A header's head used in no .c file: not told, not counted.
        self.assertIsNone(compiled["struct freq_constraints.min"])
        self.assertEqual(result["compiled_in_unknown"],
                         ["struct freq_constraints.min"])
        self.assertEqual(result["coverage"]["compiled_in"], 1)
        self.assertEqual(result["coverage"]["compiled_in_unknown"], 1)

    def test_contexts_that_contradict_the_yaml(self):
        rec, result = analyse()
        found = result["contradictions"]
        # The blocking bus notifier called with interrupts off.
        self.assertTrue(any(c.startswith(
            "struct subsys_private.bus_notifier (drivers/base/base.h, "
            "blocking): called in atomic context (irqs-off, preempt-off) at "
            "device_add+0x5d1/0xb60 (trace.log:33)") for c in found), found)
        # The atomic keyboard chain's callout, of a module unloaded since,
        # in a sleep-in-atomic report.
        self.assertTrue(any("kbd_cb_sleeper() is in the report" in c
                            for c in found), found)
        # The boot task's registrations once the init task was forked.
        for line in (21, 35):
            self.assertTrue(any("registration in atomic context (irqs-off,"
                                " preempt-off) at" in c and
                                f"(trace.log:{line})" in c
                                for c in found), found)
        self.assertEqual(len(found), 4, found)
        self.assertIn(["mystery_fn"], [u["callers"]
                                       for u in rec["unidentified"]])
        self.assertEqual(result["coverage"]["seen"], 7)

    def test_an_event_not_told_apart_is_judged_on_its_own(self):
        details = dict(DETAILS)
        for n in ("a", "b"):
            details[(f"struct {n}.chain", f"{n}.h")] = {
                "chain": f"struct {n}.chain", "defined": f"{n}.h:1",
                "class": "blocking", "callers": [],
                "sites": [site("shared_fn"), site("shared_reg", "register")]}
        # A third chain that only other_fn uses, atomic.
        details[("struct c.chain", "c.h")] = {
            "chain": "struct c.chain", "defined": "c.h:1", "class": "atomic",
            "callers": [], "sites": [site("shared_fn"), site("other_fn")]}
        classes = {k: d["class"] for k, d in details.items()}
        line = ("           sh-90       [001] {}    14.500000: {}: "
                "chain=0xffff888009990000 {}caller={}+0x1/0x2")

        def run(*events):
            _, trace = clean()
            at = trace.index("runtime: trace ends")
            added = [line.format(flags, name, "val=0 " if name ==
                                 "notifier_call" else "cb=x_cb ", fn)
                     for flags, name, fn in events]
            return [c for c in analyse(clean()[0], trace[:at] + added
                                       + trace[at:], classes,
                                       details)[1]["contradictions"]
                    if c.startswith("0xffff888009990000")]
        call = "notifier_call"
        # a or b, both blocking, called with irqs off: whichever.
        self.assertEqual(run(("d..1.", call, "shared_reg")), [
            "0xffff888009990000: notifier_call in irqs-off, preempt-off at "
            "shared_reg+0x1/0x2 (trace.log:38), not told apart from struct "
            "a.chain (a.h, blocking), struct b.chain (b.h, blocking)"])
        # The same in process context, beside an event of the same address
        # with irqs off that no chain is known for: nothing.
        self.assertEqual(run((".....", call, "shared_reg"),
                             ("d..1.", call, "unknown_fn")), [])
        # a, b or c (atomic) called with irqs off: cannot be told; beside
        # it, a or b: still caught, on its own.
        found = run(("d..1.", call, "shared_fn"), ("d..1.", call,
                                                   "shared_reg"))
        self.assertEqual(len(found), 1, found)
        self.assertIn("shared_reg", found[0])
        # A write with irqs off contradicts atomic and blocking chains.
        found = run(("d..1.", "notifier_register", "shared_fn"))
        self.assertEqual(len(found), 1, found)
        self.assertIn("struct c.chain (c.h, atomic)", found[0])

    def test_every_atomic_context_contradicts_a_blocking_call(self):
        flags = {"nmi": "..z..", "hardirq": "..h..", "softirq": "..s..",
                 "irqs-off": "d....", "bh-off": "b....",
                 "preempt-off": "...1."}
        self.assertEqual(set(flags), set(ftrace.ATOMIC_CONTEXTS))
        for ctx, flag in flags.items():
            trace = [line.replace("[001] .....    12.000001",
                                  f"[001] {flag}    12.000001")
                     for line in port()]
            _, result = analyse(trace=trace)
            self.assertTrue(any(c.startswith("module_notify_list (kernel/"
                                             "module/main.c, blocking): "
                                             f"called in atomic context "
                                             f"({ctx})")
                                for c in result["contradictions"]),
                            (ctx, result["contradictions"]))

    def test_the_same_calls_are_no_contradiction_on_atomic_chains(self):
        classes = dict(CLASSES)
        classes[("struct subsys_private.bus_notifier",
                 "drivers/base/base.h")] = "atomic"
        _, result = analyse(
            [line for line in lines() if "kbd_cb_sleeper+" not in line],
            [line for line in port() if "late_fn" not in line
             and "idle_cb" not in line], classes)
        self.assertEqual(result["contradictions"], [])

    def test_a_writer_in_atomic_context_is_a_contradiction(self):
        for chain, cls in (("struct subsys_private.bus_notifier", "blocking"),
                           ("struct subsys_private.bus_notifier", "atomic")):
            classes = dict(CLASSES)
            classes[(chain, "drivers/base/base.h")] = cls
            bad = [line.replace("[001] .....    12.100000",
                                "[001] d.h1.    12.100000")
                   for line in port()]
            _, result = analyse(trace=bad, classes=classes)
            self.assertTrue(any(
                c.startswith(f"{chain} (drivers/base/base.h, {cls}): "
                             "registration in atomic context (hardirq, "
                             "irqs-off, preempt-off)")
                for c in result["contradictions"]), (cls, result))

    def test_steps_say_what_they_meant_and_reached(self):
        _, result = analyse()
        steps = {s["step"]: s for s in result["steps"]}
        self.assertEqual(steps["modules"]["reached"], ["module_notify_list"])
        self.assertEqual(steps["modules"]["unknown"], ["pm_chain_head"])
        self.assertEqual(steps["keyboard"]["status"], "failed: status 1")
        self.assertEqual(steps["poweroff"]["reached"],
                         ["reboot_notifier_list"])
        # What ran at boot, outside the step's markers, is not reached by
        # it.
        outside = [line for line in port() if "step modules" not in line
                   and "modprobe-80" not in line]
        _, result = analyse(trace=outside)
        steps = {s["step"]: s for s in result["steps"]}
        self.assertEqual(steps["modules"]["reached"], [])

    def test_the_misclassification_mutant_is_caught(self):
        m = runtime.mutant(lines(), DETAILS, CLASSES, trace_port=port())
        self.assertEqual(m["chain"], "keyboard_notifier_list")
        self.assertTrue(m["caught_by"])
        self.assertIn("called in atomic context", m["caught_by"][0])

    def test_the_audit_adds_what_ran(self):
        rec, _ = analyse()
        bus = next(c for c in rec["chains"]
                   if c["chain"].endswith("bus_notifier"))
        said = runtime.observations(bus)
        self.assertIn("seen called 1 times in irqs-off context, e.g. at "
                      "device_add+0x5d1/0xb60 (trace.log:33), in the "
                      "integration boot", said)
        report = {"details": [
            {"chain": bus["chain"], "defined": "drivers/base/base.h:49",
             "class": "blocking", "evidence": []},
            {"chain": "keyboard_notifier_list", "class": "atomic",
             "defined": "drivers/tty/vt/keyboard.c:1", "evidence": ["p"]}]}
        seen = {(c["chain"], c["defined"]): runtime.observations(c)
                for c in rec["chains"] if c["seen"]}
        classify.add_observations(report, seen, "chains.json")
        self.assertEqual(report["runtime"]["only_dynamic"], [bus["chain"]])
        self.assertTrue(report["details"][1]["runtime"])

    def test_a_clean_boot_passes(self):
        _, boot = analyse(*clean())
        self.assertEqual(boot_verdict(boot), ("pass", []))
        steps = {s["step"]: s for s in boot["steps"]}
        self.assertEqual(steps["poweroff"]["status"], "done")
        self.assertEqual(steps["keyboard"]["reached"],
                         ["keyboard_notifier_list"])

    def test_what_the_trace_cannot_tell_is_a_harness_error(self):
        console, trace = clean()
        rule = "[   17.000005] ---------------------------------"
        dump = console.index(rule)
        call = 1 + next(i for i, line in enumerate(trace)
                        if "12.000001" in line)
        ends = trace.index("runtime: trace ends")
        garbled = trace[:ends] + [
            "   sh-1 [001] ..... 1.0: notifier_run: chain x"] * 12 \
            + trace[ends:]
        cases = {
            "the trace buffer overflowed: 5 events lost":
                (console, [line.replace("24/24", "19/24")
                           for line in trace]),
            "the trace buffer overflowed: 3 events lost":
                (console[:dump] + ["[   17.0] CPU:1 [LOST 3 EVENTS]"]
                 + console[dump:], trace),
            "the trace has no entries-in-buffer line":
                (console, [line for line in trace
                           if "entries-in" not in line]),
            f"trace.log:{call}: a notifier event that does not read":
                (console, [line.replace(
                    "modprobe-80       [001] .....    12.000001: "
                    "notifier_call", "modprobe-80       [001] .....    "
                    "12.00[  16.1] hrtimer: x0001: notifier_call")
                    for line in trace]),
            "and 2 more notifier events that do not read":
                (console, garbled),
            "no task_newtask event of the init task":
                (console, [line for line in trace
                           if "task_newtask" not in line]),
            "the workload did not print the whole trace buffer":
                (console, [line for line in trace
                           if "trace ends" not in line]),
            "the power-off events were not printed whole "
            "(tools/runtime-module): the dump was not begun":
                ([line for line in console
                  if "power-off events" not in line], trace),
            "the dump was cut":
                ([line for line in console if line != rule], trace),
            "the dump was empty":
                (console[:dump - 2]
                 + ["[   17.000003]    (ftrace buffer empty)"], trace),
            "step poweroff did not end":
                (console[:dump - 3], trace),
            "no poweroff step on the console":
                ([line for line in console if "step poweroff" not in line],
                 trace),
            "step keyboard: its trace_marker writes are not both in the "
            "trace":
                (console, [line for line in trace
                           if "step keyboard ends" not in line]),
            "step keyboard reached none of what it meant "
            "(reboot_notifier_list)":
                ([line.replace("keyboard meant: keyboard_notifier_list",
                               "keyboard meant: reboot_notifier_list")
                  for line in console], trace),
        }
        for reason, (c, t) in cases.items():
            _, boot = analyse(c, t)
            outcome, reasons = boot_verdict(boot)
            self.assertEqual(outcome, "harness-error", (reason, reasons))
            self.assertTrue(any(reason in r for r in reasons),
                            (reason, reasons))

    def test_verdicts(self):
        _, boot = analyse()
        result = {"boots": {"core": boot, "series": boot},
                  "seen_differs": {"core": [], "series": ["x"]},
                  "mutant": runtime.mutant(lines(), DETAILS, CLASSES,
                                           trace_port=port())}
        outcome, reasons = runtime.verdict(result)
        self.assertEqual(outcome, "harness-error")     # pm_chain_head
        self.assertIn("chains seen only on the series tree: x", reasons)
        self.assertIn("core: step keyboard failed: status 1: what it meant "
                      "was not exercised", reasons)
        self.assertTrue(any("console.log:" in r and "BUG: sleeping" in r
                            for r in reasons))
        self.assertTrue(any("called in atomic context" in r
                            for r in reasons))
        result["mutant"] = None
        self.assertIn("misclassification mutant has nothing to flip",
                      " ".join(runtime.verdict(result)[1]))


class RecordedBoot:
    """A boot of the series' integration kernel recorded in
    tests/fixtures/runtime/<KVER>/, analysed against today's YAML: the
    shorter form of the runtime test that make check runs."""

    KVER, MIN_SEEN = None, None

    def setUp(self):
        boot = runtime.last_boot(self.KVER, os.path.join(FIXTURES, "no-out"))
        self.classes = runtime.yaml_classes(self.KVER)
        self.rec, self.result = runtime.analyse(
            boot.console, boot.details, self.classes,
            trace_port=boot.trace_port)
        self.boot = boot

    def test_every_step_reached_what_it_meant(self):
        r = self.result
        self.assertTrue(r["trace_complete"] and r["trace_header"])
        self.assertEqual((r["trace_lost"], r["unparsed"], r["dump"]),
                         (0, [], "complete"))
        self.assertTrue(r["early_boot_ends"])
        self.assertEqual([s["text"] for s in r["splats"]
                          if not s["expected"]], [])
        for s in r["steps"]:
            self.assertEqual(s["status"], "done", s)
            self.assertTrue(s["marked"], s)
            self.assertEqual(sorted(s["reached"]), sorted(s["meant"]), s)
        self.assertGreaterEqual(r["coverage"]["seen"], self.MIN_SEEN)

    def test_the_mutant_is_caught_on_the_recorded_boot(self):
        m = runtime.mutant(self.boot.console, self.boot.details,
                           self.classes, trace_port=self.boot.trace_port)
        self.assertTrue(m["caught_by"], m)


class RecordedBootTest(RecordedBoot, unittest.TestCase):
    """runtime-test 6.1, 7 December, both trees, PASS."""

    KVER, MIN_SEEN = "6.1", 30

    def test_no_contradiction_and_the_chains_that_ran(self):
        self.assertEqual(self.result["contradictions"], [])
        seen = {c["chain"] for c in self.rec["chains"] if c["seen"]}
        for chain in ("keyboard_notifier_list", "die_chain",
                      "reboot_notifier_list", "power_off_handler_list",
                      "struct subsys_private.bus_notifier"):
            self.assertIn(chain, seen)
        die = next(c for c in self.rec["chains"]
                   if c["chain"] == "die_chain")
        self.assertIn(ftrace.EARLY_BOOT, die["registrations"]["contexts"])


class Recorded612BootTest(RecordedBoot, unittest.TestCase):
    """runtime-test 6.12 --tree series, 6 December, the harness of 2148b5a
    and the series of b9cc4d1, whose 0005 makes random_ready_notifier
    raw."""

    KVER, MIN_SEEN = "6.12", 32

    def test_the_core_patched_tree_ran_the_same_chains(self):
        # runtime-test 6.12 --tree core, 7 December (PASS), recorded in
        # core/: the check a run of both trees makes (seen_differs),
        # made on the two recordings.
        folder = os.path.join(runtime.RECORDED, "6.12", "core")
        rec, result = runtime.analyse(
            runtime._lines(os.path.join(folder, "console.log")),
            self.boot.details, self.classes,
            trace_port=runtime._lines(os.path.join(folder, "trace.log")))
        self.assertEqual((result["contradictions"], [
            s for s in result["splats"] if not s["expected"]]), ([], []))

        def seen(r):
            return {c["chain"] for c in r["chains"] if c["seen"]}

        self.assertEqual(len(seen(rec)), 32)
        self.assertEqual(seen(rec), seen(self.rec))

    def test_the_raw_register_under_random_ready_lock_is_caught(self):
        # An earlier 0005 kept the chain atomic and registered on it with
        # raw_notifier_chain_register() under a spinlock of random.c's
        # own, interrupts off: a writer that bypasses the head's rwsem,
        # which the audit could not place then (a cast pointer) and the
        # boot of that series showed.  0005 now makes the chain raw and
        # the YAML excludes it: no contradiction; with the class of that
        # series, the same registration is one.
        key = ("random_ready_notifier", "drivers/char/random.c")
        self.assertEqual(self.classes[key], "excluded")
        self.assertEqual(self.result["contradictions"], [])
        _, then = runtime.analyse(
            self.boot.console, self.boot.details,
            {**self.classes, key: "atomic"}, trace_port=self.boot.trace_port)
        self.assertEqual(then["contradictions"], [
            "random_ready_notifier (drivers/char/random.c, atomic): "
            "registration in atomic context (irqs-off, preempt-off) at "
            "execute_with_initialized_rng+0x63/0x70 (trace.log:488)"])
        m = runtime.mutant(self.boot.console, self.boot.details,
                           self.classes, trace_port=self.boot.trace_port)
        self.assertTrue(m["caught_by"], m)


if __name__ == "__main__":
    unittest.main()
