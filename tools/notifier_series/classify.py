"""The classification stage: inventory and evidence of a tree's notifier
chains, the proposed class of each, the rule checks, the reviewed YAML of
classify/ checked against the tree, and the audit report."""

import hashlib
import json
import os
import pickle
import re
import time
from collections import Counter

from . import (callgraph, chain_api, chains, classification, evidence,
               gate, memo, output, paths, records, rulechecks, runtime,
               tree)
from .progress import Error, Step, say
from .records import Evidence

SEED = os.path.join(classification.FOLDER, "seed-2005.yaml")
HEADER = """Reviewed classification of the notifier chains of Linux {kver}.
One entry per chain of the tree; schema and workflow: classify/README.md.
Entries marked "reviewed: false" are drafts that a person has yet to check.
"""


def pristine_checkout(kernel_tree):
    """A git worktree of the tree's pristine commit next to it, made once:
    the chains are classified as the tree declares them before the series,
    whatever branch the tree itself is on."""
    path = tree.worktree(kernel_tree, "pristine").path
    pristine = tree.git(kernel_tree.path, "rev-parse", tree.PRISTINE
                        + "^{commit}").strip()
    head = tree.git(path, "rev-parse", "HEAD", check=False).strip()
    if head != pristine or tree.git(path, "status", "--porcelain").strip():
        raise Error(f"{path} is not a clean checkout of the pristine "
                    f"commit; remove it (git -C {kernel_tree.path} worktree "
                    "remove --force ...) to let it be made again")
    return path


def evidence_cache(kernel_tree):
    """The folder of spatch's cached records, in the work folder."""
    return tree.cache(kernel_tree, "evidence")


def callgraph_cache(kernel_tree):
    """The file of the call graph's facts, in the work folder."""
    return tree.cache(kernel_tree, "callgraph",
                      os.path.basename(kernel_tree.path) + ".pickle")


def build_graph(kernel_tree, source, jobs, what):
    """(callgraph.Graph, figures) of the checkout `source`, its facts
    read again only for the files that changed since the last run; the
    linked graph of the same files (by blob) and code is loaded whole."""
    with Step(f"call graph of {what}"):
        files = callgraph.source_files(source)
        key = memo.key("linked", callgraph.extractor_hash(),
                       tree.code_state("callgraph"),
                       *sorted(f"{p} {b}" for p, b in files.items()))
        kept = tree.cache(kernel_tree, "linked",
                          os.path.basename(source) + ".pickle")
        started = time.monotonic()
        graph, figures = _load_linked(kept, key)
        if graph is not None:
            say(f"    the linked graph of the same files, loaded from "
                f"{kept} in {time.monotonic() - started:.1f}s: "
                f"{figures['functions']} functions, {figures['calls']} "
                "calls")
            return graph, figures
        facts, figures = callgraph.index(source, callgraph_cache(
            kernel_tree), jobs, files)
        started = time.monotonic()
        graph = callgraph.Graph(facts)
        graph.closures()
        figures["link_seconds"] = round(time.monotonic() - started, 1)
        figures.update(graph.size())
        _keep_linked(kept, key, graph, figures)
    say(f"    {figures['files']} files ({figures['read']} read again, "
        f"{figures['megabytes_read']} MB) in {figures['index_seconds']}s, "
        f"linked in {figures['link_seconds']}s: {figures['functions']} "
        f"functions, {figures['calls']} calls")
    return graph, figures


def _load_linked(path, key):
    """(graph, figures) kept in `path` under `key`, or (None, None)."""
    try:
        with open(path, "rb") as f:
            if pickle.load(f) != key:
                return None, None
            return callgraph.unpickle(f)
    except (OSError, EOFError, pickle.PickleError, AttributeError,
            ValueError, ImportError):
        return None, None


