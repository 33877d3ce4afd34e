"""The violation gate.  Every rule violation that the audit finds in the
pristine tree is, for the series to be green, either fixed by one of the
patches placed before the core patch (the core patch changes the context
rule of the writers, so every point of the series must already be free of
the bug), or waived in the classification with a reason a reviewer can
check, or else open.

"Fixed" is what the analysis finds, not what a patch claims: the tree with
the fixes applied is analysed again, and a violation is fixed when a fix
changes its file and the analysis of the fixed tree still sees its site,
without the violation.  A site the second analysis does not see any more
(spatch failed on the file, the function moved) proves nothing: the
violation stays open, "unverified".

A violation found through a path of the call graph ("via": the call
graph: a writer or a blocking chain's call reached from atomic context,
an atomic chain's callout that reaches a sleep) that is neither fixed
nor waived is a "candidate": a path awaiting triage, since such paths
ignore which event the caller sends, which instance of a per-object
chain, and the flags that guard a sleep (the README has what their
review found).  Like an open one, it keeps the series from being green
until triage turns it into a fix or a waiver.  A path from atomic
context is one violation per call site and root (the first function of
its shortest path), so that a fix that removes the root fixes it; one
only the tree with the fixes shows is a candidate too, marked
"introduced"."""

import os

from . import chains, classification, patches, tree
from .progress import Error, say

CORE_HEADER = "include/linux/notifier.h"
FIXES_BRANCH = "notifier-series/fixes"
STATUSES = ("fixed", "waived", "candidate", "open")
# What narrows a waiver of a path from atomic context to that root's.
SCOPES = classification.WAIVER_OPTIONAL


def fix_patches(kver):
    """The patches of core-patch/<kver>/ before the core patch, which is
    the first one that changes <linux/notifier.h>; none for a version
    without core patches yet (a new one being classified)."""
    if not os.path.isdir(os.path.join(tree.REPO, "core-patch", kver)):
        return []
    core = patches.core_patches(kver)
    for i, patch in enumerate(core):
        if CORE_HEADER in patches.touched_files(patch):
            return core[:i]
    raise Error(f"no patch of core-patch/{kver}/ changes {CORE_HEADER}: "
                "where is the core patch?")


def fixes_checkout(kernel_tree, fixes):
    """The path of a worktree of the pristine tree with `fixes` applied, on
    FIXES_BRANCH; like the tree itself, it is never overwritten when it
    has local changes."""
    work = tree.worktree(kernel_tree, "fixes")
    patches.apply(work, fixes, FIXES_BRANCH, tree.PRISTINE)
    return work.path


def key(v):
    """What identifies a violation across two trees whose lines differ."""
    return (v["rule"], v["chain"], v["defined"], v["file"], v["function"],
            v.get("root"))


def waiver_of(v, entries):
    """The waiver of `v`: of its chain, rule, file and function, and of
    its root when the waiver names one; the one naming the root when
    both kinds match."""
    found = [w for e in entries
             if (e["chain"], e["defined"]) == (v["chain"], v["defined"])
             for w in e.get("waivers", [])
             if (w["rule"], w["file"], w["function"]) ==
             (v["rule"], v["file"], v["function"]) and
             all(w.get(f, v.get(f)) == v.get(f) for f in SCOPES)]
    return max(found, key=lambda w: sum(f in w for f in SCOPES),
               default=None)


def declared(v, entries):
    """The kind the unmodified kernel declares the chain of `v` with."""
    return next((e["declared"] for e in entries
                 if (e["chain"], e["defined"]) == (v["chain"], v["defined"])),
                None)


def made_by_series(w, v, entries):
    """Whether waiver `w` calls `v` real while the unmodified kernel,
    with its chain's declared kind, has no such bug."""
    return w["reason"].startswith("real") and \
        declared(v, entries) not in chains.BROKEN_BEFORE[v["rule"]]


def judge(before, after, entries, fixes, seen_after):
    """Each violation of the pristine tree (`before`) and of the tree with
    the fixes (`after`), once, with its "status" and what decided it:
    "fixed_by" (the subjects of the fixes that change its file, or for
    a path of the call graph a file of the path, "files"), a
    "waiver" (its reason and line), or why it is open ("unverified": the
    fixed tree's analysis did not see the site; "introduced": only the
    fixed tree has it).  `seen_after(v)` says whether the analysis of the
    fixed tree still sees the site of `v`.  Returns (items, unused), unused
    being the waivers that match no violation, each with the item they
    would have waived had the fixes not removed it."""
    after_keys = {key(v) for v in after}
    before_keys = {key(v) for v in before}
    touching = {patches.subject_of(p): patches.touched_files(p)
                for p in fixes}
    items, seen, used = [], set(), {}
    for v in before + after:
        k = key(v)
        if k in seen:
            continue
        seen.add(k)
        item = dict(v)
        fixed_by = [s for s, files in touching.items()
                    if set(v.get("files") or [v["file"]]) & set(files)]
        w = waiver_of(v, entries)
        if k not in after_keys and fixed_by and seen_after(v):
            item["status"] = "fixed"
            item["fixed_by"] = fixed_by
            if w:
                # A waiver the fixes made stale, unless it waives another.
                used.setdefault(id(w), item)
        elif w and made_by_series(w, v, entries):
            item["status"] = "open"
            item["made_by_series"] = (
                f"waived as real, but the chain is declared "
                f"{declared(v, entries)}, with which the unmodified kernel "
                f"does not break {v['rule']}: only a fix before the core "
                f"patch removes it (waiver at line {w.line})")
            used[id(w)] = None
        elif w:
            item["status"] = "waived"
            item["waiver"] = {"reason": w["reason"], "line": w.line}
            used[id(w)] = None
        elif v.get("via") == chains.VIA_GRAPH and k in after_keys:
            item["status"] = "candidate"
            if k not in before_keys:
                item["introduced"] = True
        else:
            item["status"] = "open"
            if k not in after_keys:
                item["unverified"] = (
                    "the analysis of the tree with the fixes no longer "
                    "sees this site" if fixed_by else
                    "gone with the fixes, none of which changes its file")
            elif k not in before_keys:
                item["introduced"] = True
        items.append(item)
    unused = [(e, w, used.get(id(w))) for e in entries
              for w in e.get("waivers", [])
              if id(w) not in used or used[id(w)] is not None]
    return items, unused


def summary(items):
    """{found, fixed, waived, candidate, open, items} for a report."""
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
            how = "fixed by " + "; ".join(v["fixed_by"])
        elif v["status"] == "waived":
            how = f"waived: {v['waiver']['reason']}"
        elif v["status"] == "candidate":
            how = ("CANDIDATE: not yet triaged (fix it, or waive it with "
                   "a reason)")
        elif v.get("unverified"):
            how = f"OPEN ({v['unverified']})"
        elif v.get("made_by_series"):
            how = f"OPEN ({v['made_by_series']})"
        elif v.get("introduced"):
            how = "OPEN (introduced by the fixes)"
        else:
            how = "OPEN"
        out.append(f"{v['site']} in {v['function']}(): [{v['rule']}] "
                   f"{v['chain']}: {how}\n    {v['why']}")
    return out


def report(items):
    say(f"    rule violations: {len(items)} found, "
        + ", ".join(f"{sum(v['status'] == s for v in items)} {s}"
                    for s in STATUSES))
