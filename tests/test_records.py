"""records: the typed records' one JSON form."""

import copy
import dataclasses
import json
import os
import pickle
import tempfile
import unittest

from notifier_series import output, records
from tests import booted


def convert_report(**later):
    fields = dict(
        directory="/k", classification="c.yaml", files_searched=3,
        files_changed=["a.c"], chains_converted=1, chains_excluded=[],
        class_changed=[], unconverted=[], converted_by_text=[],
        comments_renamed=[], locks_removed=[], locks_kept=[],
        unregister_added=[], init_unresolved=[], spatch_problems=[],
        errors=[], seconds=1.5)
    return records.ConvertReport(**fields, **later)


class RecordTest(unittest.TestCase):
    def test_a_boot_result_keeps_the_keys_of_result_json(self):
        # result.json as boottest.run() wrote it, a dict, before the record.
        started = ["kernel", "package", "arch", "commit", "outcome",
                   "reasons", "kunit", "checkpatch", "sparse", "splats",
                   "expected_warnings", "torture", "torture_types",
                   "build_seconds", "boot_seconds", "timeout", "timed_out",
                   "reproduce"]
        result = booted()
        self.assertEqual(list(result.to_json()), started)
        result.killed, result.stopped_after_restart = None, False
        result.qemu_status, result.kernel_release = None, "6.1.0"
        self.assertEqual(list(result.to_json()), started + [
            "killed", "stopped_after_restart", "qemu_status",
            "kernel_release"])
        self.assertFalse(booted().qemu_status)

    def test_fields_a_later_stage_fills_are_left_out_until_it_does(self):
        report = convert_report()
        self.assertNotIn("typed_api_left", report.to_json())
        report.typed_api_left = []
        self.assertEqual(report.to_json()["typed_api_left"], [])
        self.assertEqual(list(report.to_json())[-1], "typed_api_left")

    def test_round_trip_through_the_one_writer(self):
        report = convert_report(typed_api_left=["x.c:1"],
                                second_run_files_changed=[], commit="c0")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "report.json")
            output.write_json(path, report)
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        # convert's report.json as the dict of before the record wrote it.
        self.assertEqual(list(data), [
            "directory", "classification", "files_searched", "files_changed",
            "chains_converted", "chains_excluded", "class_changed",
            "unconverted", "converted_by_text", "comments_renamed",
            "locks_removed", "locks_kept", "unregister_added",
            "init_unresolved", "spatch_problems", "errors", "seconds",
            "typed_api_left", "second_run_files_changed", "commit"])
        self.assertEqual(records.ConvertReport.from_json(data), report)

    def test_evidence_is_kept_and_read_back_whole(self):
        found = records.Evidence(
            records=[{"kind": "head", "file": "a.c", "line": 3,
                      "declared": "atomic"}], problems=[], unparsed=[],
            files={"api": 1, "callers": 0}, wrappers=[], not_followed=[])
        self.assertNotIn("stamp", found.to_json())
        found.seconds, found.stamp = 1.0, {"commit": "c0"}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "evidence.json")
            output.write_json(path, found)
            with open(path, encoding="utf-8") as f:
                self.assertEqual(records.Evidence.from_json(json.load(f)),
                                 found)

    def test_series_and_evidence_keep_the_keys_of_their_dicts(self):
        # The order in which series.run() and evidence.collect() filled
        # their dicts before the records.
        self.assertEqual([f.name for f in dataclasses.fields(
            records.SeriesReport)], [
            "kernel", "patches", "subsystem_patches", "violations",
            "conversion", "locks_removed", "unregister_added", "checkpatch",
            "typed_api_left", "checkpatch_errors", "applies", "applies_why",
            "compile_test", "patch_ids", "bisect", "boot_test", "since",
            "port", "summary", "revision", "change_id", "b4_applies",
            "b4_applies_why", "green", "seconds"])
        self.assertEqual([f.name for f in dataclasses.fields(
            records.Evidence)], [
            "records", "problems", "unparsed", "files", "wrappers",
            "not_followed", "seconds", "stamp"])

    def test_later_stays_later_through_copies(self):
        # A copy, a deep copy or a pickle of a record does not turn a
        # field still to be filled into one that to_json() writes.
        result = booted()
        for copied in (copy.copy(result), copy.deepcopy(result),
                       pickle.loads(pickle.dumps(result)),
                       dataclasses.replace(result)):
            self.assertIs(copied.qemu_status, records.LATER)
            self.assertEqual(copied.to_json(), result.to_json())

    def test_an_unknown_field_is_refused(self):
        data = convert_report().to_json()
        data["chains"] = 3
        with self.assertRaises(TypeError):
            records.ConvertReport.from_json(data)


if __name__ == "__main__":
    unittest.main()
