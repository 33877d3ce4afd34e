"""Applying patches with git am onto a prepared tree, and the core patches
this repository carries."""

import glob
import os
import re
import shutil
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from tests.fake_kernel import IDENT, git, make_tarball
from notifier_series import patches, tree
from notifier_series.progress import Error


# A file time long past: a file rewritten now cannot have it.
PAST = 10**18


class ApplyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.tree = tree.prepare("9.9", os.path.join(self.tmp, "work"),
                                 make_tarball(self.tmp))
        self.patch = self.make_patch("return 1;")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def make_patch(self, body, name="one"):
        """A format-patch of kernel/notifier.c returning `body`."""
        path = self.tree.path
        git(path, "checkout", "-q", "-B", "scratch", "pristine")
        c = os.path.join(path, "kernel/notifier.c")
        with open(c) as f:
            text = f.read()
        with open(c, "w") as f:
            f.write(text.replace("return 0;", body))
        git(path, *IDENT, "commit", "-q", "-a", "-m", "notifier: " + name)
        out = os.path.join(self.tmp, name)
        git(path, "format-patch", "-q", "-o", out, "pristine")
        git(path, "checkout", "-q", "pristine")
        git(path, "branch", "-q", "-D", "scratch")
        return glob.glob(os.path.join(out, "*.patch"))

    def patch_on(self, base, name, text, label):
        """The format-patch of `text` appended to file `name` on top of
        `base`; the tree is left back on `base`."""
        path = self.tree.path
        git(path, "checkout", "-q", "-B", "scratch", base)
        with open(os.path.join(path, name), "a") as f:
            f.write(text)
        git(path, *IDENT, "commit", "-q", "-a", "-m", label)
        out = os.path.join(self.tmp, label)
        git(path, "format-patch", "-q", "-o", out, base)
        git(path, "checkout", "-q", "--detach", base)
        git(path, "branch", "-q", "-D", "scratch")
        return glob.glob(os.path.join(out, "*.patch"))

    def notifier_c(self):
        with open(os.path.join(self.tree.path, "kernel/notifier.c")) as f:
            return f.read()

    def test_applies_on_the_core_branch(self):
        head = patches.apply(self.tree, self.patch)
        self.assertEqual(git(self.tree.path, "rev-parse", "HEAD").strip(),
                         head)
        self.assertEqual(git(self.tree.path, "branch", "--show-current")
                         .strip(), patches.CORE_BRANCH)
        self.assertIn("return 1;", self.notifier_c())

    def test_reuses_a_branch_with_the_same_changes(self):
        head = patches.apply(self.tree, self.patch)
        c = os.path.join(self.tree.path, "kernel/notifier.c")
        mtime = os.stat(c).st_mtime_ns
        git(self.tree.path, "checkout", "-q", "pristine")
        git(self.tree.path, "checkout", "-q", patches.CORE_BRANCH)
        mtime = os.stat(c).st_mtime_ns
        self.assertEqual(patches.apply(self.tree, self.patch), head)
        self.assertEqual(os.stat(c).st_mtime_ns, mtime)

    def test_reapplies_changed_patches(self):
        patches.apply(self.tree, self.patch)
        patches.apply(self.tree, self.make_patch("return 2;", "two"))
        self.assertIn("return 2;", self.notifier_c())
        self.assertEqual(len(git(self.tree.path, "rev-list",
                                 "pristine..HEAD").split()), 1)

    def test_applies_on_top_of_another_branch(self):
        core = patches.apply(self.tree, self.patch)
        path = self.tree.path
        extra = self.patch_on(core, "Makefile", "# extra\n", "extra")
        head = patches.apply(self.tree, extra, "notifier-series/extra",
                             patches.CORE_BRANCH)
        self.assertEqual(git(path, "rev-parse", "HEAD~1").strip(), core)
        self.assertEqual(patches.apply(self.tree, extra,
                                       "notifier-series/extra",
                                       patches.CORE_BRANCH), head)

    def test_a_boot_on_top_of_the_core_rewrites_nothing_it_keeps(self):
        # As boottest.run() does for a mutant or a baseline run: the core
        # branch made but not checked out, then the extra branch reused;
        # the file the extra patch touches keeps its time, so it does not
        # rebuild.
        core = patches.apply(self.tree, self.patch)
        c = os.path.join(self.tree.path, "kernel/notifier.c")
        extra = self.patch_on(core, "kernel/notifier.c", "/* extra */\n",
                              "extra")
        branch = "notifier-series/extra"
        patches.apply(self.tree, extra, branch, patches.CORE_BRANCH)
        # Back in time, so that a rewrite shows whatever the clock's tick.
        os.utime(c, ns=(PAST, PAST))
        mtime = os.stat(c).st_mtime_ns
        self.assertEqual(patches.apply(self.tree, self.patch,
                                       checkout=False), core)
        self.assertEqual(os.stat(c).st_mtime_ns, mtime)
        patches.apply(self.tree, extra, branch, patches.CORE_BRANCH)
        self.assertEqual(os.stat(c).st_mtime_ns, mtime)
        self.assertIn("/* extra */", self.notifier_c())

    def test_a_branch_made_again_keeps_the_time_of_files_it_keeps(self):
        # Two patches, then the second one changed: kernel/notifier.c, as
        # the first leaves it, is not rewritten for make, the Makefile
        # the second changes is.
        path = self.tree.path
        two = self.patch_on("pristine", "Makefile", "# one\n", "two")
        patches.apply(self.tree, self.patch + two)
        c = os.path.join(path, "kernel/notifier.c")
        make = os.path.join(path, "Makefile")
        for f in (c, make):
            os.utime(f, ns=(PAST, PAST))
        times = os.stat(c).st_mtime_ns, os.stat(make).st_mtime_ns
        with open(two[0]) as f:
            text = f.read()
        other = os.path.join(self.tmp, "other.patch")
        with open(other, "w") as f:
            f.write(text.replace("+# one", "+# two"))
        patches.apply(self.tree, self.patch + [other])
        self.assertIn("# two", open(make).read())
        self.assertEqual(os.stat(c).st_mtime_ns, times[0])
        self.assertNotEqual(os.stat(make).st_mtime_ns, times[1])

    def test_a_file_left_changed_does_not_get_its_time_back(self):
        # A run stopped mid-way (an interrupted spatch) leaves a file that
        # differs from its index entry: it must not look older than its
        # object to make.
        patches.apply(self.tree, self.patch)
        c = os.path.join(self.tree.path, "kernel/notifier.c")
        os.utime(c, ns=(PAST, PAST))
        try:
            with patches.stamps_kept(self.tree.path):
                with open(c, "a") as f:
                    f.write("/* half-written */\n")
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            pass
        self.assertNotEqual(os.stat(c).st_mtime_ns, PAST)

    def test_failing_patch_leaves_a_clean_tree(self):
        bad = os.path.join(self.tmp, "bad.patch")
        with open(self.patch[0]) as f:
            text = f.read()
        with open(bad, "w") as f:
            f.write(text.replace("-\treturn 0;", "-\treturn 7;"))
        with self.assertRaisesRegex(Error, "git am failed"):
            patches.apply(self.tree, [bad])
        self.assertEqual(tree.local_changes(self.tree.path), [])
        self.assertFalse(os.path.exists(os.path.join(self.tree.path, ".git",
                                                     "rebase-apply")))

    def test_refuses_a_tree_with_local_changes(self):
        with open(os.path.join(self.tree.path, "Makefile"), "a") as f:
            f.write("# mine\n")
        with self.assertRaisesRegex(Error, "local changes"):
            patches.apply(self.tree, self.patch)


