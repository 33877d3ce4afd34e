// SPDX-License-Identifier: GPL-2.0-only
/// Convert atomic and blocking notifier chains onto struct notifier_head:
/// every use of the typed API becomes notifier_chain_register() and
/// friends, every head becomes a struct notifier_head of the class that
/// the classification gives it, and the bare struct notifier_block * heads
/// of before 2006 become ATOMIC_NOTIFIER_HEAD() or BLOCKING_NOTIFIER_HEAD(),
/// their calls of notifier_chain_register() and friends keeping the names
/// they have.  Raw and SRCU chains, and the chains the classification
/// excludes, are left as they are.  A static lock that guards nothing but
/// converted chains, which their heads now protect, is removed with its
/// definition (the 3/7 of 2005).  Chains walked by hand are reported for
/// a person to fold onto the chain API.
///
/// The classes, and the new names of the typed API's functions, come from
/// the JSON file named by NOTIFIER_CLASSES in the environment, which
/// tools/notifier-series convert writes from a classification YAML and
/// tools/notifier_series/chain_api.py; it runs one file per spatch and
/// names it in NOTIFIER_FILE.  Every head seen, and every site left for
/// a person, is printed as a record prefixed "NSCV " for its report.
//
// Confidence: High
// Copyright: (C) 2026 the notifier-series authors.
// Comments: The class of a head inside a structure is set where the head
// is initialised: it is found from the type of the object when spatch
// knows it, else from the member's name when all chains of that name have
// one class.  All matching comes before the first change, because spatch
// reports the positions of a changed file in a temporary copy of it.
// Options: --no-includes --macro-file cocci/notifier_macros.h, and
// NOTIFIER_CLASSES (and NOTIFIER_FILE) in the environment, as above
// Keywords: notifier, notifier_head, ATOMIC_NOTIFIER_HEAD
// Requires: 1.1.1

virtual patch

@initialize:python@
@@
import json
import os
import re

with open(os.environ["NOTIFIER_CLASSES"], encoding="utf-8") as f:
    CLASSES = json.load(f)
# {typed operation: its name on struct notifier_head}, which the tool
# writes from tools/notifier_series/chain_api.py
RENAMED = CLASSES["renamed"]
# Run-time initialisations to change: (line, column) -> new macro
INITS = {}
TYPED = {}


def source(p):
    return os.environ.get("NOTIFIER_FILE") or p[0].file


def record(kind, p, **fields):
    fields.update(kind=kind, file=source(p), line=int(p[0].line))
    print("NSCV " + json.dumps(fields, sort_keys=True), flush=True)


def text(e):
    return "".join(str(e).split())


def symbol_class(x):
    """The class of the chain headed by the variable x: a chain of this
    file first, else the public one of that name."""
    return (CLASSES["symbols"].get(source_file() + ":" + x) or
            CLASSES["public"].get(x) or bare_class(x))


def source_file():
    return os.environ.get("NOTIFIER_FILE", "")


def bare_class(x):
    return (CLASSES["bare"].get(source_file() + ":" + x) or
            CLASSES["bare_public"].get(x))


def member_class(struct, member):
    """The class of the chain in member `member` of `struct` (the text of
    its type, or None), else the one class of all chains of that member
    name."""
    if struct:
        name = re.sub(r"\s*\*+$", "", " ".join(struct.split()))
        if not name.startswith("struct "):
            name = "struct " + name
        found = CLASSES["members"].get(name + "." + member)
        if found:
            return found
    classes = set(CLASSES["member_names"].get(member, []))
    return classes.pop() if len(classes) == 1 else None


def chain_class(e):
    """The class of the chain that the argument e names, or None."""
    e = text(e)
    m = re.match(r"^&(\w+)(\[.*\])?$", e) or re.match(r"^(\w+)$", e)
    if m:
        return symbol_class(m.group(1))
    m = re.match(r"^&?.*(?:->|\.)(\w+)(\[[^]]*\])?$", e)
    if m:
        return member_class(None, m.group(1))
    return None


