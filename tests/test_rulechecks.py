"""The 2005 rules' checks over a tree as the audit runs them
(notifier_series/rulechecks.py): spatch --dir over the fixtures of
tests/fixtures/rules/, the findings kept and reused, a register wrapper
whose chain another file unregisters from, a check that could not run,
and spatch's scratch folders kept out of the tree."""

import os
import subprocess
import tempfile
import unittest
from types import SimpleNamespace
from unittest import mock

from tests import needs_spatch, tools_path  # noqa: F401
from tests.test_cocci_checks import RULE_EXPECTED, RULES
from notifier_series import classify, output, rulechecks
from notifier_series.progress import Error


@needs_spatch
class RuleChecksTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.cached = os.path.join(self.folder.name, "rules.json")

    def tearDown(self):
        self.folder.cleanup()

    def collect(self, stamp="a", reuse=False):
        return rulechecks.collect(RULES, 1, self.cached, {"s": stamp}, reuse)

    def test_every_check_over_a_tree(self):
        found = self.collect()
        self.assertEqual(found["problems"], [])
        for check in rulechecks.CHECKS:
            expected = RULE_EXPECTED[check.cocci]
            self.assertEqual(sorted(f["at"] for f in found["checks"][
                check.name]), sorted(expected), check.name)
        # Kept, and taken again only for the same stamp.
        with mock.patch.object(rulechecks, "run_check",
                               side_effect=AssertionError("ran")):
            self.assertEqual(self.collect(reuse=True)["checks"],
                             found["checks"])
            with self.assertRaises(AssertionError):
                self.collect(stamp="b", reuse=True)

    def test_only_the_files_that_can_hold_a_finding_are_parsed(self):
        files = {c.name: rulechecks.files_of(RULES, c)
                 for c in rulechecks.CHECKS}
        self.assertEqual(files["hand-rolled-chain"],
                         ["hand_rolled_2005.c", "hand_rolled_modern.c"])
        # No module_exit(), no chain API: nothing to find.
        self.assertNotIn("register_builtin.c",
                         files["register-without-unregister"])
        self.assertIn("register_modern.c",
                      files["register-without-unregister"])

    def test_a_wrapper_whose_chain_is_unregistered_elsewhere(self):
        found = self.collect()
        chain = SimpleNamespace(sites=[
            {"op": "register", "file": "register_2005.c", "line": 18},
            {"op": "unregister", "file": "other.c", "line": 7}])
        model = SimpleNamespace(chains={
            ("i386die_chain", "register_2005.c"): chain}, root=RULES)
        items = rulechecks.audit_items(found, model)
        die = next(r for r in items["register-without-unregister"]
                   if r["at"] == "register_2005.c:9")
        self.assertEqual(die["unregistered"], "other.c:7")
        self.assertEqual(die["patch"], "4/7")
        # The module that registers in init and not in exit is built in
        # only (tests/fixtures/rules/Makefile and Kconfig): not counted.
        leaky = next(r for r in items["register-without-unregister"]
                     if r["at"] == "register_modern.c:57")
        self.assertEqual(leaky["built_in"],
                         "CONFIG_DEMO_MODERN is bool at Kconfig:3")
        counts = rulechecks.counts(items)
        self.assertEqual(counts["register-without-unregister"],
                         len(RULE_EXPECTED[
                             "notifier_register_without_unregister.cocci"])
                         - 2)
        text = "\n".join(rulechecks.lines(items))
        self.assertIn("4/7 register-without-unregister: register_2005.c:9: "
                      "register_die_notifier() registers on i386die_chain",
                      text)
        self.assertIn("(but other.c:7 unregisters: not counted)", text)
        self.assertIn("(but it is never a module: CONFIG_DEMO_MODERN is bool "
                      "at Kconfig:3: not counted)", text)

    def test_a_check_that_could_not_run_is_an_error(self):
        broken = rulechecks.Check("broken", "no-such.cocci", "0/7", "none",
                                  ((r"\bint\b",),))
        with mock.patch.object(rulechecks, "CHECKS", (broken,)):
            found = self.collect()
            self.assertTrue(found["problems"])
            self.assertFalse(os.path.exists(self.cached))
            with self.assertRaises(Error):
                rulechecks.audit_items(found, SimpleNamespace(chains={}))

    def test_spatch_leaves_nothing_in_the_tree(self):
        # spatch --jobs keeps a folder of its own while it runs, in its
        # working directory unless told: a killed run left two in CI's
        # 6.1 tree, which the next stage then refused as local changes.
        seen = []

        def run_logged(cmd, log_path, *args, cwd=None, errors_path=None,
                       **kwargs):
            seen.append((cmd, cwd))
            for path in (log_path, errors_path):
                open(path, "w", encoding="utf-8").close()
            return 0

        check = rulechecks.CHECKS[0]
        with mock.patch.object(rulechecks, "run_logged", run_logged):
            rulechecks.run_check(RULES, check, 2, os.path.join(
                self.folder.name, "check.log"))
        (cmd, cwd), = seen
        self.assertIn("--tmp-dir", cmd)
        scratch = os.path.realpath(cmd[cmd.index("--tmp-dir") + 1])
        self.assertFalse(scratch.startswith(os.path.realpath(cwd) + os.sep))
        self.assertFalse(os.path.exists(os.path.dirname(scratch)))

    def run_faked(self, reports, messages):
        """run_check() on the first check, spatch's reports and messages
        being `reports` and `messages`."""
        def run_logged(cmd, log_path, *args, errors_path=None, **kwargs):
            for path, text in ((log_path, reports), (errors_path, messages)):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            return 0

        with mock.patch.object(rulechecks, "run_logged", run_logged):
            return rulechecks.run_check(
                RULES, rulechecks.CHECKS[0], 1,
                os.path.join(self.folder.name, "check.log"))

    def test_a_report_of_no_file_of_the_tree_is_a_problem(self):
        findings, problems, _, _ = self.run_faked(
            "badcounregister_2005.c:9:1-2: WARNING: x\n"
            "register_2005.c:9:1-2: WARNING: y\n", "")
        self.assertEqual(len(findings), 2)
        self.assertEqual(len(problems), 1)
        self.assertIn("a report of badcounregister_2005.c:9, a file that "
                      "is not in the tree", problems[0])

    def test_an_exception_on_one_file_is_a_problem(self):
        # spatch --file-groups exits 0 when one file raised (helper-23).
        _, problems, _, _ = self.run_faked(
            "", 'EXN: Failure("Error in Python script") in '
            'register_2005.c\n')
        self.assertEqual(len(problems), 1)
        self.assertIn('EXN: Failure("Error in Python script") in '
                      'register_2005.c', problems[0])

    def test_code_spatch_could_not_parse_is_said(self):
        # spatch skips a function it cannot parse, silently under
        # --very-quiet: the check must say which files it saw in part.
        tree = os.path.join(self.folder.name, "tree")
        os.makedirs(tree)
        with open(os.path.join(RULES, "hand_rolled_modern.c"),
                  encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(tree, "hand_rolled_modern.c"), "w",
                  encoding="utf-8") as f:
            f.write(text + "\nint demo_broken(void)\n{\n\tfoo(;\n}\n")
        check = next(c for c in rulechecks.CHECKS
                     if c.name == "hand-rolled-chain")
        findings, problems, files, partly = rulechecks.run_check(
            tree, check, 1, os.path.join(self.folder.name, "check.log"))
        self.assertEqual((problems, files), ([], 1))
        self.assertEqual(partly, ["hand_rolled_modern.c"])
        self.assertEqual(len(findings), 2)
        # Its messages are kept apart from its reports: in one pipe,
        # "badcount: 5" once cut 6.1's adbhid.c finding in two.
        with open(os.path.join(self.folder.name, "check.log")) as f:
            self.assertNotIn("badcount:", f.read())
        self.assertEqual(rulechecks.unparsed_lines(
            {"hand-rolled-chain": partly}), [
            "hand-rolled-chain: spatch reported parse errors in 1 files, "
            "whose code it could not parse the check did not look at: "
            "hand_rolled_modern.c"])

    def test_the_cover_letter_takes_only_findings_of_today(self):
        repo = os.path.join(self.folder.name, "linux")
        os.makedirs(repo)
        for cmd in (["init", "-q"], ["-c", "user.name=T", "-c",
                                     "user.email=t@example.org", "commit",
                                     "-q", "--allow-empty", "-m", "x"],
                    ["tag", "pristine"]):
            subprocess.run(["git", "-C", repo] + cmd, check=True)
        kernel_tree = SimpleNamespace(path=repo)
        out = os.path.join(self.folder.name, "out")
        audit = os.path.join(out, "9.9", "audit.json")
        self.assertIsNone(classify.rule_findings("9.9", out, kernel_tree))
        os.makedirs(os.path.dirname(audit))
        stamp = rulechecks.stamp_of(repo)
        for kept, found in ((stamp, {"x": []}),
                            (dict(stamp, module="older"), None),
                            (dict(stamp, commit="0" * 40), None)):
            output.write_json(audit, {"rules_stamp": kept, "rules": {"x": []}})
            self.assertEqual(classify.rule_findings("9.9", out, kernel_tree),
                             found)


