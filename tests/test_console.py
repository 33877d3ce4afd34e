"""The splat scanner of the boot test, on console excerpts."""

import os
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import console

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "console")


def read(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read().splitlines()


def unexpected(lines):
    return [s for s in console.scan(lines)[0] if not s["expected"]]


class ScanTest(unittest.TestCase):
    def test_clean_kunit_run_with_expected_warnings(self):
        splats, brackets = console.scan(read("kunit-pass.log"))
        self.assertEqual(len(splats), 5)
        self.assertTrue(all(s["expected"] for s in splats))
        self.assertEqual([b["seen"] for b in brackets], [1, 1, 1, 1, 1])
        self.assertEqual(brackets[0]["text"], "already registered")
        # DEBUG_ATOMIC_SLEEP's report is a BUG, expected like a WARNING.
        self.assertEqual(splats[-1]["kind"], "BUG")
        self.assertIn("sleeping function called", splats[-1]["text"])

    def test_each_kind_of_report_counts_once(self):
        splats = unexpected(read("splats.log"))
        self.assertEqual([s["kind"] for s in splats],
                         ["WARNING", "WARNING", "BUG", "BUG", "BUG",
                          "STALL", "HUNG", "OOPS", "PANIC"])
        self.assertIn("suspicious RCU usage", splats[1]["text"])
        self.assertIn("KASAN: slab-use-after-free", splats[2]["text"])
        self.assertIn("sleeping function called", splats[3]["text"])

    def test_warning_outside_a_bracket_counts(self):
        lines = read("kunit-pass.log")
        end = next(i for i, line in enumerate(lines)
                   if "EXPECTED WARNING END" in line)
        del lines[end]          # the bracket now never closes...
        begin = next(i for i, line in enumerate(lines)
                     if "EXPECTED WARNING BEGIN" in line)
        del lines[begin]        # ...nor opens
        self.assertEqual(len(unexpected(lines)), 1)

    def test_other_warning_inside_a_bracket_counts(self):
        lines = [
            "    # t: EXPECTED WARNING BEGIN: already registered",
            "------------[ cut here ]------------",
            "Invalid notifier called!",
            "WARNING: CPU: 0 PID: 1 at kernel/notifier.c:120 "
            "notifier_chain_run+0x1/0x2",
            "---[ end trace 0000000000000000 ]---",
            "    # t: EXPECTED WARNING END",
        ]
        splats, brackets = console.scan(lines)
        self.assertFalse(splats[0]["expected"])
        self.assertEqual(brackets[0]["seen"], 0)

    def test_lockdep_report_inside_a_bracket_counts(self):
        lines = [
            "    # t: EXPECTED WARNING BEGIN: already registered",
            "=============================",
            "WARNING: suspicious RCU usage",
            "kernel/notifier.c:99 suspicious rcu_dereference_check() usage!",
            "    # t: EXPECTED WARNING END",
        ]
        self.assertEqual(len(unexpected(lines)), 1)

    def test_bracket_without_its_warning_is_reported(self):
        lines = ["    # t: EXPECTED WARNING BEGIN: already registered",
                 "    # t: EXPECTED WARNING END", "ok 1 t"]
        splats, brackets = console.scan(lines)
        self.assertEqual(splats, [])
        self.assertEqual(brackets[0]["seen"], 0)

    def test_test_results_and_timestamps(self):
        self.assertIsNone(console.headline("    ok 1 warning_test"))
        self.assertIsNone(console.headline("# BUG_ON tests: pass:1"))
        self.assertEqual(console.headline("[    1.234567] WARNING: CPU: 1"),
                         "WARNING")
        self.assertEqual(console.headline("[    2.000000] kernel BUG at "
                                          "mm/slub.c:1"), "BUG")


if __name__ == "__main__":
    unittest.main()
