"""The call graph and its evidence on a fixture tree
(tests/fixtures/callgraph): each chain there has one kind of evidence
that lies beyond the function that uses it.  Every test first shows that
the analysis without the call graph (spatch's records, one function
deep) does not find it, then that the call graph does, with its path."""

import os
import shutil
import subprocess
import tempfile
import unittest

from tests import needs_spatch, tools_path  # noqa: F401
from tests.test_classify import fixture_tree
from notifier_series import (callgraph, chains, classification, evidence,
                             gate, lexfacts, paths)

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "callgraph")


@needs_spatch
class CallGraphTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.root = fixture_tree(os.path.join(cls.tmp, "tree"), FIXTURE)
        cls.cache = os.path.join(cls.tmp, "cache", "facts.pickle")
        cls.facts, cls.figures = callgraph.index(cls.root, cls.cache, 1)
        cls.graph = callgraph.Graph(cls.facts)
        found = evidence.collect(cls.root, 2, lambda records: chains.followed(
            chains.Model(records, cls.root)))
        cls.records = found.records
        # Today's analysis: spatch's records alone.
        cls.before = chains.Model(cls.records, cls.root)
        # With the call graph: its heads, statics and paths.
        cls.after = chains.Model(cls.records, cls.root, cls.graph.heads,
                                cls.graph.is_static)
        atomic = {k for k, c in cls.after.chains.items()
                  if c.kind == "atomic"}
        paths.attach(cls.after, cls.graph, atomic)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def chain(self, model, cid):
        found = [c for c in model.chains.values() if c.id == cid]
        self.assertEqual(len(found), 1, cid)
        return found[0]

    def evidence(self, cid, kind, subject=None):
        return [i for i in self.chain(self.after, cid).evidence
                if i["kind"] == kind and subject in (None, i["subject"])]

    def steps(self, item):
        return [(s["file"], s["line"], s["function"]) for s in item["path"]]

    def assert_unknown_before(self, cid):
        klass, reasons = chains.propose(self.chain(self.before, cid))
        self.assertEqual(klass, "unknown", reasons)

    def test_depth_across_files_through_a_wrapper_of_request_irq(self):
        self.assert_unknown_before("cg_deep_chain")
        [item] = self.evidence("cg_deep_chain", "atomic-caller",
                               "drivers/cg/deep.c:12")
        self.assertEqual(self.steps(item), [
            ("drivers/cg/irq.c", 18, "cg_irq"),
            ("drivers/cg/irq.c", 12, "cg_irq"),
            ("drivers/cg/deep2.c", 12, "cg_deep2"),
            ("drivers/cg/deep.c", 12, "cg_deep3")])
        self.assertEqual(item["depth"], 4)
        self.assertIn("given to cg_request_irq()", item["path"][0]["note"])
        self.assertEqual(chains.propose(self.chain(
            self.after, "cg_deep_chain"))[0], "atomic")

    def test_ops_structure_function_pointer(self):
        self.assert_unknown_before("cg_ops_chain")
        [item] = self.evidence("cg_ops_chain", "atomic-caller")
        self.assertEqual(self.steps(item), [
            ("drivers/cg/ops_user.c", 10, "cg_kick_locked"),
            ("drivers/cg/ops.c", 11, "cg_kick")])
        self.assertIn("(typed) under spin_lock_irqsave() from line 9",
                      item["path"][0]["note"])

    def test_lock_helper(self):
        self.assert_unknown_before("cg_lockhelp_chain")
        items = self.evidence("cg_lockhelp_chain", "atomic-caller")
        self.assertEqual([i["subject"] for i in items],
                         ["drivers/cg/lockhelp.c:22"])
        self.assertIn("under cg_lock() from line 21",
                      items[0]["path"][0]["note"])

    def test_chain_called_from_a_callout_of_an_atomic_chain(self):
        self.assert_unknown_before("cg_inner_chain")
        [item] = self.evidence("cg_inner_chain", "atomic-caller",
                               "drivers/cg/nested.c:11")
        self.assertEqual(self.steps(item), [
            ("drivers/cg/nested.c", 21, "cg_outer_cb"),
            ("drivers/cg/nested.c", 17, "cg_outer_cb"),
            ("drivers/cg/nested.c", 11, "cg_inner_call")])
        self.assertIn("callout of the atomic chain cg_outer_chain",
                      item["path"][0]["note"])

    def test_threaded_handler_is_process_context(self):
        # Today's analysis gets this one right too: a guard.
        self.assert_unknown_before("cg_thread_chain")
        self.assertEqual(self.evidence("cg_thread_chain", "atomic-caller"),
                         [])
        self.assertNotIn(self.graph.node_of("cg_thread_fn",
                                            "drivers/cg/threaded.c"),
                         self.graph.atomic_reach())

    def test_no_evidence_through_a_same_named_static(self):
        klass, reasons = chains.propose(self.chain(self.before,
                                                   "cg_static_chain"))
        self.assertEqual(klass, "atomic")       # the false citation
        self.assertIn("drivers/other/statics.c", " ".join(reasons))
        chain = self.chain(self.after, "cg_static_chain")
        self.assertEqual(chains.propose(chain)[0], "unknown")
        self.assertEqual({s["file"] for s in chain.callers},
                         {"drivers/cg/statics.c"})
        self.assertEqual(self.evidence("cg_static_chain", "atomic-caller"),
                         [])

    def test_sleep_through_a_bus_read_helper(self):
        before = self.chain(self.before, "cg_i2c_chain")
        self.assertEqual([c["sleeps"] for c in before.callouts.values()],
                         [[]])
        [item] = self.evidence("cg_i2c_chain", "sleeping-callout")
        self.assertEqual(self.steps(item), [
            ("drivers/cg/i2c.c", 26, "cg_i2c_cb"),
            ("drivers/cg/i2c.c", 20, "cg_read"),
            ("drivers/cg/i2c.c", 13, "cg_xfer"),
            ("kernel/locking/mutex.c", 4, "mutex_lock")])
        self.assertEqual(item["path"][-1]["note"], "calls might_sleep()")

    def test_conflict_is_reported_with_both_paths(self):
        before = self.chain(self.before, "cg_i2c_chain")
        self.assertEqual(chains.propose(before)[0], "atomic")
        chain = self.chain(self.after, "cg_i2c_chain")
        self.assertEqual(chains.propose(chain)[0], "conflict")
        [c] = chain.conflicts
        self.assertEqual(self.steps(c["atomic"]), [
            ("drivers/cg/i2c.c", 38, "cg_i2c_timer"),
            ("drivers/cg/i2c.c", 45, "cg_i2c_timer")])
        self.assertEqual(c["sleeps"]["path"][-1]["function"], "mutex_lock")

    def graph_violations(self, cid, klass):
        return [v for v in chains.violations(self.chain(self.after, cid),
                                             klass)
                if v.get("via") == chains.VIA_GRAPH]

    def test_the_side_that_breaks_the_class_is_gated_path_by_path(self):
        # Atomic: the callout's path to a sleep, whoever calls the chain.
        [v] = self.graph_violations("cg_i2c_chain", "atomic")
        self.assertEqual((v["rule"], v["function"], v.get("root")),
                         ("atomic-callout-sleeps", "cg_i2c_cb", None))
        self.assertEqual(v["files"], ["drivers/cg/i2c.c",
                                      "kernel/locking/mutex.c"])
        # Blocking: each call site's path from atomic context, with its
        # root; not the sites whose own context already convicts them.
        found = self.graph_violations("cg_i2c_chain", "blocking")
        self.assertEqual([(v["rule"], v["site"], v["root"]) for v in found],
                         [("blocking-called-atomic", "drivers/cg/i2c.c:51",
                           "cg_i2c_irq")])
        local = [v for v in chains.violations(
            self.chain(self.after, "cg_i2c_chain"), "blocking")
            if "via" not in v]
        self.assertEqual([v["site"] for v in local],
                         ["drivers/cg/i2c.c:45", "drivers/cg/i2c.c:56"])
        self.assertEqual(
            [v["rule"] for v in self.graph_violations("cg_inner_chain",
                                                      "blocking")],
            ["blocking-called-atomic", "blocking-called-atomic"])
        # Writers reached from atomic context, for either class: the
        # register two calls below the interrupt handler, and its wrapper.
        for klass in ("atomic", "blocking"):
            self.assertEqual(
                [(v["site"], v["function"], v["root"]) for v in
                 self.graph_violations("cg_deep_chain", klass)
                 if v["rule"] == "write-in-atomic"],
                [("drivers/cg/deep2.c:14", "cg_deep2", "cg_irq"),
                 ("drivers/cg/deep.c:17", "cg_deep_register", "cg_irq")])
        [v] = self.graph_violations("cg_i2c_chain", "atomic")
        # Neither fixed nor waived: a candidate, awaiting triage; one
        # only the tree with the fixes has is a candidate too.
        items, _ = gate.judge([v], [v], [], [], lambda v: True)
        self.assertEqual(items[0]["status"], "candidate")
        items, _ = gate.judge([], [v], [], [], lambda v: True)
        self.assertEqual((items[0]["status"], items[0]["introduced"]),
                         ("candidate", True))
        # A fix of a file on the path fixes it; another file does not.
        for touched, status in (("kernel/locking/mutex.c", "fixed"),
                                ("drivers/cg/deep.c", "open")):
            fix = os.path.join(self.tmp, "0001-fix.patch")
            with open(fix, "w", encoding="utf-8") as f:
                f.write(f"Subject: [PATCH] fix\n\n---\ndiff --git a/{touched} "
                        f"b/{touched}\n--- a/{touched}\n+++ b/{touched}\n")
            items, _ = gate.judge([v], [], [], [fix], lambda v: True)
            self.assertEqual(items[0]["status"], status, touched)

    def test_regions_that_run_only_while_the_system_boots_are_no_roots(self):
        boot = {self.graph.name[n] for n in self.graph.boot_only()}
        self.assertTrue({"start_kernel", "cg_arch_entry", "cg_con_init",
                         "cg_con_setup", "setup_arch", "cg_mips_early"}
                        <= boot, boot)
        # Given to early_param() and called by a timer; given to a timer;
        # given to __setup() and to a timer; x86's function of a name
        # whose __weak default a timer calls.
        self.assertFalse({"cg_param", "cg_boot_timer", "cg_setup_handler",
                          "cg_smt_update"} & boot, boot)
        # The writer below start_kernel(), its entry code and a console
        # initcall, each under a lock or with irqs off, is reached from
        # atomic context only through the early_param() handler that a
        # timer calls too: from the timer of a `static DEFINE_TIMER()`.
        self.assertEqual(
            [(v["rule"], v["site"], v["function"], v["root"]) for v in
             self.graph_violations("cg_boot_chain", "blocking")],
            [("write-in-atomic", "init/main.c:11", "cg_boot_register",
              "cg_boot_timer")])

    def test_a_waiver_of_a_root_waives_that_root_only(self):
        [v] = self.graph_violations("cg_i2c_chain", "blocking")
        chain = self.chain(self.after, "cg_i2c_chain")
        waiver = classification.Waiver(
            rule=v["rule"], file=v["file"], function=v["function"],
            reason="checked")
        entry = {"chain": chain.id, "defined": chain.defined,
                 "waivers": [waiver]}
        # Without a root it waives every root of the site.
        self.assertIs(gate.waiver_of(v, [entry]), waiver)
        self.assertIs(gate.waiver_of(dict(v, root="cg_other"), [entry]),
                      waiver)
        # With one, that root only; the one naming the root wins.
        narrow = classification.Waiver(waiver, root="cg_i2c_irq")
        self.assertIsNone(gate.waiver_of(
            dict(v, root="cg_other"), [dict(entry, waivers=[narrow])]))
        for order in ([waiver, narrow], [narrow, waiver]):
            self.assertIs(gate.waiver_of(v, [dict(entry, waivers=order)]),
                          narrow)
        # One waiver over a path the fixes remove and a path it waives
        # is used, whichever comes first.
        fixed, kept = v, dict(v, root="cg_other_root")
        patch = os.path.join(self.tmp, "0001-fix-i2c.patch")
        with open(patch, "w", encoding="utf-8") as f:
            f.write("Subject: [PATCH] fix\n\n---\ndiff --git "
                    "a/drivers/cg/i2c.c b/drivers/cg/i2c.c\n")
        for before in ([fixed, kept], [kept, fixed]):
            items, unused = gate.judge(before, [kept], [entry],
                                       [patch], lambda v: True)
            self.assertEqual([i["status"] for i in items],
                             [{"cg_i2c_irq": "fixed",
                               "cg_other_root": "waived"}[i["root"]]
                              for i in before])
            self.assertEqual(unused, [])

    def test_heads_in_structures_and_allocated_at_run_time(self):
        ids = {c.id for c in self.before.chains.values()}
        self.assertNotIn("struct cg_dev.heads", ids)
        self.assertNotIn("struct cg_dev.nh", ids)
        heads = self.chain(self.after, "struct cg_dev.heads")
        self.assertEqual((heads.kind, heads.defined),
                         ("raw", "include/cg/cg.h"))
        nh = self.chain(self.after, "struct cg_dev.nh")
        self.assertEqual(nh.kind, "blocking")
        self.assertEqual([(s["op"], s["line"]) for s in nh.sites],
                         [("call", 37)])
        self.assertEqual(self.after.unresolved, [])

    def test_cache_reads_only_changed_files(self):
        self.assertEqual(self.figures["read"], self.figures["files"])
        path = os.path.join(self.root, "drivers", "cg", "deep2.c")
        with open(path, "a", encoding="utf-8") as f:
            f.write("\nvoid cg_more(void)\n{\n\tmsleep(1);\n}\n")
        os.utime(self.cache, ns=(10**18, 10**18))     # long past
        written = os.stat(self.cache).st_mtime_ns
        try:
            facts, figures = callgraph.index(self.root, self.cache, 1)
            self.assertEqual(figures["read"], 1)
            # One file read again is not worth writing the cache again.
            self.assertEqual(os.stat(self.cache).st_mtime_ns, written)
            graph = callgraph.Graph(facts)
            self.assertIn(graph.node_of("cg_more", "drivers/cg/deep2.c"),
                          graph.sleeping())
        finally:
            subprocess.run(["git", "-C", self.root, "checkout", "-q", "--",
                            "."], check=True)


    def test_the_second_tree_of_a_run_does_not_read_the_cache_again(self):
        # As classify does for the tree with the fixes after the pristine
        # one: the facts this process loaded are not loaded again.
        loads = []
        real = callgraph.pickle.load
        callgraph.pickle.load = lambda f: loads.append(f) or real(f)
        try:
            facts, figures = callgraph.index(self.root, self.cache, 1)
        finally:
            callgraph.pickle.load = real
        self.assertEqual((loads, figures["read"]), ([], 0))
        self.assertEqual(facts.keys(), self.facts.keys())


