"""Classification on a fixture tree with known answers
(tests/fixtures/evidence): every evidence rule and rule check."""

import os
import shutil
import subprocess
import tempfile
import unittest
import unittest.mock

from tests import needs_spatch, tools_path  # noqa: F401
from notifier_series import (chains, classification, classify, evidence,
                             gate)

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "evidence")
CORE, USERS = "drivers/demo/core.c", "drivers/demo/users.c"


def fixture_tree(folder, fixture=FIXTURE):
    """A fixture as a git repository, as evidence.collect needs."""
    shutil.copytree(fixture, folder)
    for cmd in (["init", "-q"], ["add", "-A"],
                ["-c", "user.name=T", "-c", "user.email=t@example.org",
                 "commit", "-q", "-m", "fixture"]):
        subprocess.run(["git", "-C", folder] + cmd, check=True)
    return folder


@needs_spatch
class EvidenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        root = fixture_tree(os.path.join(cls.tmp, "tree"))
        found = evidence.collect(root, 2, lambda records: chains.followed(
            chains.Model(records, root)))
        cls.found = found
        cls.tree = chains.Model(found.records, root)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def chain(self, cid, defined=CORE):
        return self.tree.chains[(cid, defined)]

    def test_inventory(self):
        self.assertEqual(
            {(c.id, c.defined, c.kind, c.form)
             for c in self.tree.chains.values()},
            {("demo_atomic_chain", CORE, "atomic", "macro"),
             ("demo_blocking_chain", CORE, "blocking", "macro"),
             ("demo_misdeclared_chain", CORE, "blocking", "macro"),
             ("demo_quiet_chain", CORE, "atomic", "macro"),
             ("demo_context_chain", CORE, "atomic", "macro"),
             ("demo_raw_chain", CORE, "raw", "macro"),
             ("demo_runtime_chain", CORE, "blocking", "variable"),
             ("demo_anon.chain", CORE, "atomic", "anonymous"),
             ("demo_bare_chain", CORE, "bare", "bare"),
             ("struct demo_dev.nh", "include/demo/demo.h", "blocking",
              "member")})
        # The API's own list of the head it is given is no chain's use,
        # whatever member of a structure has the same name.
        self.assertEqual([(s["file"], s["line"], s["why"]) for s in
                          self.tree.unresolved],
                         [("kernel/notifier.c", 13, "the list of a struct "
                           "blocking_notifier_head the function is given: "
                           "the chain API itself")])
        self.assertTrue(self.chain("demo_quiet_chain").static)
        self.assertFalse(self.chain("demo_atomic_chain").static)
        self.assertEqual(self.chain("demo_atomic_chain").declarations,
                         ["include/demo/demo.h:5"])

    def test_contexts(self):
        irq = [s for s in self.chain("demo_atomic_chain").sites
               if s["fn"] == "demo_irq"][0]
        self.assertEqual([c for c, _ in irq["context"]], ["hardirq"])
        self.assertIn("request_irq", irq["context"][0][1])
        locked = self.chain("demo_misdeclared_chain").sites[0]
        self.assertEqual(locked["context"][0][0], "atomic")
        self.assertIn("spin_lock_irqsave", locked["context"][0][1])
        plain = self.chain("demo_quiet_chain").sites[0]
        self.assertEqual(plain["context"], [])

    def test_every_kind_of_context(self):
        seen = {s["args"].split(",")[0].strip(): s["context"]
                for s in self.chain("demo_context_chain").sites}
        expected = {"1": ("softirq", "given to timer_setup()"),
                    "2": ("softirq", "given to tasklet_setup()"),
                    "3": ("process", "sleeps: msleep"),
                    "4": ("atomic", "under rcu_read_lock()"),
                    "5": ("atomic", "under preempt_disable()"),
                    "6": ("atomic", "under local_irq_disable()")}
        self.assertEqual(set(seen), set(expected))
        for event, (kind, why) in expected.items():
            with self.subTest(event=event):
                self.assertEqual({c for c, _ in seen[event]}, {kind})
                self.assertTrue(any(why in w for _, w in seen[event]),
                                seen[event])

    def test_callouts_through_wrappers_and_members(self):
        self.assertEqual(
            {c["function"] for c in
             self.chain("demo_blocking_chain").callouts.values()},
            {"sleepy_call", "selfish_call", "again_call"})
        self.assertEqual(
            [c["function"] for c in self.chain(
                "struct demo_dev.nh", "include/demo/demo.h")
             .callouts.values()], ["member_call"])
        sleepy = [c for c in self.chain("demo_blocking_chain")
                  .callouts.values() if c["function"] == "sleepy_call"][0]
        self.assertRegex(sleepy["sleeps"][0], r"^mutex_lock at " + USERS)

    def test_proposals(self):
        proposed = {c.id: chains.propose(c)[0]
                    for c in self.tree.chains.values()}
        self.assertEqual(proposed, {
            "demo_atomic_chain": "conflict",       # hardirq + GFP_KERNEL
            "demo_blocking_chain": "blocking",
            "demo_misdeclared_chain": "atomic",
            "demo_quiet_chain": "unknown",
            "demo_context_chain": "atomic",
            "demo_raw_chain": "excluded",
            "demo_runtime_chain": "unknown",
            "demo_anon.chain": "unknown",
            "demo_bare_chain": "unknown",
            "struct demo_dev.nh": "unknown"})

    def test_rule_checks(self):
        found = set()
        for c in self.tree.chains.values():
            if c.kind in ("atomic", "blocking"):
                for v in chains.violations(c, c.kind):
                    found.add((v["rule"], v["chain"],
                               v["site"].split(":")[0]))
        self.assertEqual(found, {
            ("write-in-atomic", "demo_atomic_chain", USERS),
            # Through the head's list, cast to a raw head's.
            ("write-in-atomic", "demo_quiet_chain", CORE),
            ("unregister-in-callout", "demo_blocking_chain", USERS),
            ("register-in-callout", "demo_blocking_chain", USERS),
            ("blocking-called-atomic", "demo_misdeclared_chain", CORE),
            ("atomic-callout-sleeps", "demo_atomic_chain", USERS)})

    def test_a_file_spatch_parsed_in_part_is_named_for_its_chains(self):
        folder = tempfile.mkdtemp(dir=self.tmp)
        with open(os.path.join(folder, "x.c"), "w") as f:
            f.write("int demo_broken(void)\n{\n\tdemo_quiet_chain(;\n}\n")
        with open(os.path.join(folder, "y.c"), "w") as f:
            # Names are whole words: demo_context_chain is not named.
            f.write("struct other { struct notifier_head nh; };\n"
                    "int demo_context_chain2, xdemo_context_chain;\n"
                    "int g(void) { return xdemo_register_notifier(0) + "
                    "demo_register_notifier_2(0); }\n"
                    "/* demo_register_notifier, named but not called */\n")
        named, other = (self.chain("demo_quiet_chain"),
                        self.chain("demo_context_chain"))
        member = self.chain("struct demo_dev.nh", "include/demo/demo.h")
        searched = {"call_sites": 0, "write_sites": 0, "callouts": 0,
                    "depth": 3, "not_in_graph": []}
        try:
            for chain in (named, other, member):
                chain.searched = dict(searched)
            classify.mark_unparsed(self.tree, folder, ["x.c", "y.c"])
            # A member chain by its structure's name too.
            self.assertEqual((named.searched["unparsed"],
                              other.searched["unparsed"],
                              member.searched["unparsed"]),
                             (["x.c"], [], []))
            self.assertIn("parsed only in part by spatch, where sites may "
                          "be missing: x.c", classify._searched(
                              named.searched))
            # Or by a wrapper of the chain that the evidence followed.
            with open(os.path.join(folder, "z.c"), "w") as f:
                f.write("int f(void)\n{\n\treturn "
                        "demo_register_notifier\t(&nb);\n}\n")
            blocking = self.chain("demo_blocking_chain")
            blocking.searched = dict(searched)
            classify.mark_unparsed(self.tree, folder, ["z.c"])
            self.assertEqual(blocking.searched["unparsed"], [])
            classify.mark_unparsed(self.tree, folder, ["y.c", "z.c"],
                                   self.found.wrappers)
            self.assertEqual(blocking.searched["unparsed"], ["z.c"])
            blocking.searched = {}
        finally:
            named.searched = other.searched = member.searched = {}

    def test_audit_of_a_draft(self):
        drafts = {k: classify.draft_entry(c)
                  for k, c in self.tree.chains.items()}
        entries, changes = classification.carry([], self.tree.chains,
                                                drafts)
        self.assertEqual(len(changes["appeared"]), 10)
        _, entries = classification.load(
            "d.yaml", classification.dump("demo", entries, "draft"))
        facts = {"kernel": "demo", "package": "fixture",
                 "files": self.found.files, "wrappers": 2,
                 "evidence_seconds": 0, "not_followed": {},
                 "spatch_problems": [], "spatch_unparsed": []}
        found = classify.violations_of(self.tree, entries)
        items, unused = gate.judge(found, found, entries, [],
                                   lambda v: False)
        self.assertEqual(unused, [])
        report = classify.audit(self.tree, entries, facts, [], items)
        self.assertEqual(report["chains"], 10)
        self.assertEqual(report["agreement"],
                         {"agree": 2, "disagree": 2, "no_evidence": 5})
        self.assertEqual(report["classification"]["drafts"], 10)
        self.assertEqual(
            sorted(d["chain"] for d in report["disagreements"]),
            ["demo_atomic_chain", "demo_misdeclared_chain"])
        # Classified atomic, demo_misdeclared_chain may be called under a
        # lock: of the six violations of test_rule_checks, five remain.
        self.assertEqual(sorted(v["rule"] for v in report["violations"]),
                         ["atomic-callout-sleeps", "register-in-callout",
                          "unregister-in-callout", "write-in-atomic",
                          "write-in-atomic"])
        text = classify.audit_text(report)
        self.assertIn("10 chains, 4 atomic, 1 bare, 4 blocking, 1 raw",
                      text)
        self.assertIn("[unregister-in-callout] demo_blocking_chain", text)



