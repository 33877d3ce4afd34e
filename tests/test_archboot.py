"""The proof of a fix on another architecture, on the consoles of a
powernv boot of Linux 6.12 without and with the OPAL fix
(out/6.12/boot-nofixes-powerpc and boot-powerpc, excerpts)."""

import os
import unittest

from tests import booted, tools_path  # noqa: F401
from notifier_series import archboot, arches, console

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "console")
OPAL = "opal_message_notifier_register"


def read(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read().splitlines()


def boot(lines):
    splats, brackets = console.scan(lines)
    return booted(splats=splats, expected_warnings=brackets)


SITE = {"site": "arch/powerpc/platforms/powernv/opal.c:306",
        "function": OPAL, "chain": "opal_msg_notifier_head",
        "rule": "write-in-atomic",
        "fixed_by": ["powerpc/powernv: Register OPAL message notifiers "
                     "outside msg_list_lock"]}


class ProofTest(unittest.TestCase):
    def setUp(self):
        self.before = read("opal-nofixes-ppc.log")
        self.after = read("opal-fixed-ppc.log")

    def test_the_bug_is_seen_in_its_own_report(self):
        self.assertTrue(archboot.reported(boot(self.before), OPAL,
                                          self.before))
        # The same report does not name another function of the trace's
        # neighbours, nor is the KUnit test's announced report counted.
        self.assertFalse(archboot.reported(boot(self.before),
                                           "register_in_atomic_test",
                                           self.before))

    def test_the_fixed_boot_ran_the_initcall(self):
        self.assertTrue(archboot.initcall_done(
            self.after, "__machine_initcall_powernv_opal_init"))
        self.assertFalse(archboot.initcall_done(self.after, "sclp_initcall"))

    def judge(self, before, after):
        rows = archboot.proof_rows([SITE], "6.12", arches.get("powerpc"))
        reasons = archboot.judge(rows, before, boot(before), after,
                                 boot(after))
        return rows[0], reasons

    def test_the_proof_passes(self):
        row, reasons = self.judge(self.before, self.after)
        self.assertEqual(reasons, [])
        self.assertEqual((row["before"], row["after"], row["ran"]),
                         (True, False, True))

    def test_no_report_without_the_fix_fails_the_proof(self):
        _, reasons = self.judge(self.after, self.after)
        self.assertIn("no report without the fix", reasons[0])

    def test_a_report_with_the_fix_fails_the_proof(self):
        _, reasons = self.judge(self.before, self.before + self.after)
        self.assertIn("still reported with the fix", reasons[0])

    def test_a_fixed_boot_that_never_ran_the_site_proves_nothing(self):
        _, reasons = self.judge(self.before, ["Linux version 6.12.118"])
        self.assertIn("did not return 0", reasons[0])

    def test_a_site_no_machine_runs_is_compile_tested_only(self):
        site = dict(SITE, function="nx842_remove")
        row = archboot.proof_rows([site], "6.1", arches.get("powerpc"))[0]
        self.assertFalse(row["expected_here"])
        self.assertIn("NX-842", row["compile_tested_only"])
        site = dict(SITE, function="sclp_init")
        row = archboot.proof_rows([site], "6.12", arches.get("s390"))[0]
        self.assertFalse(row["expected_here"])
        self.assertIn("while the system boots", row["compile_tested_only"])


if __name__ == "__main__":
    unittest.main()
