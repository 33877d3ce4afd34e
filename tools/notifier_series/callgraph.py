"""The call graph of a whole tree, and what it proves about a function:
that it may run in atomic context (a path from an interrupt handler, a
timer, a tasklet... or from a call under a lock), or that it may sleep (a
path to might_sleep(), schedule(), a sleeping allocation...).

Facts come from lexfacts.py, one record per file, cached by git blob in
the work folder so that a second run reads only the files that changed.
Names are resolved the way the linker and the preprocessor would: a
static function or a macro of the calling file first, then the .c files
it includes, then a header's inline function or macro, then the one
global definition.  A name defined more than once where none of these
decides is "ambiguous": it is reported and not followed, never guessed.
"""

import gc
import hashlib
import heapq
import multiprocessing
import os
import pickle
import re
import subprocess
import sys
import time
from collections import defaultdict

from . import chain_api, lexfacts, output
from .lexfacts import CALL, CLOSE, DEAD, GFP, ICALL, JUMP, LABEL, OPEN
from .progress import Error, say

# Folders that hold no kernel code.
SKIPPED = re.compile(r"^(tools|scripts|Documentation|samples|usr)/")

# How a function given to one of these is run: (api, argument index).
ROOTS = {
    ("request_irq", 1): "hardirq", ("request_any_context_irq", 1): "hardirq",
    ("request_percpu_irq", 1): "hardirq", ("request_nmi", 1): "hardirq",
    ("request_percpu_nmi", 1): "hardirq",
    ("devm_request_irq", 2): "hardirq",
    ("devm_request_any_context_irq", 2): "hardirq",
    ("request_threaded_irq", 1): "hardirq",
    ("request_threaded_irq", 2): "process",
    ("devm_request_threaded_irq", 2): "hardirq",
    ("devm_request_threaded_irq", 3): "process",
    ("init_irq_work", 1): "hardirq", ("IRQ_WORK_INIT", 0): "hardirq",
    ("IRQ_WORK_INIT_HARD", 0): "hardirq", ("DEFINE_IRQ_WORK", 1): "hardirq",
    ("timer_setup", 1): "softirq", ("timer_setup_on_stack", 1): "softirq",
    ("DEFINE_TIMER", 1): "softirq", ("setup_timer", 1): "softirq",
    ("tasklet_init", 1): "softirq", ("tasklet_setup", 1): "softirq",
    ("DECLARE_TASKLET", 1): "softirq", ("DECLARE_TASKLET_OLD", 1): "softirq",
    ("DECLARE_TASKLET_DISABLED", 1): "softirq",
    ("call_rcu", 1): "softirq", ("call_rcu_tasks", 1): "softirq",
    ("netif_napi_add", 2): "softirq", ("netif_napi_add_weight", 2): "softirq",
    ("netif_napi_add_tx", 2): "softirq",
    ("netif_napi_add_tx_weight", 2): "softirq",
    ("netif_napi_add_config", 2): "softirq",
    ("open_softirq", 1): "softirq",
    ("INIT_WORK", 1): "process", ("INIT_WORK_ONSTACK", 1): "process",
    ("INIT_DELAYED_WORK", 1): "process",
    ("INIT_DEFERRABLE_WORK", 1): "process", ("INIT_RCU_WORK", 1): "process",
    ("DECLARE_WORK", 1): "process", ("DECLARE_DELAYED_WORK", 1): "process",
    ("DECLARE_DEFERRABLE_WORK", 1): "process",
    ("kthread_init_work", 1): "process", ("kthread_run", 0): "process",
    ("kthread_create", 0): "process", ("kthread_create_on_node", 0):
    "process", ("kthread_create_on_cpu", 0): "process",
    ("kthread_run_on_cpu", 0): "process",
}
# Functions stored in these members are run so.
MEMBER_ROOTS = {
    ("hrtimer", "function"): "hardirq", ("irq_work", "func"): "hardirq",
    ("timer_list", "function"): "softirq", ("napi_struct", "poll"): "softirq",
    ("tasklet_struct", "func"): "softirq",
    ("tasklet_struct", "callback"): "softirq",
    ("work_struct", "func"): "process",
}
ATOMIC = ("hardirq", "softirq", "atomic")
# The function the kernel boots from: it and the architectures' entry
# code that calls it run once, while system_state is SYSTEM_BOOTING and
# no other task runs; functions given to these run from it too
# (console_init(), parse_early_param(), parse_args()).
BOOT_ENTRY = "start_kernel"
BOOT_ROOTS = {("console_initcall", 0): "boot", ("early_param", 1): "boot",
              ("__setup", 1): "boot"}
