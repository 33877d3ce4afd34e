"""The memory cost of the new head (headcost): kbuild's command line read
back, the probe's values, the arrays of heads, what the series adds and
the sentences of the cover letter, on recorded data."""

import os
import shutil
import stat
import subprocess
import tempfile
import unittest
from unittest import mock

from tests import tools_path  # noqa: F401
from tests.fake_kernel import IDENT, git
from notifier_series import bench, headcost, output
from notifier_series.classification import Entry
from notifier_series.progress import Error

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "headcost")
# Where the recorded 6.1 build was configured.
CONFIGURED = "/root/.cache/notifier-series/linux-6.1"
# Measured with build-6.1 (tools/boot-test.config, tools/debug.config):
# lockdep and KASAN.
LOCKDEP = {"atomic": 72, "blocking": 160, "raw": 8, "srcu": 1096,
           "bare": 8, "notifier_head": 168}


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


def entry(chain, defined, declared, klass=None):
    e = Entry(chain=chain, defined=defined, declared=declared,
              reason="-")
    e["class"] = klass or declared
    return e


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.tmp, "kernel"))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_cmd(self, text):
        with open(os.path.join(self.tmp, "kernel", ".notifier.o.cmd"), "w",
                  encoding="utf-8") as f:
            f.write(text)

    def test_kbuild_command_of_6_1(self):
        self.write_cmd(fixture("notifier.o.cmd-6.1"))
        argv, configured = headcost.command_line(self.tmp)
        self.assertEqual(configured, CONFIGURED)
        self.assertEqual(argv[0], "gcc")
        for gone in ("ccache", "-c", "-o", "kernel/notifier.o"):
            self.assertNotIn(gone, argv)
        self.assertFalse([a for a in argv if a.startswith("-Wp,-MMD")
                          or "objtool" in a or a.endswith(".c")])
        self.assertIn("-fsanitize=kernel-address", argv)   # KASAN

    def test_kbuild_command_of_6_12(self):
        self.write_cmd(fixture("notifier.o.cmd-6.12"))
        argv, configured = headcost.command_line(self.tmp)
        self.assertTrue(configured.endswith("linux-6.12"), configured)
        self.assertEqual(argv[0], "gcc")
        self.assertNotIn("-c", argv)

    def test_not_a_built_kernel(self):
        with self.assertRaisesRegex(Error, r"\.notifier\.o\.cmd: .*built"):
            headcost.command_line(os.path.join(self.tmp, "nothing"))
        self.write_cmd("cmd_kernel/other.o := gcc -c other.c\n")
        with self.assertRaisesRegex(Error, r"\.notifier\.o\.cmd:1: not "):
            headcost.command_line(self.tmp)

    def test_the_probe_is_compiled_with_those_flags(self):
        # A compiler that says what it was given and prints the recorded
        # assembly of the probe.
        cc = os.path.join(self.tmp, "cc")
        seen = os.path.join(self.tmp, "argv")
        with open(cc, "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {seen}\n"
                    f"cat {os.path.join(FIXTURES, 'probe-6.1-lockdep.s')}\n")
        os.chmod(cc, os.stat(cc).st_mode | stat.S_IXUSR)
        self.write_cmd(fixture("notifier.o.cmd-6.1")
                       .replace("ccache gcc ", f"ccache {cc} ")
                       .replace(CONFIGURED, "/elsewhere/linux-6.1"))
        values = {k: f"sizeof({t})" for k, t in headcost.KINDS.items()}
        got = headcost.probe(self.tmp, values, ("<linux/notifier.h>",),
                             "/mine/linux-6.1", dirs=("/first",))
        self.assertEqual(got, {k: LOCKDEP[k] for k in headcost.KINDS})
        with open(seen, encoding="utf-8") as f:
            argv = f.read().split()
        self.assertEqual(argv[0], "-I/first")
        self.assertEqual(argv[-4:-1], ["-S", "-o", "-"])
        self.assertFalse([a for a in argv if "/elsewhere/" in a])
        self.assertIn("-I/mine/linux-6.1/include", argv)
        with self.assertRaisesRegex(Error, "no value for other"):
            headcost.probe(self.tmp, {"other": "1"})


