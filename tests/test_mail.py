"""The series as a b4 branch, with real clients: b4 reads the branch the
toolkit makes, the messages `b4 send -o` writes apply with git am onto a
fresh pristine tree and give the series' tree, and a changed series is
the next revision, which `b4 prep --compare-to` compares with the last."""

import os
import shutil
import subprocess
import tempfile
import unittest
import unittest.mock

from tests.fake_kernel import IDENT, git, make_tarball
from notifier_series import mail, tree

SERIES = "notifier-series/series"


def b4(path, *args):
    return subprocess.run(["b4"] + list(args), cwd=path, check=True,
                          capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout


@unittest.skipUnless(shutil.which("b4"), "b4 is not installed (make deps)")
class B4BranchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.kernel = tree.prepare("9.9", os.path.join(self.tmp, "work"),
                                   make_tarball(self.tmp, extra={
                                       # b4 knows a kernel tree by it
                                       "Kconfig": "",
                                       "a/a.c": "int a;\n",
                                       "b/b.c": "".join(
                                           f"int b{i};\n"
                                           for i in range(20))}))
        self.git = self.kernel.path
        git(self.git, "config", "user.name", "T")
        git(self.git, "config", "user.email", "t@example.org")
        git(self.git, "checkout", "-q", "-b", SERIES)
        self.commit("a/a.c", "int a1;\n", "a: Convert a")
        self.commit("b/b.c", "".join(f"int c{i};\n" for i in range(9)),
                    "b: Convert b")

    def commit(self, name, text, subject, amend=False):
        with open(os.path.join(self.git, name), "a") as f:
            f.write(text)
        git(self.git, *IDENT, "commit", "-q", "-a", "-s", "-m", subject,
            *(["--amend"] if amend else []))

    def regenerate(self, body="The why.\n"):
        ids = mail.patches_of(self.git, tree.PRISTINE, SERIES)
        rev = mail.revision(self.git, "9.9", ids)
        mail.enroll(self.git, "9.9", rev, SERIES, body,
                    ["A <a@example.org>"], ["list@example.org"])
        return rev

    def test_b4_reads_the_branch_and_its_messages_give_the_series(self):
        rev = self.regenerate()
        self.assertEqual((rev.number, rev.new), (1, False))
        info = b4(self.git, "prep", "--show-info")
        self.assertIn("revision: 1", info)
        self.assertIn("prefixes: RFC", info)
        self.assertIn(f"cover-subject: {mail.SUBJECT}", info)
        self.assertEqual(tree.local_changes(self.git), [])
        # b4 prep -p, and --edit-cover (git-filter-repo) with an editor
        # that renames the subject.
        b4(self.git, "prep", "-p", os.path.join(self.tmp, "prep"))
        self.assertEqual(len(os.listdir(os.path.join(self.tmp, "prep"))), 3)
        with unittest.mock.patch.dict(os.environ, {
                "EDITOR": "sed -i 1s/chains/chains-edited/"}):
            b4(self.git, "prep", "--edit-cover")
        self.assertIn("chains-edited", b4(self.git, "prep", "--show-info"))
        sent = mail.send(self.git, os.path.join(self.tmp, "sent"))
        self.assertEqual(len(sent), 3)
        for message in sent:
            with open(message, encoding="utf-8") as f:
                text = f.read()
            self.assertIn("To: A <a@example.org>", text)
            self.assertIn("Cc: list@example.org", text)
        with open(sent[1], encoding="utf-8") as f:
            self.assertIn("[PATCH RFC 1/2] a: Convert a", f.read())
        # git am onto a fresh pristine tree gives the series' tree.
        fresh = os.path.join(self.tmp, "fresh")
        git(self.tmp, "clone", "-q", "--branch", "pristine", self.git,
            fresh)
        git(fresh, *IDENT, "am", "-q", *sent[1:])
        self.assertEqual(git(fresh, "rev-parse", "HEAD^{tree}"),
                         git(self.git, "rev-parse", SERIES + "^{tree}"))

    def test_a_changed_series_is_the_next_revision(self):
        first = self.regenerate()
        self.assertEqual(self.regenerate().number, 1)   # same patches
        git(self.git, "checkout", "-q", SERIES)
        self.commit("b/b.c", "int b2;\n", "b: Convert b", amend=True)
        rev = self.regenerate()
        self.assertEqual((rev.number, rev.new, rev.change_id),
                         (2, True, first.change_id))
        self.assertIn("revision: 2", b4(self.git, "prep", "--show-info"))
        self.assertEqual(tree.local_changes(self.git), [])
        # b4's own comparison and the toolkit's agree: b/b.c changed.
        compared = b4(self.git, "prep", "--compare-to", "v1")
        self.assertIn("+int b2;", compared)
        text = mail.range_diff(self.git, "9.9", 1, SERIES)
        self.assertIn("+int b2;", text)
        self.assertEqual(mail.patch_changes(text),
                         {"changed": ["b: Convert b"], "added": [],
                          "dropped": []})
        self.assertEqual(self.regenerate().number, 2)   # not sent again

    def test_a_changed_message_is_a_new_revision_too(self):
        self.regenerate()
        git(self.git, "checkout", "-q", SERIES)
        git(self.git, *IDENT, "commit", "-q", "--amend", "-m",
            "b: Convert b\n\nWith a reason.")
        self.assertEqual(self.regenerate().number, 2)

    def test_a_revision_b4_already_tagged_is_not_tagged_again(self):
        """After a real b4 send of v1 (which needs the network): b4 tagged
        v1 and moved the branch to v2, so a changed series is v2."""
        self.regenerate()
        cover = git(self.git, "rev-parse", ":/" + mail.MAGIC).strip()
        sent = mail.copy_commits(self.git, git(
            self.git, "rev-list", "--reverse", f"{cover}..HEAD").split(),
            tree.PRISTINE)
        tracking = b4(self.git, "prep", "--show-info")
        change_id = next(line.split(": ", 1)[1] for line in
                         tracking.splitlines()
                         if line.startswith("change-id:"))
        git(self.git, "tag", "-a", "-m", f"{mail.SUBJECT}\n\n---\n"
            f"base-commit: {git(self.git, 'rev-parse', 'pristine').strip()}"
            f"\nchange-id: {change_id}\n", mail.sent_tag("9.9", 1), sent)
        b4(self.git, "prep", "--force-revision", "2")
        self.assertIn("revision: 2", b4(self.git, "prep", "--show-info"))
        git(self.git, "checkout", "-q", SERIES)
        self.commit("b/b.c", "int b9;\n", "b: Convert b", amend=True)
        rev = self.regenerate()
        self.assertEqual((rev.number, rev.new), (2, False))
        self.assertEqual(git(self.git, "tag", "-l", "sent/*").split(),
                         [mail.sent_tag("9.9", 1)])

    def test_tags_of_a_branch_that_is_gone_stop_the_run(self):
        self.regenerate()
        git(self.git, "checkout", "-q", SERIES)
        self.commit("b/b.c", "int b2;\n", "b: Convert b", amend=True)
        self.regenerate()                       # v1 tagged, now v2
        git(self.git, "checkout", "-q", SERIES)
        git(self.git, "branch", "-D", mail.branch("9.9"))
        with self.assertRaisesRegex(mail.Error, "branch .* that is gone"):
            self.regenerate()

    def test_a_tag_of_another_series_stops_the_run(self):
        self.regenerate()
        git(self.git, "tag", "-a", "-m", "x\n\n---\nchange-id: other\n",
            mail.sent_tag("9.9", 1), "pristine")
        git(self.git, "checkout", "-q", SERIES)
        self.commit("b/b.c", "int b2;\n", "b: Convert b", amend=True)
        with self.assertRaisesRegex(mail.Error, "of another series"):
            self.regenerate()
        self.assertIsNone(mail.range_diff(self.git, "9.9", 7, SERIES))
        self.assertIn("The tag of v7 is gone",
                      " ".join(mail.changes(7, [], [], None, None, [])))

    def test_changes_since_name_classes_patches_and_checks(self):
        old = [{"chain": "x_chain", "defined": "a/a.c", "class": "blocking",
                "reason": "r"}]
        new = [{"chain": "x_chain", "defined": "a/a.c", "class": "atomic",
                "reason": "called from an interrupt handler"}]
        lines = mail.changes(1, old, new, {"changed": ["a: Convert a"],
                                           "added": [], "dropped": []},
                             ["checkpatch.pl --strict: 1 errors"],
                             ["checkpatch.pl --strict: 0 errors"])
        self.assertEqual(lines, [
            "Changes since v1:",
            "- x_chain (a/a.c) is now atomic, was blocking: called from an "
            "interrupt",
            "  handler",
            "- Patch changed: a: Convert a",
            "- checkpatch.pl --strict: 0 errors (v1: 1 errors)"])


class AddHeadersTest(unittest.TestCase):
    """Each patch gets its own To: and Cc: before its Subject:, and keeps
    every byte it had, even one that is not UTF-8."""

    PATCH = (b"From 0000 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\n"
             b"Date: Mon, 7 Dec 2026 19:43:53 +0000\nSubject: [PATCH] x: y\n"
             b"\nbody \xe9\n---\n")

    def write(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, "0001-x.patch")
        with open(path, "wb") as f:
            f.write(self.PATCH)
        return path

    def read(self, path):
        with open(path, "rb") as f:
            return f.read()

    def test_to_and_cc_before_the_subject(self):
        path = self.write()
        mail.add_headers(path, ["A <a@example.org>", "B <b@example.org>"],
                           ["list@example.org"])
        self.assertEqual(self.read(path), self.PATCH.replace(
            b"Subject:", b"To: A <a@example.org>,\n    B <b@example.org>\n"
            b"Cc: list@example.org\nSubject:"))

    def test_nobody_changes_nothing(self):
        path = self.write()
        mail.add_headers(path, [], [])
        self.assertEqual(self.read(path), self.PATCH)


if __name__ == "__main__":
    unittest.main()
