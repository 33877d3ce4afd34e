"""The records that stages return to each other, typed, and their one
JSON form: a record is written by output.write_json() and
output.publish() as to_json() gives it, and read back by from_json()."""

import dataclasses


class _Later:
    """The value of a field that a later step fills in."""

    def __repr__(self):
        return "LATER"

    def __bool__(self):
        return False

    # One LATER, whatever copies or unpickles it: to_json() tests for it
    # by identity.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return "LATER"


LATER = _Later()


@dataclasses.dataclass
class Record:
    """A record's fields, in the order its JSON gives them; a field still
    LATER is left out."""

    def to_json(self):
        return {f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)
                if getattr(self, f.name) is not LATER}

    @classmethod
    def from_json(cls, data):
        return cls(**data)


def jsonable(data):
    """`data` as json.dump() takes it: a record's to_json()."""
    return data.to_json() if isinstance(data, Record) else data


@dataclasses.dataclass
class ConvertReport(Record):
    """What convert.convert() did to a directory; convert_tree adds the
    last three fields for a whole tree."""
    directory: str
    classification: str
    files_searched: int
    files_changed: list
    chains_converted: int
    chains_excluded: list
    class_changed: list
    unconverted: list
    converted_by_text: list
    comments_renamed: list
    locks_removed: list
    locks_kept: list
    unregister_added: list
    init_unresolved: list
    spatch_problems: list
    errors: list
    seconds: float
    typed_api_left: list = LATER
    second_run_files_changed: list = LATER
    commit: str = LATER


def _no_kunit():
    return {"passed": 0, "failed": 0, "skipped": 0, "tests": {},
            "parser_ok": False}


@dataclasses.dataclass(kw_only=True)
class BootResult(Record):
    """What boottest.run() built and booted, what each check found, and
    the outcome (boottest.OUTCOMES) with its reasons.  archboot adds the
    proof of the fixes."""
    kernel: str
    package: str
    arch: str
    commit: str
    outcome: str = "harness-error"
    reasons: list = dataclasses.field(default_factory=list)
    kunit: dict = dataclasses.field(default_factory=_no_kunit)
    checkpatch: dict = None
    sparse: list = None
    splats: list = dataclasses.field(default_factory=list)
    expected_warnings: list = dataclasses.field(default_factory=list)
    torture: dict = dataclasses.field(default_factory=dict)
    torture_types: list = dataclasses.field(default_factory=list)
    build_seconds: float = None
    boot_seconds: float = None
    timeout: int
    timed_out: bool = False
    reproduce: dict
    # Once QEMU has run:
    killed: str = LATER
    stopped_after_restart: bool = LATER
    qemu_status: int = LATER
    kernel_release: str = LATER
    proof: list = LATER


@dataclasses.dataclass
class Evidence(Record):
    """What spatch found in a checkout (evidence.collect()): the records of
    cocci/notifier_evidence.cocci, spatch's problems, the files it parsed
    only in part, how many files each pass read, the wrappers whose
    callers it followed and those it did not; classify adds how long it
    took and what made it."""
    records: list
    problems: list
    unparsed: list
    files: dict
    wrappers: list
    not_followed: list
    seconds: float = LATER
    stamp: dict = LATER


@dataclasses.dataclass(kw_only=True)
class SeriesReport(Record):
    """What series.run() made and what each check found, in the order it
    finds them: the patches and the gate's verdicts, what the conversion
    did, checkpatch and the application to the pristine tree, the
    compile-test, the bisect record of these patches, the boot test, the
    comparison with the series before, and whether it is all green."""
    kernel: str
    patches: int
    subsystem_patches: int
    violations: dict
    conversion: dict
    locks_removed: list
    unregister_added: list
    checkpatch: dict = LATER
    typed_api_left: list = LATER
    checkpatch_errors: int = LATER
    applies: bool = LATER
    applies_why: str = LATER
    compile_test: dict = LATER
    patch_ids: list = LATER
    bisect: dict = LATER
    boot_test: dict = LATER
    since: dict = LATER
    port: dict = LATER
    summary: list = LATER
    revision: int = LATER
    change_id: str = LATER
    b4_applies: bool = LATER
    b4_applies_why: str = LATER
    green: bool = LATER
    seconds: float = LATER
