"""Output folders under out/: built as <folder>.new and put in place whole
at the end, so that a failed run leaves the previous output as it was."""

import json
import os
import shutil


def stage(folder):
    """A fresh <folder>.new to build the output in."""
    new = folder + ".new"
    shutil.rmtree(new, ignore_errors=True)
    os.makedirs(new)
    return new


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, data):
    """Writes `data` as JSON to `path`, replacing it whole."""
    with open(path + ".new", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(path + ".new", path)


def publish(new, folder, name=None, data=None):
    """Writes `data` as JSON to <new>/<name>, when named, then replaces
    `folder` with `new`."""
    if name:
        with open(os.path.join(new, name), "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(new, folder)
