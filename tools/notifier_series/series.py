"""The main job: from the pristine tree to a finished, checked series in
out/<kver>/series/: the core patches, the conversion split per subsystem,
the removal of the typed API, a cover letter, and report.json with the
checks' results; in the tree, the series as a b4 branch whose revision
moves on when its patches change (mail.py), and for a newer version the
port report of the older one's series (port.py)."""

import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import subprocess
import time

from . import (bench, boottest, checkpatch, classification, classify,
               compiletest, convert_tree, distcc, gate, mail, maintainers,
               memo, output, patches, port, rulechecks, split, tree)
from .patches import SERIES_BRANCH as BRANCH, commit_ids, \
    core_patches as patches_of_core, patch_text, scratch_apply
from .progress import Error, Step, say
from .records import SeriesReport

# The classification a revision was made from, beside its patches.
CLASSIFICATION = "classification.yaml"
REMOVAL_SUBJECT = ("notifier: Remove the typed atomic and blocking notifier "
                   "API")
COMPAT = re.compile(r"\n/\*\n \* The typed atomic and blocking API of before "
                    r"struct notifier_head.*?#define "
                    r"atomic_notifier_call_chain_is_empty[^\n]*\n",
                    re.S)


# git with no configuration but its defaults: git commit -s ignores the
# trailer.* and commit.* settings that interpret-trailers would read.
PLAIN_GIT = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def message(text, signer):
    """The message that `git commit -s -F` writes for `text`: whitespace
    cleaned up, then the sign-off added as git commit adds it, whatever
    the user's or the tree's git configuration says."""
    def plain(*args, data):
        return subprocess.run(["git"] + list(args), cwd="/", input=data,
                              env=dict(os.environ, **PLAIN_GIT), text=True,
                              capture_output=True, check=True).stdout
    return plain("interpret-trailers", "--no-divider", "--trailer",
                 f"Signed-off-by: {signer}",
                 data=plain("stripspace", data=text))


def fast_import_commit(ref, idents, text, changes, parent=None):
    """A commit command of `git fast-import`, as bytes: `idents` are the
    author and the committer (`git var`'s), `changes` its M and D
    lines."""
    data = text.encode()
    return (f"commit {ref}\nauthor {idents[0]}\ncommitter {idents[1]}\n"
            f"data {len(data)}\n").encode() + data + (
                "\n" + (f"from {parent}\n" if parent else "")
                + "".join(line + "\n" for line in changes) + "\n").encode()


def remove_compat(path, commit):
    """The blob of <linux/notifier.h> of `commit` without its
    compatibility block, written in the tree's objects."""
    name = "include/linux/notifier.h"
    new, count = COMPAT.subn("\n", tree.git(path, "show",
                                            f"{commit}:{name}"))
    if count != 1:
        raise Error(f"{name} of {commit}: the compatibility block of the "
                    "core patch was not found")
    return tree.git(path, "hash-object", "-w", "--stdin", input=new).strip()


REMOVAL_MESSAGE = """\
{subject}

No user of struct atomic_notifier_head, struct blocking_notifier_head and
their atomic_notifier_*() and blocking_notifier_*() functions is left:
remove the compatibility macros that mapped them onto struct notifier_head.
"""


def build_series(kver, work, out, jobs, yaml_text, git):
    """Makes BRANCH in the prepared tree `git`: core patches, one
    conversion commit per subsystem, the removal; returns (tree, core,
    groups, conversion report).  The files that end as they were keep
    their time (make rebuilds nothing for them)."""
    with patches.stamps_kept(git):
        return _build_series(kver, work, out, jobs, yaml_text)


