"""Output folders under out/: built as <folder>.new and put in place whole
at the end, so that a failed run leaves the previous output as it was."""

import contextlib
import json
import os
import shutil
import tempfile

from . import records


def stage(folder):
    """A fresh <folder>.new to build the output in."""
    new = folder + ".new"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new)
    return new


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# The mode a new file gets from open(), read once: a thread may write
# while another reads it, so it is not read per call.
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextlib.contextmanager
def replaced(path, mode="w", errors="strict", sync=True):
    """A file to write, which replaces `path` whole when the block ends
    without an exception: a temporary file of the same folder until
    then (two writers of one path have one each, named after it),
    removed on an exception, and with `sync` on disk before it replaces
    `path`.  It keeps the mode of the file it replaces, else takes the
    one open() would give.  The one way the toolkit writes a file that
    another may read."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".new",
                               prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {
                "encoding": "utf-8", "errors": errors})) as f:
            yield f
            if sync:
                f.flush()
                os.fsync(f.fileno())
        if os.path.exists(path):
            shutil.copymode(path, tmp)
        else:
            os.chmod(tmp, 0o666 & ~_UMASK)     # mkstemp's is 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path, text, errors="strict"):
    """Writes `text` to `path`, replacing it whole (replaced())."""
    with replaced(path, errors=errors) as f:
        f.write(text)


def write_json(path, data, indent=1, sync=True):
    """Writes `data` as JSON to `path`, replacing it whole; a cache's
    entry, which a crash may lose, without `sync`."""
    with replaced(path, sync=sync) as f:
        json.dump(records.jsonable(data), f, indent=indent)
        f.write("\n")


def publish(new, folder, name=None, data=None):
    """Writes `data` as JSON to <new>/<name>, when named, then replaces
    `folder` with `new`."""
    if name:
        write_json(os.path.join(new, name), data)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(new, folder)
