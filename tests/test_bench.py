"""make bench: the microbenchmark's console lines and their comparison,
and the toolkit timings' reading of a command's output.  The fixtures are
the benchmark lines of real boots of Linux 6.1 under -icount (the core
patch and the pristine tree), trimmed to the lines the tool reads."""

import os
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import kernel_bench, patches, qemu, toolkit_bench

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "console")


def lines(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read().splitlines()


class ParseTest(unittest.TestCase):
    def setUp(self):
        self.new, self.new_ended, self.new_tsc = kernel_bench.parse(
            lines("bench-new-icount.log"), "icount")

    def test_each_case_has_one_figure_per_round_in_ns_per_operation(self):
        key = ("icount", "call", "atomic", 4, 1)
        self.assertEqual(len(self.new[key]), 3)
        # ns=970045 for loops=10000 in the console.
        self.assertAlmostEqual(self.new[key][0], 97.0045)
        self.assertIn(("icount", "unregister", "atomic", 4, 0), self.new)

    def test_one_vcpu_gives_no_case_with_readers_on_every_cpu(self):
        self.assertEqual({k[4] for k in self.new if k[1] == "call"}, {1})

    def test_the_end_line_and_the_tsc_clocksource_are_seen(self):
        self.assertTrue(self.new_ended)
        self.assertTrue(self.new_tsc)

    def test_a_console_cut_short_or_on_jiffies_is_told_apart(self):
        text = lines("bench-new-icount.log")
        cut = [line for line in text if "notifier_bench: end" not in line]
        jiffies = [line for line in text if "clocksource" not in line]
        self.assertFalse(kernel_bench.parse(cut, "icount")[1])
        self.assertFalse(kernel_bench.parse(jiffies, "icount")[2])


class CompareTest(unittest.TestCase):
    def setUp(self):
        new, _, _ = kernel_bench.parse(lines("bench-new-icount.log"),
                                       "icount")
        mainline, _, _ = kernel_bench.parse(
            lines("bench-mainline-icount.log"), "icount")
        self.cases = {(c["op"], c["type"], c["callouts"]): c
                      for c in kernel_bench.compare(new, mainline)}

    def test_ratio_is_new_median_over_mainline_median(self):
        c = self.cases[("call", "atomic", 1)]
        self.assertEqual(c["ratio"], round(c["new"]["median_ns"]
                                           / c["mainline"]["median_ns"], 3))

    def test_icount_figures_do_not_spread(self):
        for c in self.cases.values():
            if c["type"] == "atomic" and c["op"] == "unregister":
                continue    # a grace period, in guest time
            self.assertEqual(c["new"]["spread_percent"], 0.0, c)

    def test_goals_apply_to_calls_only_and_are_stricter_when_empty(self):
        self.assertEqual(self.cases[("call", "blocking", 0)]["goal"], 1.0)
        self.assertEqual(self.cases[("call", "blocking", 16)]["goal"], 1.05)
        self.assertIsNone(self.cases[("register", "atomic", 4)]["goal"])
        self.assertIsNone(self.cases[("register", "atomic", 4)]
                          ["meets_goal"])

    def test_a_slower_call_misses_its_goal(self):
        slow = {("icount", "call", "atomic", 0, 1): [33.0, 33.0]}
        fast = {("icount", "call", "atomic", 0, 1): [32.0, 32.0]}
        (case,) = kernel_bench.compare(slow, fast)
        self.assertFalse(case["meets_goal"])
        self.assertIn("MISSED", kernel_bench.table([case])[1])
        (case,) = kernel_bench.compare(fast, slow)
        self.assertTrue(case["meets_goal"])

    def test_host_time_is_not_held_to_the_goals(self):
        case = {("smp", "call", "atomic", 1, 2): [80.0]}
        (c,) = kernel_bench.compare(case, {k: [50.0] for k in case})
        self.assertIsNone(c["goal"])
        self.assertIsNone(c["meets_goal"])

    def test_the_tracepoints_cost_is_against_the_untraced_kernel(self):
        new = {("icount", "call", "atomic", 0, 1): [33.0]}
        (c,) = kernel_bench.trace_cost(new, {k: [30.0] for k in new})
        self.assertEqual((c["untraced"]["median_ns"], c["ratio"]),
                         (30.0, 1.1))
        self.assertNotIn("mainline", c)
        self.assertIn("untraced ns", kernel_bench.table([c], "untraced")[0])
        # The untraced side leaves out exactly the tracepoint patch.
        for kver in ("6.1", "6.12"):
            new, untraced = (kernel_bench.stack(kver, side)
                             for side in ("new", "untraced"))
            (gone,) = set(new) - set(untraced)
            self.assertIn(kernel_bench.TRACE_HEADER,
                          patches.touched_files(gone))

    def test_cases_measured_on_one_side_only_are_left_out(self):
        one = {("smp", "call", "atomic", 0, 2): [1.0]}
        self.assertEqual(kernel_bench.compare(one, {}), [])


class QemuTest(unittest.TestCase):
    def test_icount_runs_on_one_thread_with_the_vcpus_asked(self):
        cmd = qemu.command("bzImage", "console=ttyS0", qemu.ICOUNT, 1)
        self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
        self.assertIn("tcg,thread=single", cmd)
        self.assertEqual(cmd[cmd.index("-icount") + 1], "shift=0,sleep=off")
        self.assertNotIn("tcg,thread=multi", cmd)


class ToolkitTest(unittest.TestCase):
    # The output of `time tools/notifier-series series 6.1 --compile-arches
    # x86` at 385bca3, on a fresh work folder, recorded.
    with open(os.path.join(os.path.dirname(__file__), "fixtures",
                           "series-6.1.log"), encoding="utf-8") as f:
        OUTPUT = f.read()

    def test_step_lines_are_read_with_their_seconds(self):
        timed = toolkit_bench.steps(self.OUTPUT)
        self.assertEqual(len(timed), 32)
        self.assertIn(("converting Linux 6.1.192 with spatch", 95.2), timed)
        # A progress line is not a step.
        self.assertFalse([t for t in timed if t[0].startswith("spatch:")])

    def test_series_steps_are_summed_by_kind(self):
        found = toolkit_bench.series_steps(toolkit_bench.steps(self.OUTPUT))
        self.assertEqual(found["conversion (spatch, twice)"], 95.2 + 63.5)
        self.assertEqual(found["MAINTAINERS split"], 51.0)
        self.assertEqual(found["boot test build"], 421.7)
        self.assertEqual(found["boot test QEMU"], 14.7)
        self.assertEqual(found["checkpatch"], 117.3)
        self.assertEqual(found["boot test checkpatch"], 9.4)
        self.assertEqual(found["call graphs (pristine, with the fixes)"],
                         round(289.6 + 116.4, 1))
        self.assertEqual(found["To: and Cc:"], 99.8)


if __name__ == "__main__":
    unittest.main()
