"""The notifier chains of a tree and the evidence about each, built from
the records of cocci/notifier_evidence.cocci (see evidence.py).

A chain is known by (id, defined): its symbol, or "struct T.member" for a
head inside a structure, and the file that defines it.  Each use of the
API on it is a site; the context of a site is what can be seen there:
the locks held on the way to it, and how its function is called back.
"""

import os
import re
from collections import defaultdict

from . import chain_api, paths

API = re.compile(rf"^(?:({chain_api.alternation(chain_api.KINDS)})_notifier_|"
                 rf"notifier_)({chain_api.alternation(chain_api.OPS)})$")
OPS = chain_api.OPS
MACRO = re.compile(
    rf"\b({chain_api.alternation(chain_api.KINDS).upper()})_NOTIFIER_HEAD")

# How a function given to these is called: (api, argument index) -> context
CALLBACKS = {
    ("request_irq", 1): "hardirq", ("request_any_context_irq", 1): "hardirq",
    ("request_percpu_irq", 1): "hardirq", ("devm_request_irq", 2): "hardirq",
    ("request_threaded_irq", 1): "hardirq",
    ("request_threaded_irq", 2): "process",
    ("devm_request_threaded_irq", 2): "hardirq",
    ("devm_request_threaded_irq", 3): "process",
    ("init_irq_work", 1): "hardirq", ("hrtimer", 0): "hardirq",
    ("timer_setup", 1): "softirq", ("timer_setup_on_stack", 1): "softirq",
    ("tasklet_init", 1): "softirq", ("tasklet_setup", 1): "softirq",
    ("call_rcu", 1): "softirq", ("INIT_WORK", 1): "process",
    ("INIT_DELAYED_WORK", 1): "process", ("kthread_run", 0): "process",
    ("kthread_create", 0): "process",
}
ATOMIC_CONTEXTS = ("atomic", "hardirq", "softirq")
EXCLUDED = {"raw": "raw chain: its callers provide the locking",
            "srcu": "SRCU chain: readers are protected by SRCU"}


def parse_api(name):
    """(kind, op) of a chain API function; kind "bare" for the 2005 API."""
    m = API.match(name)
    if not m:
        return None, None
    return m.group(1) or "bare", OPS[m.group(2)]


def last_name(expr):
    """The last identifier of an expression: "& priv -> nb" -> "nb"."""
    names = re.findall(r"[A-Za-z_]\w*", expr)
    return names[-1] if names else expr


def where(r):
    return f"{r['file']}:{r['line']}"


class Chain:
    def __init__(self, cid, defined, line, kind, form, static):
        self.id, self.defined, self.line = cid, defined, line
        self.kind, self.form, self.static = kind, form, static
        self.sites = []          # {"op", "file", "line", "fn", "context"}
        self.callers = []        # the call wrappers' callers, same shape
        self.callouts = {}       # (file, function) -> {"blocks", "sleeps"}
        self.declarations = []   # extern declarations, "file:line"
        self.evidence = []       # paths of the call graph (paths.py)
        self.conflicts = []
        self.searched = {}

    @property
    def key(self):
        return (self.id, self.defined)

    def __repr__(self):
        return f"Chain({self.id} in {self.defined}, {self.kind})"