def _keep_linked(path, key, graph, figures):
    """Keeps the linked graph of one checkout, replacing the last."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with output.replaced(path, "wb") as f:
        pickle.dump(key, f)
        pickle.dump((graph, figures), f, protocol=pickle.HIGHEST_PROTOCOL)


def gate_cache(kernel_tree):
    """The file of the gate's last judgement, in the work folder."""
    return tree.cache(kernel_tree, "gate",
                      os.path.basename(kernel_tree.path) + ".json")


def gate_stamp(kver, kernel_tree, depth):
    """What the gate's judgement of `kver` depends on: the pristine
    commit, what it reads of the classification (gate_inputs()), the fix
    patches, the depth, spatch's version and the toolkit's own code and
    semantic patches."""
    h = hashlib.sha256(f"{depth} {evidence.spatch_version(None)} ".encode())
    h.update(tree.git(kernel_tree.path, "rev-parse",
                      tree.PRISTINE + "^{commit}").encode())
    h.update(tree.code_state().encode())
    h.update(gate_inputs(classification.yaml_path(kver)).encode())
    for path in gate.fix_patches(kver):
        h.update(f"{os.path.relpath(path, tree.REPO)} "
                 f"{tree.sha256(path)}\n".encode())
    return h.hexdigest()


def gate_inputs(path):
    """The classification as the gate reads it: every field of every
    entry and waiver, with their lines (its messages quote them), but a
    chain's own reason, which only the audit and the series' messages
    show.  A reworded reason does not make the gate judge again."""
    _, entries = classification.load(path)
    return json.dumps([[{k: v for k, v in e.items()
                         if k not in ("reason", "waivers")}, e.line,
                        [[dict(w), w.line] for w in e.get("waivers", [])]]
                       for e in entries], sort_keys=True, default=str)


def callgraph_run(kver, *, work=None, jobs=None, out=None, explain=()):
    """Builds or refreshes the call graph of the pristine tree of `kver`,
    writes out/<kver>/callgraph.json and prints the paths of the
    functions named in `explain`."""
    out = tree.out_folder(out)
    kernel_tree = tree.prepare(kver, work)
    graph, figures = build_graph(kernel_tree, pristine_checkout(
        kernel_tree), tree.jobs(jobs),
        f"Linux {kernel_tree.version}")
    folder = os.path.join(out, kver)
    os.makedirs(folder, exist_ok=True)
    output.write_json(os.path.join(folder, "callgraph.json"),
                      callgraph.report(graph, figures))
    say(f"  report in {folder}/callgraph.json")
    for name in explain:
        say("\n".join(callgraph.explain(graph, name)))
    return 0


def attach_evidence(model, graph, entries, depth):
    """The call graph's evidence on every chain of `model`; the callouts
    of the chains classified atomic (declared atomic when not
    classified) run in atomic context.  Returns figures."""
    decided = {e.key: e["class"] for e in entries}
    atomic = {key for key, c in model.chains.items()
              if decided.get(key, c.kind) == "atomic"}
    return paths.attach(model, graph, atomic, depth)


def collect(kernel_tree, source, jobs, what):
    """The Evidence of the checkout `source`: kept whole for a
    checkout without local changes (evidence_key()), else collected with
    spatch's results cached by content."""
    with Step(f"collecting the evidence of {what} (spatch)"):
        started = time.monotonic()
        folder = tree.cache(kernel_tree, "evidence-tree")
        key = evidence_key(source)
        kept = memo.get(folder, key) if key else None
        if kept is not None:
            say("    the evidence of the same checkout and code, "
                "from the cache")
            found = Evidence.from_json(kept)
            found.seconds = round(time.monotonic() - started, 1)
            return found
        found = evidence.collect(source, jobs, chains.followed_in(source),
                                 evidence_cache(kernel_tree))
        found.seconds = round(time.monotonic() - started, 1)
        if key and not found.problems:
            memo.put(folder, key, found.to_json())
    return found