class LexerTest(unittest.TestCase):
    def test_regions_of_branches_labels_and_braceless_locks(self):
        text = """
void f(struct x *x)
{
	if (a) {
		local_irq_disable();
		g1();
	} else {
		g2();
	}
	spin_lock(&x->l);
	if (b) {
		spin_unlock(&x->l);
		return;
	}
	g3();
	return;		/* with the lock held: a __releases() function */
out:
	g4();
	if (c)
		spin_lock(&x->l);
	g5();
}
"""
        graph = callgraph.Graph({"a.c": lexfacts.facts(text)})
        n = graph.node_of("f", "a.c")
        regions = {graph.name[t] if isinstance(t, int) else t: region
                   for _, t, _, region in graph.calls[n]}
        self.assertEqual(regions["g1"], ("local_irq_disable", 5))
        self.assertIsNone(regions["g2"])
        self.assertEqual(regions["g3"], ("spin_lock", 10))
        self.assertIsNone(regions["g4"])
        self.assertIsNone(regions["g5"])


if __name__ == "__main__":
    unittest.main()


class LinkedGraphKeptTest(unittest.TestCase):
    """The linked graph of a checkout is loaded whole for the same files
    and code, and linked again when a file or the code changes."""

    def test_kept_for_the_same_files_only(self):
        from unittest import mock
        from tests.fake_kernel import make_tarball
        from notifier_series import classify, tree
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        kernel = tree.prepare("9.9", os.path.join(tmp, "work"),
                              make_tarball(tmp, extra={
                                  "a.c": "void f(void) { g(); }\n"}))
        linked = []
        real = classify.callgraph.Graph._link

        def link(graph):
            linked.append(1)
            return real(graph)
        with mock.patch.object(classify.callgraph.Graph, "_link", link):
            first, _ = classify.build_graph(kernel, kernel.path, 1, "t")
            second, _ = classify.build_graph(kernel, kernel.path, 1, "t")
            self.assertEqual(len(linked), 1)
            self.assertEqual(second.name, first.name)
            # What does not depend on the classes came with the pickle.
            self.assertIsNotNone(second._sleeping)
            self.assertIsNotNone(second._boot)
            with open(os.path.join(kernel.path, "a.c"), "a") as f:
                f.write("void h(void) { f(); }\n")
            third, _ = classify.build_graph(kernel, kernel.path, 1, "t")
            self.assertEqual(len(linked), 2)
            self.assertIn("h", third.name)
            real_sha = tree.sha256
            for module, relinked in (("series", 2), ("lexfacts", 3),
                                     ("callgraph", 4)):
                code = os.path.join(tree.PACKAGE, module + ".py")
                with mock.patch.object(tree, "sha256", lambda path: "other"
                                       if path == code else real_sha(path)):
                    classify.build_graph(kernel, kernel.path, 1, "t")
                self.assertEqual(len(linked), relinked, module)
