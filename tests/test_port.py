"""The port report of a series to a newer kernel: patches matched by
subject or file, or why none carries them; chains new, gone and whose
declared kind changed; git range-diff of two versions' core patches."""

import glob
import os
import shutil
import tempfile
import unittest

from tests.fake_kernel import IDENT, git, make_tarball
from notifier_series import port, tree


def entry(chain, defined, cls, declared):
    return {"chain": chain, "defined": defined, "class": cls,
            "declared": declared, "reason": "r"}


class MatchTest(unittest.TestCase):
    def test_subject_then_file_then_why_none(self):
        old = [("a: Convert", ["a/a.c"]), ("b: Convert", ["b/b.c"]),
               ("c: Convert", ["c/c.c"]), ("d: Convert", ["d/d.c"])]
        new = [("a: Convert", ["a/a.c"]), ("b/x: Convert", ["b/b.c"])]
        old_entries = [entry("c_chain", "c/c.c", "atomic", "atomic")]
        new_entries = [entry("c_chain", "c/c.c", "excluded", "raw")]
        rows = port.match(old, new, old_entries, new_entries,
                          {"a/a.c", "b/b.c", "c/c.c"})
        self.assertEqual(rows, [
            ("a: Convert", "a: Convert", None),
            ("b: Convert", "b/x: Convert", None),
            ("c: Convert", None, "c_chain: now excluded (raw) in c/c.c"),
            ("d: Convert", None, "its files are gone: d/d.c")])

    def test_chains_new_gone_and_declared(self):
        # Two chains of one name: one keeps its file, one changes its
        # declared kind.
        old = [entry("twin", "y.c", "blocking", "blocking"),
               entry("twin", "x.c", "atomic", "atomic"),
               entry("kept", "a.c", "atomic", "atomic"),
               entry("gone", "b.c", "blocking", "blocking"),
               entry("moved", "c.c", "atomic", "atomic")]
        new = [entry("twin", "y.c", "excluded", "raw"),
               entry("twin", "x.c", "atomic", "atomic"),
               entry("kept", "a.c", "atomic", "atomic"),
               entry("moved", "d.c", "excluded", "raw"),
               entry("fresh", "e.c", "blocking", "blocking")]
        self.assertEqual(port.chain_changes(old, new), {
            "new": ["e.c: fresh (blocking, blocking)"],
            "gone": ["b.c: gone (blocking, blocking)"],
            "declared": ["d.c: moved atomic -> raw",
                         "y.c: twin blocking -> raw"]})


class CoreRangeDiffTest(unittest.TestCase):
    """Each version's core patches applied to its own pristine files, in
    scratch commits of the newer tree; the trees are left alone."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.trees = {}
        for kver in ("9.8", "9.9"):
            work = os.path.join(self.tmp, kver)
            os.makedirs(work)
            self.trees[kver] = tree.prepare(kver, work, make_tarball(
                work, version=kver + ".1")).path

    def patch(self, kver, body):
        path = self.trees[kver]
        git(path, "checkout", "-q", "-b", "scratch")
        c = os.path.join(path, "kernel/notifier.c")
        with open(c) as f:
            text = f.read()
        with open(c, "w") as f:
            f.write(text.replace("return 0;", body))
        git(path, *IDENT, "commit", "-q", "-a", "-m",
            "notifier: Return something\n\nBecause.")
        out = os.path.join(self.tmp, kver + "-patches")
        git(path, "format-patch", "-q", "-o", out, "pristine")
        git(path, "checkout", "-q", "pristine")
        git(path, "branch", "-q", "-D", "scratch")
        return glob.glob(os.path.join(out, "*.patch"))

    def test_a_changed_core_patch_shows_its_change(self):
        old, new = self.patch("9.8", "return 1;"), self.patch("9.9",
                                                              "return 2;")
        before = git(self.trees["9.9"], "for-each-ref")
        text = port.core_range_diff(self.trees["9.9"], self.trees["9.8"],
                                    old, new)
        self.assertRegex(text, r"1: +\w+ ! 1: +\w+ notifier: Return "
                         "something")
        self.assertIn("-+\treturn 1;", text)
        self.assertIn("++\treturn 2;", text)
        self.assertEqual(git(self.trees["9.9"], "for-each-ref"), before)
        self.assertEqual(tree.local_changes(self.trees["9.9"]), [])