def evidence_key(source):
    """What the evidence of the checkout `source` depends on: its tree
    object, spatch's and git's versions (git grep picks the files), the
    .cocciconfig of the home folder (the checkout's is in its tree), the
    semantic patch and the code of evidence.py and chains.py (which
    picks the wrappers followed); None when the checkout has local
    changes, which its tree object does not hold, even ignored ones."""
    if not tree.clean(source):
        return None
    home = os.path.join(os.path.expanduser("~"), ".cocciconfig")
    return memo.key("evidence", tree.git(source, "rev-parse", "HEAD^{tree}"),
                    tree.git(source, "--version"),
                    tree.sha256(home) if os.path.exists(home) else "",
                    evidence.spatch_version(evidence.spatch_env()),
                    tree.code_state("evidence", "chains",
                                    files=[evidence.SMPL]))


def evidence_stamp(source):
    """What out/<kver>/evidence.json depends on: the checkout, the
    semantic patch and the code that collects it (evidence.py, chains.py,
    which picks the wrappers whose calls are followed, chain_api.py, which
    its searches are made from, and records.py, which gives its form)."""
    return {"commit": tree.git(source, "rev-parse", "HEAD").strip(),
            "smpl": tree.sha256(evidence.SMPL),
            "collector": {os.path.basename(m.__file__): tree.sha256(m.__file__)
                          for m in (evidence, chains, chain_api, records)}}


def analyse(kver, *, work, jobs, out, reuse=False, entries=None,
            depth=callgraph.DEPTH):
    """(chains.Model, facts) of the pristine tree of `kver`, with the call
    graph (callgraph.Graph) as its `graph` and the heads that the graph's
    lexer found in structures added to its chains; the evidence
    records are kept in out/<kver>/evidence.json, and with `reuse` taken
    from there when they came from the same tree and semantic patch."""
    kernel_tree = tree.prepare(kver, work)
    source = pristine_checkout(kernel_tree)
    graph, figures = build_graph(kernel_tree, source, jobs,
                                 f"Linux {kernel_tree.version}")
    folder = os.path.join(out, kver)
    cached = os.path.join(folder, "evidence.json")
    stamp = evidence_stamp(source)
    found = None
    if reuse and os.path.exists(cached):
        with open(cached, encoding="utf-8") as f:
            kept = json.load(f)
        if kept.get("stamp") == stamp:
            found = Evidence.from_json(kept)
            say(f"    reusing {cached}")
    if not found:
        found = collect(kernel_tree, source, jobs,
                        f"Linux {kernel_tree.version}")
        found.stamp = stamp
        os.makedirs(folder, exist_ok=True)
        output.write_json(cached, found)
    facts = {"kernel": kernel_tree.version,
             "package": kernel_tree.record["package"],
             "evidence_seconds": found.seconds,
             "files": found.files, "wrappers": len(found.wrappers),
             "not_followed": found.not_followed,
             "spatch_problems": found.problems,
             "spatch_unparsed": found.unparsed}
    facts["callgraph"] = figures
    model = chains.Model(found.records, source, graph.heads,
                        graph.is_static)
    model.depth = depth
    if entries is None and os.path.exists(classification.yaml_path(kver)):
        _, entries = classification.load(classification.yaml_path(kver))
    figures.update(attach_evidence(model, graph, entries or [], depth))
    mark_unparsed(model, source, found.unparsed, found.wrappers)
    return model, facts


def mark_unparsed(model, source, files, followed=()):
    """Adds to what was searched for each chain the files that spatch
    parsed only in part and that name it, or one of its wrappers that
    the evidence followed (`followed`): sites there may be missing.  A
    name is found as a whole word of the file, a call as a whole word
    followed by a parenthesis; each file's words are read once."""
    words, calls = {}, {}
    for f in files:
        with open(os.path.join(source, f), encoding="utf-8",
                  errors="replace") as text:
            text = text.read()
        words[f] = set(re.findall(r"\w+", text))
        calls[f] = set(re.findall(r"\b(\w+)\s*\(", text))
    writers, followed = model.writer_wrappers(), set(followed)
    for chain in model.chains.values():
        if not chain.searched:
            continue                # excluded: nothing was searched
        # A member chain by its structure's name and its member's.
        names = [w for w in re.findall(r"\w+", chain.id) if w != "struct"]
        wrappers = ({n for n, (c, *_) in writers.items() if c is chain}
                    | {s["fn"] for s in chain.sites if s["op"] == "call"})
        called = wrappers & followed
        chain.searched["unparsed"] = [
            f for f in files if all(n in words[f] for n in names)
            or not called.isdisjoint(calls[f])]


