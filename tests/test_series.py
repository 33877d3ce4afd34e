"""The series stage's pure parts: subject prefixes, grouping per
MAINTAINERS section with the must-go-together sets, commit messages from
the classification, the removal of the compatibility block."""

import os
import re
import shutil
import tempfile
import unittest

from tests.fake_kernel import IDENT, git as fake_git, make_tarball
from notifier_series import cover, output, series, split, tree
from notifier_series.classification import Entry
from notifier_series.records import LATER, SeriesReport

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def entry(chain, defined, cls, reason="why", declared=None):
    e = Entry(chain=chain, defined=defined, declared=declared or cls,
              reason=reason)
    e["class"] = cls
    return e


class PrefixTest(unittest.TestCase):
    def test_prefixes_read_like_kernel_subjects(self):
        cases = {
            ("arch/x86/kernel/cpu/mce/core.c",
             "arch/x86/kernel/cpu/mce/internal.h"): "x86/mce",
            ("arch/powerpc/platforms/powernv/opal.c",): "powerpc/powernv",
            ("drivers/base/core.c", "drivers/base/base.h"): "drivers/base",
            ("net/core/dev.c",): "net",
            ("net/ipv4/devinet.c",): "net/ipv4",
            ("drivers/iio/light/iqs621-als.c",): "iio/light",
            ("kernel/panic.c", "include/linux/panic_notifier.h"): "kernel",
        }
        for files, want in cases.items():
            with self.subTest(files):
                self.assertEqual(split.prefix(list(files)), want)


class PrefixesTest(unittest.TestCase):
    def test_sections_sharing_a_prefix_name_their_first_file(self):
        groups = [("DRIVER CORE", ["drivers/base/core.c"]),
                  ("DRIVER CORE DD", ["drivers/base/dd.c",
                                      "drivers/base/base.h"]),
                  ("X86 MCE", ["arch/x86/kernel/cpu/mce/core.c"])]
        self.assertEqual(split.prefixes(groups), {
            "DRIVER CORE": "drivers/base: core",
            "DRIVER CORE DD": "drivers/base: dd",
            "X86 MCE": "x86/mce"})


class GroupTest(unittest.TestCase):
    def test_files_group_by_section_and_sets_stay_together(self):
        changed = ["a/x.c", "a/y.c", "b/z.c", "c/w.c"]
        sections = {"a/x.c": "A", "a/y.c": "A", "b/z.c": "B", "c/w.c": "C"}
        self.assertEqual(split.group(changed, sections, []),
                         [("A", ["a/x.c", "a/y.c"]), ("B", ["b/z.c"]),
                          ("C", ["c/w.c"])])
        merged = split.group(changed, sections, [(["b/z.c", "c/w.c"],
                                                  "chain")])
        self.assertEqual(merged, [("A", ["a/x.c", "a/y.c"]),
                                  ("B", ["b/z.c", "c/w.c"])])

    def test_sets_join_sections_transitively(self):
        # A and C share one set, B and C another: A, B and C are one
        # commit, whatever the order the sets come in.
        changed = ["a/x.c", "b/y.c", "c/z.c", "c/w.c", "d/v.c"]
        sections = {"a/x.c": "A", "b/y.c": "B", "c/z.c": "C", "c/w.c": "C",
                    "d/v.c": "D"}
        sets = [(["a/x.c", "c/z.c"], "one"), (["b/y.c", "c/w.c"], "two")]
        for order in (sets, sets[::-1]):
            self.assertEqual(split.group(changed, sections, order),
                             [("A", ["a/x.c", "b/y.c", "c/w.c", "c/z.c"]),
                              ("D", ["d/v.c"])])


