"""The classification files: every kind of bad YAML is rejected with its
file and line, the coverage check, and drafts that keep reviewed
decisions."""

import glob
import os
import re
import shutil
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import classification as cl
from notifier_series.chains import Chain
from notifier_series.classification import FOLDER
from notifier_series.progress import Error

GOOD = """\
# a comment
kernel: "6.1"
chains:
- chain: panic_notifier_list
  defined: kernel/panic.c
  declared: atomic
  class: atomic
  reason: called from panic() with interrupts off
- chain: struct usb_phy.notifier
  defined: include/linux/usb/phy.h
  declared: atomic
  class: blocking
  reason: no caller in atomic context
  reviewed: false
- chain: netdev_chain
  defined: net/core/dev.c
  declared: raw
  class: excluded
  reason: raw chain
"""


def tree(*chains):
    return {c.key: c for c in chains}


PANIC = Chain("panic_notifier_list", "kernel/panic.c", 77, "atomic",
              "macro", False)
PHY = Chain("struct usb_phy.notifier", "include/linux/usb/phy.h", 116,
            "atomic", "member", False)
NETDEV = Chain("netdev_chain", "net/core/dev.c", 160, "raw", "macro", True)


class LoadTest(unittest.TestCase):
    def bad(self, text, pattern):
        with self.assertRaisesRegex(Error, pattern):
            cl.load("c.yaml", text)

    def test_good_file(self):
        kernel, entries = cl.load("c.yaml", GOOD)
        self.assertEqual(kernel, "6.1")
        self.assertEqual([e.line for e in entries], [4, 9, 15])
        self.assertEqual(entries[1].get("reviewed"), False)

    def test_malformed_yaml(self):
        self.bad(GOOD.replace("  class: atomic\n", "  class: [atomic\n"),
                 r"^c\.yaml:\d+: not valid YAML")

    def test_undecodable_file(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "c.yaml")
            with open(path, "wb") as f:
                f.write(GOOD.encode() + b"  reason: caf\xe9\n")
            with self.assertRaisesRegex(
                    Error, rf"^{re.escape(path)}:20: not UTF-8 text "
                    r"\(byte 0xe9\)$"):
                cl.load(path)

    def test_not_a_list(self):
        self.bad('kernel: "6.1"\nchains: 3\n', r"c\.yaml:1: 'chains' must")
        self.bad("- a\n", r"c\.yaml:1: expected a mapping")

    def test_missing_and_unknown_fields(self):
        self.bad(GOOD.replace("  reason: raw chain\n", ""),
                 r"c\.yaml:15: chain netdev_chain: missing reason")
        self.bad(GOOD.replace("  reason: raw chain\n",
                              "  reason: raw chain\n  colour: red\n"),
                 r"c\.yaml:20: unknown field 'colour'")
        self.bad(GOOD.replace("reviewed: false", "reviewed: nope"),
                 r"c\.yaml:14: reviewed must be a boolean")

    def test_unknown_class(self):
        self.bad(GOOD.replace("class: blocking", "class: sleepy"),
                 r"c\.yaml:9: chain struct usb_phy\.notifier: unknown "
                 r"class 'sleepy'")
        self.bad(GOOD.replace("declared: raw", "declared: rwsem"),
                 r"c\.yaml:15: chain netdev_chain: unknown declared kind")

    def test_raw_must_be_excluded(self):
        self.bad(GOOD.replace("class: excluded", "class: atomic"),
                 r"c\.yaml:15: chain netdev_chain: a raw chain can only be "
                 r"excluded")

    def test_duplicate(self):
        self.bad(GOOD + GOOD[GOOD.index("- chain: panic"):
                             GOOD.index("- chain: struct")],
                 r"c\.yaml:20: chain panic_notifier_list \(defined in "
                 r"kernel/panic\.c\) is already classified at line 4")

    def test_every_problem_is_reported(self):
        text = GOOD.replace("class: blocking", "class: x").replace(
            "class: atomic", "class: y")
        with self.assertRaises(Error) as caught:
            cl.load("c.yaml", text)
        self.assertEqual(len(str(caught.exception).splitlines()), 2)

    def test_repository_files_load(self):
        paths = glob.glob(os.path.join(FOLDER, "*.yaml"))
        self.assertIn(os.path.join(FOLDER, "seed-2005.yaml"), paths)
        for path in paths:
            kernel, entries = cl.load(path)
            self.assertTrue(entries, path)


