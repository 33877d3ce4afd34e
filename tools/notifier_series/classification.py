"""The classification files of classify/: loading with file:line errors,
checking against a tree's chains, writing drafts that keep every
reviewed decision, and what changed since the previous version's file
(since()).  The schema is in classify/README.md."""

import os
import re

import yaml

from . import output
from .chains import ROOTED_RULES, RULES
from .progress import Error
from .tree import REPO

# The reviewed classifications, classify/linux-<kver>.yaml.
FOLDER = os.path.join(REPO, "classify")


def yaml_path(kver):
    """classify/linux-<kver>.yaml."""
    return os.path.join(FOLDER, f"linux-{kver}.yaml")


CLASSES = ("atomic", "blocking", "excluded")
DECLARED = ("atomic", "blocking", "raw", "srcu", "bare")
FIELDS = {"chain": str, "defined": str, "declared": str, "class": str,
          "reason": str, "reviewed": bool}
REQUIRED = ("chain", "defined", "declared", "class", "reason")
TYPE_NAMES = {str: "string", bool: "boolean"}
# A waiver: a rule violation of the chain, at a function of a file, that
# the series leaves as it is, and why a reviewer may accept that.
# The waiver of a path from atomic context may name the function where
# the path starts ("root") when its reason is about that path: it then
# waives that root only, not every root of the site.
WAIVER_FIELDS = ("rule", "file", "function", "reason")
# A waiver's reason opens with its verdict: the violation cannot happen,
# or it is a bug of the unmodified kernel (chains.BROKEN_BEFORE) that the
# series leaves as it is.
VERDICTS = ("false:", "real")
WAIVER_OPTIONAL = ("root",)


class Entry(dict):
    """One chain's decision, with the line it starts at."""

    line = 0

    @property
    def key(self):
        return (self["chain"], self["defined"])


def _scalar(node):
    return yaml.safe_load(yaml.serialize(node))


