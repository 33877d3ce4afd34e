"""The torture test's console lines, as the boot test and the 2005
baseline read them; the fixtures are consoles of real boots (the new API,
and the 2005 chain caught by KASAN)."""

import os
import unittest

from tests import booted, tools_path  # noqa: F401
from notifier_series import boottest, console, torture, torture_baseline

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "console")


def lines(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read().splitlines()


def boot_result(name, types):
    text = lines(name)
    splats, brackets = console.scan(text)
    return booted(splats=splats, expected_warnings=brackets,
                  torture=torture.parse(text), torture_types=list(types),
                  kunit={"passed": 2, "failed": 0, "skipped": 0, "total": 2,
                         "tests": {"notifier.x": "PASS",
                                   "notifier_torture.notifier_torture_test."
                                   "atomic": "PASS"}, "parser_ok": True})


class ParseTest(unittest.TestCase):
    def test_passing_runs_give_their_counts_and_rates(self):
        runs = torture.parse(lines("torture-pass.log"))
        self.assertEqual(sorted(runs), ["atomic", "blocking"])
        atomic = runs["atomic"]
        self.assertEqual(atomic["verdict"], "SUCCESS")
        self.assertEqual(atomic["failures"], 0)
        self.assertEqual(atomic["registers"], 7002)
        self.assertEqual(atomic["operations"], 7002 + 7002 + 1148950)
        self.assertEqual(atomic["per_second"]["calls"],
                         round(1148950 / 5.112))
        self.assertEqual(atomic["walks_hardirq"], 2535)
        self.assertEqual(torture.problems(runs, ["atomic", "blocking"]), [])

    def test_a_type_that_never_ran_is_a_problem(self):
        runs = torture.parse(lines("torture-pass.log"))
        self.assertEqual(torture.problems(runs, ["atomic", "2005"]),
                         ["torture of 2005 chains: never started"])

    def test_failure_verdict_is_a_problem_with_its_counts(self):
        text = ["notifier_torture: atomic: Start of test: duration=5",
                "notifier_torture: atomic: first failure: callout of an "
                "unregistered block after ms=12",
                "notifier_torture: atomic: End of test: FAILURE: ms=5000 "
                "registers=9 unregisters=9 calls=90 stale=3 disorder=0 "
                "errors=0 lost=1 first_failure_ms=12"]
        runs = torture.parse(text)
        self.assertEqual(runs["atomic"]["failures"], 4)
        self.assertEqual(runs["atomic"]["first_failure"],
                         "callout of an unregistered block after ms=12")
        self.assertEqual(torture.problems(runs, ["atomic"]), [
            "torture of atomic chains: FAILURE (stale 3, disorder 0, "
            "errors 0, lost 1) at console line 3"])

    def test_hotplug_failure_is_told_apart(self):
        text = ["notifier_torture: atomic: Start of test: duration=5",
                "notifier_torture: atomic: End of test: HOTPLUG: ms=5000 "
                "stale=0 disorder=0 errors=0 lost=0"]
        runs = torture.parse(text)
        self.assertEqual(runs["atomic"]["verdict"], "HOTPLUG")
        self.assertEqual(runs["atomic"]["failures"], 0)
        self.assertEqual(torture.problems(runs, ["atomic"]), [
            "torture of atomic chains: CPU hotplug failed (console line 2); "
            "the chain passed its checks"])

    def test_kernel_dying_mid_run_leaves_it_unfinished(self):
        runs = torture.parse(lines("torture-2005.log"))
        self.assertEqual(runs["2005"]["verdict"], "unfinished")
        self.assertEqual(torture.problems(runs, ["2005"]), [
            "torture of 2005 chains: started at console line 3 but never "
            "ended"])


class BootVerdictTest(unittest.TestCase):
    def test_torture_success_passes(self):
        result = boot_result("torture-pass.log", ["atomic", "blocking"])
        self.assertEqual(boottest.verdict(result), ("pass", []))

    def test_missing_torture_fails_the_boot(self):
        result = boot_result("torture-pass.log", ["atomic", "blocking"])
        del result.torture["blocking"]
        outcome, reasons = boottest.verdict(result)
        self.assertEqual(outcome, "test-failure")
        self.assertIn("torture of blocking chains: never started", reasons)


class BaselineTest(unittest.TestCase):
    def test_2005_chain_is_caught_by_kasan_and_timed(self):
        result = boot_result("torture-2005.log", ["2005"])
        # One second of host time per console line.
        arrivals = [float(n) for n in range(len(lines("torture-2005.log")))]
        torture.time_failures(result.torture, result.splats, arrivals)
        how, seconds = torture_baseline.caught(result)
        self.assertTrue(how.startswith(
            "BUG: KASAN: use-after-free in nt_2005_call"), how)
        self.assertIn("the torture never ended", how)
        # Start of test on line 3, the KASAN report's first line on 4 (the
        # report opens with a line of "=" on line 4, its headline on 5).
        self.assertEqual(result.torture["2005"]
                         ["first_failure_console_line"], 5)
        self.assertEqual(seconds, 2.0)

    def test_a_passing_run_is_not_caught(self):
        result = boot_result("torture-pass.log", ["atomic"])
        result.torture["2005"] = result.torture.pop("atomic")
        self.assertEqual(torture_baseline.caught(result), (None, None))


if __name__ == "__main__":
    unittest.main()