class MessageTest(unittest.TestCase):
    def test_message_lists_chains_defined_and_used_with_their_class(self):
        entries = [entry("reboot_notifier_list", "kernel/reboot.c",
                         "blocking", "callouts sleep " * 12),
                   entry("panic_notifier_list", "kernel/panic.c", "atomic"),
                   entry("raw_chain", "kernel/reboot.c", "excluded",
                         declared="raw")]
        diff = ("-\tatomic_notifier_chain_register(&panic_notifier_list, nb);"
                "\n+\tnotifier_chain_register(&panic_notifier_list, nb);\n")
        text = split.message("kernel", "THE REST", ["kernel/reboot.c"], diff,
                             entries, "6.1")
        self.assertTrue(text.startswith(
            "kernel: Convert notifier chains to struct notifier_head\n\n"))
        self.assertIn("  reboot_notifier_list (blocking): callouts sleep",
                      text)
        self.assertIn("\n    callouts sleep", text)
        self.assertIn("  panic_notifier_list (atomic, kernel/panic.c)", text)
        self.assertIn("raw_chain (excluded)", text)
        self.assertIn("--classification classify/linux-6.1.yaml", text)
        self.assertTrue(all(len(line) <= 75 for line in text.splitlines()))

    def test_comment_and_assembly_changes_are_said_as_such(self):
        comment = (" /*\n- * Use blocking_notifier_chain_register().\n"
                   "+ * Use notifier_chain_register().\n */\n")
        text = split.message("cpufreq", "CPU FREQUENCY", ["drivers/cf.c"],
                             comment, [], "6.1")
        self.assertIn("Make the comments that name the typed chain API",
                      text)
        self.assertNotIn("Convert the calls", text)
        asm = ("-\tbl\tatomic_notifier_call_chain\n"
               "+\tbl\tnotifier_call_chain\n")
        text = split.message("ARM", "ARM PORT", ["arch/arm/kernel/e.S"], asm,
                             [], "6.1", by_text=["arch/arm/kernel/e.S:772"])
        self.assertIn("Convert the calls", text)
        self.assertIn("The assembly at arch/arm/kernel/e.S:772 calls", text)
        self.assertNotIn("spatch could not parse", text)


    def test_an_unregister_wrapper_added_is_said_in_its_patch(self):
        added = [{"file": "kernel/die.c", "line": 19,
                  "wrapper": "unregister_die_notifier",
                  "register": "register_die_notifier", "chain": "die_chain",
                  "headers": ["include/linux/die.h"]}]
        text = split.message("kernel", "THE REST", ["kernel/die.c"], "",
                             [], "6.1", added=added)
        self.assertIn("Add unregister_die_notifier() beside "
                      "register_die_notifier(), which registers on die_chain",
                      " ".join(text.split()))


class BisectRecordTest(unittest.TestCase):
    """make bisect writes a record of its own (out/<kver>/bisect.json);
    the series quotes the record of its own patches, and no other."""
    REPORT = {"kernel": "6.1.192", "subsystem_patches": 1, "conversion": {},
              "locks_removed": [], "unregister_added": [],
              "patches": 2, "patch_ids": ["a", "b"], "applies": True,
              "b4_applies": True,
              "checkpatch": {"errors": 0, "warnings": 0, "checks": 0},
              "checkpatch_errors": 0, "typed_api_left": [],
              "compile_test": {"compiled": 1, "touched": 1,
                               "x86_compiled": 1, "x86_touched": 1,
                               "failed": [], "not_compiled": []},
              "boot_test": {"outcome": "pass"}, "bisect": {"patches": 2},
              "violations": {"found": 1, "fixed": 1, "waived": 0,
                             "open": 0, "items": []}}

    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="bisect-record-")
        self.addCleanup(shutil.rmtree, self.out)

    def quoted(self, record):
        """(summary, green) of the series with the bisect record of its
        patches that out/ holds."""
        os.makedirs(os.path.join(self.out, "6.1"), exist_ok=True)
        output.write_json(os.path.join(self.out, "6.1", "bisect.json"),
                          record)
        report = SeriesReport(**dict(self.REPORT, bisect=series.last_bisect(
            self.out, "6.1", self.REPORT["patch_ids"]) or {"patches": 2}))
        return " ".join(series.summary_lines(report)), series.green(report)

    def test_a_run_of_the_same_patches_is_quoted(self):
        said, green = self.quoted({
            "when": "2026-12-04 06:00 UTC", "patches": 2, "built": 1,
            "failures": [{"patch": 2}], "patch_ids": ["a", "b"]})
        self.assertFalse(green)
        self.assertIn("1/2 patches build, last run 2026-12-04 06:00 UTC",
                      said)
        self.assertNotIn("not run for this series", said)

    def test_a_run_of_other_patches_is_not(self):
        said, green = self.quoted({"when": "x", "patches": 2, "built": 1,
                                   "failures": [{"patch": 2}],
                                   "patch_ids": ["a", "c"]})
        self.assertTrue(green)
        self.assertIn("not run for this series", said)

    def test_patches_not_built_again_are_counted(self):
        said, _ = self.quoted({"when": "x", "patches": 2, "built": 2,
                               "failures": [], "unchanged": [2],
                               "patch_ids": ["a", "b"]})
        self.assertIn("2/2 patches build (1 built, the other 1 change no "
                      "file the build reads), last run x", said)