class CostTest(unittest.TestCase):
    def test_growth_of_each_kind(self):
        self.assertEqual(headcost.growth(LOCKDEP, "atomic"), 96)
        self.assertEqual(headcost.growth(LOCKDEP, "blocking"), 8)
        self.assertEqual(headcost.growth(LOCKDEP, "bare"), 160)

    def test_file_scope_and_arrays(self):
        entries = [
            entry("a_chain", "kernel/a.c", "atomic"),
            entry("b_chain", "kernel/b.c", "blocking"),
            entry("bare_chain", "kernel/c.c", "bare", "blocking"),
            entry("raw_chain", "kernel/d.c", "raw", "excluded"),
            entry("list", "drivers/video/omapfb.c", "blocking"),
            entry("opal", "arch/powerpc/opal.c", "atomic"),
            entry("struct eq_table.nh", "drivers/net/eq.c", "atomic"),
            entry("struct other.nh", "drivers/net/other.c", "blocking"),
        ]
        found = [
            {"file": "drivers/video/omapfb.c", "line": 9, "kind":
             "blocking", "name": "list", "structure": None, "count": 3,
             "why": None},
            {"file": "arch/powerpc/opal.c", "line": 70, "kind": "atomic",
             "name": "opal", "structure": None, "count": None,
             "why": "asm/machdep.h: No such file"},
            {"file": "drivers/net/eq.c", "line": 53, "kind": "atomic",
             "name": "nh", "structure": "eq_table", "count": 256,
             "why": None},
            {"file": "drivers/net/other.c", "line": 5, "kind": "blocking",
             "name": "nh", "structure": "other", "count": 4, "why": None},
        ]
        c = headcost.cost(entries, LOCKDEP, found)
        # a 96, b 8, bare 160, list 3 x 8; raw is not converted; opal's
        # dimension is unknown.
        self.assertEqual(c["file_scope"], {"heads": 6, "bytes": 288,
                                           "unknown": ["opal"]})
        self.assertEqual([(a["structure"], a["heads"],
                           a["bytes_per_instance"]) for a in c["arrays"]],
                         [("eq_table", 256, 24576), ("other", 4, 32)])
        record = {"configs": {"with lockdep": dict(sizes=LOCKDEP, **c)},
                  "not_measured": {"without lockdep": "no kernel built"}}
        said = "\n".join(headcost.lines(record))
        self.assertIn("struct notifier_head is 168 bytes", said)
        self.assertIn("+24576 bytes per instance", said)
        self.assertIn("without lockdep: not measured, no kernel built",
                      said)


class ArraysTest(unittest.TestCase):
    def test_arrays_of_heads_at_file_scope_and_in_structures(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, "drivers"))
        with open(os.path.join(tmp, "drivers", "eq.c"), "w",
                  encoding="utf-8") as f:
            f.write("struct eq_table {\n\tint n;\n"
                    "\tstruct atomic_notifier_head nh[EV_MAX];\n};\n"
                    "static struct blocking_notifier_head list[2 * N];\n"
                    " * struct raw_notifier_head in_a_comment[3];\n"
                    "static struct srcu_notifier_head one;\n"
                    "struct other\n{\n\tchar *s; /* } { */\n"
                    "\tstruct atomic_notifier_head m[4];\n};\n"
                    "void f(void)\n{\n"
                    "\tstruct atomic_notifier_head local[2];\n}\n")
        subprocess.run(["git", "init", "-q", tmp], check=True)
        git(tmp, "add", ".")
        found = headcost.arrays(tmp)
        self.assertEqual([(a["file"], a["line"], a["kind"], a["name"],
                           a["dimension"], a["structure"]) for a in found],
                         [("drivers/eq.c", 3, "atomic", "nh", "EV_MAX",
                           "eq_table"),
                          ("drivers/eq.c", 5, "blocking", "list", "2 * N",
                           None),
                          ("drivers/eq.c", 11, "atomic", "m", "4",
                           "other")])