def seen(p, form, what, cls, declared):
    """Records a head, or a site that initialises one; True when it keeps
    the kind it declares."""
    record("head" if cls else "unknown", p, form=form, what=what,
           declared=declared, cls=cls)
    return cls not in ("atomic", "blocking") or cls == declared


def kind(K):
    """What a head of type struct K declares; "notifier" once converted."""
    return K.split("_")[0]


def rename(api):
    return RENAMED[api.split("_notifier_", 1)[1]]


# The static locks of the file: name -> {"line", "header", "uses" (lines
# but for its critical sections and initialisation), "sections"}
LOCKS = {}
SPINNING = ("spin_", "raw_spin_", "read_lock", "write_lock")


def section(lock, lk, ul, ops, p1, p2):
    """Records a critical section of `lock` holding nothing but the chain
    operations `ops` [(function, chain, other arguments)], with why it
    must stay (None when the converted head protects what it did)."""
    found = LOCKS[lock]
    found["uses"] -= {int(p1[0].line), int(p2[0].line)}
    calls = any("call_chain" in f for f, _, _ in ops)
    why = None
    if any(re.search(r"\w\s*\(", str(e) + str(es)) for _, e, es in ops):
        why = "an argument calls a function"
    elif any(chain_class(e) not in ("atomic", "blocking") for _, e, _ in ops):
        why = "it guards a chain the series leaves as it is"
    elif len(ops) > 1:
        why = ("it makes two chain operations one, on line %s, which the "
               "head does not" % p1[0].line)
    elif lk.startswith(SPINNING) and not calls:
        # From the core patch on, the writer sleeps under it: a fix placed
        # before the core patch has to remove it, not this conversion.
        why = ("a writer under a spinning lock sleeps in atomic context "
               "from the core patch on: a fix before it removes the lock")
    elif calls and lk != "down_read":
        # An exclusive lock runs the callouts one at a time, a spinning
        # one with preemption off: the protection of the head does neither.
        why = "it is held around a call, which %s" % (
            "runs the callouts with preemption off"
            if lk.startswith(SPINNING) else
            "runs the callouts one at a time")
    found["sections"].append({
        "line": int(p1[0].line), "why": why,
        "text": "%s() under %s() on line %s, %s() on line %s" % (
            "() and ".join(f for f, _, _ in ops), lk, p1[0].line, ul,
            p2[0].line)})


def lock_kept(lock):
    """Why `lock` stays, or None when it guards nothing but converted
    chains (the 3/7 of 2005)."""
    found = LOCKS[lock]
    if found["header"]:
        return "it is defined in a header, which other files may include"
    if found.get("cond"):
        return "it is initialised under a condition, on line %s" % (
            found["cond"])
    if found["uses"] - {found["line"]}:
        return "it has other uses: line %s" % ", ".join(
            str(n) for n in sorted(found["uses"] - {found["line"]}))
    return next((s["why"] for s in found["sections"] if s["why"]), None)

// ---------------------------------------------------------------------
// Matching: heads and sites, recorded with their lines

@head_atomic_seen depends on patch@
declarer name ATOMIC_NOTIFIER_HEAD;
identifier x;
position p;
@@
ATOMIC_NOTIFIER_HEAD@p(x);

@script:python@
x << head_atomic_seen.x;
p << head_atomic_seen.p;
@@
seen(p, "macro", x, symbol_class(x), "atomic")

@head_blocking_seen depends on patch@
declarer name BLOCKING_NOTIFIER_HEAD;
identifier x;
position p;
@@
BLOCKING_NOTIFIER_HEAD@p(x);

@script:python@
x << head_blocking_seen.x;
p << head_blocking_seen.p;
@@
seen(p, "macro", x, symbol_class(x), "blocking")

@variable_seen depends on patch@
identifier K =~ "^(atomic|blocking)?_?notifier_head$";
identifier x;
expression E, N;
position p;
@@
(
struct K x@p;
|
struct K x@p = E;
|
struct K x@p[N];
)

@script:python@
K << variable_seen.K;
x << variable_seen.x;
p << variable_seen.p;
@@
seen(p, "variable", x, symbol_class(x), kind(K))