def rule_findings(kver, out, kernel_tree):
    """The findings of the 2005 series' other rule checks that the last
    audit of `kver` (out/<kver>/audit.json) holds, when they were made on
    the pristine tree and by the checks of today; else None (the cover
    letter then says that they have not run)."""
    path = os.path.join(out, kver, "audit.json")
    if not os.path.exists(path):
        return None
    report = output.read_json(path)
    stamp = rulechecks.stamp_of(kernel_tree.path, tree.PRISTINE + "^{commit}")
    if report.get("rules_stamp") != stamp:
        return None
    return report["rules"]


def violations_of(model, entries):
    """The rule violations of a tree's chains by their classes in
    `entries`: the kind the tree declares for a chain missing from them,
    and for one they exclude, since an atomic or blocking head the series
    leaves alone still becomes a struct notifier_head; an excluded chain
    is free of the rules only where the tree makes it raw or SRCU (as
    6.12's fix of random_ready_notifier does)."""
    decided = {e.key: e for e in entries}
    found = []
    for key, chain in sorted(model.chains.items()):
        entry = decided.get(key)
        klass = entry["class"] if entry else chain.kind
        if klass == "excluded":
            klass = chain.kind
        if klass in ("atomic", "blocking"):
            found += chains.violations(chain, klass)
    return found


def site_seen(model, problems):
    """A function telling whether the analysis `model` still sees the site
    of a violation: its chain has a use or a callout in the violation's
    function and file, and spatch reported no problem on that file."""
    failed = " ".join(problems)

    def seen(v):
        chain = model.chains.get((v["chain"], v["defined"]))
        if chain is None or v["file"] in failed:
            return False
        uses = chain.sites + chain.callers
        return (any((s["file"], s["fn"]) == (v["file"], v["function"])
                    for s in uses) or
                any((c["file"], c["function"]) == (v["file"], v["function"])
                    for c in chain.callouts.values()))
    return seen


def judged(kver, work, jobs, entries, model_of, depth=callgraph.DEPTH):
    """violation_gate()'s (items, problems) for the classification of
    `kver`, whose `entries` are those of its file: the last judgement
    when nothing it depends on changed (gate_stamp()), else judged again
    on the model that `model_of()` returns, and kept for the next run."""
    kernel_tree = tree.prepare(kver, work)
    cache = gate_cache(kernel_tree)
    stamp = gate_stamp(kver, kernel_tree, depth)
    if os.path.exists(cache):
        with open(cache, encoding="utf-8") as f:
            last = json.load(f)
        if last.get("stamp") == stamp:
            say(f"    the gate's judgement of the same inputs: {cache}")
            return last["items"], last["problems"]
    items, problems = violation_gate(kver, work, jobs, model_of(), entries)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    output.write_json(cache, {"stamp": stamp, "items": items,
                              "problems": problems})
    return items, problems


