"""The rule checks of the 2005 series' other patches over a whole tree:
cocci/notifier_redundant_lock.cocci (3/7), notifier_register_without_
unregister.cocci (4/7) and notifier_hand_rolled_chain.cocci (7/7), in
report mode as `make coccicheck` runs them, each file on its own.
spatch parses only the files that can hold a finding: those whose text
has what each check's rules need (below).  On 6.1 that is 179, 358 and
892 files, where spatch's own search by words (`make coccicheck`)
picked 101, 4580 and 9282 (README, "The 2005 series' other rules").  Their report lines become findings of the audit, each with the
sites it names."""

import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass

from . import chain_api, evidence, output, tree
from .progress import Error, Step, run_logged, say, tail

COCCI = os.path.join(tree.REPO, "cocci")


@dataclass(frozen=True)
class Check:
    name: str
    cocci: str
    patch: str      # the 2005 patch whose rule it is
    what: str
    # The files to parse: a union of intersections of `git grep -E`
    # patterns, then (when given) a test of the file's text.
    grep: tuple
    text: object = None


# A list added to and walked, by the same head: the hand-rolled check's
# add and walk rules (or its link and bare walk) need both.
ADD = re.compile(r"\b(?:list_add(?:_tail)?(?:_rcu)?|hlist_add_head(?:_rcu)?)"
                 r"\s*\([^;]*?,\s*&\s*(\w+)\s*\)")
WALK = re.compile(r"\bh?list_for_each_entry(?:_rcu|_safe)?\s*\(\s*\w+\s*,"
                  r"\s*(?:\w+\s*,\s*)?&\s*(\w+)\s*,")
LINK = re.compile(r"->next\s*=\s*(\w+)\s*;")
BARE = re.compile(r"\bfor\s*\(\s*\w+\s*=\s*(\w+)\s*;[^;]*;\s*\w+\s*=\s*\w+"
                  r"->next\s*\)")


def _same_list(text):
    return bool(set(ADD.findall(text)) & set(WALK.findall(text))
                or set(LINK.findall(text)) & set(BARE.findall(text)))


REGISTER = (rf"\b(({chain_api.alternation(chain_api.KINDS)})_)?"
            r"notifier_chain_register")
# The chains whose locks the 3/7 check looks at: a raw chain's lock is
# its only protection.
_LOCKED = chain_api.alternation(k for k in chain_api.KINDS if k != "raw")
CHECKS = (
    Check("redundant-lock", "notifier_redundant_lock.cocci", "3/7",
          "locks that guard nothing but chain operations",
          ((rf"\b(({_LOCKED})_)?notifier_"
            rf"({chain_api.alternation(chain_api.BARE_OPS)})",),)),
    Check("register-without-unregister",
          "notifier_register_without_unregister.cocci", "4/7",
          "chains registered on and never unregistered from",
          ((REGISTER,),
           (r"\bmodule_exit\(", r"\b(register_\w*notifier\w*|\w*notifier"
            r"\w*_register|notifier_chain_register\w*)\s*\("))),
    Check("hand-rolled-chain", "notifier_hand_rolled_chain.cocci", "7/7",
          "lists walked by hand as notifier chains are",
          ((r"\b(list_add(_tail)?(_rcu)?|hlist_add_head(_rcu)?)\(",
            r"\bh?list_for_each_entry(_rcu|_safe)?\("),
           (r"->next = ", r"\w+ *= *\w+->next *\)")), _same_list),
)
# "./kernel/x.c:12:7-19: WARNING: ..." (spatch's report mode).
REPORT_LINE = re.compile(r"^(?:\./)?(?P<file>[^:\s]+):(?P<line>\d+):\d+-\d+: "
                         r"(?:WARNING|ERROR): (?P<message>.*)$")
# register-without-unregister's wrapper finding names the head.
WRAPPER = re.compile(r"^(?P<fn>\w+)\(\) registers on (?P<head>\w+) on line")


