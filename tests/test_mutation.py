"""The mutation test's reading of a mutant patch and of its boot."""

import glob
import os
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import mutation
from notifier_series.progress import Error


def boot(tests, splats=()):
    return {"kunit": {"tests": tests},
            "splats": [{"text": t, "expected": e} for t, e in splats]}


class MutationTest(unittest.TestCase):
    def test_every_mutant_says_how_it_is_caught(self):
        patches = glob.glob(os.path.join(mutation.FOLDER, "*.patch"))
        self.assertGreaterEqual(len(patches), 3)
        for patch in patches:
            fails, splats = mutation.expectations(patch)
            self.assertTrue(fails or splats, patch)

    def test_patch_without_expectation_is_an_error(self):
        with tempfile.NamedTemporaryFile("w", suffix=".patch") as f:
            f.write("Subject: [PATCH] MUTANT: x\n\n---\n")
            f.flush()
            with self.assertRaisesRegex(Error, "Expect-Fail"):
                mutation.expectations(f.name)

    def test_judge(self):
        found = mutation.judge(
            boot({"n.a": "FAIL", "n.b": "PASS"},
                 [("WARNING: CPU: 0 PID: 0 at kernel/notifier.c:1", False),
                  ("WARNING: CPU: 1 PID: 9 at lib/x.c:2", True)]),
            ["n.a", "n.b", "n.c"], ["PID: 0 at kernel/notifier.c",
                                    "lib/x.c"])
        self.assertEqual(found["test n.a"], "FAIL")
        self.assertIsNone(found["test n.b"])
        self.assertIsNone(found["test n.c"])
        self.assertIn("kernel/notifier.c", found[
            "splat 'PID: 0 at kernel/notifier.c'"])
        # an expected (bracketed) warning does not catch a mutant
        self.assertIsNone(found["splat 'lib/x.c'"])


if __name__ == "__main__":
    unittest.main()
