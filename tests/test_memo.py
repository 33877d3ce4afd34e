"""Results kept between runs by the content of their inputs (memo): the
checks of a patch (checkpatch.pl, get_maintainer.pl) and the MAINTAINERS
section of a file are not run again when nothing they depend on changed,
and always when one input did."""

import os
import shutil
import subprocess
import tempfile
import unittest
import unittest.mock

from tests import tools_path  # noqa: F401
from tests.fake_kernel import IDENT, git
from notifier_series import checkpatch, mail, maintainers, memo, split
from notifier_series.progress import Error

CHECKPATCH = """#!/bin/sh
echo "$1 $2 $3 $4 $5" >> "$(dirname "$0")/../checkpatch.calls"
echo "total: 0 errors, 1 warnings, 0 checks, 10 lines checked"
"""
GET_MAINTAINER = """open(my $log, '>>', 'get_maintainer.calls');
print $log "call\\n";
print "Alice <alice\\@example.org>\\n" unless grep { $_ eq '--no-m' } @ARGV;
print "Bob <bob\\@example.org>\\n";
print "list\\@vger.example.org\\n" if grep { $_ eq '--no-m' } @ARGV;
print "\\nDEMO\\nM:\\tAlice <alice\\@example.org>\\nF:\\tkernel/\\n"
    if grep { $_ eq '--sections' } @ARGV;
"""
PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: T <t@example.org>
Date: {date}
Subject: [PATCH] kernel: Demo

Signed-off-by: T <t@example.org>
---
 kernel/demo.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/kernel/demo.c b/kernel/demo.c