class BuiltInTest(unittest.TestCase):
    """A module's finding is exempt only when no configuration makes its
    object a module (helper-22's cases, from 6.1's KVM and esp_scsi)."""

    FILES = {
        "d/Makefile": "obj-$(CONFIG_BOOLDRV) += lib.o\n"
                      "obj-$(CONFIG_TRIDRV) += lib.o\n"
                      "obj-$(CONFIG_BOOLDRV) += only.o\n"
                      "obj-$(CONFIG_DUMMY) += dummy.o\n"
                      "obj-$(CONFIG_REDEF) += redef.o\n"
                      "obj-m += mod.o\nobj-y += core.o\n",
        "d/Kconfig": "config BOOLDRV\n\tbool \"b\"\n\n"
                     "config TRIDRV\n\ttristate \"t\"\n\n"
                     "config REDEF\n\tdepends on BOOLDRV\n\n"
                     "config OTHER\n\tbool\n",
        "d/Kconfig.more": "config REDEF\n\tdef_tristate m\n",
        "scripts/kconfig/tests/Kconfig": "config DUMMY\n\tbool\n",
        "arch/arm64/kvm/Kconfig": "menuconfig KVM\n\tbool \"KVM\"\n",
        "arch/x86/kvm/Kconfig": "config KVM\n\ttristate \"KVM\"\n",
        "arch/arm64/kvm/Makefile": "kvm-y += arm.o\n"
                                   "obj-$(CONFIG_KVM) += kvm.o\n",
        "arch/x86/kvm/Makefile": "kvm-y += \\\n\tx86.o\n"
                                 "obj-$(CONFIG_KVM) += kvm.o\n",
    }

    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        for path, text in self.FILES.items():
            full = os.path.join(self.folder.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)

    def tearDown(self):
        self.folder.cleanup()

    def built_in(self, path):
        return rulechecks.built_in(self.folder.name, path)

    def test_bool_or_obj_y(self):
        self.assertEqual(self.built_in("d/only.c"),
                         "CONFIG_BOOLDRV is bool at d/Kconfig:2")
        self.assertEqual(self.built_in("d/core.c"), "obj-y in d/Makefile")
        self.assertEqual(self.built_in("arch/arm64/kvm/arm.c"),
                         "CONFIG_KVM is bool at arch/arm64/kvm/Kconfig:2")

    def test_every_owner_must_be_built_in(self):
        self.assertIsNone(self.built_in("d/lib.c"))
        self.assertIsNone(self.built_in("d/mod.c"))

    def test_only_the_architecture_of_the_file_is_read(self):
        self.assertIsNone(self.built_in("arch/x86/kvm/x86.c"))

    def test_kconfig_files_nothing_is_configured_from_are_not_read(self):
        self.assertIsNone(self.built_in("d/dummy.c"))

    def test_an_entry_without_a_type_does_not_read_the_next(self):
        self.assertIsNone(self.built_in("d/redef.c"))
        os.remove(os.path.join(self.folder.name, "d/Kconfig.more"))
        self.assertIsNone(self.built_in("d/redef.c"))


if __name__ == "__main__":
    unittest.main()
