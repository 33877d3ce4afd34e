"""Splitting the tree-wide conversion commit into one commit per
subsystem, as MAINTAINERS (through scripts/get_maintainer.pl) draws them,
with kernel-style subjects and messages written from the classification."""

import concurrent.futures
import os
import re
from collections import defaultdict

from . import convert, maintainers, memo

# Directory names that say nothing about the subsystem in a subject.
GENERIC = {"kernel", "include", "linux", "asm", "cpu", "platforms",
           "core", "ethernet", "common", "lib", "uapi"}
SUBJECT = "Convert notifier chains to struct notifier_head"


def subsystems(tree_path, paths, jobs, cache=None):
    """{path: the title of the MAINTAINERS section that owns it}; with a
    `cache` folder, kept by the path and maintainers.state()."""
    owners = maintainers.Maintainers(tree_path)
    state = cache and maintainers.state(tree_path)

    def owner(path):
        return memo.cached(cache, memo.key("section", state, path),
                           lambda: owners.owner(path))

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return dict(zip(paths, pool.map(owner, paths)))


def prefix(paths):
    """A subject prefix from the directory most of the files are in:
    arch/x86/kernel/cpu/mce -> x86/mce, drivers/base -> drivers/base,
    net/core -> net, drivers/iio/light -> iio/light."""
    dirs = defaultdict(int)
    for path in paths:
        if path.endswith(".c"):
            dirs[os.path.dirname(path)] += 2
        else:
            dirs[os.path.dirname(path)] += 1
    top = max(sorted(dirs), key=lambda d: dirs[d]).split("/")
    if top[0] in ("arch", "drivers"):
        words = [w for w in top[1:] if w not in GENERIC]
        if top[0] == "drivers" and len(words) == 1:
            return "drivers/" + words[0]
    else:
        words = [w for w in top if w not in GENERIC]
    return "/".join(words[:2]) or top[0]


def prefixes(groups):
    """{section: subject prefix}, unique: where two sections' files share a
    prefix, each also names its first file, "drivers/base: dd"."""
    first = {section: prefix(files) for section, files in groups}
    seen = defaultdict(int)
    for p in first.values():
        seen[p] += 1
    out = {}
    for section, files in groups:
        p = first[section]
        if seen[p] > 1:
            name = next((f for f in files if f.endswith(".c")), files[0])
            p += ": " + os.path.splitext(os.path.basename(name))[0]
        out[section] = p
    return out


def group(changed, sections, together):
    """[(section, [files])] in a stable order: one group per MAINTAINERS
    section, except that `together`, a list of (files, why) that must share
    one commit, joins the sections of its files (and, through them, any
    other section they are joined with) into one group, named after the
    first of them."""
    parent = {path: path for path in changed}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(files):
        files = sorted(f for f in files if f in parent)
        for f in files[1:]:
            parent[find(f)] = find(files[0])

    for section in set(sections[path] for path in changed):
        join(path for path in changed if sections[path] == section)
    for files, _ in together:
        join(files)
    components = defaultdict(list)
    for path in sorted(changed):
        components[find(path)].append(path)
    return sorted(((min(sections[f] for f in files), files)
                   for files in components.values()), key=lambda g: g[1][0])


def chains_named(diff, entries):
    """Classification entries that the diff's changed lines name: a
    chain's symbol, or its member reached through -> or ."""
    text = "\n".join(line for line in diff.splitlines()
                     if line.startswith(("+", "-")) and
                     not line.startswith(("+++", "---")))
    found = []
    for e in entries:
        if e["class"] not in ("atomic", "blocking"):
            continue
        name = e["chain"].rsplit(".", 1)[-1].split()[-1]
        pattern = (rf"(->|\.)\s*{re.escape(name)}\b" if "." in e["chain"]
                   else rf"\b{re.escape(name)}\b")
        if re.search(pattern, text):
            found.append(e)
    return found


def message(subject_prefix, section, files, diff, entries, kver,
            why_together=None, by_text=(), locks=(), added=()):
    """The commit message of one subsystem's conversion."""
    lines = [f"{subject_prefix}: {SUBJECT}", ""]
    defined = [e for e in entries if e["defined"] in files]
    used = [e for e in chains_named(diff, entries) if e not in defined]
    if defined:
        lines += wrap("Convert the notifier chains defined here to struct "
                      "notifier_head, with the class that the series' "
                      "classification gives each:")
        lines.append("")
        for e in defined:
            lines += wrap(f"{e['chain']} ({e['class']}): {e['reason']}",
                          indent="  ", hanging="    ")
        lines.append("")
    text = ("Convert the calls of the typed chain API to "
            "notifier_chain_register() and friends, which take the class "
            "from the head")
    changed = [line[1:].strip() for line in diff.splitlines()
               if line.startswith(("+", "-")) and
               not line.startswith(("+++", "---"))]
    if not any(c and not c.startswith(convert.COMMENT) for c in changed):
        lines += wrap("Make the comments that name the typed chain API name "
                      "notifier_chain_register() and friends, which replace "
                      "it, so that they still name functions that exist.")
    elif used:
        text += " of the chains used here:"
        lines += wrap(text)
        lines.append("")
        for e in used:
            lines += wrap(f"{e['chain']} ({e['class']}, {e['defined']})",
                          indent="  ", hanging="    ")
    else:
        lines += wrap(text + ".")
    lines.append("")
    if why_together:
        lines += wrap(why_together)
        lines.append("")
    for r in locks:
        lines += wrap(f"Remove {r['lock']} ({r['file']}), which guarded "
                      "nothing but the chain operations that the head now "
                      "protects itself: " + "; ".join(r["sections"]) + ".")
        lines.append("")
    for a in added:
        lines += wrap(f"Add {a['wrapper']}() beside {a['register']}(), "
                      f"which registers on {a['chain']} for modules while "
                      "nothing unregisters from it: a module that registers "
                      "can now take its notifier off the chain before it is "
                      "unloaded, as 2005's unregister_die_notifier() "
                      "allowed.")
        lines.append("")
    assembly = [x for x in by_text if x.rpartition(":")[0].endswith(".S")]
    parsed = [x for x in by_text if x not in assembly]
    if assembly:
        lines += wrap("The assembly at " + ", ".join(assembly) + " calls the "
                      "typed chain API by name; the calls are renamed, the "
                      "arguments stay as they are.")
        lines.append("")
    if parsed:
        lines += wrap("spatch could not parse the code around "
                      + ", ".join(parsed) + "; those lines were converted "
                      "by the same renaming, line by line.")
        lines.append("")
    lines += wrap(f"Generated by cocci/notifier_convert.cocci, driven by "
                  f"classify/linux-{kver}.yaml, with:")
    lines += ["", "  tools/notifier-series convert . \\",
              f"    --classification classify/linux-{kver}.yaml --in-place",
              ""]
    lines += wrap(f"MAINTAINERS section: {section}.")
    return "\n".join(lines) + "\n"


def wrap(text, width=72, indent="", hanging=""):
    out, line = [], indent
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > width:
            out.append(line)
            line = hanging + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    if line.strip():
        out.append(line)
    return out