class RemovalTest(unittest.TestCase):
    def test_the_core_patch_compatibility_block_is_found_and_removed(self):
        for kver in ("6.1", "6.12"):
            folder = os.path.join(REPO, "core-patch", kver)
            core = next(p for p in sorted(os.listdir(folder))
                        if "struct-notifier_head" in p)
            with open(os.path.join(folder, core), encoding="utf-8") as f:
                added = "\n".join(line[1:] for line in f.read().splitlines()
                                  if line.startswith("+") and
                                  not line.startswith("+++"))
            with self.subTest(kver):
                new, count = series.COMPAT.subn("\n", "\n" + added)
                self.assertEqual(count, 1)
                self.assertNotIn("atomic_notifier_chain_register", new)
                self.assertIn("int notifier_chain_register(", new)
                self.assertFalse(re.search(r"#define\s+\w*notifier_head\s",
                                           new))


class GreenTest(unittest.TestCase):
    def test_an_open_violation_is_not_green(self):
        report = SeriesReport(**BisectRecordTest.REPORT)
        self.assertTrue(series.green(report))
        report.violations = dict(report.violations, open=1)
        self.assertFalse(series.green(report))
        self.assertIn("1 open", series.summary_lines(report)[0])

    def test_b4_messages_that_do_not_apply_are_not_green(self):
        report = SeriesReport(**dict(BisectRecordTest.REPORT,
                                     b4_applies=False))
        self.assertFalse(series.green(report))
        report.b4_applies = LATER       # not yet known
        self.assertIs(series.green(report), False)

    def test_a_path_awaiting_triage_is_not_green(self):
        report = SeriesReport(**BisectRecordTest.REPORT)
        report.violations = dict(report.violations, candidate=1)
        self.assertFalse(series.green(report))


