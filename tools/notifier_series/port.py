"""The port report of a series to a newer kernel: for each patch of the
older version's published series, the newer series' patch that carries
the same change (same subject, else a file in common), or why none does;
the chains new in the newer classification, the chains gone, and those
whose declared kind changed; and `git range-diff` of the two versions'
core patches."""

import glob
import os
import subprocess

from . import classification, tree
from .patches import core_patches, subject_of, touched_files
from .progress import Error


def series_patches(folder):
    """[(subject, [files])] of the patches of a published series folder,
    cover letter aside."""
    return [(subject_of(p), touched_files(p))
            for p in sorted(glob.glob(os.path.join(folder, "*.patch")))
            if not os.path.basename(p).startswith("0000")]


def match(old, new, old_entries, new_entries, new_files):
    """[(old subject, new subject or None, why none)]: each older patch
    with the newer one of the same subject, else the first that shares
    a file, else why none: its files are gone, or what became of the
    chains defined in them (`new_files`: the files of the newer tree)."""
    by_subject = {subject: subject for subject, _ in new}
    after = {e["chain"]: e for e in new_entries}
    rows = []
    for subject, files in old:
        found = by_subject.get(subject) or next(
            (s for s, fs in new if set(fs) & set(files)), None)
        why = None
        if found is None:
            gone = [f for f in files if f not in new_files]
            chains = [e for e in old_entries if e["defined"] in files]
            if gone == files:
                why = "its files are gone: " + ", ".join(files)
            else:
                why = "; ".join(
                    f"{e['chain']}: " + (
                        "no longer in the classification"
                        if e["chain"] not in after else
                        f"now {after[e['chain']]['class']} "
                        f"({after[e['chain']]['declared']}) in "
                        f"{after[e['chain']]['defined']}")
                    for e in chains) or ("no chain is defined in its "
                                         "files; what it converted is "
                                         "not converted in the newer "
                                         "tree")
        rows.append((subject, found, why))
    return rows


def chain_changes(old_entries, new_entries):
    """{"new": [...], "gone": [...], "declared": [...]} lines, by chain
    name (a chain that moved to another file is the same chain)."""
    def key(e):
        return e["chain"], e["defined"]
    before = {key(e): e for e in old_entries}
    after = {key(e): e for e in new_entries}
    names = {}
    for e in old_entries:
        names.setdefault(e["chain"], []).append(e)
    pairs, matched = [], set()
    for k, e in sorted(after.items()):
        old = before.get(k)
        if old is None and len(names.get(e["chain"], [])) == 1 and \
                key(names[e["chain"]][0]) not in after and \
                key(names[e["chain"]][0]) not in matched and \
                sum(n["chain"] == e["chain"] for n in after.values()) == 1:
            old = names[e["chain"]][0]      # moved to another file
        if old is not None:
            matched.add(key(old))
        pairs.append((old, e))

    def line(e):
        return f"{e['defined']}: {e['chain']} ({e['declared']}, {e['class']})"
    return {
        "new": [line(e) for old, e in pairs if old is None],
        "gone": [line(e) for k, e in sorted(before.items())
                 if k not in matched],
        "declared": [f"{e['defined']}: {e['chain']} {old['declared']} -> "
                     f"{e['declared']}" for old, e in pairs
                     if old is not None and
                     old["declared"] != e["declared"]],
    }


def _scratch_range(git, source, patches, env):
    """Commits, in `git`'s objects, the files of `patches` as the pristine
    tree of `source` has them, then each patch (its message from git
    mailinfo); returns "base..tip"."""
    tree.git(git, "read-tree", "--empty", env=env)
    for name in sorted({f for p in patches for f in touched_files(p)}):
        proc = subprocess.run(["git", "-C", source, "cat-file", "blob",
                               f"{tree.PRISTINE}:{name}"],
                              capture_output=True)
        if proc.returncode:
            continue            # a file the patches add
        blob = subprocess.run(["git", "-C", git, "hash-object", "-w",
                               "--stdin"], input=proc.stdout,
                              capture_output=True, check=True)
        tree.git(git, "update-index", "--add", "--cacheinfo",
                 f"100644,{blob.stdout.decode().strip()},{name}", env=env)
    base = tip = tree.git(git, "commit-tree", tree.git(
        git, "write-tree", env=env).strip(), "-m", "base").strip()
    for patch in patches:
        with open(patch, "rb") as f:
            proc = subprocess.run(["git", "-C", git, "mailinfo", "/dev/null",
                                   "/dev/null"], stdin=f,
                                  capture_output=True)
        info = dict(line.split(": ", 1) for line in
                    proc.stdout.decode(errors="replace").splitlines()
                    if ": " in line)
        message = info.get("Subject", subject_of(patch))
        proc = subprocess.run(["git", "-C", git, "apply", "--cached",
                               os.path.abspath(patch)], env=env,
                              capture_output=True, text=True)
        if proc.returncode:
            raise Error(f"{patch} does not apply to the pristine files of "
                        f"{source}: {proc.stderr.strip()}")
        tip = tree.git(git, "commit-tree", tree.git(
            git, "write-tree", env=env).strip(), "-p", tip, "-m",
            message).strip()
    return f"{base}..{tip}"


