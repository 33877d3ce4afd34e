"""The conversion stage's search for typed API uses left in a tree: it
finds them, skips comments, and fails closed when git grep fails."""

import os
import shutil
import tempfile
import unittest

from tests.fake_kernel import make_tarball
from tools.notifier_series import convert_tree, tree
from tools.notifier_series.progress import Error


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
