"""cocci/notifier_convert.cocci through tools/notifier-series convert, on
tests/fixtures/convert: every input file has its expected result beside
it, foo.c -> foo.res and foo.h -> foo.h.res, as Coccinelle's own tests
do; classification.yaml gives the fixtures' classes."""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from notifier_series import convert
from notifier_series.progress import Error
from tests import needs_spatch

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fixtures", "convert")
YAML = os.path.join(FIXTURE, "classification.yaml")


def expected(path):
    return path[:-2] + ".res" if path.endswith(".c") else path + ".res"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def sources(folder):
    return {os.path.basename(p): read(p)
            for p in sorted(glob.glob(os.path.join(folder, "*.[chS]")))}


GUARDED = """\
#include <linux/cleanup.h>
#include <linux/mutex.h>
#include <linux/notifier.h>

static BLOCKING_NOTIFIER_HEAD(demo_guard_chain);
static DEFINE_MUTEX(demo_guard_mutex);
static int demo_guard_count;

int demo_guard_register(struct notifier_block *nb)
{
	int ret;

	mutex_lock(&demo_guard_mutex);
	ret = blocking_notifier_chain_register(&demo_guard_chain, nb);
	mutex_unlock(&demo_guard_mutex);
	return ret;
}

void demo_guard_count_up(void)
{
	scoped_guard(mutex, &demo_guard_mutex) {
		demo_guard_count++;
	}
}
"""