class Model:
    """The model of one tree's chains: their sites and contexts, from its
    evidence records (tree.Tree is the kernel tree itself)."""

    def __init__(self, records, source_root=None, heads=(),
                 is_static=None):
        """`heads`: more head definitions, as the call graph's lexer
        finds them ({"kind", "struct", "name", "file", "line"}): members
        of structures that no file using the API showed spatch.
        `is_static(file, function)` tells whether a function is static:
        the callers of a static wrapper are then looked for in its own
        file only."""
        self.root = source_root
        self.is_static = is_static or (lambda file, function: False)
        self.by_kind = defaultdict(list)
        for r in records:
            self.by_kind[r["kind"]].append(r)
        self.chains = {}
        self.unresolved = []     # sites whose chain is not known
        self._atomic = defaultdict(list)
        for r in self.by_kind["atomic"]:
            self._atomic[(r["file"], r["line"])].append(r)
        self._callbacks = defaultdict(list)
        for r in self.by_kind["callback_arg"]:
            ctx = CALLBACKS.get((r["api"], r["index"]))
            if ctx:
                self._callbacks[r["function"]].append((ctx, r))
        self._sleeps = defaultdict(list)
        for r in self.by_kind["sleeps"]:
            self._sleeps[r["function"]].append(r)
        self._types = {(r["file"], r["line"]): r
                       for r in self.by_kind["site_type"]}
        self._heads()
        self._more_heads(heads)
        self._sites()
        self._wrappers()
        self._callouts()

    # -- heads -------------------------------------------------------------

    def _line(self, path, line):
        if not self.root:
            return ""
        try:
            with open(os.path.join(self.root, path), encoding="utf-8",
                      errors="replace") as f:
                for number, text in enumerate(f, 1):
                    if number == line:
                        return text
        except OSError:
            pass
        return ""

    def _add(self, chain):
        self.chains.setdefault(chain.key, chain)

    def _heads(self):
        externs = defaultdict(list)
        for r in self.by_kind["head"]:
            form = r["form"]
            if form == "macro":
                text = self._line(r["file"], r["line"])
                m = MACRO.search(text)
                kind = m.group(1).lower() if m else "unknown"
                static = bool(re.search(r"\bstatic\b", text.split(
                    m.group(0))[0] if m else text))
                self._add(Chain(r["symbol"], r["file"], r["line"], kind,
                                "macro", static))
            elif form == "extern":
                externs[r["symbol"]].append(where(r))
            elif form == "variable" and r["fn"] == r["symbol"]:
                text = self._line(r["file"], r["line"])
                if re.search(r"\bextern\b", text):
                    externs[r["symbol"]].append(where(r))
                    continue
                self._add(Chain(r["symbol"], r["file"], r["line"],
                                r["declared"], "variable",
                                bool(re.search(r"\bstatic\b", text))))
            elif form == "member":
                self._add(Chain(f"{r['struct']}.{r['member']}", r["file"],
                                r["line"], r["declared"], "member", False))
            elif form == "anonymous":
                text = self._line(r["file"], r["line"])
                self._add(Chain(f"{r['symbol']}.{r['member']}", r["file"],
                                r["line"], r["declared"], "anonymous", True))
        for chain in self.chains.values():
            if chain.form in ("macro", "variable") and not chain.static:
                chain.declarations = sorted(set(externs.get(chain.id,
                                                            [])))

    def _more_heads(self, heads):
        known = {c.id for c in self.chains.values()}
        for h in heads:
            if not h["struct"]:
                continue        # variables: spatch and text_heads see them
            cid, form = f"struct {h['struct']}.{h['name']}", "member"
            if cid not in known:
                known.add(cid)
                self._add(Chain(cid, h["file"], h["line"], h["kind"], form,
                                bool(h.get("static"))))

    # -- sites -------------------------------------------------------------

    def resolve(self, expr, site):
        """The chain that the chain argument `expr` of `site` names, or a
        string saying why it is not known.  A head's own list taken for
        another kind's head, `(struct raw_notifier_head *)&x.head`, is a
        use of x: 6.12's random.c registers so on an atomic chain."""
        m = re.match(r"^\( struct \w+_notifier_head \* \) & (\w+) \. head$",
                     expr)
        if m:
            chain = self._symbol(m.group(1), site)
            if not isinstance(chain, str) and chain.kind in ("atomic",
                                                             "blocking"):
                return chain
        m = re.match(r"^& (\w+)(?: \[ .* \])?$", expr)
        if m:
            return self._symbol(m.group(1), site)
        m = re.match(r"^& (\w+) \. (\w+)$", expr)
        if m and (m.group(1) + "." + m.group(2), site["file"]) in self.chains:
            return self.chains[(m.group(1) + "." + m.group(2), site["file"])]
        m = re.match(r"^& .+ (?:->|\.) (\w+)(?: \[ .* \])?$", expr)
        if m:
            return self._member(m.group(1), site)
        m = re.match(r"^\w+(?: (?:->|\.) \w+)* (?:->|\.) (\w+)$", expr)
        if m and any(c.form == "member" and c.id.endswith("." + m.group(1))
                     for c in self.chains.values()):
            return self._member(m.group(1), site)   # a head allocated

        return f"the chain is reached through the pointer {expr!r}"

    def _symbol(self, name, site):
        local = self.chains.get((name, site["file"]))
        if local:
            return local
        named = [c for c in self.chains.values()
                 if c.id == name and c.form in ("macro", "variable")]
        public = [c for c in named if not c.static]
        if len(public) == 1:
            return public[0]
        if name in {last_name(r["symbol"]) for r in self.by_kind["bare"]
                    if r["file"] == site["file"]}:
            return self._bare(name, site)
        return (f"{name} is defined {len(public)} times" if public
                else f"no definition of {name} was found")

    def _bare(self, name, site):
        decl = next(r for r in self.by_kind["bare"]
                    if r["file"] == site["file"] and r["symbol"] == name)
        text = self._line(decl["file"], decl["line"])
        chain = Chain(name, decl["file"], decl["line"], "bare", "bare",
                      bool(re.search(r"\bstatic\b", text)))
        self._add(chain)
        return self.chains[chain.key]

    def _member(self, member, site):
        typed = self._types.get((site["file"], site["line"]))
        if typed and typed["member"] == member and re.fullmatch(
                rf"struct ({chain_api.alternation(chain_api.KINDS)})"
                r"_notifier_head( \*)?",
                typed["struct"]):
            return (f"the list of a {typed['struct'].rstrip(' *')} the "
                    "function is given: the chain API itself")
        if typed and typed["member"] == member:
            cid = f"{typed['struct']}.{member}"
            found = [c for c in self.chains.values() if c.id == cid]
            if len(found) == 1:
                return found[0]
        found = [c for c in self.chains.values()
                 if c.form == "member" and c.id.endswith("." + member)]
        if len(found) > 1:      # the API's kind may tell them apart
            kind = parse_api(site["api"])[0]
            found = [c for c in found if c.kind == kind] or found
        if len(found) == 1:
            return found[0]
        if not found:
            return f"no structure has a notifier head named {member}"
        return (f"{len(found)} structures have a notifier head named "
                f"{member}: " + ", ".join(sorted(c.id for c in found)))

    def context(self, file, fn, line):
        """What can be seen of the context at file:line in function fn:
        [(context, why)], context in atomic, hardirq, softirq, process."""
        seen = []
        for r in self._atomic.get((file, line), []):
            seen.append(("atomic", f"under {r['why']}() taken at line "
                                   f"{r['since']}"))
        for ctx, r in self._callbacks.get(fn, []):
            if r["file"] == file or len(self._callbacks[fn]) == 1:
                seen.append((ctx, f"{fn}() is given to {r['api']}() at "
                                  f"{where(r)}"))
        for r in self._sleeps.get(fn, [])[:1]:
            if r["file"] == file:
                seen.append(("process", f"{fn}() sleeps: {r['call']} at "
                                        f"line {r['line']}"))
        return seen

    def _sites(self):
        for r in self.by_kind["site"]:
            kind, op = parse_api(r["api"])
            if parse_api(r["fn"])[0]:
                continue        # the API's own implementation
            chain = self.resolve(r["chain"], r)
            site = {"op": op, "api": r["api"], "file": r["file"],
                    "line": r["line"], "fn": r["fn"], "args": r["args"],
                    "context": self.context(r["file"], r["fn"], r["line"])}
            if isinstance(chain, str):
                site["why"] = chain
                self.unresolved.append(site)
            else:
                chain.sites.append(site)

    # -- wrappers ------------------------------------------------------------

    def writer_wrappers(self):
        """{name: (chain, op, nb index, file)} of register/unregister
        wrappers: functions passing their notifier_block to a writer."""
        sites = {(s["file"], s["line"]): (c, s) for c in self.chains.values()
                 for s in c.sites}
        found = {}
        for r in self.by_kind["writer_wrapper"]:
            hit = sites.get((r["file"], r["line"]))
            if hit:
                chain, site = hit
                found[r["wrapper"]] = (chain, site["op"], r["nb_index"],
                                       r["file"])
        return found

    def call_wrappers(self):
        """{name: [(chain, file)]}: functions that call a chain, whose own
        callers tell more about the context."""
        found = defaultdict(list)
        for c in self.chains.values():
            for s in c.sites:
                if s["op"] == "call" and s["fn"] != "something_else":
                    found[s["fn"]].append((c, s["file"]))
        return found

    def _wrappers(self):
        writers = self.writer_wrappers()
        callers = self.call_wrappers()
        self.writer_calls = []
        for r in self.by_kind["wrapper_call"]:
            name = r["wrapper"]
            context = self.context(r["file"], r["fn"], r["line"])
            if name in writers:
                chain, op, index, home = writers[name]
                if r["fn"] == name or (r["file"] != home and
                                       self.is_static(home, name)):
                    continue
                call = {"op": op, "api": name, "file": r["file"],
                        "line": r["line"], "fn": r["fn"],
                        "args": ", ".join(r["args"]), "context": context,
                        "nb": (r["args"][index] if index < len(r["args"])
                               else None)}
                self.writer_calls.append((chain, call))
            for chain, home in callers.get(name, []):
                if r["fn"] == name or (r["file"] != home and
                                       self.is_static(home, name)):
                    continue
                chain.callers.append({"op": "call", "via": name,
                                      "file": r["file"], "line": r["line"],
                                      "fn": r["fn"], "context": context})

    # -- callouts ------------------------------------------------------------

    def _blocks(self, file, expr):
        """Callouts of the notifier_block(s) that `expr` names in file."""
        m = re.match(r"^& (\w+)$", expr or "")
        blocks = self.by_kind["block"]
        if m:
            hits = [b for b in blocks if b["block"] == m.group(1)
                    and b["file"] == file]
            if not hits:
                hits = [b for b in blocks if b["block"] == m.group(1)]
            return hits
        if re.match(r"^\w+$", expr or ""):
            # A pointer: the blocks it was set up through.
            return [b for b in blocks if b["file"] == file
                    and b["block"] == "*" + expr]
        key = last_name(expr or "")
        return [b for b in blocks if b["file"] == file
                and not b["block"].startswith("*")
                and not re.match(r"^\w+$", b["block"])
                and last_name(b["block"]) == key]

    def _callouts(self):
        writes = [(c, s) for c in self.chains.values() for s in c.sites
                  if s["op"] == "register"]
        writes += [(c, s) for c, s in self.writer_calls
                   if s["op"] == "register"]
        writers = self.writer_wrappers()
        for chain, site in writes:
            nb = site.get("nb") or site["args"].split(",")[0].strip()
            if site["fn"] in writers and re.match(r"^\w+$", nb):
                continue        # the wrapper's own parameter
            for b in self._blocks(site["file"], nb):
                key = (b["file"], b["callout"])
                callout = chain.callouts.setdefault(
                    key, {"function": b["callout"], "file": b["file"],
                          "block": where(b), "registered": [],
                          "sleeps": self.sleeps(b["callout"], b["file"])})
                callout["registered"].append(where(site))
        for chain, call in self.writer_calls:
            chain.sites.append(call)

    def sleeps(self, function, file):
        """Direct calls of sleeping functions in `function` (of `file` if
        it has one there)."""
        calls = self._sleeps.get(function, [])
        here = [r for r in calls if r["file"] == file]
        return [f"{r['call']} at {where(r)}" for r in (here or calls)]