# Where start_kernel() lets the system schedule: never boot only.
BOOT_END = ("arch_call_rest_init", "rest_init")
# Functions that sleep by themselves; every other sleeping function is
# found by the closure over the graph.
SLEEPERS = frozenset((
    "might_sleep", "__might_sleep", "__might_resched", "might_fault",
    "schedule", "schedule_timeout", "schedule_preempt_disabled",
    "io_schedule", "io_schedule_timeout", "msleep", "usleep_range"))
# Functions that sleep only when their caller's GFP flags allow it, as do
# all those with a gfp_t parameter: the caller's flag decides (a GFP
# event), so they are not followed.
GFP_DEPENDENT = frozenset(("might_sleep_if", "might_alloc",
                           "gfpflags_allow_blocking"))
# Callees of a literal sleeping GFP flag that allocate with it.
ALLOCATES = re.compile(r"alloc|dup|printf|^xa_|^idr_|^ida_|mempool|"
                       r"radix_tree_preload|get_free_page|skb_copy|"
                       r"skb_clone|kmem_cache_|krealloc")
# Run-time checkers called from any context by design: not followed.
INSTRUMENTATION = re.compile(r"^(mm/kasan|mm/kmsan|mm/kfence|kernel/kcsan|"
                             r"lib/stackdepot\.c|kernel/kcov\.c)")
# Openers and closers of atomic regions.
LOCK = re.compile(
    r"^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|"
    r"raw_spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|"
    r"read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|"
    r"local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|"
    r"rcu_read_lock(_bh|_sched)?|get_cpu|get_cpu_var|"
    r"raw_local_irq_save|raw_local_irq_disable|local_lock_irqsave)$")
UNLOCK = re.compile(
    r"^(spin_unlock(_irq|_irqrestore|_bh)?|"
    r"raw_spin_unlock(_irq|_irqrestore|_bh)?|"
    r"read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|"
    r"local_irq_restore|local_irq_enable|local_bh_enable|"
    r"preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu|"
    r"put_cpu_var|raw_local_irq_restore|raw_local_irq_enable|"
    r"local_unlock_irqrestore)$")
# An indirect call with more targets than this is not followed.
MAX_TARGETS = 24
# A function that the tree calls inside atomic regions from this many
# files is taken as callable in atomic context: the closure of sleeping
# functions does not go through it (they are listed, see atomic_safe()).
SAFE_FILES = 20
WRAPPER_CALLS = 6       # a lock wrapper makes this many calls at most
ARCH = "x86"            # the architecture generic code is read for
DEPTH = 8               # default: calls shown in a path at most
WEIGHT = {"direct": 1, "alternative": 1, "typed": 2, "member": 4}


# Facts of files that the tree indexed does not have are kept in the
# cache when there are this many at most: those of another checkout of
# the same tree (the pristine one and the one with the fixes).
KEEP_OTHERS = 2000

# The cache file is written again only when more files than this were
# read again (a few fixes are lexed again at each run rather than the
# whole cache rewritten), or when it did not exist.
REWRITE_AFTER = 200

# {cache file: (extractor hash, {blob: facts})} loaded in this process,
# so that the second tree of a run (the one with the fixes) does not
# load the file again.
_LOADED = {}


# -- extraction and its cache ------------------------------------------------

def _git(path, *args):
    proc = subprocess.run(["git", "-C", path] + list(args),
                          capture_output=True, text=True)
    if proc.returncode:
        raise Error(f"git {' '.join(args)} in {path} failed: "
                    f"{proc.stderr.strip()}")
    return proc.stdout


def source_files(tree_path):
    """{path: blob} of the tree's C files, local changes included."""
    files = {}
    for line in _git(tree_path, "ls-files", "-s", "--", "*.c",
                     "*.h").splitlines():
        meta, _, path = line.partition("\t")
        if not SKIPPED.match(path):
            files[path] = meta.split()[1]
    changed = [p[3:] for p in _git(tree_path, "status", "--porcelain",
                                   "--untracked-files=all", "--", "*.c",
                                   "*.h").splitlines()]
    changed = [p for p in changed if not SKIPPED.match(p)]
    for path in changed:
        if os.path.exists(os.path.join(tree_path, path)):
            files[path] = _git(tree_path, "hash-object", path).strip()
        else:
            files.pop(path, None)
    return files


