"""The rule checks of cocci/, run as coccicheck runs them (report mode) on
the known-answer fixture: each finds its case, and only it.  The same
cases are the classification pipeline's (tests/test_classify.py)."""

import os
import re
import subprocess
import unittest

from tests.test_classify import FIXTURE

COCCI = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "cocci")
EXPECTED = {
    "notifier_write_in_atomic.cocci": [
        r"drivers/demo/users\.c:78:\d+-\d+: WARNING: "
        r"atomic_notifier_chain_unregister\(\) may sleep, called under "
        r"spin_lock_irqsave\(\) taken on line 77"],
    "notifier_unregister_in_callout.cocci": [
        r"drivers/demo/users\.c:42:\d+-\d+: ERROR: demo_unregister_notifier"
        r"\(\) called from selfish_call\(\), the notifier's own callout"],
    "notifier_register_in_callout.cocci": [
        r"drivers/demo/users\.c:53:\d+-\d+: ERROR: demo_register_notifier"
        r"\(\) called from again_call\(\)"],
    "notifier_blocking_call_in_atomic.cocci": [
        r"drivers/demo/core\.c:57:\d+-\d+: ERROR: "
        r"blocking_notifier_call_chain\(\) may sleep, called under "
        r"spin_lock_irqsave\(\) taken on line 56"],
    "notifier_atomic_callout_sleeps.cocci": [
        r"drivers/demo/users\.c:27:\d+-\d+: ERROR: alloc_call\(\) is a "
        r"callout of an atomic notifier chain"],
}


def report(cocci):
    """Report lines of one check, each file on its own as coccicheck runs
    them (files named together would share the rules' dependencies)."""
    lines, errors = [], ""
    for path in ("drivers/demo/core.c", "drivers/demo/users.c"):
        proc = subprocess.run(
            ["spatch", "--very-quiet", "-D", "report", "--no-includes",
             "--include-headers", "--sp-file", os.path.join(COCCI, cocci),
             path], cwd=FIXTURE, capture_output=True, text=True)
        lines += proc.stdout.splitlines()
        errors += proc.stderr
    return lines, errors


class CocciCheckTest(unittest.TestCase):
    def test_each_check_finds_its_case_only(self):
        for cocci, patterns in EXPECTED.items():
            with self.subTest(cocci):
                lines, err = report(cocci)
                self.assertEqual(len(lines), len(patterns), lines + [err])
                for line, pattern in zip(sorted(lines), patterns):
                    self.assertRegex(line, pattern)

    def test_headers_follow_the_kernel_convention(self):
        for cocci in EXPECTED:
            with open(os.path.join(COCCI, cocci), encoding="utf-8") as f:
                text = f.read()
            with self.subTest(cocci):
                self.assertRegex(text, r"(?m)^/// \S")
                self.assertRegex(text, r"(?m)^// Confidence: \w+")
                self.assertRegex(text, r"(?m)^// Options: ")
                for mode in ("context", "org", "report"):
                    self.assertRegex(text, rf"(?m)^virtual {mode}$")
                self.assertFalse(re.search(r"(?m)^virtual patch$", text))


if __name__ == "__main__":
    unittest.main()