def load(path, text=None):
    """(kernel, [Entry]) of a classification file.  Raises Error naming
    the file and line of every problem: malformed YAML, a missing or
    unknown field, an unknown class, a duplicate chain."""
    if text is None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise Error(f"{path}: {e.strerror}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data[:e.start].count(b"\n") + 1
            raise Error(f"{path}:{line}: not UTF-8 text (byte "
                        f"{data[e.start]:#04x})")
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        raise Error(f"{where}: not valid YAML: {getattr(e, 'problem', e)}")
    problems = []
    if not isinstance(root, yaml.MappingNode):
        raise Error(f"{path}:1: expected a mapping with 'kernel' and "
                    "'chains'")
    top = {k.value: v for k, v in root.value}
    kernel = top.get("kernel")
    if kernel is None or not isinstance(kernel, yaml.ScalarNode):
        problems.append(f"{path}:1: 'kernel' (the version, a string) is "
                        "missing")
    chains = top.get("chains")
    if not isinstance(chains, yaml.SequenceNode):
        raise Error("\n".join(problems + [f"{path}:1: 'chains' must be a "
                                          "list of chains"]))
    entries, seen = [], {}
    for node in chains.value:
        line = node.start_mark.line + 1
        if not isinstance(node, yaml.MappingNode):
            problems.append(f"{path}:{line}: a chain must be a mapping of "
                            + ", ".join(REQUIRED))
            continue
        entry = Entry()
        entry.line = line
        nested = _read_fields(path, node, entry, FIELDS, problems, "field",
                              nested=("waivers",))
        if "waivers" in nested:
            entry["waivers"] = _waivers(path, nested["waivers"], problems)
        label = entry.get("chain", "?")
        missing = [f for f in REQUIRED if f not in entry]
        if missing:
            problems.append(f"{path}:{line}: chain {label}: missing "
                            + ", ".join(missing))
            continue
        where = f"{path}:{line}: chain {label}"
        _one_of(where, "class", entry["class"], CLASSES, problems)
        _one_of(where, "declared kind", entry["declared"], DECLARED, problems)
        if entry["declared"] in ("raw", "srcu") and \
                entry["class"] != "excluded":
            problems.append(f"{path}:{line}: chain {label}: a "
                            f"{entry['declared']} chain can only be "
                            "excluded")
        if entry.key in seen:
            problems.append(f"{path}:{line}: chain {label} (defined in "
                            f"{entry['defined']}) is already classified at "
                            f"line {seen[entry.key]}")
        else:
            seen[entry.key] = line
            entries.append(entry)
    if problems:
        raise Error("\n".join(problems))
    return _scalar(kernel), entries


def _read_fields(path, node, record, types, problems, what, nested=(),
                 nonempty=False):
    """Reads the fields of the mapping `node` into `record`, each a scalar
    of the type `types` gives it (and not blank, with `nonempty`); an
    unknown field or a wrong value goes to `problems` with its file and
    line.  Returns the nodes of the `nested` fields by name."""
    found = {}
    for k, v in node.value:
        name = k.value
        if name in nested:
            found[name] = v
            continue
        if name not in types:
            problems.append(f"{path}:{k.start_mark.line + 1}: unknown "
                            f"{what} {name!r}")
            continue
        value = _scalar(v) if isinstance(v, yaml.ScalarNode) else None
        if not isinstance(value, types[name]) or \
                (nonempty and not str(value).strip()):
            problems.append(f"{path}:{v.start_mark.line + 1}: {name} "
                            f"must be a {'non-empty ' if nonempty else ''}"
                            f"{TYPE_NAMES[types[name]]}")
            continue
        record[name] = value
    return found


def _one_of(where, what, value, allowed, problems):
    """Whether `value` is one of `allowed`; if not, says so in `problems`
    at `where`."""
    if value in allowed:
        return True
    problems.append(f"{where}: unknown {what} {value!r} (one of "
                    f"{', '.join(allowed)})")
    return False


class Waiver(dict):
    """A waived violation, with the line it starts at."""

    line = 0


def _waivers(path, node, problems):
    """The waivers of a chain's `waivers:` list; problems go to
    `problems` with the file and line."""
    where = f"{path}:{node.start_mark.line + 1}"
    if not isinstance(node, yaml.SequenceNode):
        problems.append(f"{where}: waivers must be a list of mappings of "
                        + ", ".join(WAIVER_FIELDS))
        return []
    out = []
    for item in node.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            problems.append(f"{path}:{line}: a waiver must be a mapping of "
                            + ", ".join(WAIVER_FIELDS))
            continue
        waiver = Waiver()
        waiver.line = line
        _read_fields(path, item, waiver,
                     dict.fromkeys(WAIVER_FIELDS + WAIVER_OPTIONAL, str),
                     problems, "waiver field", nonempty=True)
        missing = [f for f in WAIVER_FIELDS if f not in waiver]
        if missing:
            problems.append(f"{path}:{line}: waiver: missing "
                            + ", ".join(missing))
            continue
        if not waiver["reason"].startswith(VERDICTS):
            problems.append(f"{path}:{line}: waiver: the reason must "
                            "open with its verdict, " + " or ".join(
                                f'"{v}"' for v in VERDICTS))
            continue
        if waiver.keys() & set(WAIVER_OPTIONAL) and \
                waiver["rule"] not in ROOTED_RULES:
            problems.append(f"{path}:{line}: waiver: only the waiver of "
                            "a path from atomic context ("
                            + ", ".join(ROOTED_RULES) + ") names a root")
            continue
        if _one_of(f"{path}:{line}: waiver", "rule", waiver["rule"], RULES,
                   problems):
            out.append(waiver)
    return out


def check_coverage(path, entries, chains):
    """Problems between a file's entries and a tree's chains {key: Chain}:
    a chain of the file not in the tree, or declared otherwise, and a
    chain of the tree missing from the file."""
    problems = []
    for e in entries:
        chain = chains.get(e.key)
        if chain is None:
            problems.append(f"{path}:{e.line}: chain {e['chain']} (defined "
                            f"in {e['defined']}) is not in the tree")
        elif chain.kind != e["declared"]:
            problems.append(f"{path}:{e.line}: chain {e['chain']}: the tree "
                            f"declares it {chain.kind}, not "
                            f"{e['declared']}")
    listed = {e.key for e in entries}
    for key, chain in sorted(chains.items()):
        if key not in listed:
            problems.append(f"{path}: chain {chain.id} (defined at "
                            f"{chain.defined}:{chain.line}) is missing")
    return problems


def carry(entries, chains, proposals):
    """The entries of a draft for a tree: every decision whose chain still
    exists is kept (following a chain that moved to another file); new
    chains get the proposal, marked reviewed: false.  Returns (entries,
    report) where report lists the chains that appeared, vanished, moved
    or changed declared kind."""
    by_key = {e.key: e for e in entries}
    by_id = {}
    for e in entries:
        by_id.setdefault(e["chain"], []).append(e)
    out, used = [], set()
    report = {"appeared": [], "vanished": [], "moved": [], "redeclared": []}
    for key, chain in sorted(chains.items()):
        old = by_key.get(key)
        if old is None:
            moved = [e for e in by_id.get(chain.id, [])
                     if e.key not in chains and e.key not in used]
            if len(moved) == 1:
                old = moved[0]
                report["moved"].append(f"{chain.id}: {old['defined']} -> "
                                       f"{chain.defined}")
        if old is not None:
            used.add(old.key)
            entry = Entry(old)
            entry["defined"] = chain.defined
            if old["declared"] != chain.kind:
                report["redeclared"].append(
                    f"{chain.id}: {old['declared']} -> {chain.kind}")
                entry["declared"] = chain.kind
                if chain.kind in ("raw", "srcu"):
                    entry["class"] = "excluded"
                entry["reviewed"] = False
            out.append(entry)
            continue
        klass, reason = proposals[key]
        report["appeared"].append(f"{chain.id} ({chain.defined})")
        out.append(Entry(chain=chain.id, defined=chain.defined,
                         declared=chain.kind, **{"class": klass},
                         reason=reason, reviewed=False))
    report["vanished"] = [f"{e['chain']} ({e['defined']})" for e in entries
                          if e.key not in used]
    return out, report


def dump(kernel, entries, header):
    """The text of a classification file, in a stable, diffable order."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += [f"kernel: {_quote(kernel)}", "chains:"]
    for e in sorted(entries, key=lambda e: (e["defined"], e["chain"])):
        lines.append(f"- chain: {_quote(e['chain'])}")
        for field in ("defined", "declared", "class", "reason"):
            lines.append(f"  {field}: {_quote(e[field])}")
        if e.get("reviewed") is False:
            lines.append("  reviewed: false")
        for i, w in enumerate(e.get("waivers", [])):
            for field in WAIVER_FIELDS + WAIVER_OPTIONAL:
                lead = "  - " if field == WAIVER_FIELDS[0] else "    "
                if not i and field == WAIVER_FIELDS[0]:
                    lines.append("  waivers:")
                if field in w:
                    lines.append(f"{lead}{field}: {_quote(w[field])}")
    return "\n".join(lines) + "\n"


def _quote(value):
    text = yaml.safe_dump(value, default_style=None, width=10 ** 6,
                          allow_unicode=True).strip()
    if text.endswith("\n..."):
        text = text[:-4].strip()
    return text


write = output.write_text


def previous_version(kver):
    """The classified version before `kver` (6.1 for 6.12), or None."""
    def key(v):
        return tuple(int(x) for x in v.split("."))
    versions = sorted((f[len("linux-"):-len(".yaml")] for f in
                       os.listdir(FOLDER)
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
    _, old = load(yaml_path(old_kver))
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
