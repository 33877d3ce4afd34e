"""Results kept between runs in a folder of the work folder's cache
(tree.cache()), each under the digest of every input it depends on, so
that a changed input is a different key and never a stale answer.  Safe
to delete: a missing or unreadable entry is computed again."""

import hashlib
import json
import os

from . import output


def key(*parts):
    """The digest of `parts` (str or bytes), each delimited."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        h.update(str(len(data)).encode() + b":" + data)
    return h.hexdigest()


def _path(folder, digest):
    return os.path.join(folder, digest[:2], digest + ".json")


def get(folder, digest):
    """The value kept under `digest`, or None."""
    try:
        with open(_path(folder, digest), encoding="utf-8") as f:
            return json.load(f)["value"]
    except (OSError, ValueError, KeyError):
        return None


def put(folder, digest, value):
    """Keeps `value` (JSON) under `digest`, replacing the file whole."""
    path = _path(folder, digest)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    output.write_json(path, {"value": value}, indent=None, sync=False)


def cached(folder, digest, compute, keep=lambda value: True):
    """get(), or compute() kept with put() when keep(value) (a result
    that says its tool failed is not kept); no folder: compute()."""
    if folder is None:
        return compute()
    value = get(folder, digest)
    if value is None:
        value = compute()
        if keep(value):
            put(folder, digest, value)
    return value
