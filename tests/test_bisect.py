"""make bisect's rule for patches it does not build again: only a patch
that modifies nothing but .c, .h and .S files the last build did not
read leaves the build as it was."""

import os
import shutil
import tempfile
import unittest

from notifier_series import bisect

# Kbuild's .cmd file of one object, as 6.1 writes it under O=.
CMD = """\
cmd_kernel/notifier.o := gcc -Wp,-MMD,kernel/.notifier.o.d -nostdinc \
-I{src}/include -include {src}/include/linux/kconfig.h -c -o \
kernel/notifier.o {src}/kernel/notifier.c

source_kernel/notifier.o := {src}/kernel/notifier.c

deps_kernel/notifier.o := \\
  {src}/include/linux/kconfig.h \\
    $(wildcard include/config/CPU_BIG_ENDIAN) \\
  {src}/include/linux/notifier.h \\
  {src}/arch/x86/include/asm/irqflags.h \\
  include/generated/autoconf.h \\

kernel/notifier.o: $(deps_kernel/notifier.o)

$(deps_kernel/notifier.o):
"""


class BisectSkipTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bisect-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.src = os.path.join(self.tmp, "linux")
        build = os.path.join(self.tmp, "build")
        os.makedirs(os.path.join(build, "kernel"))
        with open(os.path.join(build, "kernel", ".notifier.o.cmd"), "w",
                  encoding="utf-8") as f:
            f.write(CMD.format(src=self.src))
        self.read = bisect.read_by_build(self.src, build)

    def test_sources_and_headers_of_the_cmd_files_are_read(self):
        for path in ("kernel/notifier.c", "include/linux/notifier.h",
                     "include/linux/kconfig.h",
                     "arch/x86/include/asm/irqflags.h"):
            self.assertIn(path, self.read)
        self.assertNotIn("drivers/misc/other.c", self.read)

    def test_which_patches_can_change_the_build(self):
        cases = {
            ("M\tdrivers/misc/other.c", "M\tinclude/linux/other.h"): False,
            ("M\tdrivers/misc/other.c", "M\tinclude/linux/notifier.h"): True,
            ("M\tarch/x86/include/asm/irqflags.h",): True,
            ("M\tkernel/notifier.c",): True,
            ("A\tkernel/notifier_kunit.c",): True,
            ("D\tdrivers/misc/other.c",): True,
            ("R100\tdrivers/misc/a.c\tdrivers/misc/b.c",): True,
            ("M\tdrivers/misc/Makefile",): True,
            ("M\tlib/Kconfig.debug",): True,
            ("M\tscripts/link-vmlinux.sh",): True,
        }
        for changes, expected in cases.items():
            with self.subTest(changes):
                self.assertEqual(
                    bisect.can_change_build(list(changes), self.read),
                    expected)


if __name__ == "__main__":
    unittest.main()