def _build_series(kver, work, out, jobs, yaml_text):
    kernel_tree, core, report = convert_tree.convert_branch(
        kver, work=work, out=out, jobs=jobs)
    git = kernel_tree.path
    converted = tree.git(git, "rev-parse", convert_tree.BRANCH).strip()
    _, entries = classification.load(classify.yaml_path(kver), yaml_text)
    changed = tree.git(git, "diff", "--name-only", core, converted).split()
    with Step(f"finding the MAINTAINERS section of {len(changed)} files "
              "(scripts/get_maintainer.pl)"):
        sections = split.subsystems(git, changed, jobs,
                                    tree.cache(kernel_tree, "sections"))
    together = []
    for e in entries:
        if e["declared"] != "bare":
            continue
        files = [f for f in changed if re.search(
            rf"\b{re.escape(e['chain'])}\b",
            tree.git(git, "diff", core, converted, "--", f))]
        if len(files) > 1:
            together.append((files, f"The 2005 chain {e['chain']} is "
                             "defined and declared in more than one of these "
                             "files, which have to change together to keep "
                             "building."))
    for a in report.unregister_added:
        if a["headers"]:
            together.append(([a["file"]] + a["headers"],
                             f"{a['wrapper']}() is added in {a['file']} and "
                             f"declared in {', '.join(a['headers'])}, which "
                             "have to change together to keep building."))
    groups = split.group(changed, sections, together)
    by_text = {}
    for item in report.converted_by_text:
        path, _, line = item.rpartition(":")
        by_text.setdefault(path, []).append(f"{path}:{line}")
    try:
        _commit_groups(git, core, converted, groups, together, entries,
                       by_text, report.locks_removed,
                       report.unregister_added, kver)
    except BaseException:
        # Leave the tree clean, on the core branch, for the next run.
        tree.git(git, "reset", "-q", "--hard")
        tree.git(git, "checkout", "-q", "-f", "notifier-series/core")
        raise
    return kernel_tree, core, groups, report, entries


def _commit_groups(git, core, converted, groups, together, entries, by_text,
                   locks, added, kver):
    """Makes BRANCH with one `git fast-import`, then checks it out: only
    the files that differ from the conversion are written."""
    prefixes = split.prefixes(groups)
    idents = [tree.git(git, "var", f"GIT_{who}_IDENT").strip()
              for who in ("AUTHOR", "COMMITTER")]
    signer = idents[1].rsplit(" ", 2)[0]
    header = "include/linux/notifier.h"
    blobs = {}
    for entry in tree.git(git, "ls-tree", "-r", "-z", converted, "--",
                          header, *(f for _, files in groups for f in files)
                          ).split("\0")[:-1]:
        meta, name = entry.split("\t", 1)
        blobs[name] = (meta.split()[0], meta.split()[2])
    # Made on a ref of its own, checked, then moved to BRANCH.
    ref = "refs/heads/notifier-series/split-scratch"
    with Step(f"committing {len(groups)} subsystem patches on {BRANCH}"):
        stream, parent = [], core
        for section, files in groups:
            diff = tree.git(git, "diff", core, converted, "--", *files)
            why = " ".join(text for fs, text in together
                           if set(fs) & set(files)) or None
            lines = [x for f in files for x in by_text.get(f, [])]
            removed = [r for r in locks if r["file"] in files]
            wrappers = [a for a in added if a["file"] in files]
            text = split.message(prefixes[section], section, files, diff,
                                 entries, kver, why, lines, removed,
                                 wrappers)
            stream.append(fast_import_commit(
                ref, idents, message(text, signer),
                [f"M {blobs[f][0]} {blobs[f][1]} {f}" if f in blobs
                 else f"D {f}" for f in files], parent))
            parent = None
        stream.append(fast_import_commit(
            ref, idents, message(REMOVAL_MESSAGE.format(
                subject=REMOVAL_SUBJECT), signer),
            [f"M {blobs[header][0]} {remove_compat(git, converted)} "
             f"{header}"], parent))
        proc = subprocess.run(["git", "-C", git, "fast-import", "--quiet",
                               "--force", "--done"],
                              input=b"".join(stream) + b"done\n",
                              capture_output=True)
        if proc.returncode:
            raise Error(f"git fast-import of the subsystem patches in {git} "
                        f"failed: {proc.stderr.decode(errors='replace')}")
        try:
            if tree.git(git, "diff", "--stat", ref + "~1",
                        converted).strip():
                raise Error("the subsystem patches do not add up to the "
                            "conversion commit")
            tree.git(git, "update-ref", "refs/heads/" + BRANCH, ref)
        finally:
            tree.git(git, "update-ref", "-d", ref)
        tree.git(git, "checkout", "-q", BRANCH)


TO = ("--no-rolestats", "--separator", "\n", "--no-l")
CC = ("--no-rolestats", "--separator", "\n", "--no-m", "--no-r")


def mail_headers(path, patch, cache=None, state=None):
    """To: the maintainers and reviewers, Cc: the lists, from
    scripts/get_maintainer.pl on the patch; with a `cache` folder, kept
    by the patch's text and the tree's `state` (maintainers.state())."""
    def run(args):
        proc = maintainers.get_maintainer(path, list(args) + [patch])
        if proc.returncode:
            raise Error(f"scripts/get_maintainer.pl failed on {patch}: "
                        f"{proc.stderr.strip()}")
        return [a for a in proc.stdout.splitlines() if "@" in a]

    def headers():
        to = run(TO)
        return to, [a for a in run(CC) if a not in to]

    digest = memo.key("get_maintainer.pl", *TO, *CC, state,
                      patch_text(patch))
    return tuple(memo.cached(cache, digest, headers))