@member_seen depends on patch@
identifier K =~ "^(atomic|blocking)?_?notifier_head$";
identifier x, T;
expression N;
position p;
@@
(
struct T { ... struct K x@p; ... };
|
struct T { ... struct K *x@p; ... };
|
struct T { ... struct K x@p[N]; ... };
)

@script:python@
K << member_seen.K;
T << member_seen.T;
x << member_seen.x;
p << member_seen.p;
@@
seen(p, "member", "struct %s.%s" % (T, x), member_class("struct " + T, x),
     kind(K))

@bare_seen depends on patch@
identifier x;
expression E;
position p;
@@
(
struct notifier_block *x@p;
|
struct notifier_block *x@p = E;
)

@script:python@
x << bare_seen.x;
p << bare_seen.p;
@@
if p[0].current_element == x and bare_class(x):
    seen(p, "bare", x, bare_class(x), "bare")

@init_static_seen depends on patch@
identifier I =~ "^(ATOMIC|BLOCKING)_NOTIFIER_INIT$";
expression e;
position p;
@@
I@p(e)

@script:python@
I << init_static_seen.I;
e << init_static_seen.e;
p << init_static_seen.p;
@@
cls = symbol_class(text(e)) or chain_class(e)
seen(p, "initializer", text(e), cls, I.split("_")[0].lower())

@init_typed depends on patch@
identifier I =~ "^(ATOMIC|BLOCKING)_INIT_NOTIFIER_HEAD$";
type T;
T *o;
T o2;
identifier fld;
expression i;
position p;
@@
(
I@p(&o->fld)
|
I@p(&o->fld[i])
|
I@p(&o2.fld)
|
I@p(&o2.fld[i])
)

@script:python@
T << init_typed.T;
fld << init_typed.fld;
p << init_typed.p;
@@
TYPED[(p[0].line, p[0].column)] = member_class(str(T), fld)

@init_seen depends on patch@
identifier I =~ "^(ATOMIC|BLOCKING)_INIT_NOTIFIER_HEAD$";
expression e;
position p;
@@
I@p(e)

@script:python@
I << init_seen.I;
e << init_seen.e;
p << init_seen.p;
@@
declared = I.split("_")[0].lower()
cls = TYPED.get((p[0].line, p[0].column)) or chain_class(e)
if not seen(p, "init", text(e), cls, declared):
    INITS[(p[0].line, p[0].column)] = cls.upper() + "_INIT_NOTIFIER_HEAD"

@robust depends on patch@
identifier R =~ "^(blocking_notifier_call_chain_robust|notifier_call_chain_robust)$";
expression e;
position p;
@@
R@p(e, ...)

@script:python@
e << robust.e;
p << robust.p;
@@
if chain_class(e) == "atomic":
    record("unconverted", p, what=text(e),
           why="a robust call on a chain classified atomic")

@by_hand depends on patch exists@
struct notifier_block *nb;
identifier fn;
position p;
@@
fn(...) {
<+...
nb->notifier_call@p(...)
...
nb = <+... nb->next ...+>;
...+>
}

@script:python@
fn << by_hand.fn;
p << by_hand.p;
@@
if not source(p).endswith("kernel/notifier.c"):
    record("unconverted", p, what=fn + "()",
           why="a chain walked by hand: fold it onto notifier_call_chain()")

// Locks that guard nothing but converted chains: the head protects what
// they did, and the conversion removes them (2005's 3/7).  The lock is a
// static variable of a .c file, and every use of it is its definition,
// its initialisation, or the lock and unlock of a critical section that
// holds one chain operation and nothing else.  A sleeping lock only: a
// writer under a spinning one breaks the rule of the new head from the
// core patch on, so a fix before it removes such a lock.  A section
// around a call keeps the lock unless it is the read side of an rwsem: an
// exclusive lock runs the callouts one at a time, and a callout may rely
// on that.  cocci/notifier_redundant_lock.cocci reports these locks and
// more, for any tree: the spinning ones, those of SRCU chains, and those
// whose sections hold two operations.