def violation_gate(kver, work, jobs, model, entries):
    """The violations of the pristine tree `model` and of the tree with
    the fixes of core-patch/<kver>/, judged by gate.judge(); returns
    (items, problems), problems naming the waivers that match nothing.
    The fixes' checkout is locked meanwhile, so that two runs do not
    analyse it while the other changes it."""
    kernel_tree = tree.prepare(kver, work)
    fixes = gate.fix_patches(kver)
    before = violations_of(model, entries)
    if not fixes:
        items, unused = gate.judge(before, before, entries, [],
                                   lambda v: False)
    else:
        with tree.locked(kernel_tree, "fixes"):
            source = gate.fixes_checkout(kernel_tree, fixes)
            found = collect(kernel_tree, source, jobs,
                            f"Linux {kernel_tree.version} with "
                            f"{len(fixes)} fixes")
            graph, _ = build_graph(kernel_tree, source, jobs,
                                   f"Linux {kernel_tree.version} with "
                                   f"{len(fixes)} fixes")
        fixed = chains.Model(found.records, source, graph.heads,
                            graph.is_static)
        attach_evidence(fixed, graph, entries,
                        getattr(model, "depth", callgraph.DEPTH))
        del graph
        items, unused = gate.judge(before, violations_of(fixed, entries),
                                   entries, fixes,
                                   site_seen(fixed, found.problems))
    gate.report(items)
    path = os.path.relpath(classification.yaml_path(kver), tree.REPO)
    problems = [f"{path}:{w.line}: the waiver of {w['rule']} at "
                f"{w['file']} {w['function']}() for {e['chain']} "
                + ("waives a violation that the fixes remove"
                   if item else "matches no violation")
                for e, w, item in unused]
    return items, problems


def draft_entry(chain):
    """(class, reason) that a draft proposes for a chain."""
    klass, reasons = chains.propose(chain)
    if klass in ("atomic", "blocking", "excluded"):
        return klass, reasons[0]
    if chain.kind == "bare":
        # A 2005 head declares nothing: atomic asks nothing of its callers.
        return "atomic", ("2005 head: " + (" ".join(reasons[:1]) or
                                           "no evidence either way")
                          + "; atomic until a person checks its callouts")
    if klass == "conflict":
        return chain.kind, ("CONFLICT, kept as declared: " + reasons[0]
                            + "; but " + reasons[-1])
    return chain.kind, "no evidence either way; kept as declared"


def run(kver, *, work=None, jobs=None, out=None, update=False, source=None,
        reuse=False, depth=callgraph.DEPTH):
    """Classifies the chains of `kver` and writes out/<kver>/audit.json and
    audit.txt; with `update`, first writes classify/linux-<kver>.yaml from
    `source` (default: that file itself), keeping reviewed decisions.
    Returns 0 when the YAML fits the tree."""
    out = tree.out_folder(out)
    jobs = tree.jobs(jobs)
    start = time.monotonic()
    path = classification.yaml_path(kver)
    origin = source or path
    entries = []
    if os.path.exists(origin):
        _, entries = classification.load(origin)
    model, facts = analyse(kver, work=work, jobs=jobs, out=out, reuse=reuse,
                           entries=entries, depth=depth)
    if update:
        drafts = {key: draft_entry(c) for key, c in model.chains.items()}
        entries, changes = classification.carry(entries, model.chains,
                                                drafts)
        classification.write(path, classification.dump(
            kver, entries, HEADER.format(kver=kver)))
        facts["update"] = {"from": os.path.relpath(origin, tree.REPO),
                           **changes}
        for what, items in changes.items():
            say(f"    {what}: {len(items)}" + "".join(
                f"\n      {i}" for i in items[:20]))
    _, entries = classification.load(path)
    problems = classification.check_coverage(
        os.path.relpath(path, tree.REPO), entries, model.chains)
    items, unused = judged(kver, work, jobs, entries, lambda: model, depth)
    problems += unused
    report = audit(model, entries, facts, problems, items)
    os.makedirs(os.path.join(out, kver), exist_ok=True)
    rules = rulechecks.collect(model.root, jobs,
                               os.path.join(out, kver, "rules.json"),
                               rulechecks.stamp_of(model.root), reuse)
    report["rules"] = rulechecks.audit_items(rules, model)
    report["rules_stamp"] = rules["stamp"]
    report["rule_counts"] = rulechecks.counts(report["rules"])
    report["rule_seconds"] = rules["seconds"]
    report["rules_unparsed"] = rules.get("unparsed", {})
    add_observations(report, runtime.load_observations(kver, out),
                     f"out/{kver}/runtime/chains.json")
    report["seconds"] = round(time.monotonic() - start, 1)
    folder = os.path.join(out, kver)
    output.write_json(os.path.join(folder, "audit.json"), report)
    text = audit_text(report)
    output.write_text(os.path.join(folder, "audit.txt"), text)
    say(text.split("\n\n")[0])
    say(f"  audit in {folder}/audit.txt and audit.json")
    if problems:
        raise Error(f"{os.path.relpath(path, tree.REPO)} does not fit Linux "
                    f"{facts['kernel']}:\n  " + "\n  ".join(problems))
    return 0