def extractor_hash():
    """What the cached facts depend on: the lexer, the chain API's names
    it reads heads by, and Python's pickle."""
    h = hashlib.sha256(lexfacts.VERSION.encode())
    for module in (lexfacts, chain_api):
        with open(module.__file__, "rb") as f:
            h.update(f.read())
    h.update(f"{sys.version_info[:2]}".encode())
    return h.hexdigest()[:16]


def _lex(job):
    root, path = job
    with open(os.path.join(root, path), "rb") as f:
        raw = f.read()
    return path, len(raw), lexfacts.facts(raw.decode("utf-8", "replace"))


def unpickle(f):
    """pickle.load() of `f` with the garbage collector paused: it would
    walk the millions of objects a call graph is made of again and again
    while they are read."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.load(f)
    finally:
        if enabled:
            gc.enable()


def _load(cache_file, key):
    """{blob: facts} of `cache_file` made by the extractor `key`, from
    this process's memory when it loaded the file already."""
    if _LOADED.get(cache_file, (None,))[0] == key:
        return _LOADED[cache_file][1]
    cached = {}
    try:
        with open(cache_file, "rb") as f:
            pack = unpickle(f)
        if pack.get("extractor") == key:
            cached = pack["facts"]
    except (OSError, EOFError, pickle.PickleError, AttributeError,
            ValueError, KeyError):
        cached = {}
    _LOADED[cache_file] = (key, cached)
    return cached


def index(tree_path, cache_file, jobs=2, files=None):
    """{path: facts} of the tree, the files whose blob `cache_file` does
    not hold read again (`jobs` processes), and a dict of figures.
    `files`: source_files() of the tree, when known already."""
    start = time.monotonic()
    files = source_files(tree_path) if files is None else files
    key = extractor_hash()
    cached = _load(cache_file, key)
    todo = sorted(p for p, blob in files.items() if blob not in cached)
    by_path = {p: cached[b] for p, b in files.items() if b in cached}
    read = 0
    if todo:
        shown = time.monotonic()
        with multiprocessing.Pool(max(1, jobs)) as pool:
            for k, (path, size, got) in enumerate(pool.imap_unordered(
                    _lex, [(tree_path, p) for p in todo], chunksize=64), 1):
                by_path[path] = got
                read += size
                if time.monotonic() - shown >= 30 or k == len(todo):
                    shown = time.monotonic()
                    say(f"    lexing: {k}/{len(todo)} files, "
                        f"{read / 1e6:.0f} MB, {shown - start:.0f}s")
        cached.update((files[p], by_path[p]) for p in todo)
    if len(todo) > REWRITE_AFTER or (todo and
                                     not os.path.exists(cache_file)):
        os.makedirs(os.path.dirname(cache_file), exist_ok=True)
        kept = {files[p]: by_path[p] for p in files}
        others = [b for b in cached if b not in kept]
        if len(others) <= KEEP_OTHERS:      # a worktree with a few fixes
            kept.update((b, cached[b]) for b in others)
        with output.replaced(cache_file, "wb") as f:
            pickle.dump({"extractor": key, "facts": kept}, f,
                        protocol=pickle.HIGHEST_PROTOCOL)
    figures = {"files": len(files), "read": len(todo),
               "megabytes_read": round(read / 1e6, 1),
               "unbalanced": sorted(p for p, f in by_path.items()
                                    if f["unbalanced"]),
               "index_seconds": round(time.monotonic() - start, 1)}
    return by_path, figures


# -- the graph ---------------------------------------------------------------

def _arch(path):
    return path.split("/")[1] if path.startswith("arch/") else None


