"""The main job: from the pristine tree to a finished, checked series in
out/<kver>/series/: the core patches, the conversion split per subsystem,
the removal of the typed API, a cover letter, and report.json with the
checks' results; in the tree, the series as a b4 branch whose revision
moves on when its patches change, each patch addressed to its
maintainers, and for a newer version what changed since the older one's
classification and the port report of its series."""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import time

from . import (bench, boottest, checkpatch, classification, classify,
               compiletest, convert_tree, cover, distcc, gate, mail, memo,
               output, patches, port, split, tree)
from .patches import SERIES_BRANCH as BRANCH, commit_ids, \
    core_patches as patches_of_core, scratch_apply
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
    _, entries = classification.load(classification.yaml_path(kver), yaml_text)
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
    letter = os.path.join(stage, names[0])
    everyone = mail.address(kernel_tree, files, jobs)
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
    report.since = classification.since(kver, entries)
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
    costs = bench.costs(out, kver, kernel_tree.version,
                        patches.digest(patches_of_core(kver)),
                        tree.git(git, "rev-parse",
                                 BRANCH + "^{tree}").strip())
    body = cover.write_cover(
        letter, kver, kernel_tree.version, entries, groups, report.summary,
        files, items, classify.rule_findings(kver, out, kernel_tree),
        conversion.locks_removed, conversion.unregister_added, costs,
        _changes(git, kver, rev, out, stage, entries, report.summary))
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
        with open(classification.yaml_path(kver), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        classification.load(classification.yaml_path(kver))   # the file:line
        raise


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
