"""The compile-test's reading of a directory's Makefile: which Kconfig
symbol builds a file, directly or through a composite object."""

import os
import shutil
import subprocess
import tempfile
import unittest

from notifier_series import compiletest

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


class ElsewhereTest(unittest.TestCase):
    """Which architecture compiles which file, with the compilers and
    make faked: a file is built where its symbol is set, unless the
    series breaks it there."""
    CONFIGS = {"x86_64": {"CONFIG_X86": "y"},
               "arm64": {"CONFIG_ARM64": "y"},
               "s390": {"CONFIG_S390": "y", "CONFIG_TN3215": "y",
                        "CONFIG_BROKEN_HERE": "y"}}
    MAKEFILE = ("obj-$(CONFIG_TN3215) += con3215.o\n"
                "obj-$(CONFIG_BROKEN_HERE) += broken.o\n"
                "obj-$(CONFIG_NOWHERE) += nowhere.o\n"
                "obj-y += plain.o\n")

    def setUp(self):
        import shutil
        from unittest import mock
        self.tmp = tempfile.mkdtemp(prefix="compiletest-")
        self.addCleanup(shutil.rmtree, self.tmp)
        for tree in ("series", "pristine"):
            folder = os.path.join(self.tmp, tree, "drivers", "s390", "char")
            os.makedirs(folder)
            with open(os.path.join(folder, "Makefile"), "w",
                      encoding="utf-8") as f:
                f.write(self.MAKEFILE)

        def configure(kernel_path, build_dir, log, arch="x86_64",
                      cross=None):
            os.makedirs(build_dir, exist_ok=True)
            with open(os.path.join(build_dir, ".config"), "w",
                      encoding="utf-8") as f:
                f.write("".join(f"{k}={v}\n"
                                for k, v in self.CONFIGS[arch].items()))
            return True

        def build_objects(kernel_path, build_dir, files, jobs, log, label,
                          arch="x86_64", cross=None, kept=None):
            values = self.CONFIGS[arch]
            series = "pristine" not in kernel_path
            return {f: (compiletest.kconfig_symbol(kernel_path, f) in values
                        or f.endswith("plain.c")) and
                    not (series and f.endswith("broken.c"))
                    for f in files}

        compilers = {"x86", "arm64", "s390"}
        for name, fake in (("configure", configure),
                           ("build_objects", build_objects),
                           ("toolchain", lambda arch: (
                               ("x86_64" if arch == "x86" else arch), None)
                               if arch in compilers else None)):
            patcher = mock.patch.object(compiletest, name, fake)
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_files_x86_leaves_out_compile_where_their_symbol_is_set(self):
        class Tree:
            path = os.path.join(self.tmp, "series")
        files = [f"drivers/s390/char/{n}.c"
                 for n in ("con3215", "broken", "nowhere", "plain")]
        result = compiletest.run(Tree, files + ["arch/xtensa/x.c"],
                                 os.path.join(self.tmp, "build"),
                                 os.path.join(self.tmp, "pristine"),
                                 os.path.join(self.tmp, "log"), 1)
        self.assertEqual(result["compiled_on"],
                         {"drivers/s390/char/con3215.c": "s390"})
        self.assertEqual(result["failed"], ["drivers/s390/char/broken.c"])
        self.assertEqual((result["compiled"], result["touched"]), (2, 5))
        # plain.c is x86's; the others need what x86_64 leaves unset.
        self.assertEqual((result["x86_compiled"], result["x86_touched"]),
                         (1, 1))
        why = {n["file"]: n["why"] for n in result["not_compiled"]}
        self.assertEqual(sorted(why), ["arch/xtensa/x.c",
                                       "drivers/s390/char/nowhere.c"])
        self.assertIn("needs CONFIG_NOWHERE, which x86_64", why[
            "drivers/s390/char/nowhere.c"])
        self.assertIn("no cross compiler for arch/xtensa",
                      why["arch/xtensa/x.c"])

    def test_without_the_pristine_answer_a_failure_is_the_series(self):
        from unittest import mock
        real = compiletest.configure

        def configure(kernel_path, *args, **kwargs):
            return ("pristine" not in kernel_path and
                    real(kernel_path, *args, **kwargs))

        class Tree:
            path = os.path.join(self.tmp, "series")
        with mock.patch.object(compiletest, "configure", configure):
            result = compiletest.run(
                Tree, ["drivers/s390/char/broken.c"],
                os.path.join(self.tmp, "build"),
                os.path.join(self.tmp, "pristine"),
                os.path.join(self.tmp, "log"), 1)
        self.assertEqual(result["failed"], ["drivers/s390/char/broken.c"])

    def test_arches_limits_the_compile_test_and_says_so(self):
        class Tree:
            path = os.path.join(self.tmp, "series")
        files = [f"drivers/s390/char/{n}.c" for n in ("con3215", "plain")]
        result = compiletest.run(Tree, files + ["arch/arm64/a.c"],
                                 os.path.join(self.tmp, "build"),
                                 os.path.join(self.tmp, "pristine"),
                                 os.path.join(self.tmp, "log"), 1, {"x86"})
        self.assertEqual(result["arches"], ["x86"])
        self.assertEqual((result["compiled"], result["touched"]), (1, 3))
        why = {n["file"]: n["why"] for n in result["not_compiled"]}
        self.assertEqual(why["arch/arm64/a.c"],
                         "not compiled; this run compiled only on x86")
        self.assertTrue(why["drivers/s390/char/con3215.c"].endswith(
            "leaves unset (a dependency is not met); this run compiled "
            "only on x86"))


