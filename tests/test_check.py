"""make check: its steps, the README's list of them, and the table."""

import importlib.machinery
import io
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

from tests import tools_path  # noqa: F401
from notifier_series import check, output, progress, tree


def readme_block(pattern):
    """The first group of `pattern` in the README."""
    with open(os.path.join(tree.REPO, "README.md"), encoding="utf-8") as f:
        return re.search(pattern, f.read(), re.S).group(1)


class StepsTest(unittest.TestCase):
    def test_the_readme_lists_the_steps_that_run(self):
        block = readme_block(r"## What `make check` runs\n\n```\n(.*?)```")
        listed = [line.split("#")[0].strip() for line in block.splitlines()]
        self.assertEqual(listed, [check.command_line(s)
                                  for s in check.STEPS])

    def test_the_readme_lists_the_steps_of_check_more(self):
        block = readme_block(r"`make\s+check-more`.*?runs:\n\n```\n(.*?)```")
        self.assertEqual(block.splitlines(), [check.command_line(s)
                                              for s in check.MORE])


class RunTest(unittest.TestCase):
    def run_with(self, statuses):
        calls = []

        def runner(argv, cwd):
            calls.append(argv)
            return statuses[len(calls) - 1]

        with tempfile.TemporaryDirectory() as out:
            status = check.run("/work", out, runner=runner)
            record = output.read_json(os.path.join(out, "check.json"))
        return status, calls, record["steps"]

    def test_every_step_runs_when_all_pass(self):
        status, calls, rows = self.run_with([0] * len(check.STEPS))
        self.assertEqual(status, 0)
        self.assertEqual(len(calls), len(check.STEPS))
        self.assertEqual(calls[1][2:6], ["--work", "/work", "boot-test",
                                         "6.1"])
        self.assertEqual([r["status"] for r in rows], [0] * len(rows))

    def test_the_first_failure_stops_the_run_with_its_status(self):
        status, calls, rows = self.run_with([0, 0, 2, 0, 0, 0])
        self.assertEqual(status, 2)
        self.assertEqual(len(calls), 3)
        self.assertEqual([r["status"] for r in rows],
                         [0, 0, 2] + [None] * (len(check.STEPS) - 3))

    def test_the_table_names_each_step_its_status_and_time(self):
        rows = [{"step": "a", "status": 0, "seconds": 61.0},
                {"step": "bb", "status": 4, "seconds": 3600.0},
                {"step": "c", "status": None, "seconds": 0.0}]
        self.assertEqual(check.table(rows).splitlines(), [
            "step    status  time",
            "a            0    1 min 01 s",
            "bb           4   60 min 00 s",
            "c      not run    0 min 00 s",
            "total            61 min 01 s"])



class StatusTest(unittest.TestCase):
    def test_statuses_outside_the_table_are_mapped_into_it(self):
        self.assertEqual([check.status_of(s) for s in (0, 1, 2, 3, 4, 5,
                                                       -9, -2, 130)],
                         [0, 1, 2, 3, 4, 4, 4, 130, 130])

    def test_out_reaches_every_step_but_the_unit_tests(self):
        calls = []
        with tempfile.TemporaryDirectory() as out:
            check.run("/work", out, runner=lambda argv, cwd:
                      calls.append(argv) or 0)
        self.assertNotIn("--out", calls[0])
        self.assertTrue(all(c[-2:] == ["--out", out] for c in calls[1:]))


def cli_module():
    """tools/notifier-series, loaded as a module to call its main()."""
    loader = importlib.machinery.SourceFileLoader(
        "notifier_series_cli", os.path.join(tree.REPO, "tools",
                                            "notifier-series"))
    module = types.ModuleType(loader.name)
    module.__file__ = loader.path
    loader.exec_module(module)
    return module