# -- proposal and rule checks ----------------------------------------------

def followed(tree):
    """The functions whose callers the second pass reads: the register,
    unregister and call wrappers of atomic, blocking and 2005 chains, but
    for call wrappers already seen in atomic context."""
    names = {name for name, (chain, *_) in tree.writer_wrappers().items()
             if chain.kind not in EXCLUDED}
    for name, uses in tree.call_wrappers().items():
        for chain, _ in uses:
            sites = [s for s in chain.sites if s["fn"] == name]
            if chain.kind not in EXCLUDED and not any(
                    ctx in ATOMIC_CONTEXTS for s in sites
                    for ctx, _ in s["context"]):
                names.add(name)
    return names


def followed_in(source):
    """evidence.collect()'s `followed` for the checkout `source`: the
    wrappers followed() picks among its records."""
    return lambda records: followed(Model(records, source))


def atomic_evidence(chain):
    """Why the chain is called in atomic context: [(site, why)]."""
    found = []
    for s in chain.sites:
        if s["op"] == "call":
            found += [(s, why) for ctx, why in s["context"]
                      if ctx in ATOMIC_CONTEXTS]
    for s in chain.callers:
        found += [(s, f"via {s['via']}(): {why}") for ctx, why in s["context"]
                  if ctx in ATOMIC_CONTEXTS]
    return found