class CorePatchFilesTest(unittest.TestCase):
    """What can be checked of core-patch/ without a kernel tree; the boot
    test applies, checkpatches, builds and boots them."""

    def series(self, kver):
        return patches.core_patches(kver)

    def test_each_version_has_a_signed_series(self):
        for kver in ("6.1", "6.12"):
            for path in self.series(kver):
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                self.assertRegex(text, r"(?m)^Subject: \[PATCH \d+/\d+\] ")
                self.assertRegex(text, r"(?m)^Signed-off-by: .+ <.+>$")

    def added_file(self, kver, name):
        for path in self.series(kver):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            m = re.search(r"(?ms)^\+\+\+ b/" + re.escape(name)
                          + r"\n@@ [^\n]*\n(.*?)(?=^diff --git|\Z)", text)
            if m:
                return m.group(1)
        self.fail(f"{kver}: no patch adds {name}")

    def test_tests_are_the_same_on_both_versions(self):
        for name in ("kernel/notifier_kunit.c", "kernel/notifier_torture.c"):
            with self.subTest(name):
                self.assertEqual(self.added_file("6.1", name),
                                 self.added_file("6.12", name))

    def test_missing_version_is_a_clear_error(self):
        with self.assertRaisesRegex(Error, "no core patch for Linux 5.4"):
            patches.core_patches("5.4")


if __name__ == "__main__":
    unittest.main()