@dataclass(frozen=True)
class Finding:
    check: str
    at: str         # "file:line"
    message: str


def parse(check, lines):
    """The findings of one check's report `lines`; the other lines (its
    banner, "N files match") are not findings."""
    found = []
    for line in lines:
        m = REPORT_LINE.match(line.strip())
        if m:
            found.append(Finding(check, f"{m['file']}:{m['line']}",
                                 m["message"]))
    return sorted(set(found), key=lambda f: (f.at, f.message))


def _grep(source, pattern):
    """The .c files under `source` (a checkout, or any folder) whose text
    matches `pattern`."""
    proc = subprocess.run(["git", "-C", source, "grep", "--no-index", "-l",
                           "-E", "-e", pattern, "--", "*.c"],
                          capture_output=True, text=True)
    if proc.returncode > 1:
        raise Error(f"git grep -E {pattern!r} in {source} failed: "
                    + proc.stderr.strip())
    return set(proc.stdout.split())


# Code that does not run in the kernel: user-space tools, host programs.
NOT_KERNEL = ("tools/", "scripts/")


def files_of(source, check):
    """The kernel's .c files of `source` that `check` parses, sorted."""
    found = set()
    for patterns in check.grep:
        files = _grep(source, patterns[0])
        for pattern in patterns[1:]:
            files &= _grep(source, pattern)
        found |= files
    found = {f for f in found if not f.startswith(NOT_KERNEL)}
    if check.text:
        found = {f for f in found if check.text(_read(source, f))}
    return sorted(found)


def _read(source, name):
    with open(os.path.join(source, name), encoding="utf-8",
              errors="replace") as f:
        return f.read()


def run_check(source, check, jobs, log_path):
    """(findings, problems, files parsed, files with parse errors) of
    `check` over the checkout `source`, each file on its own
    (--file-groups); spatch's reports go to `log_path`, its messages to
    the same name ending in .err: mixed in one pipe, a message once cut
    a report's file name in two.  spatch runs in `source` for the
    findings' paths to be relative to it, but its temporary folders
    (--jobs) go outside it: one left by a killed run would be a local
    change of the user's tree."""
    files = files_of(source, check)
    groups = os.path.splitext(log_path)[0] + ".groups"
    with open(groups, "w", encoding="utf-8") as f:
        f.write("".join(f"{name}\n\n" for name in files))
    cmd = ["spatch", "-D", "report", "--quiet", "--parse-error-msg",
           "--no-show-diff",
           "--no-includes", "--include-headers",
           "--cocci-file", os.path.join(COCCI, check.cocci),
           "--file-groups", groups, "--no-scanner", "--jobs", str(jobs),
           "--chunksize", "1"]
    errors_path = os.path.splitext(log_path)[0] + ".err"
    for path in (log_path, errors_path):
        if os.path.exists(path):
            os.remove(path)
    with tempfile.TemporaryDirectory(prefix="spatch-") as scratch:
        cmd += ["--tmp-dir", os.path.join(scratch, check.name)]
        rc = run_logged(cmd, log_path, check.cocci, cwd=source,
                        count=("found", REPORT_LINE.match),
                        errors_path=errors_path)
    os.remove(groups)
    problems = [] if rc == 0 else [
        f"spatch exited {rc} on {check.cocci}; the end of {errors_path}:\n"
        + tail(errors_path)]
    with open(errors_path, encoding="utf-8", errors="replace") as f:
        messages = f.read()
    # An exception on one file (EXN:) loses that file's findings, and
    # spatch --file-groups still exits 0.
    problems += [f"{check.cocci}: {line} ({errors_path})"
                 for line in messages.splitlines() if line.startswith("EXN")]
    with open(log_path, encoding="utf-8", errors="replace") as f:
        findings = parse(check.name, f.read().splitlines())
    problems += [f"{check.cocci}: a report of {f.at}, a file that is not "
                 f"in the tree ({log_path})" for f in findings
                 if not os.path.isfile(os.path.join(
                     source, f.at.rsplit(":", 1)[0]))]
    return (findings, problems, len(files),
            evidence.unparsed(messages))


