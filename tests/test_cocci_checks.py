"""The rule checks of cocci/, run as coccicheck runs them (report mode) on
the known-answer fixtures: each finds its cases, and only them.  The
first five checks' cases are the classification pipeline's
(tests/test_classify.py); the checks of the 2005 series' other rules
(redundant locks, register without unregister, chains by hand) have
2005-style and modern examples of their own in tests/fixtures/rules/,
positive and negative."""

import os
import re
import subprocess
import unittest

from tests.test_classify import FIXTURE
from tests import needs_spatch

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


RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                     "rules")
RULE_FILES = sorted(f for f in os.listdir(RULES) if f.endswith(".c"))
# Each check of the 2005 series' other rules over every file of
# tests/fixtures/rules/: {"file:line": what the report says}.
RULE_EXPECTED = {
    "notifier_redundant_lock.cocci": {
        "redundant_lock_2005.c:9": r"notify_mutex guards nothing but "
        r"notifier chain operations, but runs the callouts one at a time "
        r"\(line 34\).*register\(\) under down\(\) on line 16, up\(\) on line 18"
        r".*unregister\(\) under down\(\) on line 26",
        "redundant_lock_2005.c:40": r"handoff_lock guards nothing but "
        r"notifier chain operations, but runs the callouts with preemption "
        r"off \(line 47\).*notifier_call_chain\(\) under "
        r"read_lock\(\) on line 47, read_unlock\(\) on line 49; "
        r"notifier_chain_register\(\) under write_lock\(\) on line 57",
        "redundant_lock_modern.c:8": r"demo_notifier_lock guards nothing "
        r"but notifier chain operations: blocking_notifier_chain_register",
        "redundant_lock_modern.c:32": r"event_lock guards nothing but "
        r"notifier chain operations, but runs the callouts one at a time "
        r"with preemption off \(line 39\)",
        # 2005's die_notifier_lock, which 4/7 removed with the rest.
        "register_2005.c:10": r"die_notifier_lock guards nothing but "
        r"notifier chain operations: notifier_chain_register\(\) under "
        r"spin_lock_irqsave\(\)",
    },
    "notifier_register_without_unregister.cocci": {
        "register_2005.c:9": r"register_die_notifier\(\) registers on "
        r"i386die_chain on line 18, and nothing in this file unregisters "
        r"from it",
        "register_modern.c:8": r"demo_register_event_notifier\(\) registers "
        r"on demo_event_chain on line 12",
        "register_modern.c:57": r"&leaky_reboot_nb registered with "
        r"register_reboot_notifier\(\) in the module's init and not "
        r"unregistered in demo_exit\(\)",
    },
    "notifier_hand_rolled_chain.cocci": {
        "hand_rolled_2005.c:36": r"usb_notify_list may be a notifier "
        r"chain written by hand: walked calling each entry's callback on "
        r"line 36, added to on line 20, entries unlinked by the same member "
        r"on line 27 \(of this list or another\)",
        "hand_rolled_2005.c:86": r"shadow_chain may be a notifier chain "
        r"written by hand: walked calling each entry's callback on line 86, "
        r"added to on line 79, no entry unlinked by that member",
        "hand_rolled_modern.c:24": r"demo_hooks may be a notifier chain "
        r"written by hand: walked calling each entry's callback on line 24, "
        r"added to on line 17, no entry unlinked by that member",
        "hand_rolled_modern.c:51": r"demo_listeners may be a notifier "
        r"chain written by hand: walked calling each entry's callback on "
        r"line 51, added to on line 38, entries unlinked by the same member "
        r"on line 43",
    },
}


# The checks that also fix what they find, with -D patch.
PATCH_MODE = ("notifier_register_without_unregister.cocci",)


def report(cocci, folder=FIXTURE,
           paths=("drivers/demo/core.c", "drivers/demo/users.c")):
    """Report lines of one check, each file on its own as coccicheck runs
    them (files named together would share the rules' dependencies)."""
    lines, errors = [], ""
    for path in paths:
        proc = subprocess.run(
            ["spatch", "--very-quiet", "-D", "report", "--no-includes",
             "--include-headers", "--sp-file", os.path.join(COCCI, cocci),
             path], cwd=folder, capture_output=True, text=True)
        lines += proc.stdout.splitlines()
        errors += proc.stderr
    return lines, errors


@needs_spatch
class CocciCheckTest(unittest.TestCase):
    def test_each_check_finds_its_case_only(self):
        for cocci, patterns in EXPECTED.items():
            with self.subTest(cocci):
                lines, err = report(cocci)
                self.assertEqual(len(lines), len(patterns), lines + [err])
                for line, pattern in zip(sorted(lines), patterns):
                    self.assertRegex(line, pattern)

    def test_the_2005_rules_find_their_cases_only(self):
        for cocci, expected in RULE_EXPECTED.items():
            with self.subTest(cocci):
                lines, err = report(cocci, RULES, RULE_FILES)
                self.assertEqual(err, "")
                found = {}
                for line in lines:
                    m = re.match(r"^(\S+?:\d+):\d+-\d+: WARNING: (.*)$",
                                 line)
                    self.assertTrue(m, line)
                    self.assertNotIn(m[1], found, lines)
                    found[m[1]] = m[2]
                self.assertEqual(sorted(found), sorted(expected))
                for where, pattern in expected.items():
                    self.assertRegex(found[where], pattern)

    def test_headers_follow_the_kernel_convention(self):
        for cocci in list(EXPECTED) + list(RULE_EXPECTED):
            with open(os.path.join(COCCI, cocci), encoding="utf-8") as f:
                text = f.read()
            with self.subTest(cocci):
                self.assertRegex(text, r"(?m)^/// \S")
                self.assertRegex(text, r"(?m)^// Confidence: \w+")
                self.assertRegex(text, r"(?m)^// Options: ")
                for mode in ("context", "org", "report"):
                    self.assertRegex(text, rf"(?m)^virtual {mode}$")
                self.assertEqual(
                    bool(re.search(r"(?m)^virtual patch$", text)),
                    cocci in PATCH_MODE)

    def test_patch_mode_adds_the_unregister_wrapper_it_can(self):
        """4/7's fix where the register wrapper is only a call:
        register_modern.c's, and not 2005's die wrapper, which takes a
        lock, nor a chain that has both wrappers."""
        diffs = {}
        for path in RULE_FILES:
            proc = subprocess.run(
                ["spatch", "--very-quiet", "-D", "patch", "--no-includes",
                 "--include-headers", "--sp-file",
                 os.path.join(COCCI, "notifier_register_without_unregister"
                              ".cocci"), path],
                cwd=RULES, capture_output=True, text=True)
            self.assertEqual(proc.stderr, "")
            if proc.stdout:
                diffs[path] = [line for line in proc.stdout.splitlines()
                               if line.startswith(("+", "-"))][2:]
        self.assertEqual(diffs, {"register_modern.c": [
            "+int demo_unregister_event_notifier(struct notifier_block *nb)",
            "+{",
            "+\treturn atomic_notifier_chain_unregister(&demo_event_chain, "
            "nb);",
            "+}",
            "+EXPORT_SYMBOL_GPL(demo_unregister_event_notifier);",
            "+"]})


if __name__ == "__main__":
    unittest.main()
