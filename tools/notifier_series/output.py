"""Output folders under out/: built as <folder>.new and put in place whole
at the end, so that a failed run leaves the previous output as it was."""

import contextlib
import json
import os
import shutil
import tempfile


def stage(folder):
    """A fresh <folder>.new to build the output in."""
    new = folder + ".new"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new)
    return new


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@contextlib.contextmanager
def replaced(path, mode="w"):
    """A file to write, which replaces `path` whole when the block ends
    without an exception: a temporary file of the same folder until
    then (two writers of one path have one each), removed on an
    exception.  It keeps the mode of the file it replaces, else 0644.
    The one way the toolkit writes a file that another may read."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".",
                               suffix=".new")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {
                "encoding": "utf-8", "errors": "surrogateescape"})) as f:
            yield f
        if os.path.exists(path):
            shutil.copymode(path, tmp)
        else:
            os.chmod(tmp, 0o644)        # mkstemp's is 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path, text):
    """Writes `text` to `path`, replacing it whole (replaced())."""
    with replaced(path) as f:
        f.write(text)


def write_json(path, data, indent=1):
    """Writes `data` as JSON to `path`, replacing it whole."""
    with replaced(path) as f:
        json.dump(data, f, indent=indent)
        f.write("\n")


def publish(new, folder, name=None, data=None):
    """Writes `data` as JSON to <new>/<name>, when named, then replaces
    `folder` with `new`."""
    if name:
        with open(os.path.join(new, name), "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(new, folder)
