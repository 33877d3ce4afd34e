"""The mutation test's reading of a mutant patch and of its boot."""

import glob
import os
import tempfile
import unittest

from tests import booted, tools_path  # noqa: F401
from notifier_series import mutation, output, runtime
from notifier_series.progress import Error


def boot(tests, splats=(), brackets=()):
    return booted(kunit={"tests": tests},
                  splats=[{"text": t, "expected": e} for t, e in splats],
                  expected_warnings=[{"line": 7, "text": t, "seen": n,
                                      "closed": closed}
                                     for t, n, closed in brackets])


class MutationTest(unittest.TestCase):
    def test_every_mutant_says_how_it_is_caught(self):
        patches = glob.glob(os.path.join(mutation.FOLDER, "*.patch"))
        patches += glob.glob(os.path.join(mutation.FOLDER, "slow", "*.patch"))
        self.assertGreaterEqual(len(patches), 8)
        for patch in patches:
            self.assertTrue(any(mutation.expectations(patch).values()),
                            patch)

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
            {"fail": ["n.a", "n.b", "n.c"],
             "splat": ["PID: 0 at kernel/notifier.c", "lib/x.c"],
             "missing": []})
        self.assertEqual(found["test n.a"], "FAIL")
        self.assertIsNone(found["test n.b"])
        self.assertIsNone(found["test n.c"])
        self.assertIn("kernel/notifier.c", found[
            "splat 'PID: 0 at kernel/notifier.c'"])
        # an expected (bracketed) warning does not catch a mutant
        self.assertIsNone(found["splat 'lib/x.c'"])

    def test_a_warning_that_never_came_catches_a_mutant(self):
        expected = {"fail": [], "splat": [], "missing": ["no valid type"]}
        found = mutation.judge(
            boot({}, brackets=[("has no valid type", 0, True)]), expected)
        self.assertIn("never came", found["missing warning 'no valid type'"])
        found = mutation.judge(
            boot({}, brackets=[("has no valid type", 1, True)]), expected)
        self.assertIsNone(found["missing warning 'no valid type'"])
        # A bracket the kernel never closed (it died inside) proves nothing.
        found = mutation.judge(
            boot({}, brackets=[("has no valid type", 0, False)]), expected)
        self.assertIsNone(found["missing warning 'no valid type'"])


class RuntimeMutantTest(unittest.TestCase):
    """The runtime test's mutant, on a boot recorded in the folder layout
    of tests/fixtures/runtime/<kver>/."""

    def recorded(self, folder):
        from tests.test_runtime import DETAILS, lines, port
        import gzip
        os.makedirs(os.path.join(folder, "6.1"))
        for name, text in (("console.log.gz", lines()),
                           ("trace.log.gz", port())):
            with gzip.open(os.path.join(folder, "6.1", name), "wt") as f:
                f.write("\n".join(text))
        output.write_json(os.path.join(folder, "6.1", "details.json"),
                          runtime.trim(DETAILS))

    def test_caught_on_the_recorded_boot(self):
        from tests.test_runtime import CLASSES
        with tempfile.TemporaryDirectory() as tmp:
            self.recorded(os.path.join(tmp, "rec"))
            saved = runtime.RECORDED, runtime.yaml_classes
            runtime.RECORDED = os.path.join(tmp, "rec")
            runtime.yaml_classes = lambda kver: CLASSES
            try:
                m = mutation.runtime_mutant("6.1", os.path.join(tmp, "out"))
                runtime.RECORDED = os.path.join(tmp, "none")
                missing = mutation.runtime_mutant("6.1",
                                                  os.path.join(tmp, "out"))
            finally:
                runtime.RECORDED, runtime.yaml_classes = saved
        self.assertTrue(m["caught"], m)
        self.assertIn("keyboard_notifier_list", " ".join(m["caught_by"]))
        self.assertFalse(missing["caught"])


if __name__ == "__main__":
    unittest.main()
