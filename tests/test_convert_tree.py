"""The conversion stage's search for typed API uses left in a tree: it
finds them, skips comments, and fails closed when git grep fails."""

import os
import shutil
import tempfile
import unittest

from unittest import mock

from tests.fake_kernel import make_tarball
from tests.test_convert import FIXTURE, YAML
from notifier_series import convert, convert_tree, tree
from notifier_series.progress import Error
from tests import needs_spatch


class TypedUsesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.kernel = tree.prepare("9.9", os.path.join(self.tmp, "work"),
                                   make_tarball(self.tmp, extra={
                                       "a/a.c": "static struct "
                                       "atomic_notifier_head a_chain;\n"
                                       " * atomic_notifier_call_chain() in "
                                       "a comment\n",
                                       "b/b.c": "int notifier_chain_register"
                                       "(void);\n"}))

    def test_uses_are_found_and_comments_skipped(self):
        self.assertEqual(convert_tree.typed_uses(self.kernel.path),
                         ["a/a.c:1:static struct atomic_notifier_head "
                          "a_chain;"])

    def test_a_search_that_fails_is_an_error(self):
        with self.assertRaises(Error):
            convert_tree.typed_uses(os.path.join(self.tmp, "no-such-tree"))


@needs_spatch
class ConversionKeptTest(unittest.TestCase):
    """A conversion of the same core tree, classification and semantic
    patches is checked out from the cache, not made again; the second
    run's answer too."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        files = {}
        for name in ("members.c", "public.c"):
            with open(os.path.join(FIXTURE, name), encoding="utf-8") as f:
                files[name] = f.read()
        self.kernel = tree.prepare("9.9", os.path.join(self.tmp, "work"),
                                   make_tarball(self.tmp, extra=files))
        self.yaml = os.path.join(self.tmp, "linux-9.9.yaml")
        shutil.copy(YAML, self.yaml)

    def convert_branch(self):
        calls = []
        real = convert.convert

        def counted(*args, **kwargs):
            calls.append(kwargs.get("in_place", False))
            return real(*args, **kwargs)
        with mock.patch.object(convert_tree.classification, "yaml_path",
                               lambda kver: self.yaml), \
                mock.patch.object(convert_tree.patches, "core_patches",
                                  lambda kver: []), \
                mock.patch.object(convert_tree.convert, "convert", counted), \
                mock.patch.object(convert_tree.tree, "prepare",
                                  lambda kver, work=None: self.kernel):
            _, _, report = convert_tree.convert_branch(
                "9.9", work=os.path.join(self.tmp, "work"),
                out=os.path.join(self.tmp, "out"), jobs=2)
        return calls, report, tree.git(self.kernel.path, "rev-parse",
                                       "HEAD^{tree}").strip()

    def test_the_same_inputs_are_not_converted_again(self):
        calls, first, converted = self.convert_branch()
        self.assertEqual(calls, [True, False])
        self.assertTrue(first.files_changed)
        calls, again, same = self.convert_branch()
        self.assertEqual(calls, [])
        self.assertEqual((again.files_changed, same),
                         (first.files_changed, converted))
        with open(self.yaml, "a", encoding="utf-8") as f:
            f.write("# another classification\n")
        calls, _, _ = self.convert_branch()
        self.assertEqual(calls, [True, False])