@lock_def depends on patch@
identifier L;
declarer name DEFINE_MUTEX, DECLARE_RWSEM, DEFINE_SPINLOCK, DEFINE_RWLOCK,
  DECLARE_MUTEX, DEFINE_SEMAPHORE, DEFINE_RAW_SPINLOCK;
position d;
@@
(
static DEFINE_MUTEX@d(L);
|
static DECLARE_RWSEM@d(L);
|
static DEFINE_SPINLOCK@d(L);
|
static DEFINE_RWLOCK@d(L);
|
static DECLARE_MUTEX@d(L);
|
static DEFINE_SEMAPHORE@d(L);
|
static DEFINE_SEMAPHORE@d(L, ...);
|
static DEFINE_RAW_SPINLOCK@d(L);
|
static struct mutex L@d;
|
static struct rw_semaphore L@d;
|
static struct semaphore L@d;
|
static spinlock_t L@d;
|
static raw_spinlock_t L@d;
|
static rwlock_t L@d;
)

@script:python@
L << lock_def.L;
d << lock_def.d;
@@
LOCKS[L] = {"line": int(d[0].line), "uses": set(), "sections": [],
            "header": not source(d).endswith(".c")}

@lock_use depends on patch@
identifier lock_def.L;
position u;
@@
L@u

@script:python@
L << lock_def.L;
u << lock_use.u;
@@
LOCKS[L]["uses"].add(int(u[0].line))

@lock_init depends on patch@
identifier lock_def.L;
identifier i =~ "^(mutex_init|init_rwsem|spin_lock_init|raw_spin_lock_init|rwlock_init|sema_init|init_MUTEX)$";
position p;
@@
i@p(&L, ...);

@script:python@
L << lock_def.L;
p << lock_init.p;
@@
LOCKS[L]["uses"].discard(int(p[0].line))

// An initialisation that is the branch of an if is another use: removing
// it would leave the if without a statement.
@lock_init_cond depends on patch@
identifier lock_def.L;
identifier i =~ "^(mutex_init|init_rwsem|spin_lock_init|raw_spin_lock_init|rwlock_init|sema_init|init_MUTEX)$";
expression c;
statement S;
position p;
@@
(
if (c) i@p(&L, ...);
|
if (c) S else i@p(&L, ...);
|
if (c) { i@p(&L, ...); }
|
if (c) S else { i@p(&L, ...); }
)

@script:python@
L << lock_def.L;
p << lock_init_cond.p;
@@
LOCKS[L]["cond"] = int(p[0].line)

@lock_sect depends on patch@
identifier lock_def.L;
identifier lk =~ "^(mutex_lock|down|down_read|down_write|spin_lock|spin_lock_irq|spin_lock_irqsave|spin_lock_bh|raw_spin_lock|raw_spin_lock_irq|raw_spin_lock_irqsave|read_lock|read_lock_irq|read_lock_irqsave|read_lock_bh|write_lock|write_lock_irq|write_lock_irqsave|write_lock_bh)$";
identifier ul =~ "^(mutex_unlock|up|up_read|up_write|spin_unlock|spin_unlock_irq|spin_unlock_irqrestore|spin_unlock_bh|raw_spin_unlock|raw_spin_unlock_irq|raw_spin_unlock_irqrestore|read_unlock|read_unlock_irq|read_unlock_irqrestore|read_unlock_bh|write_unlock|write_unlock_irq|write_unlock_irqrestore|write_unlock_bh)$";
identifier f1 =~ "^((atomic|blocking)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust)|notifier_(chain_register|chain_unregister|call_chain))$";
identifier f2 =~ "^((atomic|blocking)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust)|notifier_(chain_register|chain_unregister|call_chain))$";
local idexpression x1, x2;
expression e1, e2;
expression list es1, es2;
position p1, p2;
@@
(
lk@p1(&L, ...);
\( f1(e1, es1); \| x1 = f1(e1, es1); \)
ul@p2(&L, ...);
|
lk@p1(&L, ...);
\( f1(e1, es1); \| x1 = f1(e1, es1); \)
\( f2(e2, es2); \| x2 = f2(e2, es2); \)
ul@p2(&L, ...);
)

