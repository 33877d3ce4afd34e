"""The records that stages return to each other, typed, and their one
JSON form: a record is written by output.write_json() and
output.publish() as to_json() gives it, and read back by from_json()."""

import dataclasses


@dataclasses.dataclass
class Record:
    """A record's fields, in the order its JSON gives them; a field that
    a later stage fills in (default None) is left out until it is."""

    def to_json(self):
        optional = {f.name for f in dataclasses.fields(self)
                    if f.default is None}
        return {k: v for k, v in dataclasses.asdict(self).items()
                if v is not None or k not in optional}

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
    typed_api_left: list = None
    second_run_files_changed: list = None
    commit: str = None
