"""The runtime test's analysis, on a console log written like the kernel's
(tests/fixtures/runtime/console-small.log): the trace's events and their
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
    ("reboot_notifier_list", "kernel/notifier.c"): {
        "chain": "reboot_notifier_list", "defined": "kernel/notifier.c:15",
        "class": "blocking", "sites": [site("kernel_power_off")],
        "callers": [], "callouts": []},
}
CLASSES = {key: d["class"] for key, d in DETAILS.items()}


def lines():
    with open(os.path.join(FIXTURES, "console-small.log"),
              encoding="utf-8") as f:
        return f.read().splitlines()


class FtraceTest(unittest.TestCase):
    def test_flags_give_the_contexts(self):
        self.assertEqual(ftrace.contexts("....."), ("process",))
        self.assertEqual(ftrace.contexts("d.h1."),
                         ("hardirq", "irqs-off", "preempt-off"))
        self.assertEqual(ftrace.contexts("..s.."), ("softirq",))
        self.assertEqual(ftrace.contexts("b...."), ("bh-off",))
        self.assertEqual(ftrace.contexts(".Nz.."), ("nmi",))
        self.assertEqual(ftrace.contexts("...2."), ("preempt-off",))

    def test_the_dump_and_the_power_off_events_are_read(self):
        events, complete = ftrace.parse(lines())
        self.assertTrue(complete)
        # The dump's and the power-off dump's, not the lines around them.
        self.assertEqual(len(events), 13)
        self.assertEqual(events[2].event, "notifier_register")
        self.assertEqual(events[2].function, "register_module_notifier")
        last = events[-1]
        self.assertEqual((last.chain, last.contexts, last.function),
                         ("reboot_notifier_list", ("process",), "kernel_power_off"))
        mystery = events[-4]
        self.assertEqual(mystery.caller, "mystery_fn+0x1/0x2 [mystery]")
        self.assertEqual(mystery.function, "mystery_fn")

    def test_the_boot_task_before_any_other_is_early_boot(self):
        events, _ = ftrace.parse(lines())
        self.assertEqual(events[0].contexts, (ftrace.EARLY_BOOT,))
        self.assertNotIn(ftrace.EARLY_BOOT, ftrace.ATOMIC_CONTEXTS)
        # Not on another CPU, nor once another task ran, nor in an
        # interrupt.
        idle = {(e.chain, e.line): e.contexts for e in events
                if e.task == "<idle>"}
        self.assertEqual(idle[("panic_notifier_list", 18)],
                         ("irqs-off", "preempt-off"))
        self.assertEqual(idle[("reboot_notifier_list", 27)],
                         ("irqs-off", "preempt-off"))
        self.assertIn("hardirq", idle[("keyboard_notifier_list", 23)])

    def test_a_dump_cut_short_is_incomplete(self):
        cut = [line for line in lines() if "trace ends" not in line]
        self.assertFalse(ftrace.parse(cut)[1])


class RuntimeTest(unittest.TestCase):
    def test_heads_are_told_by_symbol_or_by_their_callers(self):
        events, _ = ftrace.parse(lines())
        ids = runtime.identify(events, DETAILS)
        self.assertEqual(ids["module_notify_list"],
                         ("module_notify_list", "kernel/module/main.c"))
        self.assertEqual(ids["0xffff888003a1c218"],
                         ("struct subsys_private.bus_notifier",
                          "drivers/base/base.h"))
        self.assertIsNone(ids["0xffff888005550000"])
        # An address is no static head, whatever its caller.
        self.assertIsNone(ids["0xffff888007770000"])

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
        rec, result = runtime.analyse(lines(), DETAILS, CLASSES)
        found = result["contradictions"]
        # The blocking bus notifier called with interrupts off.
        self.assertTrue(any(c.startswith(
            "struct subsys_private.bus_notifier (drivers/base/base.h, "
            "blocking): called in atomic context (irqs-off, preempt-off) at "
            "device_add+0x5d1/0xb60") for c in found), found)
        # The atomic keyboard chain's callout in a sleep-in-atomic report.
        self.assertTrue(any("kbd_cb_sleeper() is in the report" in c
                            for c in found), found)
        # And the boot task's late registration, once another task ran.
        self.assertTrue(any(c.startswith("reboot_notifier_list (kernel/"
                                         "notifier.c, blocking): "
                                         "registration in atomic context")
                            for c in found), found)
        self.assertEqual(len(found), 3, found)
        self.assertEqual(rec["unidentified"][0]["callers"], ["mystery_fn"])
        self.assertEqual(result["coverage"]["seen"], 4)

    def test_the_same_calls_are_no_contradiction_on_atomic_chains(self):
        classes = dict(CLASSES)
        classes[("struct subsys_private.bus_notifier",
                 "drivers/base/base.h")] = "atomic"
        _, result = runtime.analyse(
            [line for line in lines() if "kbd_cb_sleeper+" not in line
             and "late_fn" not in line], DETAILS, classes)
        self.assertEqual(result["contradictions"], [])

    def test_a_writer_in_atomic_context_is_a_contradiction(self):
        bad = [line.replace("[001] .....    12.100000",
                            "[001] d.h1.    12.100000") for line in lines()]
        _, result = runtime.analyse(bad, DETAILS, CLASSES)
        self.assertTrue(any("registration in atomic context (hardirq, irqs-off, preempt-off)" in c
                            for c in result["contradictions"]))

    def test_steps_say_what_they_meant_and_reached(self):
        _, result = runtime.analyse(lines(), DETAILS, CLASSES)
        steps = {s["step"]: s for s in result["steps"]}
        self.assertEqual(steps["modules"]["reached"], ["module_notify_list"])
        self.assertEqual(steps["modules"]["unknown"], ["pm_chain_head"])
        self.assertEqual(steps["keyboard"]["status"], "failed: status 1")
        self.assertEqual(steps["poweroff"]["reached"],
                         ["reboot_notifier_list"])

    def test_the_misclassification_mutant_is_caught(self):
        m = runtime.mutant(lines(), DETAILS, CLASSES)
        self.assertEqual(m["chain"], "keyboard_notifier_list")
        self.assertTrue(m["caught_by"])
        self.assertIn("called in atomic context", m["caught_by"][0])

    def test_the_audit_adds_what_ran(self):
        rec, _ = runtime.analyse(lines(), DETAILS, CLASSES)
        bus = next(c for c in rec["chains"]
                   if c["chain"].endswith("bus_notifier"))
        said = runtime.observations(bus)
        self.assertIn("seen called 1 times in irqs-off context, e.g. at "
                      "device_add+0x5d1/0xb60 (console.log:25), in the "
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

    def test_an_overflowed_buffer_is_a_harness_error(self):
        bad = [line.replace("# tracer: nop", "# entries-in-buffer/entries-"
                            "written: 10/15   #P:2") for line in lines()]
        _, boot = runtime.analyse(bad, DETAILS, CLASSES)
        self.assertEqual(boot["trace_lost"], 5)
        result = {"boots": {"series": boot}, "seen_differs": {},
                  "mutant": runtime.mutant(bad, DETAILS, CLASSES)}
        self.assertIn("series: the trace buffer overflowed: 5 events lost",
                      runtime.verdict(result)[1])

    def test_verdicts(self):
        _, boot = runtime.analyse(lines(), DETAILS, CLASSES)
        result = {"boots": {"core": boot, "series": boot},
                  "seen_differs": {"core": [], "series": ["x"]},
                  "mutant": runtime.mutant(lines(), DETAILS, CLASSES)}
        outcome, reasons = runtime.verdict(result)
        self.assertEqual(outcome, "harness-error")     # pm_chain_head
        self.assertIn("chains seen only on the series tree: x", reasons)
        self.assertTrue(any("console.log:" in r and "BUG: sleeping" in r
                            for r in reasons))
        self.assertTrue(any("called in atomic context" in r
                            for r in reasons))
        result["mutant"] = None
        self.assertIn("misclassification mutant has nothing to flip",
                      " ".join(runtime.verdict(result)[1]))


class RecordedBootTest(unittest.TestCase):
    """The boot of the series' 6.1 integration kernel recorded in
    tests/fixtures/runtime/6.1/ (make runtime-test, 6 December), analysed
    against today's YAML: the shorter form of the runtime test that make
    check runs."""

    def setUp(self):
        boot = runtime.last_boot("6.1", os.path.join(FIXTURES, "no-out"))
        self.lines, self.details, _ = boot
        self.classes = runtime.yaml_classes("6.1")

    def test_no_contradiction_and_the_chains_that_ran(self):
        rec, result = runtime.analyse(self.lines, self.details,
                                      self.classes)
        self.assertTrue(result["trace_complete"])
        self.assertEqual(result["contradictions"], [])
        self.assertEqual([s["text"] for s in result["splats"]
                          if not s["expected"]], [])
        seen = {c["chain"] for c in rec["chains"] if c["seen"]}
        self.assertGreaterEqual(len(seen), 27)
        for chain in ("keyboard_notifier_list", "die_chain",
                      "reboot_notifier_list", "power_off_handler_list",
                      "struct subsys_private.bus_notifier"):
            self.assertIn(chain, seen)
        die = next(c for c in rec["chains"] if c["chain"] == "die_chain")
        self.assertIn("nmi", die["calls"]["contexts"])
        self.assertIn(ftrace.EARLY_BOOT, die["registrations"]["contexts"])

    def test_the_mutant_is_caught_on_the_recorded_boot(self):
        m = runtime.mutant(self.lines, self.details, self.classes)
        self.assertTrue(m["caught_by"], m)


if __name__ == "__main__":
    unittest.main()
