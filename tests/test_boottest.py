"""The boot test's verdict and its reading of kunit.py's output."""

import json
import os
import unittest
from unittest import mock

from tests import booted, tools_path  # noqa: F401
from notifier_series import boottest, ktap

PASS = {"notifier.priority_order_test.atomic": "PASS",
        "notifier.robust_atomic_test": "PASS",
        "notifier_torture.notifier_torture_test.atomic": "PASS"}


def result(**changes):
    return booted(**{
        "expected_warnings": [{"line": 3, "text": "already registered",
                               "seen": 1}],
        "kunit": {"passed": 3, "failed": 0, "skipped": 0, "total": 3,
                  "tests": dict(PASS), "parser_ok": True}, **changes})


def warning(expected):
    return {"line": 9, "kind": "WARNING", "text": "WARNING: CPU: 0",
            "expected": expected, "during": None}


class VerdictTest(unittest.TestCase):
    def outcome(self, **changes):
        return boottest.verdict(result(**changes))[0]

    def test_pass(self):
        self.assertEqual(boottest.verdict(result()), ("pass", []))

    def test_expected_warning_passes(self):
        self.assertEqual(self.outcome(splats=[warning(True)]), "pass")

    def test_unexpected_warning(self):
        self.assertEqual(self.outcome(splats=[warning(False)]), "splat")

    def test_missing_expected_warning(self):
        self.assertEqual(self.outcome(expected_warnings=[
            {"line": 3, "text": "already registered", "seen": 0}]), "splat")

    def test_failed_skipped_missing_tests(self):
        failed = dict(PASS, **{"notifier.robust_atomic_test": "FAIL"})
        self.assertEqual(self.outcome(kunit=dict(result().kunit,
                                                 tests=failed)),
                         "test-failure")
        self.assertEqual(self.outcome(kunit=dict(result().kunit,
                                                 skipped=1)),
                         "test-failure")
        self.assertEqual(self.outcome(kunit=dict(result().kunit,
                                                 tests={})),
                         "test-failure")
        self.assertEqual(self.outcome(kunit=dict(result().kunit,
                                                 parser_ok=False)),
                         "test-failure")

    def test_qemu_failure_is_a_harness_error(self):
        self.assertEqual(self.outcome(qemu_status=1,
                                      kunit=dict(result().kunit,
                                                 tests={})),
                         "harness-error")

    def test_timeout_wins(self):
        outcome, reasons = boottest.verdict(result(
            timed_out=True, splats=[warning(False)]))
        self.assertEqual(outcome, "timeout")
        self.assertEqual(len(reasons), 2)
        self.assertEqual(boottest.OUTCOMES[outcome], 3)


class AppendTest(unittest.TestCase):
    def test_zero_seconds_starts_no_torture_thread(self):
        loud = boottest.append(5).split()
        self.assertIn("notifier_torture.duration=5", loud)
        self.assertIn(f"notifier_torture.onoff_interval={boottest.ONOFF_MS}",
                      loud)
        quiet = boottest.append(0).split()
        self.assertIn("notifier_torture.duration=0", quiet)
        self.assertFalse([p for p in quiet if "onoff" in p])

    def test_a_hang_ends_the_boot(self):
        self.assertIn("softlockup_panic=1", boottest.append().split())
        self.assertIn("panic=-1", boottest.append().split())