def unparsed_lines(found):
    """audit.txt's lines on the files where spatch reported parse errors
    (the only code it skips with a message: a function whose control
    flow it cannot build, such as one with a goto to no label, it drops
    silently, but such code does not compile)."""
    return [f"{name}: spatch reported parse errors in {len(files)} files, "
            "whose code it could not parse the check did not look at: "
            + ", ".join(files)
            for name, files in found.items() if files]


def unregistered_elsewhere(finding, model):
    """Where the tree unregisters from the chain of a register-without-
    unregister wrapper finding, found by the audit in another file; None
    when nowhere (or when the finding is a module's)."""
    m = WRAPPER.match(finding.message)
    if not m:
        return None
    key = (m["head"], finding.at.rsplit(":", 1)[0])
    chain = model.chains.get(key)
    sites = [s for s in (chain.sites if chain else [])
             if s["op"] == "unregister"]
    return f"{sites[0]['file']}:{sites[0]['line']}" if sites else None


def collect(source, jobs, cached, stamp, reuse=False):
    """{"checks": {name: [Finding as dict]}, "seconds", "problems"} of
    every check over `source`, kept in `cached` (a JSON file) and taken
    from there with `reuse` when its `stamp` (the tree's commit and the
    checks' digests) is the same."""
    if reuse and os.path.exists(cached):
        found = output.read_json(cached)
        if found.get("stamp") == stamp:
            say(f"    reusing {cached}")
            return found
    found = {"stamp": stamp, "checks": {}, "seconds": {}, "files": {},
             "unparsed": {}, "problems": []}
    for check in CHECKS:
        with Step(f"rule check {check.patch}, {check.what} "
                  f"({check.cocci}, whole tree)") as step:
            findings, problems, files, partly = run_check(
                source, check, jobs, os.path.splitext(cached)[0]
                + f"-{check.name}.log")
            say(f"    {len(findings)} found in {files} files parsed, "
                f"{len(partly)} of them only in part")
        found["checks"][check.name] = [asdict(f) for f in findings]
        found["seconds"][check.name] = round(step.seconds, 1)
        found["files"][check.name] = files
        found["unparsed"][check.name] = partly
        found["problems"] += problems
    if not found["problems"]:
        output.write_json(cached, found)
    return found


def stamp_of(source, commit="HEAD"):
    """What the findings over `source` at `commit` depend on: the tree,
    the semantic patches, this module (which picks the files) and the
    chain API's names its searches are made from."""
    return {"commit": tree.git(source, "rev-parse", commit).strip(),
            "cocci": {c.name: tree.sha256(os.path.join(COCCI, c.cocci))
                      for c in CHECKS},
            "module": tree.sha256(__file__),
            "chain_api": tree.sha256(chain_api.__file__)}


def audit_items(found, model):
    """The findings as the audit lists them: per check, each with its
    place, the 2005 patch it belongs to and what it says; a register
    wrapper whose chain another file unregisters from is kept with
    "unregistered" saying where, and not counted."""
    if found["problems"]:
        raise Error("the rule checks could not run: "
                    + "; ".join(found["problems"]))
    items = {}
    for check in CHECKS:
        rows = []
        for f in found["checks"][check.name]:
            row = {**f, "patch": check.patch}
            elsewhere = unregistered_elsewhere(Finding(**f), model)
            if elsewhere:
                row["unregistered"] = elsewhere
            elif check.name == "register-without-unregister" and \
                    not WRAPPER.match(f["message"]):
                why = built_in(model.root, f["at"].rpartition(":")[0])
                if why:
                    row["built_in"] = why
            rows.append(row)
        items[check.name] = rows
    return items