class Graph:
    """Functions (and function-like macros) of a tree, their calls, the
    regions those calls are in, and the roots of atomic and process
    context.  Nodes are ints; node_* lists describe them."""

    def __init__(self, facts):
        self.name, self.file, self.line = [], [], []
        self.static, self.macro, self.params = [], [], []
        self.events = []
        self.gfp_param = set()                   # nodes taking a gfp_t
        self.global_defs = defaultdict(list)     # name -> [node] of .c
        self.header_defs = defaultdict(list)     # name -> [node] of .h
        self.local = defaultdict(dict)           # file -> {name: node}
        self.inc_c = {}
        self.fptrs = defaultdict(list)           # (struct, member) -> [..]
        self.by_member = defaultdict(list)       # member -> [..]
        self.members = {}                        # (struct, member) -> type
        self.heads = []
        self.toplevel = []
        for path in sorted(facts):
            self._add_file(path, facts[path])
        self.ambiguous = defaultdict(set)        # name -> {caller file}
        self.too_many = defaultdict(set)         # member -> {caller node}
        self._resolved = {}
        self._boot = self._roots = self._sleeping = None
        self._link()

    def _node(self, name, path, line, static, macro, params, events):
        n = len(self.name)
        self.name.append(name)
        self.file.append(path)
        self.line.append(line)
        self.static.append(static)
        self.macro.append(macro)
        self.params.append(params)
        self.events.append(events)
        return n

    def _add_file(self, path, f):
        header = path.endswith(".h")
        for name, line, params, events in f["macros"]:
            n = self._node(name, path, line, True, True, params, events)
            if header:
                self.header_defs[name].append(n)
            else:
                self.local[path][name] = n
        for name, line, static, params, events, gfp in f["funcs"]:
            n = self._node(name, path, line, static, False, params, events)
            if gfp:
                self.gfp_param.add(n)
            if header:
                self.header_defs[name].append(n)
            elif static:
                self.local[path].setdefault(name, n)
            else:
                self.global_defs[name].append(n)
                self.local[path].setdefault(name, n)
        here = os.path.dirname(path)
        self.inc_c[path] = [os.path.normpath(os.path.join(here, p))
                            for p in f["inc_c"]]
        for fp in f["fptrs"]:
            rec = (path,) + tuple(fp)
            self.fptrs[(fp[0], fp[1])].append(rec)
            self.by_member[fp[1]].append(rec)
        for struct, member, t in f["members"]:
            self.members.setdefault((struct, member), t)
        for h in f["heads"]:
            self.heads.append(dict(h, file=path))
        for ev in f["toplevel"]:
            self.toplevel.append((path, ev))

    # -- names ---------------------------------------------------------------

    def resolve(self, name, path):
        """([node], how) of `name` called from `path`: how is "direct",
        "alternative" (one definition per architecture or configuration,
        all followed), "ambiguous" or "unknown"."""
        key = (name, path)
        hit = self._resolved.get(key)
        if hit is not None:
            return hit
        found = self._resolve(name, path)
        self._resolved[key] = found
        return found

    def _resolve(self, name, path):
        n = self.local.get(path, {}).get(name)
        if n is not None:
            return [n], "direct"
        for inc in self.inc_c.get(path, ()):
            n = self.local.get(inc, {}).get(name)
            if n is not None:
                return [n], "direct"
        heads = self._pick(self.header_defs.get(name, []), path)
        defs = self.global_defs.get(name, [])
        if len({os.path.dirname(self.file[n]) for n in defs
                if not _arch(self.file[n])}) > 1:
            if not heads:
                return defs, "ambiguous"
            defs = []
        found = heads + self._pick(defs, path)
        if not found:
            return [], "unknown"
        return found, "direct" if len(found) == 1 else "alternative"

    def _pick(self, nodes, path):
        """The definitions among `nodes` that a caller in `path` may
        reach: those of its own architecture, or for generic code those of
        no architecture and of ARCH."""
        arch = _arch(path) or ARCH
        mine = [n for n in nodes if _arch(self.file[n]) in (None, arch)]
        return mine or nodes

    def is_static(self, path, name):
        """Whether `path` defines a static function or a macro `name`."""
        n = self.local.get(path, {}).get(name)
        return n is not None and self.static[n]

    def node_of(self, name, path):
        """The node of function `name` defined in `path`, or None."""
        n = self.local.get(path, {}).get(name)
        if n is None:
            n = next((m for m in self.header_defs.get(name, [])
                      if self.file[m] == path), None)
        return n

    # -- edges ---------------------------------------------------------------

    def _targets(self, member, base_type, via):
        """([node], how) of an indirect call of `member`."""
        t = base_type
        for m in via:
            t = self.members.get((t, m)) if t else None
        recs = self.fptrs.get((t, member), []) if t else []
        how = "typed"
        if not recs:
            recs = self.by_member.get(member, [])
            structs = {r[1] for r in recs if r[1]}
            if len(structs) > 1:
                return [], "ambiguous"
            how = "member"
        nodes = []
        for r in recs:
            found, _ = self.resolve(r[3], r[0])
            nodes += [n for n in found if not self.macro[n]]
        nodes = sorted(set(nodes))
        if len(nodes) > MAX_TARGETS:
            return [], "too many"
        return nodes, how

    def _link(self):
        """Edges and regions of every node: self.calls[n] is [(line,
        target, how, region)], region None or (opener, line)."""
        self.calls = [[] for _ in self.name]
        self.wrappers = self._lock_wrappers()
        for n, events in enumerate(self.events):
            for line, target, how, region in self._replay(n, events):
                self.calls[n].append((line, target, how, region))
        self.callers = [[] for _ in self.name]
        for n, calls in enumerate(self.calls):
            for line, target, how, region in calls:
                if isinstance(target, int):
                    self.callers[target].append((n, line, how, region))

    def _lock_wrappers(self):
        """{node: "open"|"close"} of small functions and macros (at most
        WRAPPER_CALLS calls) that wrap an opener or a closer of an atomic
        region: their last call opens a region that they leave open, or
        closes one that they did not open.  Found to a fixpoint (a
        wrapper of a wrapper)."""
        wrappers = {}
        small = []
        for n, events in enumerate(self.events):
            calls = [ev for ev in events if ev[0] == CALL]
            if 0 < len(calls) <= WRAPPER_CALLS and not \
                    LOCK.match(self.name[n]) and not \
                    UNLOCK.match(self.name[n]):
                small.append((n, calls))
        changed = True
        while changed:
            changed = False
            for n, calls in small:
                if n in wrappers:
                    continue
                held, closed, last = 0, 0, None
                for ev in calls:
                    last = None if ev[4] else \
                        self._region_op(ev[1], self.file[n], wrappers)
                    if last == "open":
                        held += 1
                    elif last == "close":
                        if held:
                            held -= 1
                        else:
                            closed += 1
                if held and not closed and last == "open" and not any(
                        self._region_op(ev[1], self.file[n], wrappers)
                        == "close" for ev in calls):
                    wrappers[n] = "open"
                    changed = True
                elif closed and not held and not any(
                        self._region_op(ev[1], self.file[n], wrappers)
                        == "open" for ev in calls):
                    wrappers[n] = "close"
                    changed = True
        return wrappers

    def _region_op(self, callee, path, wrappers):
        """"open", "close" or None: what a call of `callee` from `path`
        does to the atomic regions."""
        if LOCK.match(callee):
            return "open"
        if UNLOCK.match(callee):
            return "close"
        nodes, how = self.resolve(callee, path)
        if how in ("direct", "alternative"):
            ops = {wrappers.get(t) for t in nodes}
            if len(ops) == 1:
                return ops.pop()
        return None

    def _replay(self, n, events):
        """(line, target, how, region) of the calls of node n, the
        regions replayed over its blocks: a block ending in a jump gives
        back the regions of its start, an else branch starts with those
        of its if branch's start, and a label after a return or a goto
        starts with none (a goto's regions are not followed)."""
        path = self.file[n]
        held, saved, dead, branch = [], [], False, None
        for ev in events:
            kind = ev[0]
            if kind == DEAD:
                dead = True
            elif kind == LABEL:
                if dead:
                    held = []
            elif kind in (CALL, ICALL):
                dead = False
            if kind == OPEN:
                if ev[1] and branch is not None:
                    held = list(branch)     # else: as the if began
                saved.append(list(held))
                branch = None
            elif kind == CLOSE:
                branch = saved.pop() if saved else None
            elif kind == JUMP:
                held = saved.pop() if saved else held
                branch = list(held)
            elif kind == CALL:
                _, callee, line, _args, cond = ev
                region = held[-1] if held else None
                what = self._region_op(callee, path, self.wrappers)
                if what == "open" and not cond:
                    held.append((callee, line))
                elif what == "close" and held:
                    held.pop()
                nodes, how = self.resolve(callee, path)
                if how in ("ambiguous", "unknown"):
                    if how == "ambiguous":
                        self.ambiguous[callee].add(path)
                    yield line, callee, how, region
                for t in nodes if how not in ("ambiguous",) else ():
                    yield line, t, how, region
            elif kind == ICALL:
                _, member, line, base_type, via = ev
                region = held[-1] if held else None
                nodes, how = self._targets(member, base_type, via)
                if not nodes:
                    if how == "too many":
                        self.too_many[member].add(n)
                    yield line, "->" + member, how, region
                for t in nodes:
                    yield line, t, how, region
            elif kind == GFP and ALLOCATES.search(ev[3]):
                yield ev[2], f"{ev[3]}({ev[1]})", "gfp", \
                    held[-1] if held else None

    # -- roots ---------------------------------------------------------------

    def registration_apis(self):
        """ROOTS and the functions that pass one of their parameters on
        to one of them, to a fixpoint: {(api, index): context}."""
        apis = {**ROOTS, **BOOT_ROOTS}
        changed = True
        while changed:
            changed = False
            for n, events in enumerate(self.events):
                params = self.params[n]
                for ev in events:
                    if ev[0] != CALL:
                        continue
                    for index, arg in ev[3]:
                        ctx = apis.get((ev[1], index))
                        if ctx and arg in params:
                            key = (self.name[n], params.index(arg))
                            if key not in apis:
                                apis[key] = ctx
                                changed = True
        return apis

    def roots(self):
        """{node: (context, file, line, why)}: functions run from an
        interrupt, a timer, a work item...; computed once."""
        if self._roots is not None:
            return self._roots
        apis = self.registration_apis()
        self._roots = found = {}

        def add(name, path, ctx, line, why):
            nodes, how = self.resolve(name, path)
            if how in ("ambiguous", "unknown"):
                return
            for t in nodes:
                if not self.macro[t]:
                    found.setdefault(t, (ctx, path, line, why))

        for n, events in enumerate(self.events):
            for ev in events:
                if ev[0] == CALL:
                    for index, arg in ev[3]:
                        ctx = apis.get((ev[1], index))
                        if ctx and arg not in self.params[n]:
                            add(arg, self.file[n], ctx, ev[2],
                                f"{arg}() is given to {ev[1]}() in "
                                f"{self.name[n]}()")
        for path, ev in self.toplevel:
            for index, arg in ev[3]:
                ctx = apis.get((ev[1], index))
                if ctx:
                    add(arg, path, ctx, ev[2],
                        f"{arg}() is given to {ev[1]}()")
        for (struct, member), ctx in MEMBER_ROOTS.items():
            for rec in self.fptrs.get((struct, member), []):
                add(rec[3], rec[0], ctx, rec[4],
                    f"{rec[3]}() is stored in struct {struct}.{member}")
        return found

    def escaped(self):
        """The names of the functions whose address is taken: given to a
        call but as the argument of a BOOT_ROOTS macro, or stored in a
        structure's member."""
        names = {rec[3] for recs in self.fptrs.values() for rec in recs}
        calls = [ev for events in self.events for ev in events
                 if ev[0] == CALL] + [ev for _, ev in self.toplevel]
        for ev in calls:
            names.update(arg for index, arg in ev[3]
                         if (ev[1], index) not in BOOT_ROOTS)
        return names

    def _callers_by_name(self, n):
        """The callers of node n and, unless it is a static of a .c
        file, of every definition of its name: a call that the graph
        resolves to a __weak default or to one architecture's function
        may run another one."""
        if self.static[n] and not self.file[n].endswith(".h"):
            return self.callers[n]
        name = self.name[n]
        same = {n, *self.global_defs.get(name, ()),
                *self.header_defs.get(name, ())}
        return [c for m in same for c in self.callers[m]]

    def _boot_callees(self, n):
        """The nodes node n calls; for a call that the graph resolves to
        ARCH's definition, the other architectures' ones too (their
        setup_arch() is start_kernel()'s as much as x86's)."""
        for _, target, _, _ in self.calls[n]:
            if not isinstance(target, int):
                continue
            yield target
            if _arch(self.file[target]) == ARCH:
                yield from (m for m in self.global_defs[self.name[target]]
                            if _arch(self.file[m]) not in (None, ARCH))

    def boot_only(self):
        """{node: why}: the functions that run only while the system
        boots: BOOT_ENTRY and the functions that call it, those given to
        BOOT_ROOTS, and the functions only these call (whose address is
        not taken), but for BOOT_END.  Their atomic regions are no
        roots: might_sleep() does not check then, no other task can
        hold a lock they wait for, and the core patch's writers skip
        the rwsem."""
        if self._boot is not None:
            return self._boot
        self._boot = boot = {}
        for n in self.global_defs.get(BOOT_ENTRY, []):
            boot[n] = f"{BOOT_ENTRY}() boots the kernel"
        todo = list(boot)
        while todo:
            n = todo.pop()
            for caller, line, how, _ in self.callers[n]:
                if how in ("direct", "alternative") and caller not in boot:
                    boot[caller] = (f"calls {self.name[n]}() at "
                                    f"{self.file[caller]}:{line}")
                    todo.append(caller)
        escaped = self.escaped()
        given = {n: f"{why} at {path}:{line}"
                 for n, (ctx, path, line, why) in self.roots().items()
                 if ctx == "boot" and self.name[n] not in escaped}
        todo = list(boot)
        for n, why in given.items():
            if n not in boot and not self._callers_by_name(n):
                boot[n] = why
                todo.append(n)
        while todo:
            n = todo.pop()
            for target in self._boot_callees(n):
                if target in boot or self.macro[target] or \
                        self.name[target] in BOOT_END or \
                        self.name[target] in escaped:
                    continue
                callers = self._callers_by_name(target)
                if all(c in boot for c, _, _, _ in callers):
                    boot[target] = given.get(target) or (
                        f"called only while the system boots, by "
                        f"{self.name[n]}() ({self.file[n]})"
                        + (" and others" if len(callers) > 1 else ""))
                    todo.append(target)
        return boot

    # -- closures ------------------------------------------------------------

    def atomic_safe(self):
        """{node: files}: the functions that SAFE_FILES files or more call
        inside atomic regions."""
        files = defaultdict(set)
        for n, calls in enumerate(self.calls):
            for line, target, how, region in calls:
                if region and isinstance(target, int):
                    files[target].add(self.file[n])
        safe = {n: len(f) for n, f in files.items() if len(f) >= SAFE_FILES}
        # ... and what their thin wrappers call: queue_work() is safe,
        # so is queue_work_on().
        todo = list(safe)
        while todo:
            n = todo.pop()
            targets = [t for _, t, _, _ in self.calls[n]
                       if isinstance(t, int)]
            if len(targets) <= 2:
                for t in targets:
                    if t not in safe:
                        safe[t] = safe[n]
                        todo.append(t)
        return safe

    def closures(self):
        """Computes what does not depend on the chains' classes, so that
        a graph pickled afterwards holds it: the roots, the functions
        run only while booting, and those that may sleep."""
        self.boot_only()
        self.sleeping()

    def sleeping(self):
        """{node: (line, callee, how)}: the nodes that may sleep, each
        with the first step of its shortest proof: callee a node, or the
        name of a sleeping primitive or a GFP flag; computed once."""
        if self._sleeping is not None:
            return self._sleeping
        witness, heap = {}, []
        self.safe = safe = self.atomic_safe()
        for n, calls in enumerate(self.calls):
            if self._region_node(n) or n in safe:
                continue
            for line, target, how, region in calls:
                if how == "gfp" or (isinstance(target, str)
                                    and target in SLEEPERS) or \
                        (isinstance(target, int)
                         and self.name[target] in SLEEPERS):
                    label = target if isinstance(target, str) else \
                        self.name[target]
                    if n not in witness:
                        witness[n] = (line, label, how)
                        heapq.heappush(heap, (1, n))
        dist = {n: 1 for n in witness}
        while heap:
            d, n = heapq.heappop(heap)
            if d > dist.get(n, d):
                continue
            for caller, line, how, region in self.callers[n]:
                nd = d + WEIGHT.get(how, 4)
                if self._region_node(caller) or caller in safe:
                    continue
                if how in ("direct", "alternative", "typed") and \
                        nd < dist.get(caller, 1 << 30):
                    dist[caller] = nd
                    witness[caller] = (line, n, how)
                    heapq.heappush(heap, (nd, caller))
        self._sleeping = witness
        return witness

    def _region_node(self, n):
        """Whether the sleeping closure stops at node n: it opens or
        closes an atomic region (a PREEMPT_RT variant that sleeps is not
        followed), its sleeping depends on its caller's GFP flags, or it
        is run-time instrumentation."""
        return n in self.wrappers or bool(
            LOCK.match(self.name[n]) or UNLOCK.match(self.name[n])
            or self.name[n] in GFP_DEPENDENT or n in self.gfp_param
            or INSTRUMENTATION.match(self.file[n]))

    def atomic_reach(self, extra=()):
        """{node: (parent, line, how, why)}: the nodes that may run in
        atomic context; parent None for a root (why names it), else the
        caller whose call at `line` reaches the node.  `extra` adds roots:
        [(node, why, file, line)]."""
        reach, heap = {}, []
        boot = self.boot_only()
        for n, (ctx, path, line, why) in self.roots().items():
            if ctx in ATOMIC:
                reach[n] = (None, line, ctx, f"{why} at {path}:{line}")
                heapq.heappush(heap, (0, n))
        for n, why, path, line in extra:
            if n not in reach:
                reach[n] = (None, line, "atomic", f"{why} at {path}:{line}")
                heapq.heappush(heap, (0, n))
        dist = {n: 0 for n in reach}
        for n, calls in enumerate(self.calls):
            if n in boot:
                continue
            for line, target, how, region in calls:
                if region and isinstance(target, int) and \
                        not self.macro[target] and 1 < dist.get(target,
                                                                1 << 30):
                    dist[target] = 1
                    reach[target] = (n, line, how, region)
                    heapq.heappush(heap, (1, target))
        while heap:
            d, n = heapq.heappop(heap)
            if d > dist.get(n, d):
                continue
            for line, target, how, region in self.calls[n]:
                if not isinstance(target, int) or how not in WEIGHT:
                    continue
                nd = d + WEIGHT[how]
                if nd < dist.get(target, 1 << 30):
                    dist[target] = nd
                    reach[target] = (n, line, how, None)
                    heapq.heappush(heap, (nd, target))
        return reach

    # -- paths ---------------------------------------------------------------

    def step(self, n, line, note):
        return {"file": self.file[n], "line": line,
                "function": self.name[n], "note": note}

    def sleep_path(self, n, witness, depth=DEPTH):
        """[step] from node n to a sleeping primitive, or None."""
        path, seen = [], set()
        while n in witness and n not in seen and len(path) < depth:
            seen.add(n)
            line, target, how = witness[n]
            if isinstance(target, int):
                path.append(self.step(n, line, f"calls "
                                      f"{self.name[target]}() ({how})"))
                n = target
            else:
                what = (f"allocates with {target}" if how == "gfp"
                        else f"calls {target}()")
                path.append(self.step(n, line, what))
                return path
        return None

    def atomic_path(self, n, reach, depth=DEPTH):
        """[step] from an atomic root or region down to node n (its last
        step the call into n), or None."""
        path, seen = [], set()
        while n in reach and n not in seen:
            seen.add(n)
            parent, line, how, why = reach[n]
            if parent is None:
                path.append({"file": why.rsplit(" at ", 1)[-1]
                             .rpartition(":")[0], "line": line,
                             "function": self.name[n],
                             "note": why.rsplit(" at ", 1)[0]})
                break
            note = f"calls {self.name[n]}() ({how})"
            if why:
                note += f" under {why[0]}() from line {why[1]}"
            path.append(self.step(parent, line, note))
            n = parent
        path.reverse()
        if not path or len(path) > depth:
            return None
        return path

    def region_at(self, n, line):
        """(opener, line) of the region a call of node n at `line` is
        in, or None; none in a function that runs only while the
        system boots."""
        if n in self.boot_only():
            return None
        for call_line, _, _, region in self.calls[n]:
            if call_line == line and region:
                return region
        return None

    def size(self):
        return {"functions": sum(not m for m in self.macro),
                "macros": sum(self.macro),
                "calls": sum(len(c) for c in self.calls),
                "ambiguous_names": len(self.ambiguous),
                "lock_wrappers": len(self.wrappers)}


