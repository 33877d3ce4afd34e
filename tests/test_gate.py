"""The violation gate on the evidence fixture: a violation that a fix
removes is fixed (by the patch that changes its file), one with a waiver
is waived, the others are open; a waiver that matches nothing is a
problem; and the evidence cache never answers for changed inputs."""

import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from tests import needs_spatch, tools_path  # noqa: F401
from tests.test_classify import USERS, fixture_tree
from notifier_series import chains, classification, classify, evidence, gate

YAML = """\
kernel: demo
chains:
- chain: demo_atomic_chain
  defined: drivers/demo/core.c
  declared: atomic
  class: atomic
  reason: called under a lock
  waivers:
  - rule: atomic-callout-sleeps
    file: drivers/demo/users.c
    function: alloc_call
    reason: 'false: only registered by a test that never calls the chain'
- chain: demo_blocking_chain
  defined: drivers/demo/core.c
  declared: blocking
  class: blocking
  reason: sleeps
  waivers:
  - rule: register-in-callout
    file: drivers/demo/users.c
    function: no_such_function
    reason: 'false: a waiver of nothing'
- chain: demo_quiet_chain
  defined: drivers/demo/core.c
  declared: atomic
  class: excluded
  reason: 'left alone: its head still becomes a struct notifier_head, so
    its write under demo_lock is open until a fix makes the chain raw'
"""


def git(path, *args):
    return subprocess.run(["git", "-C", path, "-c", "user.name=T", "-c",
                           "user.email=t@example.org", *args], check=True,
                          capture_output=True, text=True).stdout