class CoverLetterTest(unittest.TestCase):
    ITEM = {"site": "drivers/x.c:9", "function": "x_init", "chain": "x_chain",
            "rule": "write-in-atomic", "status": "fixed",
            "fixed_by": ["x: Register outside x_lock"],
            "why": "register in x_init(): under spin_lock_irqsave()"}

    def letter(self, violations):
        entries = [{"chain": "x_chain", "defined": "drivers/x.c",
                    "declared": "atomic", "class": "atomic"}]
        return cover.cover_letter("6.1", "6.1.192", entries, [], [],
                                   ["p1", "p2"], violations)

    def test_the_violations_and_their_fixes_are_listed(self):
        text = self.letter([self.ITEM])
        self.assertIn("found 1 sites that break", text)
        self.assertIn("drivers/x.c:9 in x_init(): [write-in-atomic] x_chain: "
                      "fixed by x: Register outside x_lock", text)
        self.assertIn("The 1 patches that fix them come before the core "
                      "patch", text)

    def test_the_2005_rule_checks_and_the_locks_removed(self):
        rules = {"redundant-lock": [
                     {"at": "x.c:3", "message": "x_lock guards nothing but "
                      "notifier chain operations"},
                     {"at": "z.c:4", "message": "z_lock guards nothing but "
                      "notifier chain operations, but runs the callouts "
                      "one at a time (line 9)"}],
                 "register-without-unregister": [
                     {"at": "w.c:2", "message": "register_w_notifier() "
                      "registers on w_chain", "unregistered": "v.c:7"}],
                 "hand-rolled-chain": [{"at": "y.c:5", "message": "y_list "
                                        "is a notifier chain written by "
                                        "hand"}]}
        locks = [{"file": "x.c", "line": 3, "lock": "x_lock",
                  "sections": [], "why": None}]
        entries = [{"chain": "x_chain", "defined": "drivers/x.c",
                    "declared": "atomic", "class": "excluded",
                    "reason": "made raw by a fix"}]
        text = cover.cover_letter("6.1", "6.1.192", entries, [], [], [],
                                   [], rules, locks)
        flat = " ".join(text.split())
        self.assertIn("found, on the pristine tree: 3/7, locks guarding "
                      "nothing but chain operations: 2; 4/7, exported "
                      "functions registering on a chain of their file that "
                      "nothing unregisters from, and modules that register "
                      "in init and not in exit: 0; 7/7, lists walked by "
                      "hand calling each entry's callback, as a notifier "
                      "chain does: 1,", flat)
        self.assertIn("The conversion removes 1 lock guarding", flat)
        # Neither the lock removed nor the finding not counted is left
        # for a maintainer.
        self.assertIn("- 7/7 hand-rolled-chain: y.c:5: y_list is a", text)
        self.assertIn("- 3/7 redundant-lock: z.c:4: z_lock", text)
        self.assertNotIn("x.c:3", text)
        self.assertNotIn("w.c:2", text)
        self.assertIn("x_chain (atomic)\n    made raw by a fix", text)
        empty = {name: [] for name in rules}
        flat = " ".join(cover.cover_letter(
            "6.1", "6.1.192", [], [], [], [], [], empty).split())
        self.assertNotIn("Left for their maintainers", flat)
        flat = " ".join(cover.cover_letter(
            "6.1", "6.1.192", [], [], [], [], [], None, locks).split())
        self.assertIn("have not run on this tree", flat)
        self.assertIn("The conversion removes 1 lock guarding", flat)

    def test_a_register_wrapper_completed_is_not_left(self):
        rules = {"redundant-lock": [], "hand-rolled-chain": [],
                 "register-without-unregister": [
                     {"at": "w.c:2", "message": "register_w_notifier() "
                      "registers on w_chain on line 5"},
                     {"at": "v.c:2", "message": "register_v_notifier() "
                      "registers on v_chain on line 5"}]}
        added = [{"file": "w.c", "line": 9, "wrapper": "unregister_w_notifier",
                  "register": "register_w_notifier", "chain": "w_chain",
                  "headers": []}]
        text = cover.cover_letter("6.1", "6.1.192", [], [], [], [], [],
                                   rules, (), added)
        flat = " ".join(text.split())
        self.assertIn("The conversion adds 1 unregister wrapper beside "
                      "register wrappers "
                      "that had none, each in its chain's patch, as 4/7 did: "
                      "unregister_w_notifier().", flat)
        self.assertIn("- 4/7 register-without-unregister: v.c:2:", text)
        self.assertNotIn("w.c:2", text)

    def test_no_violation(self):
        text = self.letter([])
        self.assertIn("no site that breaks the context rule", text)
        self.assertNotIn("patches that fix them", text)


COMPAT_BLOCK = """
/*
 * The typed atomic and blocking API of before struct notifier_head.
 */
#define atomic_notifier_call_chain_is_empty(nh) 0
"""