class EvidenceStampTest(unittest.TestCase):
    """out/<kver>/evidence.json is reused only while what made it is the
    same: a change to the collector's code (chains.py picks the wrappers
    followed) must make it stale."""

    def test_a_change_to_chains_py_makes_the_record_stale(self):
        with tempfile.TemporaryDirectory() as folder:
            source = fixture_tree(os.path.join(folder, "tree"))
            before = classify.evidence_stamp(source)
            real = classify.tree.sha256

            def changed(path):
                return "other" if path == chains.__file__ else real(path)

            with unittest.mock.patch.object(classify.tree, "sha256",
                                            changed):
                self.assertNotEqual(classify.evidence_stamp(source), before)



class EvidenceKeptTest(unittest.TestCase):
    """The whole evidence of a checkout is kept under its tree object and
    the toolkit's code; a checkout with local changes is not kept."""

    def test_each_input_of_the_key(self):
        if not shutil.which("spatch"):
            self.skipTest("spatch is not installed (make deps)")
        with tempfile.TemporaryDirectory() as folder:
            source = fixture_tree(os.path.join(folder, "tree"))
            base = classify.evidence_key(source)
            self.assertEqual(classify.evidence_key(source), base)
            with open(os.path.join(source, CORE), "a") as f:
                f.write("/* changed */\n")
            self.assertIsNone(classify.evidence_key(source))
            subprocess.run(["git", "-C", source, "-c", "user.name=T", "-c",
                            "user.email=t@example.org", "commit", "-qam",
                            "changed"], check=True)
            changed = classify.evidence_key(source)
            self.assertNotIn(changed, (None, base))
            with open(os.path.join(source, ".gitignore"), "w") as f:
                f.write(".config\n")
            subprocess.run(["git", "-C", source, "-c", "user.name=T", "-c",
                            "user.email=t@example.org", "add", "-A"],
                           check=True)
            subprocess.run(["git", "-C", source, "-c", "user.name=T", "-c",
                            "user.email=t@example.org", "commit", "-qm",
                            "ignore"], check=True)
            changed = classify.evidence_key(source)
            for name in ("new.c", ".config"):      # untracked, ignored
                with open(os.path.join(source, name), "w") as f:
                    f.write("int x;\n")
                self.assertIsNone(classify.evidence_key(source), name)
                os.unlink(os.path.join(source, name))
            real = classify.tree.sha256
            for code in (evidence.SMPL, evidence.__file__, chains.__file__):
                with unittest.mock.patch.object(
                        classify.tree, "sha256", lambda path: "other" if
                        path == code else real(path)):
                    self.assertNotIn(classify.evidence_key(source),
                                     (None, changed), code)
            with unittest.mock.patch.object(evidence, "spatch_version",
                                            lambda env: "spatch 0"):
                self.assertNotIn(classify.evidence_key(source),
                                 (None, changed))


