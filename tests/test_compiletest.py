"""The compile-test's reading of a directory's Makefile: which Kconfig
symbol builds a file, directly or through a composite object."""

import os
import tempfile
import unittest

from tools.notifier_series import compiletest

MAKEFILE = """\
obj-$(CONFIG_DEMO_CORE) += demo.o
demo-y := demo_main.o \\
	demo_events.o
demo-$(CONFIG_DEMO_FIPS) += demo_fips.o
obj-y += always.o
"""


class KconfigSymbolTest(unittest.TestCase):
    def setUp(self):
        self.tree = tempfile.mkdtemp(prefix="compiletest-")
        os.makedirs(os.path.join(self.tree, "drivers", "demo"))
        with open(os.path.join(self.tree, "drivers", "demo", "Makefile"),
                  "w", encoding="utf-8") as f:
            f.write(MAKEFILE)

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tree)

    def test_symbols_direct_composite_and_conditional(self):
        cases = {"drivers/demo/demo.c": "CONFIG_DEMO_CORE",
                 "drivers/demo/demo_events.c": "CONFIG_DEMO_CORE",
                 "drivers/demo/demo_fips.c": "CONFIG_DEMO_FIPS",
                 "drivers/demo/always.c": None,
                 "drivers/none/x.c": None}
        for path, symbol in cases.items():
            with self.subTest(path):
                self.assertEqual(
                    compiletest.kconfig_symbol(self.tree, path), symbol)


if __name__ == "__main__":
    unittest.main()