class CommitGroupsTest(unittest.TestCase):
    """The subsystem commits are made on a scratch index: the checkout
    ends on the series with the files it already had left alone."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        notifier_h = "int notifier_chain_register(void);\n" + COMPAT_BLOCK
        files = {"include/linux/notifier.h": notifier_h,
                 "a/a.c": "int a;\n", "b/b.c": "int b;\n",
                 "c/c.c": "int c;\n"}
        self.kernel = tree.prepare("9.9", os.path.join(self.tmp, "work"),
                                   make_tarball(self.tmp, extra=files))
        self.git = self.kernel.path
        self.core = fake_git(self.git, "rev-parse", "pristine").strip()
        fake_git(self.git, "checkout", "-q", "-b", "notifier-series/convert")
        for name in ("a/a.c", "b/b.c"):
            with open(os.path.join(self.git, name), "a") as f:
                f.write("int converted;\n")
        fake_git(self.git, *IDENT, "commit", "-q", "-a", "-m", "convert")
        self.converted = fake_git(self.git, "rev-parse", "HEAD").strip()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_commits_add_up_and_the_checkout_keeps_its_files(self):
        from unittest import mock
        # Whatever the user's configuration, and an author who is not
        # the committer.
        config = os.path.join(self.tmp, "gitconfig")
        for key, value in (("trailer.ifmissing", "doNothing"),
                           ("trailer.where", "start"),
                           ("commit.cleanup", "verbatim")):
            fake_git(self.tmp, "config", "-f", config, key, value)
        idents = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org",
                  "GIT_COMMITTER_NAME": "C",
                  "GIT_COMMITTER_EMAIL": "c@example.org",
                  "GIT_CONFIG_GLOBAL": config}
        with mock.patch.dict(os.environ, idents):
            self.check_commits()

    def check_commits(self):
        from unittest import mock
        text = ("a: Convert\n\n# not a comment in a patch  \nBody, "
                "Jos\u00e9's.\n\n---\nBelow a divider.\n\n\n")
        before = {n: os.stat(os.path.join(self.git, n)).st_mtime_ns
                  for n in ("a/a.c", "b/b.c", "c/c.c")}
        stage = os.path.join(self.tmp, "stage")
        os.makedirs(stage)
        real = split.message
        split.message = lambda *args: text
        try:
            series._commit_groups(self.git, self.core, self.converted,
                                  [("A", ["a/a.c"]), ("B", ["b/b.c"])], [],
                                  [], {}, [], [], "9.9")
        finally:
            split.message = real
        log = fake_git(self.git, "log", "--format=%s", "pristine..HEAD")
        self.assertEqual(log.splitlines(), [series.REMOVAL_SUBJECT,
                                            "a: Convert", "a: Convert"])
        self.assertEqual(fake_git(self.git, "rev-parse",
                                  "--abbrev-ref", "HEAD").strip(),
                         series.BRANCH)
        self.assertEqual(fake_git(self.git, "diff", "--name-only",
                                  self.converted, "HEAD").split(),
                         ["include/linux/notifier.h"])
        self.assertNotIn("atomic_notifier", fake_git(
            self.git, "show", "HEAD:include/linux/notifier.h"))
        self.assertEqual(fake_git(self.git, "status", "--porcelain",
                                  "--untracked-files=no"), "")
        self.assertEqual(os.listdir(stage), [])
        # Each commit touches its group's files only.
        self.assertEqual(fake_git(self.git, "diff", "--name-only",
                                  "HEAD~3", "HEAD~2").split(), ["a/a.c"])
        # The message is the one git commit -s -F writes.
        with open(os.path.join(stage, "m"), "w") as f:
            f.write(text)
        # git commit -s as it is without configuration.
        with mock.patch.dict(os.environ, series.PLAIN_GIT):
            fake_git(self.git, "commit", "-q", "--allow-empty", "-s", "-F",
                     os.path.join(stage, "m"))
        self.assertNotIn("split-scratch", fake_git(self.git, "for-each-ref"))
        for what in ("%B", "%an <%ae>", "%cn <%ce>"):
            self.assertEqual(fake_git(self.git, "log", "-1",
                                      f"--format={what}", "HEAD~3"),
                             fake_git(self.git, "log", "-1",
                                      f"--format={what}"))
        for name, mtime in before.items():
            with self.subTest(name):
                self.assertEqual(os.stat(os.path.join(
                    self.git, name)).st_mtime_ns, mtime)


class ArchiveTest(unittest.TestCase):
    """The published series of another revision moves to
    out/<kver>/revisions/vN/, and one of another series (its change-id)
    to revisions/<change-id>/vN/, whatever made the revision new."""

    def setUp(self):
        self.out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.out)
        self.folder = os.path.join(self.out, "6.1", "series")

    def publish(self, report):
        os.makedirs(self.folder, exist_ok=True)
        output.write_json(os.path.join(self.folder, "report.json"), report)

    def test_kept_by_revision_and_series(self):
        from notifier_series.mail import Revision
        self.publish({"revision": 2, "change_id": "a"})
        series.archive(self.out, "6.1", Revision(2, "a", {}))
        self.assertTrue(os.path.isdir(self.folder))
        series.archive(self.out, "6.1", Revision(3, "a", {}))
        self.assertFalse(os.path.exists(self.folder))
        self.assertEqual(output.read_json(os.path.join(
            series.revision_folder(self.out, "6.1", 2), "report.json")),
            {"revision": 2, "change_id": "a"})
        self.publish({"revision": 3, "change_id": "a"})
        series.archive(self.out, "6.1", Revision(1, "b", {}))
        self.assertTrue(os.path.isdir(os.path.join(
            self.out, "6.1", "revisions", "a", "v3")))
        self.assertTrue(os.path.isdir(series.revision_folder(
            self.out, "6.1", 2)))
        self.publish({})            # a report of before the revisions
        series.archive(self.out, "6.1", Revision(3, "a", {}))
        self.assertTrue(os.path.isdir(self.folder))
        self.publish({"revision": 1})   # of before the change-ids
        series.archive(self.out, "6.1", Revision(2, "a", {}))
        self.assertTrue(os.path.isdir(series.revision_folder(
            self.out, "6.1", 1)))


class AppliesTest(unittest.TestCase):
    """The check that the patches give the series' tree is kept for the
    same diffs and trees: headers git apply does not read change
    nothing, a diff does."""

    def test_kept_for_the_same_diffs_only(self):
        from unittest import mock
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        kernel = tree.prepare("9.9", os.path.join(tmp, "work"),
                              make_tarball(tmp, extra={"a.c": "int a;\n"}))
        git = kernel.path
        fake_git(git, "checkout", "-q", "-b", series.BRANCH)
        with open(os.path.join(git, "a.c"), "a") as f:
            f.write("int b;\n")
        fake_git(git, *IDENT, "commit", "-q", "-a", "-m", "a: b")
        fake_git(git, "format-patch", "-q", "-o", tmp, "pristine")
        patch = os.path.join(tmp, "0001-a-b.patch")
        cache = os.path.join(tmp, "cache")
        calls = []
        real = series.scratch_apply

        def counted(*args):
            calls.append(1)
            return real(*args)
        with mock.patch.object(series, "scratch_apply", counted):
            self.assertEqual(series.applies(git, [patch], cache), (True, ""))
            with open(patch) as f:
                text = f.read()
            with open(patch, "w") as f:
                f.write(text.replace("Subject:", "X-Other: 1\nSubject:"))
            self.assertEqual(series.applies(git, [patch], cache), (True, ""))
            self.assertEqual(len(calls), 1)
            with open(patch, "w") as f:
                f.write(text.replace("+int b;", "+int c;"))
            self.assertFalse(series.applies(git, [patch], cache)[0])
            self.assertFalse(series.applies(git, [patch], cache)[0])
            self.assertEqual(len(calls), 3)


if __name__ == "__main__":
    unittest.main()