# -- reports -----------------------------------------------------------------

def report(graph, figures):
    """What a reviewer needs to trust the graph: its size, what it does
    not follow, and where the sleeping closure stops."""
    safe = graph.atomic_safe()
    return {
        **figures, **graph.size(),
        "ambiguous": {name: sorted(files)[:10] for name, files in
                      sorted(graph.ambiguous.items())},
        "too_many_targets": {m: len(ns) for m, ns in
                             sorted(graph.too_many.items())},
        "boot_only": sorted(f"{graph.name[n]} ({graph.file[n]}): {why}"
                            for n, why in graph.boot_only().items()),
        "atomic_safe": sorted(f"{graph.name[n]} ({graph.file[n]}): called "
                              f"in atomic regions from {k} files"
                              for n, k in safe.items()),
    }


def explain(graph, name, depth=DEPTH):
    """Lines telling why each function called `name` may run in atomic
    context and may sleep."""
    nodes = [n for n in range(len(graph.name)) if graph.name[n] == name]
    if not nodes:
        return [f"{name}: no such function or macro in the call graph"]
    sleeping, reach = graph.sleeping(), graph.atomic_reach()
    lines = []
    for n in nodes:
        lines.append(f"{name}() at {graph.file[n]}:{graph.line[n]}:")
        for what, path in (("atomic", graph.atomic_path(n, reach, depth)
                            if n in reach else None),
                           ("sleeps", graph.sleep_path(n, sleeping, depth)
                            if n in sleeping else None)):
            if path is None:
                lines.append(f"  {what}: no path within {depth} calls")
                continue
            lines.append(f"  {what}:")
            lines += [f"    {s['file']}:{s['line']} {s['function']}(): "
                      f"{s['note']}" for s in path]
    return lines