@needs_spatch
class GateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.root = fixture_tree(os.path.join(cls.tmp, "tree"))
        cls.cache = os.path.join(cls.tmp, "cache")
        cls.before = cls.collect()
        # The fix: unregister outside the spinlock.
        users = os.path.join(cls.root, USERS)
        with open(users) as f:
            text = f.read()
        text = text.replace(
            "\tspin_lock_irqsave(&users_lock, flags);\n"
            "\tatomic_notifier_chain_unregister(&demo_atomic_chain, "
            "&alloc_nb);\n",
            "\tatomic_notifier_chain_unregister(&demo_atomic_chain, "
            "&alloc_nb);\n\tspin_lock_irqsave(&users_lock, flags);\n")
        with open(users, "w") as f:
            f.write(text)
        git(cls.root, "commit", "-q", "-a", "-m", "demo: Unregister outside "
            "users_lock")
        cls.fix = os.path.join(cls.tmp, "0001-demo.patch")
        with open(cls.fix, "w") as f:
            f.write(git(cls.root, "format-patch", "--stdout", "HEAD~1"))
        cls.after = cls.collect()
        _, cls.entries = classification.load("demo.yaml", YAML)

    @classmethod
    def collect(cls):
        found = evidence.collect(cls.root, 2, lambda records: chains.followed(
            chains.Model(records, cls.root)), cls.cache)
        return chains.Model(found.records, cls.root)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def judge(self, seen_after=None):
        return gate.judge(classify.violations_of(self.before, self.entries),
                          classify.violations_of(self.after, self.entries),
                          self.entries, [self.fix],
                          seen_after or classify.site_seen(self.after, []))

    def test_statuses(self):
        items, _ = self.judge()
        status = {(v["rule"], v["function"]): v["status"] for v in items}
        self.assertEqual(status, {
            ("write-in-atomic", "users_init"): "fixed",
            ("write-in-atomic", "demo_register_early"): "open",
            ("atomic-callout-sleeps", "alloc_call"): "waived",
            ("unregister-in-callout", "selfish_call"): "open",
            ("register-in-callout", "again_call"): "open",
            ("blocking-called-atomic", "demo_probe"): "open"})
        fixed = next(v for v in items if v["status"] == "fixed")
        self.assertEqual(fixed["fixed_by"],
                         ["demo: Unregister outside users_lock"])
        waived = next(v for v in items if v["status"] == "waived")
        self.assertEqual(waived["waiver"]["line"], 9)
        self.assertEqual({k: v for k, v in gate.summary(items).items()
                          if k != "items"},
                         {"found": 6, "fixed": 1, "waived": 1, "candidate": 0,
                          "open": 4})

    def test_a_waiver_of_a_real_bug_is_only_for_one_the_kernel_has(self):
        # An atomic chain's sleeping callout sleeps under rcu_read_lock()
        # in the unmodified kernel too: a real bug may be waived.  Its
        # writer under a spinlock took a spinlock there, and takes the
        # rwsem with the series: the series makes that bug, and without
        # the fix only a fix will do.
        yaml_text = YAML.replace(
            "    reason: 'false: only registered by a test that never calls "
            "the chain'\n",
            "    reason: 'real: sleeps under rcu_read_lock() already'\n"
            "  - rule: write-in-atomic\n    file: drivers/demo/users.c\n"
            "    function: users_init\n"
            "    reason: 'real: registers under users_lock'\n")
        _, entries = classification.load("demo.yaml", yaml_text)
        items, _ = gate.judge(classify.violations_of(self.before, entries),
                              classify.violations_of(self.before, entries),
                              entries, [], lambda v: True)
        status = {(v["rule"], v["function"]): v for v in items}
        self.assertEqual(
            status[("atomic-callout-sleeps", "alloc_call")]["status"],
            "waived")
        made = status[("write-in-atomic", "users_init")]
        self.assertEqual(made["status"], "open")
        self.assertIn("declared atomic", made["made_by_series"])
        self.assertIn("OPEN (waived as real", "\n".join(gate.lines([made])))

    def test_a_waiver_opens_with_its_verdict(self):
        with self.assertRaises(classification.Error) as e:
            classification.load("demo.yaml", YAML.replace(
                "'false: a waiver of nothing'", "nothing to see"))
        self.assertIn('demo.yaml:19: waiver: the reason must open with its '
                      'verdict, "false:" or "real"', str(e.exception))

    def test_unused_waiver(self):
        _, unused = self.judge()
        self.assertEqual([(e["chain"], w["function"], w.line, item)
                          for e, w, item in unused],
                         [("demo_blocking_chain", "no_such_function", 19,
                           None)])

    def test_without_the_fix_nothing_is_fixed(self):
        found = classify.violations_of(self.before, self.entries)
        items, _ = gate.judge(found, found, self.entries, [self.fix],
                              classify.site_seen(self.before, []))
        self.assertNotIn("fixed", {v["status"] for v in items})
        self.assertIn("OPEN", "\n".join(gate.lines(items)))

    def test_a_site_the_fixed_analysis_lost_is_not_fixed(self):
        """A fix that spatch could not parse, or that moved the call away,
        proves nothing: the violation stays open."""
        items, _ = self.judge(lambda v: False)
        lost = next(v for v in items if v["function"] == "users_init")
        self.assertEqual(lost["status"], "open")
        self.assertIn("no longer sees", lost["unverified"])
        blind = classify.site_seen(self.after, [
            f"spatch exited 1 on {USERS}..{USERS}"])
        items, _ = self.judge(blind)
        self.assertEqual(next(v for v in items if v["function"] ==
                              "users_init")["status"], "open")

    def test_a_violation_the_fixes_bring_is_open(self):
        found = classify.violations_of(self.before, self.entries)
        items, _ = gate.judge(found[1:], found, self.entries, [self.fix],
                              classify.site_seen(self.after, []))
        self.assertTrue(any(v.get("introduced") for v in items))

    def test_no_core_patches_no_fixes(self):
        self.assertEqual(gate.fix_patches("9.99"), [])

    def test_fixes_come_before_the_first_change_of_notifier_h(self):
        fixes = gate.fix_patches("6.12")
        self.assertEqual([os.path.basename(p)[:4] for p in fixes],
                         ["0001", "0002", "0003", "0004", "0005", "0006",
                          "0007", "0008"])

    def test_a_waiver_must_name_a_known_rule_and_a_reason(self):
        bad = YAML.replace("rule: atomic-callout-sleeps", "rule: nap") \
                  .replace("reason: 'false: a waiver of nothing'", "reason: ''")
        with self.assertRaises(classification.Error) as e:
            classification.load("demo.yaml", bad)
        self.assertIn("demo.yaml:9: waiver: unknown rule 'nap'",
                      str(e.exception))
        self.assertIn("demo.yaml:22: reason must be a non-empty string",
                      str(e.exception))

    def test_only_a_path_from_atomic_context_names_a_root(self):
        bad = YAML.replace("    function: alloc_call\n",
                           "    function: alloc_call\n    root: r\n")
        with self.assertRaises(classification.Error) as e:
            classification.load("demo.yaml", bad)
        self.assertIn("demo.yaml:9: waiver: only the waiver of a path from "
                      "atomic context (write-in-atomic, "
                      "blocking-called-atomic) names a root",
                      str(e.exception))
        with self.assertRaises(classification.Error) as e:
            classification.load("demo.yaml", bad.replace("root:",
                                                         "callout:"))
        self.assertIn("demo.yaml:12: unknown waiver field 'callout'",
                      str(e.exception))
        good = bad.replace("rule: atomic-callout-sleeps",
                           "rule: blocking-called-atomic")
        _, entries = classification.load("demo.yaml", good)
        self.assertEqual(entries[0]["waivers"][0]["root"], "r")
        text = classification.dump("demo", entries, "header")
        self.assertIn("    root: r\n", text)

    def test_waivers_survive_a_dump(self):
        text = classification.dump("demo", self.entries, "header")
        _, again = classification.load("again.yaml", text)
        self.assertEqual([e.get("waivers") for e in again],
                         [e.get("waivers") for e in self.entries])