def add_headers(patch, to, cc):
    with open(patch, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    head, sep, body = text.partition("\nSubject: ")
    lines = []
    if to:
        lines.append("To: " + ",\n    ".join(to))
    if cc:
        lines.append("Cc: " + ",\n    ".join(cc))
    if lines:
        text = head + "\n" + "\n".join(lines) + sep + body
    with open(patch, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)


def applies(path, patch_files, cache=None):
    """(True, "") when the patches apply in order to the pristine tree and
    give the series' tree, else (False, why); checked on a scratch index,
    the tree is untouched.  With a `cache` folder, a success is kept under
    what git apply reads: the diffs, in order, the two trees and git's
    version."""
    want = tree.git(path, "rev-parse", BRANCH + "^{tree}").strip()

    def check():
        got, why = scratch_apply(path, tree.PRISTINE, patch_files)
        if got is None:
            return [False, why]
        if got != want:
            return [False, "the patches apply but do not give the series' "
                    "tree"]
        return [True, ""]
    diffs = []
    for patch in patch_files:
        with open(patch, "rb") as f:
            text = f.read()
        start = text.find(b"\ndiff --git ")
        diffs.append(text[start:] if start >= 0 else b"")
    digest = memo.key("git apply --cached", tree.git(path, "--version"),
                      tree.git(path, "rev-parse", tree.PRISTINE + "^{tree}"),
                      want, *diffs)
    return tuple(memo.cached(cache, digest, check, keep=lambda r: r[0]))


def cover_letter(kver, version, entries, groups, checks, patches,
                 violations, rules=None, locks=(), added=(), costs=(),
                 changes=None):
    """The body of the cover letter.  `rules` are the audit's findings of
    the 2005 series' other rule checks (None when the audit of this tree
    has none), `locks` the locks that the conversion removed, `added`
    the unregister wrappers it added and `costs` the sentences of
    bench.costs()."""
    lines = []
    for paragraph in _intro(kver, version):
        lines += split.wrap(paragraph) + [""]
    lines += _classes(entries)
    lines += _violations(violations)
    lines += [""] + rule_findings(rules, locks, added)
    if costs:
        lines += [""] + split.wrap("What this costs.  " + costs[0])
        lines += [f"  {line}" for line in costs[1:]]
    lines += ["", "Checks run on the series:", ""]
    lines += [f"  - {line}" for line in checks]
    lines += ["", f"{len(patches)} patches: the core patches, "
              f"{len(groups)} subsystem patches, the removal."]
    lines += [""] + split.wrap(
        f"To regenerate it: make series KVER={kver} (tools/notifier-series "
        f"series {kver}); b4 prep --compare-to vN in the tree's b4 branch "
        f"{mail.branch(kver)} shows what changed since revision N.")
    if changes:
        lines += [""] + changes
    return "\n".join(lines) + "\n"


def _intro(kver, version):
    """The cover letter's first paragraphs: the 2005 RFC, mainline's
    design, why this series revisits it, how it is made."""
    return [
        "In November 2005 Chandra Seetharaman posted, with Alan Stern, "
        "\"[RFC][PATCH 0/7]: Fix for unsafe notifier chain\": notifier "
        "chains were walked without a lock, so every chain got one head, "
        "struct notifier_head, that says whether it is ATOMIC (walked under "
        "RCU, its unregister waits for synchronize_rcu()) or BLOCKING "
        "(walked under the head's rwsem), with writers in process context "
        "taking the rwsem.",
        "Mainline took another design in 2006 (commit e041c683412d, "
        "\"Notifier chain update: API changes\", in 2.6.17): a head type "
        "per kind, atomic heads whose writers take a spinlock, blocking "
        "heads on an rwsem, raw heads that their users lock, and SRCU heads "
        "later.  Under a spinlock an atomic chain's writers may run in any "
        "context, where the 2005 rule needed every writer of an atomic "
        "chain in process context, and the RFC had to fix callers to get "
        "there.",
        "This series revisits the 2005 design because that rule can now be "
        "checked.  Each chain's class is a reviewed decision, "
        f"classify/linux-{kver}.yaml, with the evidence of its callers and "
        "callouts.  The writers that run in atomic context are found through "
        "the call graph and fixed by patches placed before the core patch, "
        "so that the rule holds at every point of the series (the sites and "
        "their status are below).  Writers that run before the scheduler "
        "take the early-boot path that mainline's blocking chains have, on "
        "atomic chains too.  Its cost in bytes and instructions is said "
        "below.  What the kernel learned since 2005 stays: unique-priority "
        "registration, robust calls of blocking chains, is-empty, the "
        "duplicate-registration warning, sparse's __rcu and lockdep-checked "
        "dereferences.",
        f"The series is generated for Linux {version}: the fixes and the "
        "core patches are hand-written, the conversion is "
        "cocci/notifier_convert.cocci driven by the classification, split "
        "per MAINTAINERS section, and the last patch removes the typed "
        "API.  With the compatibility macros of the core patch in place "
        "until then, every conversion patch is independent of the others "
        "and can go through its subsystem's tree.",
    ]


def _classes(entries):
    """The cover letter's listing of the chains by class."""
    by_class = {"blocking": [], "atomic": [], "excluded": []}
    for e in entries:
        by_class[e["class"]].append(e)
    width = 48

    def listing(items):
        return [f"{e['defined'] + ':':<{width}}{e['chain']}"
                for e in sorted(items, key=lambda e: (e["defined"],
                                                      e["chain"]))]

    lines = ["Here is the classification of the chains:", "", "BLOCKING:",
             "+++++++++"]
    lines += listing(by_class["blocking"])
    lines += ["", "ATOMIC:", "+++++++"]
    lines += listing(by_class["atomic"])
    lines += ["", "Left alone (raw chains: their callers provide the locking;",
              "SRCU chains: SRCU protects their readers; chains that a fix",
              "before the core patch makes raw):", ""]
    for e in sorted(by_class["excluded"],
                    key=lambda e: (e["defined"], e["chain"])):
        lines.append(f"{e['defined'] + ':':<{width}}{e['chain']} "
                     f"({e['declared']})")
        if e["declared"] not in ("raw", "srcu"):
            lines += split.wrap(e["reason"], indent="    ", hanging="    ")
    return lines


def _violations(violations):
    """The cover letter's paragraphs on the rule violations and their
    fixes."""
    fixes = [v for v in violations if v["status"] == "fixed"]
    lines = [""] + split.wrap(
        "The rule checks of the classification (writers in process "
        "context, no sleeping callout on an atomic chain, no writer in a "
        "callout of its own chain...) found "
        + (f"{len(violations)} sites that break the context rule of the "
           "new head:" if violations else "no site that breaks the "
           "context rule of the new head."))
    if violations:
        lines += [""] + [f"  - {line}" for line in gate.lines(violations)]
    if fixes:
        lines += [""] + split.wrap(
            f"The {len(gate_fix_names(fixes))} patches that fix them come "
            "before the core patch, which changes the rule, so that every "
            "point of the series is free of them; they are independent of "
            "the rest and can go through their subsystems' trees.")
    return lines


def rule_findings(rules, locks, added=()):
    """The cover letter's paragraph on the 2005 series' patches 3/7, 4/7
    and 7/7: what their rule checks found on the pristine tree, what the
    conversion removed, and the findings left for their maintainers."""
    removes = (f"  The conversion removes {len(locks)} "
               f"lock{'s' if len(locks) != 1 else ''} guarding nothing but "
               "converted chains, each in its chain's patch, as 3/7 did."
               if locks else "")
    removes += (f"  The conversion adds {len(added)} unregister "
                f"wrapper{'s' if len(added) != 1 else ''} beside register "
                "wrappers that had none, each in its chain's patch, as 4/7 "
                "did: " + ", ".join(f"{a['wrapper']}()" for a in added) + "."
                if added else "")
    if rules is None:
        return split.wrap(
            "The rule checks of the 2005 series' other patches (redundant "
            "locks, register without unregister, chains written by hand) "
            "have not run on this tree, or ran with other checks: make "
            "classify runs them." + removes)
    counts = rulechecks.counts(rules)
    text = ("The rule checks of the 2005 series' other patches found, on "
            "the pristine tree: "
            f"3/7, locks guarding nothing but chain operations: "
            f"{counts['redundant-lock']}; 4/7, exported functions "
            "registering on a chain of their file that nothing unregisters "
            "from, and modules that register in init and not in exit: "
            f"{counts['register-without-unregister']}; 7/7, lists walked "
            "by hand calling each entry's callback, as a notifier chain "
            f"does: {counts['hand-rolled-chain']}, for a person to tell the "
            "notification lists among them (from tables of a subsystem's "
            "own objects, and lookups) and fold those onto the chain API "
            "as 7/7 did the USB core's list.")
    text += removes
    removed = {(r["file"], r["lock"]) for r in locks} | {
        (a["file"], a["register"] + "()") for a in added}
    left = {name: [r for r in rows if not rulechecks.not_counted(r) and
                   (r["at"].rpartition(":")[0],
                    r["message"].split()[0]) not in removed]
            for name, rows in rules.items()}
    found = rulechecks.lines(left)
    if found:
        text += "  Left for their maintainers:"
    return split.wrap(text) + ([""] + [f"  - {line}" for line in found]
                               if found else [])


def gate_fix_names(violations):
    return sorted({p for v in violations for p in v.get("fixed_by", [])})


def previous_version(kver):
    """The classified version before `kver` (6.1 for 6.12), or None."""
    def key(v):
        return tuple(int(x) for x in v.split("."))
    versions = sorted((f[len("linux-"):-len(".yaml")] for f in
                       os.listdir(classify.FOLDER)
                       if re.match(r"linux-[\d.]+\.yaml$", f)), key=key)
    older = [v for v in versions if key(v) < key(kver)]
    return older[-1] if older else None


def since(kver, entries):
    """The chains that appeared, vanished or changed class since the
    previous version's classification; a chain that moved to another file
    is the same chain."""
    old_kver = previous_version(kver)
    if not old_kver:
        return None
    _, old = classification.load(classify.yaml_path(old_kver))
    def index(items):
        return {(e["chain"], e["defined"]): e for e in items}
    new_index, old_index = index(entries), index(old)
    old_names = {}
    for e in old:
        old_names.setdefault(e["chain"], []).append(e)
    appeared, changed, matched = [], [], set()
    for key, e in sorted(new_index.items()):
        before = old_index.get(key)
        if before is None and len(old_names.get(e["chain"], [])) == 1:
            before = old_names[e["chain"]][0]
        if before is None:
            appeared.append(f"{e['defined']}: {e['chain']} ({e['class']})")
            continue
        matched.add((before["chain"], before["defined"]))
        if before["class"] != e["class"]:
            changed.append(f"{e['defined']}: {e['chain']} "
                           f"{before['class']} -> {e['class']}")
    vanished = [f"{e['defined']}: {e['chain']} ({e['class']})"
                for key, e in sorted(old_index.items()) if key not in matched]
    return {"from": old_kver, "appeared": appeared, "vanished": vanished,
            "changed_class": changed}


def summary_lines(report):
    cp, ct, boot, bisect = (report.checkpatch, report.compile_test,
                            report.boot_test, report.bisect)
    v = report.violations
    return [
        f"rule violations of the tree: {v['found']} found, {v['fixed']} "
        f"fixed before the core patch, {v['waived']} waived, "
        f"{v.get('candidate', 0)} paths of the call graph awaiting "
        "triage, "
        f"{v['open']} open",
        f"checkpatch.pl --strict: {cp['errors']} errors, {cp['warnings']} "
        f"warnings, {cp['checks']} checks in {report.patches} patches",
        f"typed API uses left in *.c, *.h and *.S after the removal: "
        f"{len(report.typed_api_left)}",
        "the patches applied in order to the pristine tree (git apply): "
        + ("they give the series' tree" if report.applies
           else "FAILS: " + report.applies_why),
        "compile-test: not run (--no-compile-test)" if ct.get("skipped")
        else "compile-test (allmodconfig, one object per file, "
        + ("x86_64 and the cross compilers"
           if ct.get("arches", "all") == "all"
           else "only on " + ", ".join(ct["arches"]))
        + f"): {ct['compiled']}/{ct['touched']} touched "
        f".c and .S files compiled "
        f"({ct['x86_compiled']}/{ct['x86_touched']} of x86), "
        f"{len(ct['failed'])} broken, {len(ct['not_compiled'])} not "
        "compiled",
        f"sparse on kernel/notifier.c and its KUnit and torture tests: "
        f"{len(boot.get('sparse') or [])} warnings",
        f"boot test of the final tree in QEMU: {boot.get('outcome')}, "
        f"KUnit {boot.get('kunit', {}).get('passed')} passed, "
        f"{boot.get('kunit', {}).get('failed')} failed, "
        f"{sum(1 for s in boot.get('splats') or [] if not s['expected'])} "
        "splats, torture " + (", ".join(
            f"{kind} {run['verdict']}"
            for kind, run in (boot.get("torture") or {}).items())
            or "not run"),
        *([f"port report of the {report.port['from']} series: not "
           f"written: {report.port['not_written']}"]
          if (report.port or {}).get("not_written") else
          [f"port report of the {report.port['from']} series: "
           f"{report.port['carried']}/{report.port['patches']} "
           "patches carried (port-report.txt)"]
          if report.port else []),
        *([f"since the {report.since['from']} series: "
           f"{len(report.since['appeared'])} chains appeared, "
           f"{len(report.since['vanished'])} vanished, "
           f"{len(report.since['changed_class'])} changed class"]
          if report.since else []),
        "bisectability (the boot-test config built after every patch): "
        + (f"{bisect['built']}/{bisect['patches']} patches build"
           + (f" ({bisect['patches'] - len(bisect['unchanged'])} built, "
              f"the other {len(bisect['unchanged'])} change no file the "
              "build reads)"
              if bisect.get("unchanged") else "")
           + f", last run {bisect['when']}" if bisect.get("when")
           else "not run for this series (make bisect KVER=...)"),
    ]


def green(report):
    ct = report.compile_test
    return bool(
        report.checkpatch_errors == 0 and report.applies and
        report.b4_applies and report.violations["open"] == 0 and
        report.violations.get("candidate", 0) == 0 and
        not report.typed_api_left and
        not ct["failed"] and report.boot_test.get("outcome") == "pass"
        and (not report.bisect.get("when") or
             report.bisect["built"] == report.bisect["patches"]))


def last_bisect(out, kver, patch_ids):
    """The bisect record of out/<kver>/bisect.json when it is of this
    series."""
    path = os.path.join(out, kver, "bisect.json")
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return {}
    return record if record.get("patch_ids") == patch_ids else {}


def run(kver, *, work=None, out=None, jobs=None, timeout=600, compile=True,
        arches=None):
    """Regenerates and checks the series of `kver`; returns an exit
    status: 0 when every check is green.  `arches` limits the
    compile-test to those architectures (default: every one with a
    compiler)."""
    start = time.monotonic()
    out = tree.out_folder(out)
    given_jobs, jobs = jobs, tree.jobs(jobs)
    folder = os.path.join(out, kver, "series")
    stage = output.stage(folder)
    # The b4 refs, before minutes of work that they would stop.
    git = tree.prepare(kver, work).path
    mail.check_refs(git, kver)
    yaml_text = _classification_text(kver)
    kernel_tree, core, groups, conversion, entries = build_series(
        kver, work, out, jobs, yaml_text, git)
    items, unused = classify.judged(
        kver, work, jobs, entries,
        lambda: classify.analyse(kver, work=work, jobs=jobs, out=out,
                                 entries=entries)[0])
    if unused:
        raise Error("\n".join(unused))
    with Step("git format-patch of the series"):
        tree.git(git, "format-patch", "-q", "--no-signature",
                 "--zero-commit", "--cover-letter", "-o", stage,
                 f"{tree.PRISTINE}..{BRANCH}")
    names = sorted(p for p in os.listdir(stage) if p.endswith(".patch"))
    files = [os.path.join(stage, p) for p in names if not p.startswith("0000")]
    cover = os.path.join(stage, names[0])
    everyone = _address(kernel_tree, files, jobs)
    report = _report(kernel_tree, files, groups, items, conversion)
    report = dataclasses.replace(
        report, **_patch_checks(kernel_tree, stage, files, jobs))
    report.compile_test = _compile_test(
        kver, kernel_tree, stage, distcc.build_jobs(given_jobs), arches) \
        if compile else {"compiled": 0, "touched": 0, "x86_compiled": 0,
                         "x86_touched": 0, "failed": [], "not_compiled": [],
                         "skipped": True}
    ids = commit_ids(git, tree.PRISTINE, BRANCH)
    report.patch_ids = ids
    report.bisect = last_bisect(out, kver, ids) or {"patches": len(ids)}
    report.boot_test = _boot_test(kver, work, out, timeout, given_jobs,
                                     files[len(patches_of_core(kver)):])
    report.since = since(kver, entries)
    if report.since:
        with Step(f"port report of the {report.since['from']} series"):
            report.port = port.write(kver, report.since["from"], git,
                                        out, stage, entries)
    report.summary = summary_lines(report)
    rev = mail.revision(git, kver, mail.patches_of(git, tree.PRISTINE,
                                                   BRANCH))
    report.revision, report.change_id = rev.number, rev.change_id
    # The classification as this run read it, kept beside the patches.
    with open(os.path.join(stage, CLASSIFICATION), "w",
              encoding="utf-8") as f:
        f.write(yaml_text)
    body = _write_cover(cover, kver, kernel_tree.version, entries, groups,
                        report.summary, files, items,
                        classify.rule_findings(kver, out, kernel_tree),
                        conversion.locks_removed,
                        conversion.unregister_added,
                        bench.costs(out, kver, kernel_tree.version,
                                    patches.digest(patches_of_core(kver)),
                                    tree.git(git, "rev-parse",
                                             BRANCH + "^{tree}").strip()),
                        _changes(git, kver, rev, out, stage, entries,
                                 report.summary))
    mail.enroll(git, kver, rev, BRANCH, body, *everyone)
    sent = mail.send(git, os.path.join(stage, "b4"))
    report.b4_applies, report.b4_applies_why = applies(
        git, sent[1:], tree.cache(kernel_tree, "apply"))
    report.green = green(report)
    report.seconds = round(time.monotonic() - start, 1)
    archive(out, kver, rev)
    output.publish(stage, folder, "report.json", report)
    _say(kver, kernel_tree, folder, report, rev)
    return 0 if report.green else 1


def _report(kernel_tree, files, groups, items, conversion):
    """The report's first fields: the patches, the gate's verdicts and
    what the conversion did."""
    return SeriesReport(
        kernel=kernel_tree.version, patches=len(files),
        subsystem_patches=len(groups), violations=gate.summary(items),
        conversion={k: getattr(conversion, k) for k in (
            "chains_converted", "files_changed", "converted_by_text",
            "unconverted", "init_unresolved", "typed_api_left",
            "second_run_files_changed")},
        locks_removed=conversion.locks_removed,
        unregister_added=conversion.unregister_added)


def _classification_text(kver):
    """The text of classify/linux-<kver>.yaml as this run reads it; an
    undecodable file is reported with its line."""
    try:
        with open(classify.yaml_path(kver), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        classification.load(classify.yaml_path(kver))   # the file:line
        raise


def _address(kernel_tree, files, jobs):
    """Adds each patch's To: and Cc: (get_maintainer.pl, cached);
    returns the union, the cover letter's ([To], [Cc])."""
    git = kernel_tree.path
    with Step(f"To: and Cc: of {len(files)} patches "
              "(scripts/get_maintainer.pl)"):
        state = maintainers.state(git)
        everyone = ([], [])
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for patch, (to, cc) in zip(files, pool.map(
                    lambda p: mail_headers(git, p, tree.cache(
                        kernel_tree, "get_maintainer"), state), files)):
                add_headers(patch, to, cc)
                for kept, addresses in zip(everyone, (to, cc)):
                    kept += [a for a in addresses if a not in kept]
        everyone[1][:] = [a for a in everyone[1] if a not in everyone[0]]
    return everyone


def _patch_checks(kernel_tree, stage, files, jobs):
    """The report's checkpatch, typed_api_left, checkpatch_errors,
    applies and applies_why; checkpatch's text in stage/checkpatch.txt."""
    git = kernel_tree.path
    with Step(f"checkpatch.pl --strict on {len(files)} patches"):
        cp = checkpatch.run(git, files, jobs,
                            tree.cache(kernel_tree, "checkpatch"))
    with open(os.path.join(stage, "checkpatch.txt"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(f"== {name}\n{text}"
                          for name, text in cp.pop("patches").items()))
    found = {"checkpatch": cp, "typed_api_left": convert_tree.typed_uses(
        git, ("*.c", "*.h", "*.S")), "checkpatch_errors": cp["errors"]}
    with Step("applying the series to the pristine tree"):
        found["applies"], found["applies_why"] = applies(
            git, files, tree.cache(kernel_tree, "apply"))
    return found


def _compile_test(kver, kernel_tree, stage, jobs, arches):
    """The report's compile_test of the files the series touches, its log
    in stage/compile-test.log."""
    git = kernel_tree.path
    touched = tree.git(git, "diff", "--name-only", tree.PRISTINE,
                       BRANCH).split()
    result = compiletest.cached_run(
        tree.cache(kernel_tree, "compile-test"), kernel_tree, touched,
        os.path.join(os.path.dirname(git), f"build-{kver}-allmod"),
        classify.pristine_checkout(kernel_tree),
        os.path.join(stage, "compile-test.log"), jobs, arches)
    result["log"] = "compile-test.log"  # next to the report
    return result


def _boot_test(kver, work, out, timeout, jobs, extra):
    """The report's boot_test of the core patches and the `extra`
    patches after them.  In a worktree of its own: the boot test, the
    mutants and the other commands check out the core branch in the
    tree, which would make every boot of the series rebuild what
    <linux/notifier.h> reaches."""
    boot = boottest.run(kver, work=work, out=out, timeout=timeout,
                        jobs=jobs, extra=extra, name="series-boot",
                        worktree="series-boot",
                        extra_branch="notifier-series/series-boot-worktree")
    found = {k: getattr(boot, k) for k in (
        "outcome", "reasons", "kunit", "torture", "splats", "sparse",
        "commit")}
    found["kunit"].pop("tests", None)
    return found


def _say(kver, kernel_tree, folder, report, rev):
    say(f"Series of Linux {kernel_tree.version}: {report.patches} "
        f"patches in {folder}")
    for line in report.summary:
        say("  " + line)
    say(f"  b4 branch {mail.branch(kver)}, v{rev.number}; b4 send -o's "
        "messages on the pristine tree: " + (
            "apply and give the series' tree" if report.b4_applies
            else "FAIL: " + report.b4_applies_why))
    say(f"  {'all checks green' if report.green else 'NOT GREEN'}; "
        f"{report.seconds:.0f}s")


def _published(folder, change_id):
    """(revision, change-id) of the series published in `folder`; a
    report of before change-ids were kept counts as `change_id`'s."""
    try:
        report = output.read_json(os.path.join(folder, "report.json"))
    except (OSError, ValueError):
        return None, None
    return report.get("revision"), report.get("change_id", change_id)


def archive(out, kver, rev):
    """Moves the published series, when it is another revision than `rev`,
    to out/<kver>/revisions/v<N>/, or revisions/<change-id>/v<N>/ when it
    is of another series (a branch made again from v1), replacing an
    older copy of the same."""
    folder = os.path.join(out, kver, "series")
    number, change_id = _published(folder, rev.change_id)
    if not isinstance(number, int) or (number, change_id) == (
            rev.number, rev.change_id):
        return
    kept = (revision_folder(out, kver, number) if change_id == rev.change_id
            else os.path.join(out, kver, "revisions", str(change_id),
                              f"v{number}"))
    shutil.rmtree(kept, ignore_errors=True)
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    os.replace(folder, kept)
    say(f"    v{number}'s series kept in {kept}")


def _changes(git, kver, rev, out, stage, entries, checks):
    """The "Changes since" lines of revision `rev` (None for v1), from
    the last revision's folder, published or archived, when it is of the
    same series, and its sent tag; writes range-diff.txt beside the
    patches."""
    if rev.number == 1:
        return None
    number = rev.number - 1
    text = mail.range_diff(git, kver, number, BRANCH)
    if text is not None:
        with open(os.path.join(stage, "range-diff.txt"), "w",
                  encoding="utf-8") as f:
            f.write(text)
    folder = next((f for f in (os.path.join(out, kver, "series"),
                               revision_folder(out, kver, number))
                   if _published(f, rev.change_id) == (number,
                                                       rev.change_id)),
                  None)
    old_entries = old_checks = None
    if folder:
        try:
            _, old_entries = classification.load(os.path.join(
                folder, CLASSIFICATION))
        except Error:
            pass        # not readable: said in the letter
        old_checks = output.read_json(os.path.join(
            folder, "report.json")).get("summary")
    return mail.changes(number, old_entries, entries,
                        mail.patch_changes(text) if text is not None
                        else None, old_checks, checks)


def revision_folder(out, kver, number):
    return os.path.join(out, kver, "revisions", f"v{number}")


def _write_cover(cover, kver, version, entries, groups, checks, files,
                 violations, rules, locks, added, costs, changes):
    """Fills in format-patch's cover letter; returns its body."""
    with open(cover, encoding="utf-8") as f:
        text = f.read()
    body = cover_letter(kver, version, entries, groups, checks, files,
                        violations, rules, locks, added, costs, changes)
    text = text.replace("*** SUBJECT HERE ***", mail.SUBJECT)
    text = text.replace("*** BLURB HERE ***", body.rstrip("\n"))
    with open(cover, "w", encoding="utf-8") as f:
        f.write(text)
    return body
