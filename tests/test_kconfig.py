"""Config fragments: parsing with file:line errors, and the check that
every requested option landed in the final .config."""

import os
import subprocess
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import kconfig
from notifier_series.arches import ARCHES, COMMON_FRAGMENT, DEBUG_FRAGMENT
from notifier_series.progress import Error


class KconfigTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_parses_set_unset_and_comments(self):
        frag = self.write("f.config", "# a comment\n\nCONFIG_A=y\n"
                          "# CONFIG_B is not set\nCONFIG_C=\"x y\"\n")
        self.assertEqual(kconfig.parse_fragment(frag),
                         [(3, "CONFIG_A", "y"), (4, "CONFIG_B", None),
                          (5, "CONFIG_C", '"x y"')])

    def test_bad_line_names_file_and_line(self):
        frag = self.write("f.config", "CONFIG_A=y\nKASAN=y\n")
        with self.assertRaisesRegex(Error, r"f\.config:2: not a Kconfig"):
            kconfig.parse_fragment(frag)

    def test_unmet_options(self):
        frag = self.write("f.config", "CONFIG_A=y\nCONFIG_B=y\n"
                          "# CONFIG_C is not set\nCONFIG_D=4\n"
                          "# CONFIG_E is not set\n")
        config = self.write(".config", "CONFIG_A=y\n# CONFIG_B is not set\n"
                            "CONFIG_C=y\nCONFIG_D=2\n")
        problems = kconfig.unmet(frag, config)
        self.assertEqual(len(problems), 3)
        self.assertRegex(problems[0], r"f\.config:2: CONFIG_B=y requested, "
                         r"\.config has it unset")
        self.assertRegex(problems[1], r"f\.config:3: CONFIG_C should be "
                         r"unset, \.config has CONFIG_C=y")
        self.assertRegex(problems[2], r"f\.config:4: CONFIG_D=4 requested, "
                         r"\.config has CONFIG_D=2")

    def test_options_only_another_architecture_declares(self):
        for name, text in (("arch/s390/Kconfig", "config S390_GUEST\n"),
                           ("arch/x86/Kconfig", "menuconfig KVM_GUEST\n"),
                           ("drivers/Kconfig", "config FOO\n")):
            os.makedirs(os.path.join(self.tmp.name, os.path.dirname(name)),
                        exist_ok=True)
            self.write(name, text)
        subprocess.run(["git", "init", "-q", self.tmp.name], check=True)
        subprocess.run(["git", "-C", self.tmp.name, "add", "."], check=True)
        declared = {s: kconfig.declared_for(self.tmp.name, "CONFIG_" + s,
                                            "x86")
                    for s in ("S390_GUEST", "KVM_GUEST", "FOO", "BAR")}
        self.assertEqual(declared, {"S390_GUEST": False, "KVM_GUEST": True,
                                    "FOO": True, "BAR": False})
        # No tree to search fails, rather than letting every option off.
        with tempfile.TemporaryDirectory() as empty, \
                self.assertRaises(Error):
            kconfig.declared_for(empty, "CONFIG_FOO", "x86")

    def test_boot_test_fragments_parse(self):
        symbols = [s for fragment in (COMMON_FRAGMENT, DEBUG_FRAGMENT)
                   for _, s, _ in kconfig.parse_fragment(fragment)]
        for needed in ("CONFIG_KASAN", "CONFIG_PROVE_LOCKING",
                       "CONFIG_PROVE_RCU", "CONFIG_DEBUG_ATOMIC_SLEEP",
                       "CONFIG_DEBUG_NOTIFIERS", "CONFIG_SMP",
                       "CONFIG_NOTIFIER_KUNIT_TEST",
                       "CONFIG_NOTIFIER_TORTURE_TEST", "CONFIG_HOTPLUG_CPU"):
            self.assertIn(needed, symbols)
        for arch in ARCHES.values():
            self.assertTrue(kconfig.parse_fragment(arch.fragment), arch.name)


if __name__ == "__main__":
    unittest.main()
