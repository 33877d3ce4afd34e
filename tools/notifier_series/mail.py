"""The mail side of the series.  Each patch is addressed to the
maintainers and lists that scripts/get_maintainer.pl names for it (To:
and Cc:, kept by the patch's text).  The series is a b4 prep branch,
b4/notifier-series-<kver>: b4's cover
commit on the pristine tree (the cover letter, its To: and Cc: trailers
and b4's tracking data), then the series' own commits, so that `b4 prep
-p`, `--edit-cover`, `--compare-to vN` and `b4 send` work on it as on any
branch b4 made.  A regeneration whose patches differ from the branch's is
the next revision: the branch's is tagged sent/notifier-series-<kver>-vN
first, as `b4 send` tags what it sends, so that `b4 prep --compare-to vN`
finds it.  Nothing here needs the network: `b4 send` only writes its
messages to a folder (-o)."""

import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import uuid
from dataclasses import dataclass

from . import maintainers, memo, split, tree
from .patches import commit_ids, patch_text
from .progress import Error, Step, say

# Where b4 0.12 keeps its tracking data in the cover commit (b4.ez's
# MAGIC_MARKER), and the line it writes after it.
MAGIC = "--- b4-submit-tracking ---"
MAGIC_COMMENT = ("# This section is used internally by b4 prep for "
                 "tracking purposes.")
PREFIXES = ["RFC"]
SUBJECT = "notifier: Safe notifier chains on struct notifier_head"
# b4 send: no signature (that needs a key), and not the sender in Cc:.
SEND = ("send", "--no-sign", "--not-me-too")
# In a kernel tree without an SMTP server configured, b4 send would use
# the kernel.org web endpoint, which refuses unsigned messages even to
# write them out: a sendmail command, never run with -o, says SMTP.
SEND_CONFIG = {"sendemail.smtpserver": "/bin/false"}


def branch(kver):
    return f"b4/notifier-series-{kver}"


def sent_tag(kver, revision):
    """The tag `b4 send` makes of revision `revision` of branch(kver)
    (b4.ez.get_sent_tagname())."""
    return f"sent/notifier-series-{kver}-v{revision}"


@dataclass
class Revision:
    number: int
    change_id: str
    history: dict
    # A new revision: the one before it was tagged by this run.
    new: bool = False


def last(git, kver):
    """(cover commit, cover text, tracking, patch ids) of branch(kver), or
    None when there is none."""
    ref = "refs/heads/" + branch(kver)
    if not _exists(git, ref):
        return None
    cover = tree.git(git, "log", "-1", "--format=%H", "-F", "--grep", MAGIC,
                     ref).strip()
    if not cover:
        raise Error(f"{git}: branch {branch(kver)} has no b4 cover commit "
                    f"(no '{MAGIC}' in its log); delete it to start again "
                    f"at v1 (git -C {git} branch -D {branch(kver)})")
    text, _, data = tree.git(git, "log", "-1", "--format=%B",
                             cover).partition(MAGIC)
    try:
        tracking = json.loads(data[data.index("{"):])
        tracking["series"]["revision"] = int(
            tracking["series"]["revision"])
    except (ValueError, KeyError, TypeError) as e:
        raise Error(f"{git}: commit {cover[:12]} of {branch(kver)}: b4's "
                    f"tracking data cannot be read: {e}")
    return cover, text.strip(), tracking, patches_of(git, cover, ref)


def patches_of(git, base, tip):
    """What makes two revisions the same: each commit of base..tip, in
    order, by its patch-id and its message."""
    messages = tree.git(git, "log", "--reverse", "-z", "--format=%B",
                        f"{base}..{tip}").split("\0")
    return list(zip(commit_ids(git, base, tip), messages))


def check_refs(git, kver):
    """last(), once the b4 refs of `kver` are known to be of one series:
    sent tags without their branch, or a tag of the branch's revision
    with another change-id, are an Error (a run checks them first)."""
    found = last(git, kver)
    if found is None:
        tags = tree.git(git, "tag", "-l", sent_tag(kver, "*")).split()
        if tags:
            raise Error(
                f"{git}: the tags {', '.join(tags)} are revisions of a b4 "
                f"branch {branch(kver)} that is gone; restore the branch, "
                f"or delete the tags to start again at v1 (git -C {git} "
                f"tag -d {' '.join(tags)})")
        return None
    series = found[2]["series"]
    tag = sent_tag(kver, series["revision"])
    if _exists(git, "refs/tags/" + tag) and \
            tag_change_id(git, tag) != series["change-id"]:
        raise Error(f"{git}: tag {tag} is of another series (change-id "
                    f"{tag_change_id(git, tag)}, the branch's is "
                    f"{series['change-id']}); delete it (git -C {git} tag "
                    f"-d {tag})")
    return found