class GrepCallersTest(unittest.TestCase):
    """The callers' search finds each word, also where a shorter name of
    the same search is its prefix (git grep -P -w misses that one)."""

    def test_a_name_whose_prefix_is_another_name(self):
        from tests.fake_kernel import make_tarball
        from notifier_series import tree
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        kernel = tree.prepare("9.9", os.path.join(tmp, "work"),
                              make_tarball(tmp, extra={
                                  "a.c": "/* inform the notifiers */\n",
                                  "b.c": "int notifier;\n"}))
        self.assertEqual(evidence.grep_callers(kernel.path,
                                               ["notifier", "notifiers"]),
                         {"notifier": {"b.c"}, "notifiers": {"a.c"}})
        self.assertEqual(evidence.grep_files(kernel.path, "notifiers?",
                                             words=True), ["a.c", "b.c"])


class GateInputsTest(unittest.TestCase):
    """The gate's stamp holds the classification as the gate reads it:
    a reworded chain reason keeps the judgement, anything else it reads
    does not."""

    YAML = """\
kernel: 9.9.1
chains:
- chain: a_chain
  defined: a.c
  declared: blocking
  class: blocking
  reason: why
  waivers:
  - rule: blocking-called-atomic
    file: b.c
    function: f
    reason: real, and old
"""

    def inputs(self, text):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "linux-9.9.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return classify.gate_inputs(path)

    def test_only_a_chain_reason_is_left_out(self):
        base = self.inputs(self.YAML)
        self.assertEqual(self.inputs(self.YAML.replace(
            "reason: why", "reason: why, said again")), base)
        for changed in (
                self.YAML.replace("class: blocking", "class: atomic"),
                self.YAML.replace("real, and old", "real, and new"),
                self.YAML.replace("function: f", "function: g"),
                self.YAML.replace("reason: why", "reason: why\n  # moved")):
            with self.subTest(changed):
                self.assertNotEqual(self.inputs(changed), base)


if __name__ == "__main__":
    unittest.main()