--- a/kernel/demo.c
+++ b/kernel/demo.c
@@ -1 +1 @@
-int demo;
+int {name};
"""


class MemoTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.tree = os.path.join(self.tmp, "linux")
        os.makedirs(os.path.join(self.tree, "scripts"))
        os.makedirs(os.path.join(self.tree, "kernel"))
        self.write("scripts/checkpatch.pl", CHECKPATCH)
        os.chmod(os.path.join(self.tree, "scripts/checkpatch.pl"), 0o755)
        self.write("scripts/get_maintainer.pl", GET_MAINTAINER)
        self.write("MAINTAINERS", "DEMO\nF:\tkernel/\n")
        self.write("kernel/demo.c", "int demo;\n")
        subprocess.run(["git", "init", "-q", self.tree], check=True)
        git(self.tree, "add", ".")
        git(self.tree, *IDENT, "commit", "-q", "-m", "tree")
        git(self.tree, "tag", "pristine")
        self.cache = os.path.join(self.tmp, "cache")

    def write(self, name, text, folder=None):
        path = os.path.join(folder or self.tree, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def calls(self, name):
        try:
            with open(os.path.join(self.tree, name)) as f:
                return len(f.readlines())
        except FileNotFoundError:
            return 0

    def patch(self, date="Mon, 7 Dec 2026 10:00:00 +0000", name="demo2"):
        return self.write("0001-demo.patch", PATCH.format(date=date,
                                                          name=name),
                          self.tmp)

    def test_keys_delimit_their_parts(self):
        self.assertNotEqual(memo.key("ab", "c"), memo.key("a", "bc"))
        self.assertEqual(memo.key("a", b"b"), memo.key(b"a", "b"))

    def test_checkpatch_of_a_patch_made_again(self):
        first = checkpatch.run(self.tree, [self.patch()], 1, self.cache)
        self.assertEqual(self.calls("checkpatch.calls"), 1)
        # The same patch committed again: only its date differs.
        again = checkpatch.run(self.tree, [self.patch(
            date="Tue, 8 Dec 2026 11:00:00 +0000")], 1, self.cache)
        self.assertEqual(self.calls("checkpatch.calls"), 1)
        self.assertEqual(again, first)
        self.assertEqual(again["warnings"], 1)
        # Another change; then another checkpatch.pl.
        checkpatch.run(self.tree, [self.patch(name="demo3")], 1,
                       self.cache)
        self.assertEqual(self.calls("checkpatch.calls"), 2)
        with open(os.path.join(self.tree, "scripts/checkpatch.pl"),
                  "a") as f:
            f.write("# changed\n")
        checkpatch.run(self.tree, [self.patch(name="demo3")], 1,
                       self.cache)
        self.assertEqual(self.calls("checkpatch.calls"), 3)

    def test_to_and_cc_of_a_patch_made_again(self):
        state = maintainers.state(self.tree)
        to, cc = mail.mail_headers(self.tree, self.patch(), self.cache,
                                   state)
        self.assertEqual(to, ["Alice <alice@example.org>",
                              "Bob <bob@example.org>"])
        self.assertEqual(cc, ["list@vger.example.org"])
        self.assertEqual(self.calls("get_maintainer.calls"), 2)
        self.assertEqual(mail.mail_headers(
            self.tree, self.patch(date="Wed, 9 Dec 2026 00:00:00 +0000"),
            self.cache, maintainers.state(self.tree)), (to, cc))
        self.assertEqual(self.calls("get_maintainer.calls"), 2)
        with open(os.path.join(self.tree, "MAINTAINERS"), "a") as f:
            f.write("\nOTHER\nF:\tkernel/other.c\n")
        mail.mail_headers(self.tree, self.patch(), self.cache,
                          maintainers.state(self.tree))
        self.assertEqual(self.calls("get_maintainer.calls"), 4)

    def test_a_tool_that_failed_is_not_kept(self):
        # A checkpatch.pl that dies before its verdict.
        self.write("scripts/checkpatch.pl", CHECKPATCH.replace(
            'echo "total', 'exit 2; echo "total'))
        for _ in range(2):
            report = checkpatch.run(self.tree, [self.patch()], 1,
                                    self.cache)
        self.assertEqual(report["errors"], 1)
        self.assertEqual(self.calls("checkpatch.calls"), 2)
        self.write("scripts/get_maintainer.pl", "exit 2;\n")
        with self.assertRaisesRegex(Error, "get_maintainer.pl failed"):
            mail.mail_headers(self.tree, self.patch(), self.cache,
                              maintainers.state(self.tree))

    def test_sections_of_files(self):
        files = ["kernel/demo.c"]
        self.assertEqual(split.subsystems(self.tree, files, 1, self.cache),
                         {"kernel/demo.c": "DEMO"})
        split.subsystems(self.tree, files, 1, self.cache)
        self.assertEqual(self.calls("get_maintainer.calls"), 1)
        with open(os.path.join(self.tree, "MAINTAINERS"), "a") as f:
            f.write("\nOTHER\nF:\tkernel/other.c\n")
        split.subsystems(self.tree, files, 1, self.cache)
        self.assertEqual(self.calls("get_maintainer.calls"), 2)


class CodeStateTest(unittest.TestCase):
    """A key that holds the code of some modules holds the modules they
    import, directly or not, and no other."""

    MODULES = {
        "a": "import os\n\nfrom . import (b,\n                c)\n",
        "b": "from .d import X  # noqa\n\n\ndef f():\n"
             "    from . import e as E, \\\n        g\n",
        "c": "X = 1\n", "d": "X = 2\n", "e": "Y = 3\n", "f": "Z = 4\n",
        "g": "from os import path\n"}

    def test_the_modules_imported(self):
        from notifier_series import tree
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        for name, text in self.MODULES.items():
            with open(os.path.join(folder, name + ".py"), "w") as f:
                f.write(text)
        with unittest.mock.patch.object(tree, "PACKAGE", folder):
            self.assertEqual({os.path.basename(p)[:-3]
                              for p in tree.imported("a")},
                             {"a", "b", "c", "d", "e", "g"})
            before = tree.code_state("a")
            with open(os.path.join(folder, "f.py"), "a") as f:
                f.write("# another module\n")
            self.assertEqual(tree.code_state("a"), before)
            with open(os.path.join(folder, "e.py"), "a") as f:
                f.write("# imported inside a function of b\n")
            self.assertNotEqual(tree.code_state("a"), before)
            extra = os.path.join(folder, "rules.cocci")
            with open(extra, "w") as f:
                f.write("@@\n@@\n")
            self.assertNotEqual(tree.code_state("a", files=[extra]),
                                tree.code_state("a"))