def revision(git, kver, ids):
    """The Revision of a series whose patches are `ids` (patches_of()):
    the branch's own when it holds the same patches (or when `b4 send`
    already tagged them and moved on to the next), else the next one,
    after the branch's is tagged as sent."""
    found = check_refs(git, kver)
    if found is None:
        today = datetime.date.today().strftime("%Y%m%d")
        return Revision(1, f"{today}-notifier-series-{kver}-"
                        f"{uuid.uuid4().hex[:12]}", {})
    cover, text, tracking, old = found
    series = tracking["series"]
    number = series["revision"]
    kept = Revision(number, series["change-id"], series.get("history", {}))
    if old == ids:
        return kept
    before = sent_tag(kver, number - 1)
    if number > 1 and _exists(git, "refs/tags/" + before) and \
            patches_of(git, tree.PRISTINE, before) == old:
        return kept     # b4 send tagged these and made this revision
    tag = sent_tag(kver, number)
    if not _exists(git, "refs/tags/" + tag):
        commits = tree.git(git, "rev-list", "--reverse",
                           f"{cover}..refs/heads/{branch(kver)}").split()
        end = copy_commits(git, commits, tree.PRISTINE)
        pristine = tree.git(git, "rev-parse", tree.PRISTINE).strip()
        tree.git(git, "tag", "-a", "-F", "-", tag, end, input=(
            f"{text}\n\n---\nbase-commit: {pristine}\n"
            f"change-id: {series['change-id']}\n"))
        say(f"    the patches changed since v{number}: tagged it {tag}")
    kept.number, kept.new = number + 1, True
    return kept


def tag_change_id(git, tag):
    """The change-id: line of a sent tag's message, as b4 reads it (None
    for a tag without one, or a lightweight tag)."""
    if tree.git(git, "cat-file", "-t", tag).strip() != "tag":
        return None
    for line in tree.git(git, "cat-file", "tag", tag).splitlines():
        if line.lower().startswith("change-id:"):
            return line.split(":", 1)[1].strip()
    return None


def _exists(git, ref):
    return bool(tree.git(git, "rev-parse", "-q", "--verify", ref,
                         check=False).strip())


def copy_commits(git, commits, onto):
    """Copies `commits` (oldest first) onto `onto`, each with its own
    tree, author, committer and message; returns the last copy."""
    parent = tree.git(git, "rev-parse", onto).strip()
    for commit in commits:
        raw = tree.git(git, "cat-file", "commit", commit)
        head, sep, message = raw.partition("\n\n")
        lines = [line for line in head.splitlines()
                 if not line.startswith("parent ")]
        lines.insert(1, f"parent {parent}")     # after the tree line
        parent = tree.git(git, "hash-object", "-t", "commit", "-w",
                          "--stdin", input="\n".join(lines) + sep
                          + message).strip()
    return parent


def cover_message(body, to, cc, tracking):
    """b4's cover commit: the subject, the body, To: and Cc: trailers
    (what `b4 prep --auto-to-cc` adds) and the tracking data."""
    trailers = [f"To: {a}" for a in to] + [f"Cc: {a}" for a in cc]
    return (f"{SUBJECT}\n\n{body.strip()}\n\n"
            + ("\n".join(trailers) + "\n\n" if trailers else "")
            + f"{MAGIC}\n{MAGIC_COMMENT}\n{json.dumps(tracking, indent=2)}"
            + "\n")


def enroll(git, kver, rev, series_branch, body, to, cc):
    """Makes branch(kver): b4's cover commit for revision `rev` on the
    pristine tree, then the commits of `series_branch`; checks it out
    (the same files as `series_branch`: nothing is written)."""
    name = branch(kver)
    with Step(f"the series as b4 branch {name}, v{rev.number}"):
        tracking = {"series": {"revision": rev.number,
                               "change-id": rev.change_id,
                               "base-branch": None, "prefixes": PREFIXES}}
        if rev.history:
            tracking["series"]["history"] = rev.history
        cover = tree.git(git, "commit-tree", tree.PRISTINE + "^{tree}",
                         "-p", tree.PRISTINE, "-F", "-",
                         input=cover_message(body, to, cc,
                                             tracking)).strip()
        tip = copy_commits(git, tree.git(
            git, "rev-list", "--reverse",
            f"{tree.PRISTINE}..{series_branch}").split(), cover)
        tree.git(git, "update-ref", "refs/heads/" + name, tip)
        tree.git(git, "config", f"branch.{name}.b4-prep-cover-strategy",
                 "commit")
        tree.git(git, "checkout", "-q", name)