class KtapTest(unittest.TestCase):
    def test_summary_counts(self):
        self.assertEqual(ktap.summary_counts(
            "[08:00:36] Testing complete. Ran 25 tests: passed: 25"),
            {"passed": 25, "failed": 0, "skipped": 0, "total": 25})
        self.assertEqual(ktap.summary_counts(
            "Testing complete. Ran 9 tests: passed: 5, failed: 1, "
            "skipped: 1, crashed: 1, errors: 1"),
            {"passed": 5, "failed": 3, "skipped": 1, "total": 9})

    def test_what_the_parser_said_of_failures_no_result_names(self):
        # kunit.py parse's output on a console that lost the result line
        # of blocking_sleeps_test: no leaf of its JSON says FAIL.
        output = (
            "[23:55:57] [ERROR] Test: notifier: missing expected subtest!\n"
            "[23:55:57] [CRASHED] \n"
            "[23:55:57] ==================== [CRASHED] notifier "
            "====================\n"
            "[23:55:57] Testing complete. Ran 34 tests: passed: 33, "
            "crashed: 1, errors: 7\n")
        self.assertEqual(ktap.complaints(output), [
            "[ERROR] Test: notifier: missing expected subtest!",
            "[CRASHED] "])
        result = booted(kunit={"passed": 33, "failed": 1, "skipped": 0,
                               "tests": {"notifier.x": "PASS"},
                               "parser_ok": True, "parser_output": output})
        with mock.patch.object(boottest, "SUITES", ("notifier",)):
            _, reasons = boottest.verdict(result)
        self.assertIn("kunit.py parse: [ERROR] Test: notifier: missing "
                      "expected subtest!", reasons)

    def test_leaves_of_kunit_json(self):
        # kunit.py parse's JSON of the series' boot of Linux 6.1.192,
        # recorded (out/6.1/series-boot/kunit.json at 385bca3).
        with open(os.path.join(os.path.dirname(__file__), "fixtures",
                               "kunit", "series-boot-6.1.json"),
                  encoding="utf-8") as f:
            found = dict(ktap.leaves(json.load(f)))
        self.assertEqual(len(found), 34)
        self.assertEqual(set(found.values()), {"PASS"})
        self.assertEqual({n.split(".")[0] for n in found},
                         set(boottest.SUITES))
        # A parameterised test's cases are under its name.
        self.assertIn("notifier.priority_order_test.blocking", found)
        self.assertIn("notifier.robust_atomic_test", found)
        self.assertNotIn("notifier.priority_order_test", found)
        self.assertEqual(boottest.verdict(result(kunit={
            "passed": 34, "failed": 0, "skipped": 0, "tests": found,
            "parser_ok": True})), ("pass", []))


class ChecksTest(unittest.TestCase):
    """A mutant's or a baseline's boot does not check the core patches
    again (boottest.run(checks=False))."""

    def steps(self, core):
        arch = boottest.arches.get(boottest.arches.DEFAULT)
        tree = mock.Mock(path="/nonexistent", version="9.9")
        with mock.patch.object(boottest.checkpatch, "run") as cp, \
                mock.patch.object(boottest, "build",
                                  side_effect=ktap.Error("built")), \
                mock.patch("builtins.open", mock.mock_open()):
            with self.assertRaisesRegex(ktap.Error, "built"):
                boottest._build_and_boot(tree, arch, core, "/b", "/k", "",
                                         "/s", booted(), 60, 1)
        return cp.call_count

    def test_checkpatch_runs_with_core_patches_only(self):
        self.assertEqual(self.steps(["0001.patch"]), 1)
        self.assertEqual(self.steps(None), 0)

    def test_the_report_says_what_did_not_run(self):
        r = result(checkpatch=None, sparse=None, outcome="pass", reasons=[],
                   kernel="9.9", build_seconds=1, boot_seconds=1)
        with mock.patch.object(boottest, "say") as say:
            boottest.report(r, "/out", mutant=True)
        self.assertIn("checkpatch and sparse not run", say.call_args_list[0]
                      .args[0])


class BuildFolderTest(unittest.TestCase):
    def test_one_build_folder_per_checkout_and_core_branch(self):
        x86 = boottest.arches.get("x86_64")
        tree = mock.Mock(path="/w/linux-6.1")
        worktree = mock.Mock(path="/w/linux-6.1-series-boot")
        self.assertEqual(boottest.build_folder(tree, x86), "/w/build-6.1")
        self.assertEqual(boottest.build_folder(worktree, x86),
                         "/w/build-6.1-series-boot")
        self.assertEqual(boottest.build_folder(
            tree, x86, "notifier-series/unfixed"), "/w/build-6.1-unfixed")
        self.assertEqual(boottest.build_folder(
            tree, boottest.arches.get("powerpc")), "/w/build-6.1-powerpc")


if __name__ == "__main__":
    unittest.main()