class CoverageTest(unittest.TestCase):
    def test_fits(self):
        _, entries = cl.load("c.yaml", GOOD)
        self.assertEqual(cl.check_coverage("c.yaml", entries,
                                           tree(PANIC, PHY, NETDEV)), [])

    def test_not_in_tree_missing_and_redeclared(self):
        _, entries = cl.load("c.yaml", GOOD)
        other = Chain("reboot_notifier_list", "kernel/notifier.c", 15,
                      "blocking", "macro", False)
        moved_kind = Chain("netdev_chain", "net/core/dev.c", 160, "atomic",
                           "macro", True)
        problems = cl.check_coverage("c.yaml", entries,
                                     tree(PANIC, moved_kind, other))
        self.assertEqual(problems, [
            "c.yaml:9: chain struct usb_phy.notifier (defined in "
            "include/linux/usb/phy.h) is not in the tree",
            "c.yaml:15: chain netdev_chain: the tree declares it atomic, "
            "not raw",
            "c.yaml: chain reboot_notifier_list (defined at "
            "kernel/notifier.c:15) is missing"])


class CarryTest(unittest.TestCase):
    def test_keeps_decisions_and_reports_changes(self):
        _, entries = cl.load("c.yaml", GOOD)
        moved = Chain("panic_notifier_list", "kernel/panic_notifier.c", 9,
                      "atomic", "macro", False)
        new = Chain("reboot_notifier_list", "kernel/notifier.c", 15,
                    "blocking", "macro", False)
        drafts = {new.key: ("blocking", "callout sleeps")}
        out, report = cl.carry(entries, tree(moved, PHY, new), drafts)
        by_chain = {e["chain"]: e for e in out}
        self.assertEqual(by_chain["panic_notifier_list"]["defined"],
                         "kernel/panic_notifier.c")
        self.assertEqual(by_chain["panic_notifier_list"]["reason"],
                         "called from panic() with interrupts off")
        self.assertEqual(by_chain["struct usb_phy.notifier"]["class"],
                         "blocking")            # the reviewed override
        self.assertEqual(by_chain["reboot_notifier_list"]["reviewed"],
                         False)
        self.assertEqual(report["moved"], [
            "panic_notifier_list: kernel/panic.c -> kernel/panic_notifier.c"])
        self.assertEqual(report["appeared"],
                         ["reboot_notifier_list (kernel/notifier.c)"])
        self.assertEqual(report["vanished"], ["netdev_chain (net/core/dev.c)"])

    def test_dump_round_trips(self):
        _, entries = cl.load("c.yaml", GOOD)
        text = cl.dump("6.1", entries, "header")
        kernel, again = cl.load("d.yaml", text)
        self.assertEqual(kernel, "6.1")
        self.assertEqual(sorted(map(dict, again), key=str),
                         sorted(map(dict, entries), key=str))


class SinceTest(unittest.TestCase):
    """What the cover letter says changed since the previous version's
    classification: a chain that moved to another file is the same
    chain, unless its name is not unique."""

    OLD = """kernel: 9.1.1
chains:
- {chain: moved_chain, defined: a.c, declared: atomic, class: atomic, reason: r}
- {chain: flipped_chain, defined: b.c, declared: atomic, class: atomic, reason: r}
- {chain: gone_chain, defined: c.c, declared: blocking, class: blocking, reason: r}
- {chain: twin_chain, defined: d.c, declared: raw, class: excluded, reason: r}
- {chain: twin_chain, defined: e.c, declared: raw, class: excluded, reason: r}
"""
    NEW = """kernel: 9.2.1
chains:
- {chain: moved_chain, defined: z.c, declared: atomic, class: atomic, reason: r}
- {chain: flipped_chain, defined: b.c, declared: atomic, class: blocking, reason: r}
- {chain: new_chain, defined: n.c, declared: blocking, class: blocking, reason: r}
- {chain: twin_chain, defined: f.c, declared: raw, class: excluded, reason: r}
"""

    def test_appeared_vanished_changed(self):
        from unittest import mock
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        for kver, text in (("9.1", self.OLD), ("9.2", self.NEW)):
            with open(os.path.join(folder, f"linux-{kver}.yaml"), "w",
                      encoding="utf-8") as f:
                f.write(text)
        with mock.patch.object(cl, "FOLDER", folder), \
                mock.patch.object(cl, "yaml_path",
                                  lambda kver: os.path.join(
                                      folder, f"linux-{kver}.yaml")):
            self.assertIsNone(cl.since("9.1", []))
            _, entries = cl.load(cl.yaml_path("9.2"))
            found = cl.since("9.2", entries)
        self.assertEqual(found, {
            "from": "9.1",
            "appeared": ["n.c: new_chain (blocking)",
                         "f.c: twin_chain (excluded)"],
            "vanished": ["c.c: gone_chain (blocking)",
                         "d.c: twin_chain (excluded)",
                         "e.c: twin_chain (excluded)"],
            "changed_class": ["b.c: flipped_chain atomic -> blocking"]})


if __name__ == "__main__":
    unittest.main()