class ExitStatusTest(unittest.TestCase):
    """One exit-status table: the README's is progress.EXIT_STATUS, and
    the CLI maps usage errors and unexpected exceptions into it."""

    def test_the_readme_gives_the_table(self):
        block = readme_block(r"## Exit status\n.*?\|---\|---\|\n(.*?)\n\n")
        self.assertEqual(block.splitlines(), [
            f"| {code} | {what} |" for code, what in progress.EXIT_STATUS])

    def cli(self, *argv):
        return subprocess.run(
            [sys.executable, os.path.join(tree.REPO, "tools",
                                          "notifier-series")] + list(argv),
            capture_output=True, text=True)

    def test_each_subcommand_says_what_it_does_and_its_statuses(self):
        cli = cli_module()
        for name in ("deps", "prepare", "boot-test", "mutation-test",
                     "torture-baseline", "classify", "callgraph", "convert",
                     "convert-tree", "series", "bench", "runtime-test",
                     "bisect", "check"):
            with self.subTest(name), self.assertRaises(SystemExit), \
                    mock.patch("sys.stdout", new_callable=io.StringIO) as out:
                cli.main([name, "--help"])
            # usage, then the description, then the arguments
            description = out.getvalue().split("\n\n")[1]
            self.assertFalse(description.startswith(("positional",
                                                     "options")))
            self.assertGreater(len(description.split()), 8)
            text = " ".join(out.getvalue().split())
            for code, what in progress.EXIT_STATUS:
                self.assertIn(" ".join(what.split()), text)

    def test_each_subcommand_calls_its_stage_as_its_signature_says(self):
        cli = cli_module()
        # Each stage takes its options by keyword: a call that names one
        # it does not have, or passes them by position, is a TypeError.
        for argv, module, name in (
                ("boot-test 6.1", cli.boottest, "run"),
                ("boot-test 6.1 --arch powerpc", cli.archboot, "run"),
                ("mutation-test 6.1", cli.mutation, "run"),
                ("torture-baseline 6.1", cli.torture_baseline, "run"),
                ("classify 6.1", cli.classify, "run"),
                ("callgraph 6.1", cli.classify, "callgraph_run"),
                ("convert . --classification c.yaml --patch p",
                 cli.convert, "convert"),
                ("convert-tree 6.1", cli.convert_tree, "run"),
                ("series 6.1", cli.series, "run"),
                ("bench 6.1 --memory-only", cli.bench, "run"),
                ("runtime-test 6.1", cli.runtime, "run"),
                ("bisect 6.1", cli.bisect, "run")):
            with self.subTest(argv), \
                    mock.patch.object(module, name, autospec=True) as stage, \
                    mock.patch.object(cli.distcc, "configure"), \
                    mock.patch.object(cli.convert, "summary"), \
                    mock.patch("sys.stdout", new_callable=io.StringIO):
                stage.return_value = mock.Mock(outcome="pass",
                                               spatch_problems=[])
                where = " --jobs 3" if module is cli.convert else \
                    " --out /o --jobs 3"
                cli.main(["--work", "/w"] + (argv + where).split())
                self.assertEqual(stage.call_count, 1)
                self.assertEqual(len(stage.call_args.args),
                                 2 if module in (cli.archboot, cli.convert)
                                 else 1)
                given = stage.call_args.kwargs
                self.assertEqual(given["jobs"], 3)
                if module is not cli.convert:
                    self.assertEqual((given["work"], given["out"]),
                                     ("/w", "/o"))

    def test_a_usage_error_is_an_input_error(self):
        proc = self.cli("no-such-command")
        self.assertEqual(proc.returncode, progress.HARNESS_ERROR)
        self.assertIn("invalid choice", proc.stderr)

    def test_an_unexpected_exception_is_a_harness_error(self):
        cli = cli_module()
        with mock.patch.object(cli.deps, "ensure",
                               side_effect=KeyError("bug")), \
                self.assertRaises(SystemExit) as cm, \
                mock.patch("sys.stderr", new_callable=io.StringIO) as err:
            cli.main(["deps"])
        self.assertEqual(cm.exception.code, progress.HARNESS_ERROR)
        self.assertIn("KeyError: 'bug'", err.getvalue())
        self.assertIn("error: unexpected error", err.getvalue())

    def test_convert_fails_when_spatch_reported_problems(self):
        cli = cli_module()
        for problems, status in ((["a.c: spatch exited 1"], 1), ([], 0)):
            with mock.patch.object(cli.convert, "convert",
                                   return_value=mock.Mock(
                                       spatch_problems=problems)), \
                    mock.patch.object(cli.convert, "summary",
                                      return_value=""), \
                    mock.patch("sys.stdout", new_callable=io.StringIO):
                self.assertEqual(cli.main(["convert", ".", "--classification",
                                           "c.yaml", "--patch", "p"]),
                                 status)

    def test_an_undecodable_classification_is_an_input_error(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "c.yaml")
            with open(path, "wb") as f:
                f.write(b"kernel: \xff\n")
            proc = self.cli("convert", folder, "--classification", path,
                            "--patch", os.path.join(folder, "p"))
        self.assertEqual(proc.returncode, progress.HARNESS_ERROR)
        self.assertEqual(proc.stderr, f"error: {path}:1: not UTF-8 text "
                         "(byte 0xff)\n")


if __name__ == "__main__":
    unittest.main()