def core_range_diff(git, old_source, old_patches, new_patches):
    """git range-diff of the older and the newer core patches, each
    applied to its own pristine files, in scratch commits of `git`."""
    index = os.path.join(git, ".git", "notifier-series-port-index")
    env = dict(os.environ, GIT_INDEX_FILE=index)
    try:
        ranges = [_scratch_range(git, old_source, old_patches, env),
                  _scratch_range(git, git, new_patches, env)]
    finally:
        if os.path.exists(index):
            os.unlink(index)
    return tree.git(git, "range-diff", "--no-color", *ranges)


def report(old_kver, new_kver, old_folder, old_entries, new_entries,
           new_patches, new_files, range_diff):
    """The port report's text and its summary (JSON)."""
    old = series_patches(old_folder)
    rows = match(old, new_patches, old_entries, new_entries, new_files)
    changes = chain_changes(old_entries, new_entries)
    lines = [f"Port of the Linux {old_kver} series to {new_kver}", "",
             f"Patches of the {old_kver} series ({old_folder}) and the "
             f"{new_kver} patch that carries the same change:", ""]
    for subject, found, why in rows:
        lines.append(f"  {subject}")
        lines.append(f"    -> {found}" if found else f"    -> none: {why}")
    for key, title in (("new", f"Chains new in {new_kver}"),
                       ("gone", f"Chains gone in {new_kver}"),
                       ("declared", "Chains whose declared kind changed")):
        lines += ["", f"{title} ({len(changes[key])}):"]
        lines += [f"  {line}" for line in changes[key]] or ["  none"]
    lines += ["", "git range-diff of the core patches:", ""]
    lines += [f"  {line}" for line in range_diff.splitlines()]
    summary = {"from": old_kver,
               "patches": len(rows),
               "carried": sum(1 for _, found, _ in rows if found),
               "not_carried": [{"patch": s, "why": why}
                               for s, found, why in rows if not found],
               **{f"chains_{k}": len(v) for k, v in changes.items()}}
    return "\n".join(lines) + "\n", summary


def write(kver, old_kver, git, out, stage, entries):
    """Writes <stage>/port-report.txt, the port of `old_kver`'s published
    series (out/<old_kver>/series/) to this one, whose patches are in
    `stage`; returns its summary, or why there is none."""
    old_folder = os.path.join(out, old_kver, "series")
    if not os.path.isdir(old_folder):
        return {"from": old_kver, "not_written": f"{old_folder} does not "
                f"exist: make series KVER={old_kver} first"}
    old_source = os.path.join(os.path.dirname(git), f"linux-{old_kver}")
    if os.path.isdir(os.path.join(old_source, ".git")):
        try:
            range_diff = core_range_diff(git, old_source,
                                         core_patches(old_kver),
                                         core_patches(kver))
        except Error as e:
            range_diff = f"not compared: {e}"
    else:
        range_diff = (f"not compared: the {old_kver} tree, whose pristine "
                      f"files the core patches apply to, is not in "
                      f"{os.path.dirname(git)}")
    # The classification that series was made from, else today's.
    kept = os.path.join(old_folder, "classification.yaml")
    try:
        _, old_entries = classification.load(
            kept if os.path.exists(kept) else classification.yaml_path(old_kver))
        text, summary = report(old_kver, kver, old_folder, old_entries,
                               entries, series_patches(stage),
                               set(tree.git(git, "ls-files").splitlines()),
                               range_diff)
    except Error as e:
        return {"from": old_kver, "not_written": str(e)}
    with open(os.path.join(stage, "port-report.txt"), "w",
              encoding="utf-8") as f:
        f.write(text)
    return summary