class CacheTest(unittest.TestCase):
    """The compile-test's answer is kept for the same trees, files,
    architectures, compilers and environment, and for nothing else."""
    CONFIGS, MAKEFILE = ElsewhereTest.CONFIGS, ElsewhereTest.MAKEFILE

    def setUp(self):
        ElsewhereTest.setUp(self)
        from unittest import mock
        from tests.fake_kernel import IDENT, git
        self.runs = 0
        real = compiletest.run

        def counted(*args, **kwargs):
            self.runs += 1
            return real(*args, **kwargs)
        patcher = mock.patch.object(compiletest, "run", counted)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.git = lambda *args: git(*args)
        for tree in ("series", "pristine"):
            path = os.path.join(self.tmp, tree)
            git(path, "init", "-q")
            git(path, "add", "-A")
            git(path, *IDENT, "commit", "-q", "-m", tree)
        self.cache = os.path.join(self.tmp, "cache")

    def run_it(self, files=("drivers/s390/char/plain.c",), arches=None):
        class Tree:
            path = os.path.join(self.tmp, "series")
        log = os.path.join(self.tmp, "log")
        with open(log, "w", encoding="utf-8") as f:
            f.write(f"log of run {self.runs + 1}\n")
        return compiletest.cached_run(self.cache, Tree, list(files),
                                      os.path.join(self.tmp, "build"),
                                      os.path.join(self.tmp, "pristine"),
                                      log, 1, arches)

    def test_the_same_inputs_are_answered_from_the_cache(self):
        from unittest import mock
        from tests.fake_kernel import IDENT
        first = self.run_it()
        self.assertEqual(self.run_it(), first)
        self.assertEqual(self.runs, 1)
        with open(os.path.join(self.tmp, "log"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "log of run 1\n")
        self.run_it(files=("drivers/s390/char/con3215.c",))
        self.assertEqual(self.runs, 2)
        self.run_it(arches={"x86"})
        self.assertEqual(self.runs, 3)
        with mock.patch.dict(os.environ, {"KCFLAGS": "-O1"}):
            self.run_it()
        self.assertEqual(self.runs, 4)
        series = os.path.join(self.tmp, "series")
        with open(os.path.join(series, "drivers", "s390", "char",
                               "Makefile"), "a", encoding="utf-8") as f:
            f.write("# changed\n")
        self.run_it()           # not committed: run, and not kept
        self.run_it()
        self.assertEqual(self.runs, 6)
        self.git(series, *IDENT, "commit", "-q", "-a", "-m", "changed")
        self.run_it()
        self.run_it()
        self.assertEqual(self.runs, 7)
        # A compiler of another version, on the same PATH.
        folder = os.path.join(self.tmp, "bin")
        os.makedirs(folder)
        gcc = os.path.join(folder, "fake-gcc")
        with mock.patch.object(compiletest, "toolchain", lambda arch: (
                "x86_64", "fake-") if arch == "x86" else None), \
                mock.patch.dict(os.environ, {
                    "PATH": folder + os.pathsep + os.environ["PATH"]}):
            for version in (1, 1, 2):
                with open(gcc, "w", encoding="utf-8") as f:
                    f.write(f"#!/bin/sh\necho fake-gcc {version}\n")
                os.chmod(gcc, 0o755)
                self.run_it()
        self.assertEqual(self.runs, 9)

    def test_trees_changed_during_the_run_keep_nothing(self):
        from unittest import mock
        from tests.fake_kernel import IDENT
        series = os.path.join(self.tmp, "series")
        makefile = os.path.join(series, "drivers", "s390", "char",
                                "Makefile")
        with open(makefile, encoding="utf-8") as f:
            text = f.read()
        real = compiletest.run

        def changing(*args, **kwargs):
            with open(makefile, "a", encoding="utf-8") as f:
                f.write("# meanwhile\n")
            self.git(series, *IDENT, "commit", "-q", "-a", "-m", "meanwhile")
            return real(*args, **kwargs)
        with mock.patch.object(compiletest, "run", changing):
            self.run_it()
        with open(makefile, "w", encoding="utf-8") as f:
            f.write(text)           # the tree of before, committed again
        self.git(series, *IDENT, "commit", "-q", "-a", "-m", "back")
        self.run_it()
        self.assertEqual(self.runs, 2)      # not answered from the cache

    def test_an_answer_with_a_failure_is_not_kept(self):
        self.run_it(files=("drivers/s390/char/broken.c",))
        self.run_it(files=("drivers/s390/char/broken.c",))
        self.assertEqual(self.runs, 2)


class RaceTest(unittest.TestCase):
    """An object that parallel jobs failed to build (um compiles each
    single target twice, and -j2 races) is built again by one job, and
    is not reported as broken."""

    def test_object_lost_to_a_race_is_built_again_by_one_job(self):
        import shutil
        from unittest import mock
        build = tempfile.mkdtemp(prefix="compiletest-")
        self.addCleanup(shutil.rmtree, build)
        calls = []

        def make(cmd, log, label):
            jobs = next(a for a in cmd if a.startswith("-j"))
            calls.append(jobs)
            for target in (a for a in cmd if a.endswith(".o")):
                if jobs != "-j1" and target.endswith("raced.o"):
                    continue        # fixdep found no .d: the job lost
                os.makedirs(os.path.join(build, os.path.dirname(target)),
                            exist_ok=True)
                open(os.path.join(build, target), "w",
                     encoding="utf-8").close()
            return 0

        with mock.patch.object(compiletest, "run_logged", make):
            built = compiletest.build_objects(
                "/tree", build, ["arch/um/a/raced.c", "arch/um/b/fine.c"],
                2, "log", "compile-test um", "um")
        self.assertEqual(built, {"arch/um/a/raced.c": True,
                                 "arch/um/b/fine.c": True})
        self.assertEqual(calls, ["-j2", "-j1"])


class UpToDateTest(unittest.TestCase):
    """An object of an earlier run says nothing of whether its file builds
    now: each is compiled now, so that neither a file that make finds up
    to date (kept with the time it had, or the pristine tree's) counts as
    failing, nor a file that fails now counts as built."""

    def test_objects_of_an_earlier_run_are_compiled_again(self):
        import shutil
        from unittest import mock
        build = tempfile.mkdtemp(prefix="compiletest-")
        self.addCleanup(shutil.rmtree, build)
        os.makedirs(os.path.join(build, "kernel"))
        for name in ("old", "broken"):
            path = os.path.join(build, "kernel", name + ".o")
            open(path, "w", encoding="utf-8").close()
            os.utime(path, (1, 1))

        def make(cmd, log, label):      # builds what is missing only
            for target in (a for a in cmd if a.endswith(".o")):
                path = os.path.join(build, target)
                if not os.path.exists(path) and "broken" not in target:
                    open(path, "w", encoding="utf-8").close()
            return 0

        with mock.patch.object(compiletest, "run_logged", make):
            built = compiletest.build_objects(
                "/tree", build, ["kernel/old.c", "kernel/broken.c"], 2,
                "log", "compile-test x86")
        self.assertEqual(built, {"kernel/old.c": True,
                                 "kernel/broken.c": False})


class BuiltTest(unittest.TestCase):
    """A file whose object was built before from the same inputs, as its
    .cmd names them, is not compiled again; a change of any of them, of
    the configuration, of what `make prepare` generates, of the tree's
    list of files, of a file no compiler reads (a Makefile) or of a host
    tool compiles it again; a failure, and a tree with local changes,
    are not kept.  The fake make acts as Kbuild: prepare writes
    auto.conf and the generated headers, a failed compile leaves the
    last .cmd."""

    def setUp(self):
        from tests.fake_kernel import IDENT, git
        self.tmp = tempfile.mkdtemp(prefix="compiletest-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.tree = os.path.join(self.tmp, "tree")
        self.build = os.path.join(self.tmp, "build")
        for path, text in (("drivers/a.c", "#include <x.h>\n"),
                           ("include/x.h", "int x;\n"),
                           ("include/y.h", "int y;\n"),
                           ("kernel/bounds.c", "int bounds;\n"),
                           ("scripts/basic/fixdep.c", "int main;\n"),
                           ("Makefile", "obj-y += a.o\n"),
                           (".gitignore", "*.o\n"),
                           ("build/.config", "CONFIG_A=y\n"),
                           ("build/include/generated/g.h", "A\n")):
            self.write(path, text, commit=False)
        git(self.tree, "init", "-q")
        git(self.tree, "add", "-A")
        git(self.tree, *IDENT, "commit", "-q", "-m", "tree")
        self.commit = lambda: (git(self.tree, "add", "-A"),
                               git(self.tree, *IDENT, "commit", "-q", "-m",
                                   "changed"))
        self.compiled, self.bad, self.regenerate = [], None, None
        self.flags, self.meanwhile, self.extra = "-O2", None, []

    def path(self, path):
        return (os.path.join(self.tmp, path) if path.startswith("build/")
                else os.path.join(self.tree, path))

    def write(self, path, text, commit=True):
        os.makedirs(os.path.dirname(self.path(path)), exist_ok=True)
        with open(self.path(path), "w", encoding="utf-8") as f:
            f.write(text)
        if commit and not path.startswith("build/"):
            self.commit()

    def read(self, path):
        with open(self.path(path), encoding="utf-8") as f:
            return f.read()

    def make(self, cmd, log, label):
        if "prepare" in cmd:
            self.write("build/include/config/auto.conf",
                       self.read("build/.config"))
            self.write("build/include/generated/bounds.h",
                       self.read("kernel/bounds.c"))
            return 0
        for target in (a for a in cmd if a.endswith(".o")):
            self.compiled.append(target)
            # The compiler reads the header before the tree changes.
            broken = self.read("include/x.h") == self.bad
            if self.meanwhile:
                self.meanwhile()
            if self.regenerate:
                self.write("build/include/generated/g.h", self.regenerate)
            if broken or self.read("build/include/generated/g.h") == \
                    self.bad:
                continue            # no object; the last .cmd stays
            folder, name = os.path.split(target)
            os.makedirs(os.path.join(self.build, folder), exist_ok=True)
            with open(os.path.join(self.build, target), "w") as f:
                f.write("object")
            self.write(f"build/{folder}/.{name}.cmd",
                       f"cmd_{target} := gcc {self.flags} -c -o {target} "
                       "a.c\n\n"
                       f"source_{target} := {self.tree}/drivers/a.c\n\n"
                       f"deps_{target} := \\\n"
                       f"  {self.tree}/include/x.h \\\n"
                       "    $(wildcard include/config/FOO) \\\n"
                       "  include/generated/g.h \\\n"
                       "  include/generated/bounds.h \\\n"
                       + "".join(f"  {d} \\\n" for d in self.extra)
                       + "\n"
                       f"{target}: $(deps_{target})\n")
        return 0

    def run_it(self, state="tools"):
        """Whether make compiled a.c; checks that the answer is its."""
        from unittest import mock
        self.compiled = []
        kept = compiletest.Built(os.path.join(self.tmp, "cache"), self.tree,
                                 self.build, state)
        with mock.patch.object(compiletest, "run_logged", self.make):
            built = compiletest.build_objects(
                self.tree, self.build, ["drivers/a.c"], 1, "log", "test",
                kept=kept)
        self.assertEqual(built, {"drivers/a.c": os.path.exists(
            os.path.join(self.build, "drivers", "a.o"))})
        return bool(self.compiled)

    def test_each_input_of_the_key(self):
        self.assertTrue(self.run_it())
        self.assertFalse(self.run_it())
        cmd = "build/drivers/.a.o.cmd"
        for change in (
                lambda: self.write("include/x.h", "int x, z;\n"),
                lambda: self.write("Makefile", "obj-m += a.o\n"),
                lambda: self.write("include/new.h", "\n"),
                lambda: self.write("drivers/a.c", "#include <x.h>\n\n"),
                lambda: self.write("kernel/bounds.c", "long bounds;\n"),
                lambda: self.write("scripts/basic/fixdep.c", "int main2;\n"),
                lambda: self.write("build/include/generated/g.h", "B\n"),
                lambda: self.write("build/.config", "CONFIG_A=m\n"),
                lambda: self.write("build/include/config/FOO", ""),
                lambda: self.write(cmd, self.read(cmd).replace(
                    "-O2", "-O2 -Wextra"))):
            change()
            self.assertTrue(self.run_it())
            self.assertFalse(self.run_it())
        self.assertTrue(self.run_it(state="another compiler"))
        self.write("include/y.h", "int y, z;\n")      # not a dependency
        self.assertFalse(self.run_it())

    def test_a_failure_and_local_changes_are_not_kept(self):
        self.assertTrue(self.run_it())
        # The compile fails now: the .cmd of the last success stays.
        self.bad = "B\n"
        self.write("build/include/generated/g.h", "B\n")
        self.assertTrue(self.run_it())
        self.assertTrue(self.run_it())
        self.bad = None
        for local in ("include/x.h", "include/untracked.h", "stray.o"):
            with self.subTest(local):
                self.write(local, "int x, z;\n", commit=False)
                self.assertTrue(self.run_it())
                self.assertTrue(self.run_it())
                os.unlink(self.path(local))
                subprocess.run(["git", "-C", self.tree, "checkout", "-q",
                                "."], check=True)
        self.assertTrue(self.run_it())
        self.assertFalse(self.run_it())

    def test_a_tree_changed_during_the_build_keeps_nothing(self):
        # A checkout while make runs (make bisect on the same tree): the
        # object is of a tree that is neither the one before nor after.
        # What it made is kept under neither: the tree as the build
        # left it does not compile.
        self.bad = "int x, z;\n"
        self.meanwhile = lambda: self.write("include/x.h", self.bad)
        self.assertTrue(self.run_it())
        self.meanwhile = None
        self.assertTrue(self.run_it())
        self.assertFalse(os.path.exists(os.path.join(self.build, "drivers",
                                                     "a.o")))

    def test_a_header_the_rule_itself_makes_gives_no_key(self):
        self.extra = ["lib/crc32table.h"]
        self.write("build/lib/crc32table.h", "table\n")
        self.assertTrue(self.run_it())
        self.assertTrue(self.run_it())

    def test_a_missing_object_is_compiled(self):
        self.assertTrue(self.run_it())
        os.unlink(os.path.join(self.build, "drivers", "a.o"))
        self.assertTrue(self.run_it())

    def test_what_the_build_left_is_kept(self):
        # The build itself rewrites a generated header: the answer is
        # kept under what the object was compiled with, not under what
        # the header held when the cache was asked.
        self.assertTrue(self.run_it())
        self.write("include/x.h", "int x, z;\n")
        self.regenerate = "B\n"
        self.assertTrue(self.run_it())
        self.regenerate, self.bad = None, "A\n"
        self.write("build/include/generated/g.h", "A\n")
        self.assertTrue(self.run_it())
        self.assertFalse(os.path.exists(os.path.join(self.build, "drivers",
                                                     "a.o")))

if __name__ == "__main__":
    unittest.main()