def blocking_evidence(chain):
    """Why the chain's callouts may sleep: [(callout, why)]."""
    return [(c, f"callout {c['function']}() sleeps: {c['sleeps'][0]}")
            for c in chain.callouts.values() if c["sleeps"]]


def propose(chain):
    """(class, [reasons]) from the evidence: atomic, blocking, conflict,
    unknown, or excluded for raw and SRCU chains.  The evidence is the
    context seen at the sites and, when the chain has them, the paths of
    the call graph (paths.py), the shortest first."""
    if chain.kind in EXCLUDED:
        return "excluded", [EXCLUDED[chain.kind]]
    atomic = atomic_evidence(chain)
    blocking = blocking_evidence(chain)
    reasons = ([f"called in atomic context at {where(s)} in {s['fn']}(): "
                f"{why}" for s, why in atomic]
               + [why for _, why in blocking])
    found = {kind: [i for i in chain.evidence if i["kind"] == kind]
             for kind in ("atomic-caller", "sleeping-callout",
                          "sleeping-caller")}
    atomic = atomic or found["atomic-caller"]
    blocking = blocking or found["sleeping-callout"]
    reasons += [paths.summary(i) for kind in ("atomic-caller",
                                              "sleeping-callout")
                for i in sorted(found[kind], key=lambda i: i["depth"])]
    if not atomic and not blocking and found["sleeping-caller"]:
        return "unknown", [paths.summary(found["sleeping-caller"][0])]
    if atomic and blocking:
        return "conflict", reasons
    if atomic:
        return "atomic", reasons
    if blocking:
        return "blocking", reasons
    return "unknown", []


