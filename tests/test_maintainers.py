"""The owner of a file among the MAINTAINERS sections that claim it."""

import itertools
import unittest

from notifier_series import maintainers

# scripts/get_maintainer.pl --sections -f drivers/base/power/qos.c on
# Linux 6.1, trimmed: three sections match as deep (drivers/base/power/),
# one less deep (drivers/base/), and THE REST.
QOS_SECTIONS = """\
SUSPEND TO RAM
M:\t"Rafael J. Wysocki" <rafael@kernel.org>
F:\tDocumentation/power/
F:\tarch/x86/kernel/acpi/
F:\tdrivers/base/power/
F:\tinclude/linux/pm.h
F:\tkernel/power/

HIBERNATION (aka Software Suspend, aka swsusp)
M:\t"Rafael J. Wysocki" <rafael@kernel.org>
F:\tarch/*/include/asm/suspend*.h
F:\tarch/x86/power/
F:\tdrivers/base/power/
F:\tkernel/power/

POWER MANAGEMENT CORE
M:\t"Rafael J. Wysocki" <rafael@kernel.org>
F:\tdrivers/base/power/
F:\tdrivers/powercap/
F:\tinclude/linux/pm.h
F:\tinclude/linux/pm_*

DRIVER CORE, KOBJECTS, DEBUGFS AND SYSFS
M:\tGreg Kroah-Hartman <gregkh@linuxfoundation.org>
F:\tdrivers/base/
F:\tfs/sysfs/

THE REST
M:\tLinus Torvalds <torvalds@linux-foundation.org>
"""
# A few files of a tree, enough to tell the sections' sizes apart.
TREE = ["Documentation/power/a.rst", "Documentation/power/b.rst",
        "arch/x86/kernel/acpi/sleep.c", "arch/x86/power/cpu.c",
        "arch/x86/include/asm/suspend_64.h", "drivers/base/power/qos.c",
        "drivers/base/power/main.c", "drivers/base/core.c",
        "drivers/powercap/powercap_sys.c", "include/linux/pm.h",
        "include/linux/pm_qos.h", "kernel/power/main.c",
        "kernel/power/suspend.c", "fs/sysfs/file.c"]
ORDER = {"DRIVER CORE, KOBJECTS, DEBUGFS AND SYSFS": 0,
         "HIBERNATION (aka Software Suspend, aka swsusp)": 1,
         "POWER MANAGEMENT CORE": 2, "SUSPEND TO RAM": 3}


def claimed_in(files):
    def claimed(title, entries):
        compiled = maintainers.compile_entries(entries)
        return sum(maintainers.depth(f, compiled)[0] is not None
                   for f in files)
    return claimed


class OwnerTest(unittest.TestCase):
    def owner(self, path, sections, files=TREE, order=ORDER):
        return maintainers.owner(path, sections, claimed_in(files), order)

    def test_sections_parse(self):
        sections = maintainers.parse_sections(QOS_SECTIONS)
        self.assertEqual([t for t, _ in sections][-1], "THE REST")
        self.assertIn(("F", "include/linux/pm_*"), sections[2][1])
        self.assertEqual(len(sections), 5)

    def test_narrowest_of_equally_deep_sections_owns_the_file(self):
        # get_maintainer.pl names SUSPEND TO RAM first (hash order); the
        # narrowest of the three equally deep sections is PM core.
        sections = maintainers.parse_sections(QOS_SECTIONS)
        self.assertEqual(self.owner("drivers/base/power/qos.c", sections),
                         "POWER MANAGEMENT CORE")

    def test_owner_does_not_depend_on_the_listed_order(self):
        sections = maintainers.parse_sections(QOS_SECTIONS)
        for path in ("drivers/base/power/qos.c", "drivers/base/core.c",
                     "include/linux/pm.h", "kernel/power/main.c"):
            owners = {self.owner(path, list(p))
                      for p in itertools.permutations(sections)}
            self.assertEqual(len(owners), 1, path)

    def test_deeper_pattern_wins_over_narrower_section(self):
        sections = maintainers.parse_sections(
            "WIDE\nF:\tdrivers/base/power/\n\nTINY\nF:\tdrivers/\n"
            "X:\tdrivers/powercap/\n")
        self.assertEqual(self.owner("drivers/base/power/qos.c", sections,
                                    files=["drivers/base/power/qos.c"] * 9),
                         "WIDE")

    def test_longer_literal_pattern_wins_at_equal_depth(self):
        sections = maintainers.parse_sections(
            "GLOB\nF:\tinclude/linux/pm*\n\nEXACT\nF:\tinclude/linux/pm.h\n"
            "F:\tinclude/linux/\n")
        # EXACT also claims all of include/linux/, but names the file.
        self.assertEqual(self.owner("include/linux/pm.h", sections),
                         "EXACT")

    def test_maintainers_order_breaks_the_last_tie(self):
        sections = maintainers.parse_sections(
            "B SECTION\nF:\tkernel/power/\n\nA SECTION\nF:\tkernel/power/\n")
        self.assertEqual(self.owner("kernel/power/main.c", sections,
                                    order={"A SECTION": 0, "B SECTION": 1}),
                         "A SECTION")

    def test_excluded_and_unclaimed_files_go_to_the_rest(self):
        sections = maintainers.parse_sections(
            "PC\nF:\tdrivers/\nX:\tdrivers/powercap/\n\nTHE REST\nM:\tx\n")
        self.assertEqual(self.owner("drivers/powercap/powercap_sys.c",
                                    sections), "THE REST")

    def test_keyword_pattern_has_depth_zero(self):
        sections = maintainers.parse_sections(
            "KW\nN:\tpower\n\nDIR\nF:\tkernel/\n")
        self.assertEqual(self.owner("kernel/power/main.c", sections), "DIR")
        self.assertEqual(self.owner("fs/power.c", sections), "KW")


class PatternTest(unittest.TestCase):
    def matches(self, path, pattern, is_dir=lambda p: False):
        regex = maintainers.to_regex(pattern, is_dir)
        compiled = maintainers.compile_entries([("F", pattern)], is_dir)
        return maintainers.file_matches(path, regex, compiled[0][3])

    def test_get_maintainer_file_match_pattern(self):
        self.assertTrue(self.matches("drivers/base/power/qos.c",
                                     "drivers/base/"))
        self.assertTrue(self.matches("include/linux/pm_qos.h",
                                     "include/linux/pm_*"))
        # A pattern without a trailing slash stays in its directory ...
        self.assertFalse(self.matches("arch/x86/power/cpu.c", "arch/*"))
        self.assertTrue(self.matches("arch/Kconfig", "arch/*"))
        # ... unless the tree has a directory of that name.
        self.assertTrue(self.matches("kernel/power/main.c", "kernel/power",
                                     is_dir=lambda p: p == "kernel/power"))
        self.assertFalse(self.matches("kernel/powerx.c", "kernel/power",
                                      is_dir=lambda p: p == "kernel/power"))
        self.assertFalse(self.matches("include/linux/pmXh", "pm.h"))


if __name__ == "__main__":
    unittest.main()
