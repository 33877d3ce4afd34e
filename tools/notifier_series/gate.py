"""The violation gate.  Every rule violation that the audit finds in the
pristine tree is, for the series to be green, either fixed by one of the
patches placed before the core patch (the core patch changes the context
rule of the writers, so every point of the series must already be free of
the bug), or waived in the classification with a reason a reviewer can
check, or else open.

"Fixed" is what the analysis finds, not what a patch claims: the tree with
the fixes applied is analysed again, and a violation it no longer shows is
fixed, by the fixes that change its file."""

import os
import re

from . import patches, tree
from .progress import Error, Step, say

CORE_HEADER = "include/linux/notifier.h"
STATUSES = ("fixed", "waived", "open")


def touched_files(patch):
    """The files a patch file changes."""
    with open(patch, encoding="utf-8", errors="replace") as f:
        return sorted(set(re.findall(r"^diff --git a/(\S+) b/", f.read(),
                                     re.M)))


def subject_of(patch):
    """A patch file's subject, without its [PATCH] prefix."""
    with open(patch, encoding="utf-8", errors="replace") as f:
        text = f.read()
    m = re.search(r"^Subject: (?:\[[^]]*\] )?(.*(?:\n [^\n]*)*)", text, re.M)
    return " ".join(m.group(1).split()) if m else os.path.basename(patch)


def fix_patches(kver):
    """The patches of core-patch/<kver>/ before the core patch, which is
    the first one that changes <linux/notifier.h>."""
    core = patches.core_patches(kver)
    for i, patch in enumerate(core):
        if CORE_HEADER in touched_files(patch):
            return core[:i]
    raise Error(f"no patch of core-patch/{kver}/ changes {CORE_HEADER}: "
                "where is the core patch?")


def fixes_checkout(kernel_tree, fixes):
    """A worktree of the pristine tree with `fixes` applied on a detached
    head, made again only when its commits are not those patches."""
    work = tree.worktree(kernel_tree, "fixes")
    wanted = [patches.patch_id_of(p) for p in fixes]
    have = patches.commit_ids(work.path, tree.PRISTINE, "HEAD")
    dirty = tree.git(work.path, "status", "--porcelain",
                     "--untracked-files=no").strip()
    if have == wanted and not dirty:
        return work.path
    with Step(f"applying {len(fixes)} fixes to a checkout of the pristine "
              "tree"):
        tree.git(work.path, "reset", "-q", "--hard")
        tree.git(work.path, "checkout", "-q", "--detach",
                 tree.PRISTINE + "^{commit}")
        if fixes:
            tree.git(work.path, "am", "-q", "--no-3way", *fixes)
    return work.path


def key(v):
    """What identifies a violation across two trees whose lines differ."""
    return (v["rule"], v["chain"], v["defined"], v["file"], v["function"])


def waiver_of(v, entries):
    for e in entries:
        if (e["chain"], e["defined"]) != (v["chain"], v["defined"]):
            continue
        for w in e.get("waivers", []):
            if (w["rule"], w["file"], w["function"]) == \
                    (v["rule"], v["file"], v["function"]):
                return w
    return None


def judge(before, after, entries, fixes):
    """Each violation of the pristine tree (`before`) and of the tree with
    the fixes (`after`), once, with its "status" and what decided it:
    "fixed_by" (the fixes that change its file), or "waiver" (the reason
    and the line of the classification).  Returns (items, unused), unused
    being the waivers that match no violation."""
    after_keys = {key(v) for v in after}
    items, seen, used = [], set(), set()
    fixed_files = {p: touched_files(p) for p in fixes}
    for v in before + after:
        k = key(v)
        if k in seen:
            continue
        seen.add(k)
        item = dict(v)
        if k not in after_keys:
            item["status"] = "fixed"
            item["fixed_by"] = [subject_of(p) for p, files in
                                fixed_files.items() if v["file"] in files]
        else:
            w = waiver_of(v, entries)
            if w:
                item["status"] = "waived"
                item["waiver"] = {"reason": w["reason"], "line": w.line}
                used.add(id(w))
            else:
                item["status"] = "open"
        items.append(item)
    unused = [(e, w) for e in entries for w in e.get("waivers", [])
              if id(w) not in used]
    return items, unused


def summary(items):
    """{found, fixed, waived, open, items} for a report."""
    out = {"found": len(items)}
    for status in STATUSES:
        out[status] = sum(1 for v in items if v["status"] == status)
    out["items"] = items
    return out


def lines(items):
    """One line per violation, for the audit and the cover letter."""
    out = []
    for v in items:
        if v["status"] == "fixed":
            how = "fixed by " + (", ".join(v["fixed_by"]) or
                                 "the fixes before the core patch")
        elif v["status"] == "waived":
            how = f"waived: {v['waiver']['reason']}"
        else:
            how = "OPEN"
        out.append(f"{v['site']} in {v['function']}(): [{v['rule']}] "
                   f"{v['chain']}: {how}\n    {v['why']}")
    return out


def report(items):
    say(f"    rule violations: {len(items)} found, "
        + ", ".join(f"{sum(v['status'] == s for v in items)} {s}"
                    for s in STATUSES))