RULES = {
    "write-in-atomic": "registration or unregistration in atomic context",
    "unregister-in-callout": "unregistration from one of the chain's own "
                             "callouts (deadlock: seed patch 5/7)",
    "register-in-callout": "registration from one of the chain's own "
                           "callouts (seed patch 6/7)",
    "blocking-called-atomic": "blocking chain called in atomic context",
    "atomic-callout-sleeps": "atomic chain's callout may sleep",
}
# The declared kinds with which the unmodified kernel already breaks each
# rule (a blocking chain's rwsem, an atomic chain's rcu_read_lock() and
# synchronize_rcu()): a violation of another kind is a bug the series
# makes, which only a fix can remove.
BROKEN_BEFORE = {
    "write-in-atomic": ("blocking",),
    "unregister-in-callout": ("atomic", "blocking"),
    "register-in-callout": ("blocking",),
    "blocking-called-atomic": ("blocking",),
    "atomic-callout-sleeps": ("atomic",),
}
# The call graph's evidence that breaks a rule, by kind and the chain's
# class: a writer reached from atomic context (writers take the rwsem),
# a blocking chain's call reached from it (its readers take the rwsem),
# an atomic chain's callout that reaches a sleep (its readers hold
# rcu_read_lock(), whoever calls).
GRAPH_RULES = {
    ("atomic-writer", "atomic"): "write-in-atomic",
    ("atomic-writer", "blocking"): "write-in-atomic",
    ("atomic-caller", "blocking"): "blocking-called-atomic",
    ("sleeping-callout", "atomic"): "atomic-callout-sleeps",
}
# The rules of a path from atomic context, whose waiver may name a root.
ROOTED_RULES = tuple(dict.fromkeys(
    rule for (kind, _), rule in GRAPH_RULES.items()
    if kind != "sleeping-callout"))
# What a violation found through the call graph says it was found by.
VIA_GRAPH = "call graph"


def violations(chain, klass):
    """The rule checks of one chain, `klass` being its class (atomic or
    blocking); [{"rule", "chain", "defined", "site", "file", "function",
    "why"}], "site" being file:line and "function" the one it is in.
    Those of the call graph's paths (GRAPH_RULES), one per path, also
    have "via", "files" (the path's) and, for a path from atomic context,
    "root" (its first function); a function the site's own context
    already convicts has no path's violation besides."""
    out = []

    def add(rule, site, function, why, **more):
        out.append({"rule": rule, "chain": chain.id,
                    "defined": chain.defined, "site": site,
                    "file": site.rpartition(":")[0], "function": function,
                    "why": why, **more})

    callout_fns = {(c["file"], c["function"]) for c in
                   chain.callouts.values()}
    for s in chain.sites:
        if s["op"] in ("register", "unregister"):
            for ctx, why in s["context"]:
                if ctx in ATOMIC_CONTEXTS:
                    add("write-in-atomic", where(s), s["fn"],
                        f"{s['api']}() in {s['fn']}(): {why}")
            if (s["file"], s["fn"]) in callout_fns:
                add(f"{s['op']}-in-callout", where(s), s["fn"],
                    f"{s['api']}() in {s['fn']}(), a callout of "
                    f"{chain.id}")
    if klass == "blocking":
        for s, why in atomic_evidence(chain):
            add("blocking-called-atomic", where(s), s["fn"], why)
    if klass == "atomic":
        for c, why in blocking_evidence(chain):
            add("atomic-callout-sleeps", c["block"], c["function"], why)
    local = {(v["rule"], v["file"], v["function"]) for v in out}
    for item in chain.evidence:
        rule = GRAPH_RULES.get((item["kind"], klass))
        if rule is None:
            continue
        path = item["path"]
        if item["kind"] == "sleeping-callout":     # subject: "fn() (block)"
            site = item["subject"].rpartition(" (")[2].rstrip(")")
            function, more = path[0]["function"], {}
        else:                                      # subject: the site
            site, function = item["subject"], path[-1]["function"]
            more = {"root": path[0]["function"]}
        if (rule, site.rpartition(":")[0], function) not in local:
            add(rule, site, function, paths.summary(item), via=VIA_GRAPH,
                files=sorted({s["file"] for s in path}), **more)
    return out