class CoverLetterTest(unittest.TestCase):
    def test_what_was_not_measured_says_how_to_measure_it(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        said = bench.costs(tmp, "6.1", "6.1.192", "core", "tree")
        self.assertEqual(said, [
            "The cost of a call was not measured on these core patches "
            "(make bench KVER=6.1).",
            "The memory of the heads was not measured on this series "
            "(make bench KVER=6.1 --memory-only)."])

    def test_only_what_measured_this_series_is_quoted(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, "6.1"))
        case = {"mode": "icount", "op": "call", "type": "atomic",
                "callouts": 1, "readers": 1, "ratio": 1.012}
        memory = {"kernel": "6.1.192", "not_measured": {}, "configs": {},
                  "trees": {"series": "tree"},
                  "vmlinux": {"config": "x86_64 defconfig",
                              "pristine": {"text": 1, "data": 100,
                                           "bss": 50},
                              "data_bss_change": 2680}}
        output.write_json(bench.path_of(tmp, "6.1"), {
            "kernel_bench": {"kernel": "6.1.192", "core": "core",
                             "cases": [case]},
            "memory": memory})
        said = bench.costs(tmp, "6.1", "6.1.192", "core", "tree")
        self.assertIn("atomic with 1 callouts x1.012", said[0])
        self.assertIn("data+bss 150 pristine, +2680 bytes with the series",
                      said[1])
        for other in (("6.1.200", "core", "tree"),
                      ("6.1.192", "other core", "other tree")):
            said = bench.costs(tmp, "6.1", *other)
            self.assertEqual(len(said), 2)
            self.assertTrue(all("not measured" in s for s in said), said)


class MeasureTest(unittest.TestCase):
    """measure() on a small tree, its builds and probes stood in for:
    where its output goes and what it says it could not measure."""

    def setUp(self):
        from notifier_series import tree
        from tests.fake_kernel import make_tarball
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.work = os.path.join(self.tmp, "work")
        self.tree = tree.prepare("9.9", self.work, make_tarball(self.tmp))
        git(self.tree.path, "branch", "notifier-series/core", "pristine")
        self.out = os.path.join(self.tmp, "out")
        self.sizes = {"data": 100, "bss": 10}

    def measure(self):
        def build(checkout, build_dir, log, jobs, **how):
            os.makedirs(build_dir, exist_ok=True)
            return os.path.join(build_dir, "arch/x86/boot/bzImage")

        def size(build_dir):
            grown = build_dir.endswith("-size-series")
            return {"text": 1, "data": self.sizes["data"] + 8 * grown,
                    "bss": self.sizes["bss"]}

        with mock.patch.object(headcost.boottest, "build", build), \
                mock.patch.object(headcost, "vmlinux_size", size), \
                mock.patch.object(headcost.classification, "load",
                                  return_value=("9.9", [])), \
                mock.patch.object(headcost.tree, "prepare",
                                  return_value=self.tree):
            return headcost.measure("9.9", work=self.work, out=self.out,
                                   jobs=1)

    def test_without_the_series_it_says_so(self):
        record = self.measure()
        self.assertTrue(os.path.isdir(os.path.join(self.out, "9.9",
                                                   "memory")))
        self.assertEqual(sorted(record["trees"]), ["core", "pristine"])
        self.assertIn("make series", record["not_measured"][
            "vmlinux of the series"])
        self.assertIn("make boot-test", record["not_measured"][
            "with lockdep"])
        self.assertNotIn("data_bss_change", record["vmlinux"])

    def test_with_the_series_its_vmlinux_is_compared(self):
        path = self.tree.path
        git(path, "checkout", "-q", "-b", "notifier-series/series",
            "pristine")
        git(path, *IDENT, "commit", "-q", "--allow-empty", "-m", "series")
        git(path, "checkout", "-q", "pristine")
        record = self.measure()
        self.assertEqual(record["vmlinux"]["data_bss_change"], 8)
        self.assertEqual(sorted(record["trees"]),
                         ["core", "pristine", "series"])
        self.assertEqual(os.listdir(os.path.join(self.out, "9.9")),
                         ["memory"])
