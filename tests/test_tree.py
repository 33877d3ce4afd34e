"""Tree preparation: extraction, reuse after verification, and refusal to
overwrite a tree with local changes."""

import os
import shutil
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from tests.fake_kernel import IDENT, commit_on_branch, git, make_tarball
from notifier_series import tree
from notifier_series.progress import Error


class PrepareTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.work = os.path.join(self.tmp, "work")
        self.tarball = make_tarball(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def prepare(self):
        return tree.prepare("9.9", self.work, self.tarball)

    def test_extracts_a_pristine_baseline(self):
        t = self.prepare()
        self.assertEqual(t.path, os.path.join(self.work, "linux-9.9"))
        self.assertEqual(t.version, "9.9.1")
        files = git(t.path, "ls-files").split()
        self.assertEqual(sorted(files),
                         [".gitignore", "Makefile", "kernel/notifier.c"])
        self.assertEqual(git(t.path, "rev-parse", "pristine"),
                         git(t.path, "rev-parse", "HEAD"))
        message = git(t.path, "log", "-1", "--format=%B", "pristine")
        self.assertIn("Source-Tarball-SHA256: " + tree.sha256(self.tarball),
                      message)
        self.assertEqual(tree.local_changes(t.path), [])
        self.assertEqual(os.listdir(self.work), ["linux-9.9"])

    def test_reuses_a_verified_tree(self):
        first = self.prepare()
        inode = os.stat(os.path.join(first.path, "Makefile")).st_ino
        second = self.prepare()
        self.assertEqual(second.record, first.record)
        self.assertEqual(os.stat(os.path.join(second.path,
                                              "Makefile")).st_ino, inode)

    def test_refuses_a_modified_file(self):
        t = self.prepare()
        with open(os.path.join(t.path, "kernel/notifier.c"), "a") as f:
            f.write("/* mine */\n")
        with self.assertRaisesRegex(Error, "local changes.*\n.*notifier.c"):
            self.prepare()
        with open(os.path.join(t.path, "kernel/notifier.c")) as f:
            self.assertIn("mine", f.read())

    def test_refuses_an_ignored_new_file(self):
        t = self.prepare()
        with open(os.path.join(t.path, "kernel", "new.c"), "w") as f:
            f.write("int x;\n")
        with self.assertRaisesRegex(Error, "local changes.*\n.*new.c"):
            self.prepare()

    def test_refuses_a_branch_of_the_user(self):
        t = self.prepare()
        commit_on_branch(t.path, "mine")
        with self.assertRaisesRegex(Error, "refs/heads/mine"):
            self.prepare()

    def test_our_own_branches_are_not_local_changes(self):
        t = self.prepare()
        commit_on_branch(t.path, "notifier-series/core")
        self.assertEqual(tree.local_changes(t.path), [])

    def test_extracts_again_when_the_tarball_changed(self):
        first = self.prepare()
        os.remove(self.tarball)
        self.tarball = make_tarball(self.tmp, "9.9.2")
        second = self.prepare()
        self.assertEqual(second.version, "9.9.2")
        self.assertNotEqual(second.record["sha256"], first.record["sha256"])
        self.assertEqual(os.listdir(self.work), ["linux-9.9"])

    def test_keeps_a_stale_tree_with_b4_revisions(self):
        t = self.prepare()
        commit_on_branch(t.path, "b4/notifier-series-9.9")
        git(t.path, "tag", "sent/notifier-series-9.9-v1")
        self.assertEqual(tree.local_changes(t.path), [])
        os.remove(self.tarball)
        self.tarball = make_tarball(self.tmp, "9.9.2")
        with self.assertRaisesRegex(Error, "holds its b4 series"):
            self.prepare()
        self.assertEqual(tree.kernel_version(t.path), "9.9.1")

    def test_keeps_a_stale_tree_with_local_changes(self):
        t = self.prepare()
        with open(os.path.join(t.path, "Makefile"), "a") as f:
            f.write("# mine\n")
        os.remove(self.tarball)
        self.tarball = make_tarball(self.tmp, "9.9.2")
        with self.assertRaisesRegex(Error, "local changes"):
            self.prepare()
        self.assertEqual(tree.kernel_version(t.path), "9.9.1")

    def test_detects_a_moved_pristine_tag(self):
        t = self.prepare()
        with open(os.path.join(t.path, "Makefile"), "a") as f:
            f.write("# mine\n")
        git(t.path, *IDENT, "commit", "-q", "-a", "-m", "mine")
        git(t.path, "tag", "-f", "pristine")
        with self.assertRaisesRegex(Error, "does not point at the baseline"):
            self.prepare()

    def test_rejects_a_work_folder_inside_the_repository(self):
        with self.assertRaisesRegex(Error, "inside the repository"):
            tree.prepare("9.9", os.path.join(tree.REPO, "out", "work"),
                         self.tarball)

    def test_rejects_a_bad_version_and_a_missing_tarball(self):
        with self.assertRaisesRegex(Error, "MAJOR.MINOR"):
            tree.prepare("six", self.work, self.tarball)
        with self.assertRaisesRegex(Error, "not found.*linux-source-9.8"):
            tree.prepare("9.8", self.work)


if __name__ == "__main__":
    unittest.main()


class VanishedTreeTest(unittest.TestCase):
    """A tree removed while the toolkit runs is an Error naming it (the
    command line's exit 4), also where a failing git is the caller's to
    read (a missing ref): no caller takes it for an answer."""

    def test_a_removed_tree_fails_closed(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        kernel = tree.prepare("9.9", os.path.join(tmp, "work"),
                              make_tarball(tmp))
        self.assertEqual(tree.git(kernel.path, "rev-parse", "-q", "--verify",
                                  "no-such-ref", check=False), "")
        shutil.rmtree(kernel.path)
        for check in (True, False):
            with self.assertRaisesRegex(Error, "linux-9.9: no such folder"):
                tree.git(kernel.path, "rev-parse", "-q", "--verify",
                         "no-such-ref", check=check)