@needs_spatch
class ConvertTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="convert-test-")
        self.dir = os.path.join(self.tmp, "src")
        os.makedirs(self.dir)
        for path in glob.glob(os.path.join(FIXTURE, "*.[chS]")):
            shutil.copy(path, self.dir)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def yaml(self, text):
        path = os.path.join(self.tmp, "classification.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_every_form_converts_to_its_expected_result(self):
        report = convert.convert(self.dir, YAML, jobs=2, in_place=True)
        for path in sorted(glob.glob(os.path.join(FIXTURE, "*.[chS]"))):
            name = os.path.basename(path)
            with self.subTest(name), \
                    open(expected(path), encoding="utf-8") as want, \
                    open(os.path.join(self.dir, name),
                         encoding="utf-8") as got:
                self.assertEqual(want.read(), got.read())
        self.assertEqual(report.errors, [])
        self.assertEqual(report.spatch_problems, [])
        self.assertEqual(report.chains_converted, 31)
        # 2005's 4/7: only the wrappers that are a call, on a chain
        # nothing else unregisters from, with no attribute and a name to
        # derive (unregister_2005.res, and .h.res for the declarations:
        # prototypes on one line or two, stubs, not the inline caller).
        self.assertEqual(report.unregister_added, [{
            "file": "unregister_2005.c", "line": line,
            "wrapper": f"unregister_demo_{name}_notifier",
            "register": f"register_demo_{name}_notifier",
            "chain": f"demo_{name}_chain", "headers": ["unregister_2005.h"]}
            for line, name in ((20, "die"), (58, "oops"))])
        # Assembly is renamed by text; comments name the new API.
        self.assertEqual(report.converted_by_text,
                         ["entry.S:6", "unparsed.c:11"])
        self.assertEqual(report.comments_renamed, ["public.c:4"])
        self.assertEqual(report.chains_excluded, [
            "excluded.c:10: demo_legacy_chain",
            "excluded.c:15: struct demo_legacy.nh",
            "redundant_locks.c:199: demo_left_chain"])
        unconverted = "\n".join(report.unconverted)
        self.assertIn("by_hand_2005.c:20: a chain walked by hand", unconverted)
        self.assertIn("robust.c:19: a robust call on a chain classified "
                      "atomic", unconverted)
        self.assertNotIn("excluded.c", unconverted)
        self.assertIn("members.c:12: struct demo_port.events atomic -> "
                      "blocking", report.class_changed)

    def test_an_unregister_name_the_tree_has_is_not_added(self):
        with open(os.path.join(self.dir, "taken.c"), "w",
                  encoding="utf-8") as f:
            f.write("int unregister_demo_oops_notifier(int x);\n")
        self.assertEqual(convert.occurring(self.dir, {
            "unregister_demo_oops_notifier", "unregister_demo_die_notifier",
            "unregister_demo_die"}), {"unregister_demo_oops_notifier"})
        report = convert.convert(self.dir, YAML, jobs=2)
        self.assertEqual([a["wrapper"] for a in report.unregister_added],
                         ["unregister_demo_die_notifier"])

    def test_locks_that_guard_nothing_but_the_chain(self):
        # 2005's 3/7: removed where the head protects all they did, kept
        # with the reason where they may guard more.
        report = convert.convert(self.dir, YAML, jobs=2)
        self.assertEqual(
            [(r["lock"], r["line"]) for r in report.locks_removed],
            [("demo_shared_rwsem", 14), ("demo_writers_mutex", 65)])
        kept = {r["lock"]: r["why"] for r in report.locks_kept}
        self.assertEqual(kept, {
            "demo_lock": "it is held around a call, which runs the "
            "callouts with preemption off",
            "demo_irq_lock": "a writer under a spinning lock sleeps in "
            "atomic context from the core patch on: a fix before it "
            "removes the lock",
            "demo_swap_rwsem": "it makes two chain operations one, on line "
            "103, which the head does not",
            "demo_serial_mutex": "it is held around a call, which runs "
            "the callouts one at a time",
            "demo_counted_lock": "it has other uses: line 146, 149",
            "demo_percpu_lock": "it is held around a call, which runs "
            "the callouts with preemption off",
            "demo_left_lock": "it guards a chain the series leaves as it "
            "is",
            "demo_late_mutex": "it is initialised under a condition, on "
            "line 219",
            "demo_braced_mutex": "it is initialised under a condition, on "
            "line 238",
            "demo_header_mutex": "it is defined in a header, which other "
            "files may include"})
        self.assertIn("removed, guarding nothing but the chain: "
                      "redundant_locks.c:14: demo_shared_rwsem: "
                      "blocking_notifier_chain_register() under down_write() "
                      "on line 20, up_write() on line 22",
                      convert.summary(report))

    def test_a_lock_still_named_after_its_removal_stops_the_conversion(self):
        # A use that spatch cannot see (scoped_guard()) must not let the
        # lock go: the file would no longer compile.
        folder = os.path.join(self.tmp, "guard")
        os.makedirs(folder)
        with open(os.path.join(folder, "guard.c"), "w",
                  encoding="utf-8") as f:
            f.write(GUARDED)
        yaml = self.yaml('kernel: "fixture"\nchains:\n'
                         '- chain: demo_guard_chain\n'
                         '  defined: guard.c\n  declared: blocking\n'
                         '  class: blocking\n  reason: "kept"\n')
        with self.assertRaises(Error) as raised:
            convert.convert(folder, yaml, jobs=1, in_place=True)
        self.assertIn("guard.c:", str(raised.exception))
        self.assertIn("demo_guard_mutex is still used here", str(
            raised.exception))
        with open(os.path.join(folder, "guard.c"), encoding="utf-8") as f:
            self.assertEqual(f.read(), GUARDED)

    def test_a_second_run_changes_nothing(self):
        convert.convert(self.dir, YAML, jobs=2, in_place=True)
        before = sources(self.dir)
        report = convert.convert(self.dir, YAML, jobs=2, in_place=True)
        self.assertEqual(report.files_changed, [])
        self.assertEqual(sources(self.dir), before)

    def test_a_patch_leaves_the_sources_alone_and_applies(self):
        before = sources(self.dir)
        patch = os.path.join(self.tmp, "out.patch")
        report = convert.convert(self.dir, YAML, jobs=2, patch=patch)
        self.assertEqual(sources(self.dir), before)
        self.assertEqual(len(report.files_changed), 16)
        subprocess.run(["patch", "-s", "-p1", "-i", patch], cwd=self.dir,
                       check=True)
        for name, text in sources(self.dir).items():
            with open(expected(os.path.join(FIXTURE, name)),
                      encoding="utf-8") as want:
                self.assertEqual(want.read(), text, name)

    def test_a_chain_missing_from_the_yaml_stops_before_any_write(self):
        with open(YAML, encoding="utf-8") as f:
            text = f.read()
        start = text.index("- chain: demo_event_chain")
        end = text.index("- chain: demo_config_chain")
        path = self.yaml(text[:start] + text[end:])
        before = sources(self.dir)
        with self.assertRaises(Error) as cm:
            convert.convert(self.dir, path, jobs=2, in_place=True)
        self.assertIn("macro_heads.c:6: the chain demo_event_chain (atomic) "
                      "is not in", str(cm.exception))
        self.assertEqual(sources(self.dir), before)

    def test_a_bare_head_missing_from_the_yaml_stops_the_conversion(self):
        with open(YAML, encoding="utf-8") as f:
            text = f.read()
        start = text.index("- chain: hci_notifier")
        end = text.index("- chain:", start + 1)
        path = self.yaml(text[:start] + text[end:])
        with self.assertRaises(Error) as cm:
            convert.convert(self.dir, path, jobs=2)
        self.assertIn("bare_2005.c:24: notifier_call_chain(&hci_notifier, "
                      "...) calls the 2005 API on the bare head "
                      "hci_notifier, which is not in", str(cm.exception))

    def test_a_declaration_of_another_form_stops_the_conversion(self):
        header = os.path.join(self.dir, "unregister_2005.h")
        with open(header, encoding="utf-8") as f:
            text = f.read()
        with open(header, "w", encoding="utf-8") as f:
            f.write(text.replace(
                "int register_demo_die_notifier(struct notifier_block *nb);",
                "int __must_check register_demo_die_notifier("
                "struct notifier_block *nb);"))
        with self.assertRaises(Error) as cm:
            convert.convert(self.dir, YAML, jobs=2)
        self.assertIn("unregister_2005.h:10: register_demo_die_notifier() "
                      "is declared here in a form that the conversion does "
                      "not copy: declare unregister_demo_die_notifier() by "
                      "hand", str(cm.exception))

    def test_a_yaml_chain_the_sources_lack_is_named_with_its_line(self):
        with open(YAML, encoding="utf-8") as f:
            text = f.read()
        path = self.yaml(text + "- chain: demo_ghost_chain\n"
                         "  defined: macro_heads.c\n  declared: atomic\n"
                         "  class: atomic\n  reason: gone\n")
        with self.assertRaises(Error) as cm:
            convert.convert(self.dir, path, jobs=2)
        lines = text.count("\n")
        self.assertIn(f"classification.yaml:{lines + 1}: the chain "
                      "demo_ghost_chain is not defined in macro_heads.c",
                      str(cm.exception))

    def test_an_out_of_tree_module_of_no_chain_converts_its_calls(self):
        module = os.path.join(self.tmp, "module")
        os.makedirs(module)
        with open(os.path.join(module, "mod.c"), "w", encoding="utf-8") as f:
            f.write("#include <linux/notifier.h>\n\n"
                    "static int mod_init(struct notifier_block *nb)\n{\n"
                    "\treturn atomic_notifier_chain_register("
                    "&panic_notifier_list, nb);\n}\n")
        report = convert.convert(module, YAML, jobs=1, in_place=True)
        with open(os.path.join(module, "mod.c"), encoding="utf-8") as f:
            self.assertIn("return notifier_chain_register("
                          "&panic_notifier_list, nb);", f.read())
        self.assertEqual(report.chains_converted, 0)


@needs_spatch
class SpatchCacheTest(unittest.TestCase):
    """spatch's results kept by file (convert(cache=...)): reused when
    nothing of their key changed, never when one input did."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="convert-cache-")
        self.dir = os.path.join(self.tmp, "src")
        os.makedirs(self.dir)
        for path in glob.glob(os.path.join(FIXTURE, "*.[ch]")):
            shutil.copy(path, self.dir)
        self.cache = os.path.join(self.tmp, "cache")
        self.yaml = YAML

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def spatched(self):
        """(files given to spatch, the report) of a conversion."""
        with mock.patch.object(convert, "_spatch",
                               wraps=convert._spatch) as run:
            report = convert.convert(self.dir, self.yaml, jobs=2,
                                     cache=self.cache)
        return sorted(c.args[1] for c in run.call_args_list), report

    def test_nothing_changed_runs_no_spatch(self):
        first, report = self.spatched()
        self.assertEqual(len(first), len(glob.glob(os.path.join(
            self.dir, "*.[ch]"))))
        again, cached = self.spatched()
        self.assertEqual(again, [])
        for r in (report, cached):
            r.seconds = None
        self.assertEqual(cached, report)

    def test_one_class_changed_runs_the_files_naming_its_chain(self):
        self.spatched()
        path = os.path.join(self.tmp, "classification.yaml")
        text = read(YAML)
        one = ("- chain: demo_runtime_chain\n  defined: runtime_init.c\n"
               "  declared: blocking\n  class: atomic\n")
        self.assertIn(one, text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(one, one.replace("class: atomic",
                                                  "class: blocking")))
        self.yaml = path
        again, report = self.spatched()
        self.assertEqual(again, ["runtime_init.c"])
        self.assertIn("runtime_init.c", report.files_changed)

    def test_a_changed_file_runs_again(self):
        self.spatched()
        with open(os.path.join(self.dir, "runtime_init.c"), "a",
                  encoding="utf-8") as f:
            f.write("/* changed */\n")
        self.assertEqual(self.spatched()[0], ["runtime_init.c"])

    def test_a_new_macro_file_runs_every_file(self):
        first, _ = self.spatched()
        macros = os.path.join(self.tmp, "macros.h")
        shutil.copy(convert.MACROS, macros)
        with mock.patch.object(convert, "MACROS", macros):
            self.assertEqual(self.spatched()[0], [])
            with open(macros, "a", encoding="utf-8") as f:
                f.write("#define DEMO_UNUSED 1\n")
            self.assertEqual(self.spatched()[0], first)

    def test_a_result_with_problems_is_not_kept(self):
        real = convert._spatch

        def timing_out(directory, path, env, scratch):
            text, records, problems = real(directory, path, env, scratch)
            if path == "runtime_init.c":
                problems = [f"{path}: timeout"]
            return text, records, problems

        with mock.patch.object(convert, "_spatch", timing_out):
            convert.convert(self.dir, self.yaml, jobs=2, cache=self.cache)
        self.assertEqual(self.spatched()[0], ["runtime_init.c"])

    def test_the_same_text_elsewhere_is_another_key(self):
        fixed = ("f", set())
        shutil.copy(os.path.join(self.dir, "runtime_init.c"),
                    os.path.join(self.dir, "copy.c"))
        table = {"symbols": {}}
        self.assertNotEqual(
            convert.spatch_key(self.dir, "runtime_init.c", table, fixed),
            convert.spatch_key(self.dir, "copy.c", table, fixed))


class UnlistedBareTest(unittest.TestCase):
    def test_bare_heads_of_every_declaration_form_are_found(self):
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "a.c"), "w",
                      encoding="utf-8") as f:
                f.write("static struct notifier_block *foo __read_mostly;\n"
                        "static struct notifier_block *x, *bar;\n"
                        "struct notifier_block *baz(void);\n"
                        "struct notifier_head listed;\n"
                        "void f(struct notifier_block *nb)\n{\n"
                        "\tnotifier_chain_register(&foo, nb);\n"
                        "\tnotifier_call_chain(&bar, 0, nb);\n"
                        "\tnotifier_chain_register(&baz, nb);\n"
                        "\tnotifier_chain_register(&listed, nb);\n"
                        "\tnotifier_chain_register(&x, nb);\n}\n")
            with open(os.path.join(folder, "b.c"), "w",
                      encoding="utf-8") as f:
                # Not heads: a parameter, and a local of the new type
                # whose name a parameter elsewhere has (kernel/notifier_
                # kunit.c's nh in the converted tree).
                f.write("static int g(struct notifier_block *nh)\n{\n"
                        "\tstruct notifier_head listed;\n"
                        "\treturn notifier_chain_register(&nh, NULL);\n}\n")
            errors = convert.unlisted_bare(folder, {"x"}, "c.yaml")
        self.assertEqual([e.split(":")[:2] for e in errors],
                         [["a.c", "8"], ["a.c", "7"]])


class RetabTest(unittest.TestCase):
    def test_spaces_after_tabs_become_tabs_on_changed_lines_only(self):
        old = ("\tret = atomic_notifier_chain_unregister(&a->nh,\n"
               "\t\t\t\t\t\t &a->nb);\n"
               "\t        x;\n")
        new = ("\tret = notifier_chain_unregister(&a->nh,\n"
               "\t\t\t\t         &a->nb);\n"
               "\t        x;\n")
        self.assertEqual(convert.retab(old, new),
                         "\tret = notifier_chain_unregister(&a->nh,\n"
                         "\t\t\t\t\t &a->nb);\n"
                         "\t        x;\n")


if __name__ == "__main__":
    unittest.main()