@script:python@
L << lock_def.L;
lk << lock_sect.lk;
ul << lock_sect.ul;
f1 << lock_sect.f1;
e1 << lock_sect.e1;
es1 << lock_sect.es1;
f2 << lock_sect.f2 = "";
e2 << lock_sect.e2 = "";
es2 << lock_sect.es2 = "";
p1 << lock_sect.p1;
p2 << lock_sect.p2;
@@
section(L, lk, ul, [(f, e, es) for f, e, es in ((f1, e1, es1), (f2, e2, es2))
                    if f], p1, p2)

@script:python@
L << lock_def.L;
d << lock_def.d;
@@
if LOCKS[L]["sections"]:
    kept = lock_kept(L)
    record("lock", d, lock=L, removed=kept is None, why=kept,
           sections=[s["text"] for s in sorted(LOCKS[L]["sections"],
                                               key=lambda s: s["line"])])
if lock_kept(L) is not None or not LOCKS[L]["sections"]:
    cocci.include_match(False)

// ---------------------------------------------------------------------
// Changes.  Each is decided by name, or by a position taken above.

// The locks found above to guard nothing but converted chains: every use
// of one is its definition, or a statement that takes, releases or
// initialises it.
@depends on patch@
identifier lock_def.L;
position lock_def.d;
declarer name DEFINE_MUTEX, DECLARE_RWSEM, DEFINE_SPINLOCK, DEFINE_RWLOCK,
  DECLARE_MUTEX, DEFINE_SEMAPHORE, DEFINE_RAW_SPINLOCK;
@@
(
- static DEFINE_MUTEX@d(L);
|
- static DECLARE_RWSEM@d(L);
|
- static DEFINE_SPINLOCK@d(L);
|
- static DEFINE_RWLOCK@d(L);
|
- static DECLARE_MUTEX@d(L);
|
- static DEFINE_SEMAPHORE@d(L);
|
- static DEFINE_SEMAPHORE@d(L, ...);
|
- static DEFINE_RAW_SPINLOCK@d(L);
|
- static struct mutex L@d;
|
- static struct rw_semaphore L@d;
|
- static struct semaphore L@d;
|
- static spinlock_t L@d;
|
- static raw_spinlock_t L@d;
|
- static rwlock_t L@d;
)

@depends on patch@
identifier lock_def.L;
identifier fn;
@@
- fn(&L, ...);


@init depends on patch@
identifier I =~ "^(ATOMIC|BLOCKING)_INIT_NOTIFIER_HEAD$";
expression e;
position p;
@@
I@p(e)

@script:python init_name@
p << init.p;
J;
@@
if (p[0].line, p[0].column) in INITS:
    coccinelle.J = INITS[(p[0].line, p[0].column)]
else:
    cocci.include_match(False)

@depends on patch@
identifier init.I, init_name.J;
expression init.e;
position init.p;
@@
- I@p(e)
+ J(e)

@head_atomic depends on patch@
declarer name ATOMIC_NOTIFIER_HEAD;
identifier x;
position p;
@@
ATOMIC_NOTIFIER_HEAD@p(x);

@script:python@
x << head_atomic.x;
@@
if symbol_class(x) != "blocking":
    cocci.include_match(False)

@depends on patch@
declarer name ATOMIC_NOTIFIER_HEAD, BLOCKING_NOTIFIER_HEAD;
identifier head_atomic.x;
position head_atomic.p;
@@
- ATOMIC_NOTIFIER_HEAD@p(x);
+ BLOCKING_NOTIFIER_HEAD(x);

// After the change above, an atomic head is one that was atomic already.
@head_blocking depends on patch@
declarer name BLOCKING_NOTIFIER_HEAD;
identifier x;
position p;
@@
BLOCKING_NOTIFIER_HEAD@p(x);

@script:python@
x << head_blocking.x;
@@
if symbol_class(x) != "atomic":
    cocci.include_match(False)