def add_observations(report, seen, source):
    """Adds what the runtime test saw (out/<kver>/runtime/chains.json) to
    each chain's row, and counts the chains whose only evidence is
    dynamic: seen running, with no call graph path."""
    if seen is None:
        report["runtime"] = None
        return
    only = []
    for d in report["details"]:
        key = runtime.detail_key(d)
        d["runtime"] = seen.get(key, [])
        if d["runtime"] and not d["evidence"] and d["class"] != "excluded":
            only.append(d["chain"])
    report["runtime"] = {"source": source, "seen": len(seen),
                         "only_dynamic": only}


def audit(model, entries, facts, problems, violations):
    """The audit report of a classified tree, as a dict; `violations` are
    the gate's items."""
    decided = {e.key: e for e in entries}
    by_kind = Counter(c.kind for c in model.chains.values())
    agreement, coverage = Counter(), Counter()
    chain_rows, disagreements, conflicts = [], [], []
    for key, chain in sorted(model.chains.items()):
        proposed, reasons = chains.propose(chain)
        entry = decided.get(key)
        klass = entry["class"] if entry else chain.kind
        if klass in ("atomic", "blocking"):
            coverage["with_evidence" if chain.evidence else "without"] += 1
            coverage["conflicts"] += bool(chain.conflicts)
        for c in chain.conflicts:
            conflicts.append({"chain": chain.id, "defined": chain.defined,
                              "class": klass, **c})
        if proposed != "excluded":
            if proposed == "unknown":
                agreement["no_evidence"] += 1
            elif proposed == chain.kind:
                agreement["agree"] += 1
            else:
                agreement["disagree"] += 1
                disagreements.append({"chain": chain.id,
                                      "defined": chain.defined,
                                      "declared": chain.kind,
                                      "proposed": proposed, "class": klass,
                                      "reasons": reasons})
        chain_rows.append({
            "chain": chain.id, "defined": f"{chain.defined}:{chain.line}",
            "declared": chain.kind, "proposed": proposed, "class": klass,
            "reviewed": bool(entry) and entry.get("reviewed", True),
            "reasons": reasons, "evidence": chain.evidence,
            "conflicts": chain.conflicts, "searched": chain.searched,
            "sites": [_site(s) for s in chain.sites],
            "callers": [_site(s) for s in chain.callers],
            "callouts": [{"function": c["function"], "block": c["block"],
                          "registered": c["registered"],
                          "sleeps": c["sleeps"]}
                         for c in chain.callouts.values()]})
    return {
        **facts, "chains": len(model.chains), "by_kind": dict(by_kind),
        "coverage": {k: coverage[k] for k in ("with_evidence", "without",
                                               "conflicts")},
        "conflicts": conflicts,
        "agreement": {k: agreement[k] for k in ("agree", "disagree",
                                                "no_evidence")},
        "disagreements": disagreements, "violations": violations,
        "gate": {k: v for k, v in gate.summary(violations).items()
                 if k != "items"},
        "unresolved_sites": [_site(s) for s in model.unresolved],
        "classification": {
            "drafts": sum(e.get("reviewed") is False for e in entries),
            "overrides": [{"chain": e["chain"], "defined": e["defined"],
                           "declared": e["declared"], "class": e["class"],
                           "reason": e["reason"]} for e in entries
                          if e["class"] not in ("excluded", e["declared"])],
            "problems": problems},
        "seed": seed_comparison(model, decided),
        "details": chain_rows,
    }