# Kconfig files no kernel is configured from.
NOT_CONFIGURED = ("Documentation/", "scripts/", "tools/")
KCONFIG_ENTRY = re.compile(r"(config|menuconfig|choice|endchoice|menu|"
                           r"endmenu|if|endif|comment|source|mainmenu)\b")


def built_in(source, path):
    """Why the kernel object of `path` is never a module ("obj-y in
    Makefile", "CONFIG_X is bool at file:line"), or None when it may be
    one or nothing says: every line of its Makefile that links it, by
    itself or in a composite object, must be obj-y or name a symbol that
    each Kconfig entry its architecture sees declares bool."""
    name = os.path.splitext(os.path.basename(path))[0]
    makefile = os.path.join(os.path.dirname(path), "Makefile")
    try:
        text = _read(source, makefile).replace("\\\n", " ")
    except OSError:
        return None

    def named(obj):
        return rf"\s*[:+]?=(?:.*\s)?{re.escape(obj)}\.o\b"

    objs = {name, *re.findall(r"^([\w-]+)-(?:y|objs|\$\(CONFIG_\w+\))"
                              + named(name), text, re.M)}
    owners = {owner for obj in objs
              for owner in re.findall(r"^obj-(\S+?)" + named(obj), text,
                                      re.M)}
    why = set()
    for owner in sorted(owners):
        m = re.fullmatch(r"\$\(CONFIG_(\w+)\)", owner)
        if owner == "y":
            why.add(f"obj-y in {makefile}")
        elif not m:
            return None                 # obj-m, $(subst ...) and the like
        else:
            at = bool_at(source, m.group(1), path)
            if not at:
                return None
            why.add(f"CONFIG_{m.group(1)} is bool at {at}")
    return "; ".join(sorted(why)) or None


def bool_at(source, symbol, path):
    """Where Kconfig declares `symbol` bool ("file:line"), when every
    entry of it that declares a type and that the architecture of `path`
    sees (all of them outside arch/) declares it bool; else None."""
    arch = path.split("/")[1] + "/" if path.startswith("arch/") else None
    proc = subprocess.run(
        ["git", "-C", source, "grep", "--no-index", "-n", "-E",
         rf"^\s*(menu)?config {symbol}\s*$", "--", "*Kconfig*"],
        capture_output=True, text=True)
    types = []
    for hit in proc.stdout.splitlines():
        kconfig, line = hit.split(":")[:2]
        other_arch = (kconfig.startswith("arch/") and arch
                      and not kconfig.startswith("arch/" + arch))
        if kconfig.startswith(NOT_CONFIGURED) or other_arch:
            continue
        entry = _read(source, kconfig).splitlines()[int(line):]
        for number, text in enumerate(entry, int(line) + 1):
            word = text.split()[0] if text.split() else ""
            if KCONFIG_ENTRY.fullmatch(word):
                break                   # an entry that gives no type
            kind = re.fullmatch(r"(?:def_)?(bool|tristate)", word)
            if kind:
                types.append((kind.group(1), f"{kconfig}:{number}"))
                break
    if types and all(kind == "bool" for kind, _ in types):
        return types[0][1]
    return None


def not_counted(row):
    """Why a finding is listed but not counted, or None."""
    if row.get("unregistered"):
        return f"but {row['unregistered']} unregisters"
    if row.get("built_in"):
        return f"but it is never a module: {row['built_in']}"
    return None


def lines(items):
    """audit.txt's lines of the findings."""
    found = []
    for check in CHECKS:
        for row in items.get(check.name, []):
            why = not_counted(row)
            found.append(f"{check.patch} {check.name}: {row['at']}: "
                         f"{row['message']}"
                         + (f" ({why}: not counted)" if why else ""))
    return found


def counts(items):
    return {c.name: sum(not not_counted(r) for r in items.get(c.name, []))
            for c in CHECKS}