@depends on patch@
declarer name ATOMIC_NOTIFIER_HEAD, BLOCKING_NOTIFIER_HEAD;
identifier head_blocking.x;
position head_blocking.p;
@@
- BLOCKING_NOTIFIER_HEAD@p(x);
+ ATOMIC_NOTIFIER_HEAD(x);

@init_static depends on patch@
identifier I =~ "^(ATOMIC|BLOCKING)_NOTIFIER_INIT$";
expression e;
position p;
@@
I@p(e)

@script:python init_static_name@
I << init_static.I;
e << init_static.e;
J;
@@
cls = symbol_class(text(e)) or chain_class(e)
if cls not in ("atomic", "blocking"):
    cls = I.split("_")[0].lower()
coccinelle.J = cls.upper() + "_NOTIFIER_HEAD_INIT"

@depends on patch@
identifier init_static.I, init_static_name.J;
expression init_static.e;
position init_static.p;
@@
- I@p(e)
+ J(e)

// 2005 heads, named in the classification

@bare_extern depends on patch@
identifier x;
position p;
@@
extern struct notifier_block *x@p;

@script:python@
x << bare_extern.x;
@@
if bare_class(x) not in ("atomic", "blocking"):
    cocci.include_match(False)

@depends on patch@
identifier bare_extern.x;
position bare_extern.p;
@@
- extern struct notifier_block *x@p;
+ extern struct notifier_head x;

@bare_atomic depends on patch@
identifier x;
expression E;
position p;
@@
(
struct notifier_block *x@p;
|
struct notifier_block *x@p = E;
)

@script:python@
x << bare_atomic.x;
p << bare_atomic.p;
@@
if p[0].current_element != x or bare_class(x) != "atomic":
    cocci.include_match(False)

@depends on patch@
identifier bare_atomic.x;
position bare_atomic.p;
expression E;
declarer name ATOMIC_NOTIFIER_HEAD;
@@
(
- struct notifier_block *x@p;
+ ATOMIC_NOTIFIER_HEAD(x);
|
- struct notifier_block *x@p = E;
+ ATOMIC_NOTIFIER_HEAD(x);
)

@bare_blocking depends on patch@
identifier x;
expression E;
position p;
@@
(
struct notifier_block *x@p;
|
struct notifier_block *x@p = E;
)

@script:python@
x << bare_blocking.x;
p << bare_blocking.p;
@@
if p[0].current_element != x or bare_class(x) != "blocking":
    cocci.include_match(False)

@depends on patch@
identifier bare_blocking.x;
position bare_blocking.p;
expression E;
declarer name BLOCKING_NOTIFIER_HEAD;
@@
(
- struct notifier_block *x@p;
+ BLOCKING_NOTIFIER_HEAD(x);
|
- struct notifier_block *x@p = E;
+ BLOCKING_NOTIFIER_HEAD(x);
)

// The head's type, everywhere but where an excluded head is declared

@excluded_variable depends on patch@
identifier K =~ "^(atomic|blocking)_notifier_head$";
identifier x;
expression E, N;
position p;
@@
(
struct K@p x;
|
struct K@p x = E;
|
struct K@p x[N];
)

@script:python@
x << excluded_variable.x;
@@
if symbol_class(x) != "excluded":
    cocci.include_match(False)

@excluded_member depends on patch@
identifier K =~ "^(atomic|blocking)_notifier_head$";
identifier x, T;
expression N;
position p;
@@
(
struct T { ... struct K@p x; ... };
|
struct T { ... struct K@p *x; ... };
|
struct T { ... struct K@p x[N]; ... };
)

@script:python@
T << excluded_member.T;
x << excluded_member.x;
@@
if member_class("struct " + T, x) != "excluded":
    cocci.include_match(False)

@depends on patch@
identifier K =~ "^(atomic|blocking)_notifier_head$";
position p != {excluded_variable.p, excluded_member.p};
@@
struct
- K@p
+ notifier_head

// The typed API's calls

@depends on patch@
identifier f =~ "^(atomic|blocking)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust|call_chain_is_empty)$";
fresh identifier g = script:python(f) { rename(f) };
expression list args;
@@
- f(args)
+ g(args)