def _searched(s):
    """What the call graph searched for a chain, in words."""
    if not s:
        return "nothing (excluded)"
    text = (f"{s['call_sites']} call sites and their callers, "
            f"{s['write_sites']} write sites, {s['callouts']} callouts "
            f"and their callees, up to {s['depth']} calls deep")
    if s["not_in_graph"]:
        text += ("; not in the call graph: "
                 + ", ".join(s["not_in_graph"]))
    if s.get("unparsed"):
        text += ("; parsed only in part by spatch, where sites may be "
                 "missing: " + ", ".join(s["unparsed"]))
    return text


def _site(s):
    context = [f"{ctx}: {why}" for ctx, why in s["context"]] or ["unknown"]
    out = {"at": f"{s['file']}:{s['line']}", "in": s["fn"],
           "op": s["op"], "context": context}
    for extra in ("api", "via", "why"):
        if s.get(extra):
            out[extra] = s[extra]
    return out


def seed_comparison(model, decided):
    """The 2005 RFC's classes of the chains that still exist by name."""
    _, seed = classification.load(SEED)
    rows = []
    for s in seed:
        now = [c for c in model.chains.values() if c.id == s["chain"]]
        row = {"chain": s["chain"], "2005": s["class"],
               "2005_file": s["defined"]}
        if now:
            c = now[0]
            entry = decided.get(c.key)
            row.update(defined=c.defined, declared=c.kind,
                       proposed=chains.propose(c)[0],
                       **{"class": entry["class"] if entry else None})
        rows.append(row)
    return rows


def audit_text(r):
    """The audit report of classify, as text (audit.txt)."""
    lines = _audit_head(r)

    def section(title, rows):
        lines.append(f"== {title} ({len(rows)})")
        lines.extend(rows or ["(none)"])
        lines.append("")

    section("Disagreements of the evidence with the declared kind", [
        f"{d['chain']} ({d['defined']}): declared {d['declared']}, "
        f"proposed {d['proposed']}, classified {d['class']}\n    "
        + "\n    ".join(d["reasons"][:5]) for d in r["disagreements"]])
    section("Conflicts: the shortest path from atomic context to a call "
            "and the shortest from a callout to a sleep; the side that "
            "breaks the chain's class is judged, path by path, under "
            "\"Rule violations\" below", [
        f"{c['chain']} ({c['defined']}), classified {c['class']}:\n"
        + "".join(f"    {part}: {c[part]['subject']}\n"
                  + "".join(f"      {line}\n"
                            for line in paths.render(c[part]))
                  for part in ("atomic", "sleeps")).rstrip("\n")
        for c in r["conflicts"]])
    section("Rule violations: fixed before the core patch, waived, or "
            "open", gate.lines(r["violations"]))
    if "rules" in r:
        section("The 2005 series' other rules (cocci/, whole tree): "
                "3/7 redundant locks, 4/7 chains with no unregister, 7/7 "
                "chains by hand", rulechecks.lines(r["rules"])
                + rulechecks.unparsed_lines(r.get("rules_unparsed", {})))
    section("Classes that differ from the declared kind", [
        f"{o['chain']} ({o['defined']}): {o['declared']} -> {o['class']}: "
        f"{o['reason']}" for o in r["classification"]["overrides"]])
    section("Classification problems", r["classification"]["problems"])
    section("The 2005 RFC's chains", [
        f"{s['chain']}: 2005 {s['2005']}; " + (
            f"now {s['declared']} in {s['defined']}, proposed "
            f"{s['proposed']}, classified {s['class']}"
            if "declared" in s else "no longer in the tree")
        for s in r["seed"]])
    section("Sites whose chain is not known", [
        f"{s['at']} in {s['in']}(): {s['api']}: {s.get('why')}"
        for s in r["unresolved_sites"]])
    section("Chains", [
        f"{d['chain']} ({d['defined']}): {d['declared']} -> {d['class']}"
        f"{'' if d['reviewed'] else ' (draft)'}; proposed {d['proposed']}; "
        f"{len(d['sites'])} sites, {len(d['callers'])} wrapper calls, "
        f"{len(d['callouts'])} callouts"
        + "".join(f"\n    {e}" for e in d["reasons"][:3])
        + ("".join(f"\n    {paths.summary(e)}" for e in d["evidence"][:3])
           if d["evidence"] else
           f"\n    no evidence: searched {_searched(d['searched'])}")
        + "".join(f"\n    runtime: {o}" for o in d.get("runtime") or [])
        for d in r["details"]])
    lines += _audit_figures(r)
    return "\n".join(lines) + "\n"