@needs_spatch
class CacheTest(unittest.TestCase):
    """Each input of a chunk's key changes the key."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.root = fixture_tree(os.path.join(self.tmp, "tree"))
        self.env = {"NOTIFIER_WRAPPERS": "a,b"}

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def key(self, files=(USERS,), env=None, flags=()):
        cache = evidence.Cache(os.path.join(self.tmp, "c"), self.root,
                               evidence.spatch_env())
        return cache.key(list(files), env or self.env, flags)

    def commit(self, path, text):
        with open(os.path.join(self.root, path), "a") as f:
            f.write(text)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "change")

    def test_each_input_changes_the_key(self):
        first = self.key()
        self.assertEqual(self.key(), first)
        self.assertNotEqual(self.key(env={"NOTIFIER_WRAPPERS": "a"}), first)
        self.assertNotEqual(self.key(flags=("--all-includes",)), first)
        self.commit(USERS, "/* the file */\n")
        second = self.key()
        self.assertNotEqual(second, first)
        self.commit("include/demo/demo.h", "/* a header */\n")
        third = self.key()
        self.assertNotEqual(third, second)
        self.commit("drivers/demo/core.c", "/* another .c file */\n")
        self.assertEqual(self.key(), third)

    def test_an_included_c_file_changes_the_key(self):
        self.commit(USERS, '#include "part.c"\n')
        self.commit("drivers/demo/part.c", "/* one */\n")
        first = self.key()
        self.commit("drivers/demo/part.c", "/* two */\n")
        self.assertNotEqual(self.key(), first)

    def test_the_semantic_patch_changes_the_key(self):
        first = self.key()
        smpl = os.path.join(self.tmp, "other.cocci")
        shutil.copy(evidence.SMPL, smpl)
        with open(smpl, "a") as f:
            f.write("// changed\n")
        old, evidence.SMPL = evidence.SMPL, smpl
        try:
            self.assertNotEqual(self.key(), first)
        finally:
            evidence.SMPL = old

    def test_a_second_run_reads_the_cache(self):
        def followed(records):
            return chains.followed(chains.Model(records, self.root))
        folder = os.path.join(self.tmp, "c")
        first = evidence.collect(self.root, 2, followed, folder)

        def no_spatch(*args):
            raise AssertionError("spatch ran again")
        old, evidence._spatch = evidence._spatch, no_spatch
        try:
            second = evidence.collect(self.root, 2, followed, folder)
        finally:
            evidence._spatch = old
        self.assertEqual(second.records, first.records)

    def test_code_spatch_could_not_parse_is_said_and_kept(self):
        # A function spatch cannot parse is skipped, silently under
        # --very-quiet: its sites are missing from the evidence.
        # The code spatch quotes in its messages ("bad:") is no problem of
        # the run, even where it says error or timeout.
        self.commit(USERS, "\nint demo_broken(void)\n{\n\t/* an error, "
                    "a timeout */\n\tfoo(;\n}\n")

        def followed(records):
            return chains.followed(chains.Model(records, self.root))
        folder = os.path.join(self.tmp, "c")
        first = evidence.collect(self.root, 1, followed, folder)
        self.assertEqual(first.unparsed, [USERS])
        self.assertEqual(first.problems, [])

        def no_spatch(*args):
            raise AssertionError("spatch ran again")
        with mock.patch.object(evidence, "_spatch", no_spatch):
            again = evidence.collect(self.root, 1, followed, folder)
        self.assertEqual(again.unparsed, [USERS])

    def test_what_spatch_says_of_its_files_is_no_problem(self):
        # 6.1's make classify: a chunk with lib/error-inject.c in it.
        for line in ("Note: processing took    15.1s: lib/crc64-rocksoft.c "
                     "lib/error-inject.c",
                     "HANDLING: arch/powerpc/platforms/powernv/"
                     "opal-memory-errors.c", "bad: \tbool error_seen;"):
            self.assertTrue(evidence.DIAGNOSTIC.match(line), line)
        self.assertFalse(evidence.DIAGNOSTIC.match(
            "Fatal error: exception Coccinelle_modules.Common.Timeout"))

    def test_a_semantic_error_is_code_spatch_did_not_see(self):
        self.assertEqual(evidence.unparsed(
            "semantic error seems this is not a function\n"
            " =error in drivers/char/random.c; set verbose_parsing for "
            "more info\nparse error \n = error in kernel/a.c; set "
            "verbose_parsing for more info\n = error in "
            "/usr/lib/coccinelle/standard.h; x\n"),
            ["drivers/char/random.c", "kernel/a.c"])

    def test_a_modified_checkout_is_not_cached(self):
        with open(os.path.join(self.root, USERS), "a") as f:
            f.write("/* not committed */\n")
        self.assertIsNone(self.key())

    def test_an_untracked_file_is_not_cached(self):
        with open(os.path.join(self.root, "drivers/demo/new.h"), "w") as f:
            f.write("/* not tracked */\n")
        self.assertIsNone(self.key())

    def test_a_chunk_with_problems_is_not_stored(self):
        folder = os.path.join(self.tmp, "c")

        def failing(*args):
            return [], ["spatch exited 137 on a..b"], []
        old, evidence._spatch = evidence._spatch, failing
        try:
            evidence.run(self.root, [USERS], 1, "test",
                         cache=evidence.Cache(folder, self.root,
                                              evidence.spatch_env()))
        finally:
            evidence._spatch = old
        self.assertFalse(os.path.isdir(folder) and os.listdir(folder))



class JudgementTest(unittest.TestCase):
    """classify.judged(): the gate's last judgement answers only for the
    same inputs, so that series does not analyse both trees again after
    classify, and never answers for a changed classification."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.yaml = os.path.join(self.tmp, "linux-demo.yaml")
        with open(self.yaml, "w", encoding="utf-8") as f:
            f.write(YAML)
        kernel_tree = type("T", (), {"path": os.path.join(self.tmp,
                                                          "linux-demo")})
        self.judgements = 0
        patches = [mock.patch.object(classify.tree, "prepare",
                                     lambda kver, work: kernel_tree),
                   mock.patch.object(classify.tree, "git",
                                     lambda *a, **k: "0" * 40),
                   mock.patch.object(classification, "yaml_path",
                                     lambda kver: self.yaml),
                   mock.patch.object(classify.gate, "fix_patches",
                                     lambda kver: []),
                   mock.patch.object(classify.evidence, "spatch_version",
                                     lambda env: "spatch 1.1.1"),
                   mock.patch.object(classify, "violation_gate",
                                     self.violation_gate)]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)

    def violation_gate(self, kver, work, jobs, model, entries):
        self.judgements += 1
        return [{"rule": "conflict", "status": "candidate", "model": model}
                ], [f"problem {self.judgements}"]

    def judge(self):
        return classify.judged("demo", None, 1, [], lambda: "model")

    def test_the_same_inputs_are_judged_once(self):
        first = self.judge()
        self.assertEqual(self.judge(), first)
        self.assertEqual(self.judgements, 1)

    def edit(self, old, new):
        with open(self.yaml, encoding="utf-8") as f:
            text = f.read()
        with open(self.yaml, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))

    def test_a_changed_classification_is_judged_again(self):
        self.judge()
        self.edit("function: alloc_call", "function: alloc_call2")
        self.assertEqual(self.judge()[1], ["problem 2"])
        self.assertEqual(self.judgements, 2)

    def test_a_reworded_chain_reason_is_not_judged_again(self):
        self.judge()
        self.edit("reason: called under a lock",
                  "reason: called under a spinlock")
        self.assertEqual(self.judge()[1], ["problem 1"])
        self.assertEqual(self.judgements, 1)

    def test_a_new_depth_is_judged_again(self):
        self.judge()
        classify.judged("demo", None, 1, [], lambda: "model", depth=3)
        self.assertEqual(self.judgements, 2)


if __name__ == "__main__":
    unittest.main()