def b4(git, *args, config=None):
    """Runs b4 in the tree, on the branch checked out, with git
    configuration `config` ({key: value}) added; its output."""
    env = dict(os.environ)
    for key, value in (config or {}).items():
        n = int(env.get("GIT_CONFIG_COUNT", 0))
        env.update({"GIT_CONFIG_COUNT": str(n + 1),
                    f"GIT_CONFIG_KEY_{n}": key, f"GIT_CONFIG_VALUE_{n}": value})
    proc = subprocess.run(["b4"] + list(args), cwd=git, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, env=env)
    if proc.returncode:
        raise Error(f"b4 {' '.join(args)} in {git} failed (status "
                    f"{proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def send(git, folder):
    """`b4 send -o folder` of the branch checked out: the messages b4
    would send, written to `folder`; returns their paths, cover first."""
    with Step(f"b4 send -o {folder}"):
        b4(git, *SEND, "-o", folder, config=SEND_CONFIG)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith(".eml"))


def range_diff(git, kver, number, series_branch):
    """`git range-diff` of revision `number` (its sent tag) and
    `series_branch`, as `b4 prep --compare-to v<number>` shows it; None
    when that tag is gone."""
    if not _exists(git, "refs/tags/" + sent_tag(kver, number)):
        return None
    return tree.git(git, "range-diff", "--no-color",
                    f"{tree.PRISTINE}..{sent_tag(kver, number)}",
                    f"{tree.PRISTINE}..{series_branch}")


RANGE_LINE = re.compile(r"^\s*(\d+|-):\s+\S+\s+([=!<>])\s+(\d+|-):\s+\S+ "
                        r"(.*)$")


def patch_changes(text):
    """{"changed": [...], "added": [...], "dropped": [...]} subjects, from
    range-diff's summary lines."""
    found = {"changed": [], "added": [], "dropped": []}
    for line in text.splitlines():
        m = RANGE_LINE.match(line)
        if m:
            kind = {"!": "changed", ">": "added", "<": "dropped"}.get(
                m.group(2))
            if kind:
                found[kind].append(m.group(4))
    return found


def changes(number, old_entries, entries, patches, old_checks, checks):
    """The cover letter's "Changes since v<number>" lines: the chains whose
    class changed and why (old_entries None: that revision's
    classification is not kept), the patches changed, added and dropped
    (patch_changes(); None: its tag is gone), and the checks whose
    results changed (old_checks None: not kept)."""
    items = []
    if old_entries is None:
        items.append(f"The classification of v{number} is not kept here "
                     f"(out/<kver>/revisions/v{number}/): class changes "
                     "are not listed.")
    else:
        before = {(e["chain"], e["defined"]): e for e in old_entries}
        after = {(e["chain"], e["defined"]): e for e in entries}
        for chain, defined in sorted(set(before) | set(after)):
            old = before.get((chain, defined))
            new = after.get((chain, defined))
            if old is None:
                items.append(f"{chain} ({defined}) is new, {new['class']}: "
                             f"{new['reason']}")
            elif new is None:
                items.append(f"{chain} ({defined}), {old['class']}, is no "
                             "longer classified.")
            elif old["class"] != new["class"]:
                items.append(f"{chain} ({defined}) is now {new['class']}, "
                             f"was {old['class']}: {new['reason']}")
    if patches is None:
        items.append(f"The tag of v{number} is gone: the patches are not "
                     "compared.")
    for kind in ("changed", "added", "dropped"):
        items += [f"Patch {kind}: {s}" for s in (patches or {}).get(kind,
                                                                   [])]
    if old_checks is not None:
        was = {line.split(":")[0]: line.split(":", 1)[-1].strip()
               for line in old_checks}
        for line in checks:
            name = line.split(":")[0]
            if line not in old_checks:
                items.append(line + (f" (v{number}: {was[name]})"
                                     if name in was else " (new check)"))
    if not items:
        items.append("No change but the dates.")
    lines = [f"Changes since v{number}:"]
    for item in items:
        lines += split.wrap(item, indent="-", hanging="  ")
    return lines


# get_maintainer.pl's options for the To: (people) and the Cc: (lists).
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


def address(kernel_tree, files, jobs):
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