def _audit_head(r):
    """The audit's first paragraph: every figure in one place."""
    lines = [
        f"Notifier chains of Linux {r['kernel']} ({r['package']}): "
        f"{r['chains']} chains, "
        + ", ".join(f"{n} {k}" for k, n in sorted(r["by_kind"].items()))
        + f".  Proposed class vs declared kind: {r['agreement']['agree']} "
        f"agree, {r['agreement']['disagree']} disagree, "
        f"{r['agreement']['no_evidence']} without evidence.  "
        f"Call graph evidence: {r['coverage']['with_evidence']} of "
        f"{r['coverage']['with_evidence'] + r['coverage']['without']} "
        f"atomic/blocking chains have a path, "
        f"{r['coverage']['conflicts']} with a conflict.  "
        f"{len(r['violations'])} rule violations ("
        + ", ".join(f"{r['gate'][s]} {s}" for s in gate.STATUSES) + "), "
        f"{len(r['unresolved_sites'])} sites whose chain is not known.  "
        + ("The 2005 series' other rules: " + ", ".join(
            f"{n} {name}" for name, n in r["rule_counts"].items()) + ".  "
           if "rule_counts" in r else "") +
        f"Classification: {r['classification']['drafts']} drafts, "
        f"{len(r['classification']['overrides'])} overrides, "
        f"{len(r['classification']['problems'])} problems; "
        f"{r.get('seconds')}s.", ""]
    rt = r.get("runtime")
    lines[0] += (
        f"  Runtime ({rt['source']}): {rt['seen']} chains "
        f"seen in the integration boot, {len(rt['only_dynamic'])} with "
        "dynamic evidence only"
        + (f" ({', '.join(rt['only_dynamic'])})" if rt["only_dynamic"]
           else "") + "." if rt else
        "  Runtime: no integration boot recorded (make runtime-test).")
    return lines


def _audit_figures(r):
    """The audit's last lines: what the evidence and the call graph
    read, and how long it took."""
    lines = []
    lines.append(f"Evidence: {r['files']['api']} files using the chain API, "
                 f"{r['files']['callers']} calling {r['wrappers']} of the "
                 f"chains' wrappers, in {r['evidence_seconds']}s; not "
                 f"followed (too many callers): "
                 f"{', '.join(r['not_followed']) or 'none'}; spatch "
                 f"problems: {len(r['spatch_problems'])}; parsed only "
                 f"in part: {len(r.get('spatch_unparsed', []))}"
                 + "".join(f"\n    {f}" for f in r.get("spatch_unparsed", []))
                 + ".")
    g = r.get("callgraph")
    if g:
        lines.append(
            f"Call graph: {g['files']} files ({g['read']} read again) in "
            f"{g['index_seconds']}s, linked in {g['link_seconds']}s; "
            f"{g['functions']} functions, {g['macros']} macros, "
            f"{g['calls']} calls, {g['lock_wrappers']} lock wrappers, "
            f"{g['ambiguous_names']} ambiguous names (not followed), "
            f"{len(g['unbalanced'])} files whose braces do not balance; "
            f"{g['atomic_functions']} functions reached in atomic context, "
            f"{g['sleeping_functions']} that may sleep.")
    return lines
