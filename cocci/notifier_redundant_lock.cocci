// SPDX-License-Identifier: GPL-2.0-only
/// A lock that only ever protects a notifier chain is redundant once the
/// chain's head carries its own protection (struct notifier_head, or the
/// typed heads): remove it, as the 2005 series did for module.c's
/// notify_mutex and profile.c's handoff_lock ("[RFC][PATCH 3/7]").
///
/// The lock is reported when it is a static variable of the file (so no
/// other file can take it) and every use of it in the file is its
/// definition, its initialisation, or the lock and unlock of a critical
/// section that holds nothing but one or two chain operations: calls of
/// the chain API whose arguments call nothing, alone or assigned to a
/// variable.  A critical section with any other statement (a counter, a
/// list, a condition, a loop), a lock whose acquisition is tested
/// (trylock, down_interruptible()), or any other use of the lock
/// (lockdep_assert_held(), mutex_is_locked(), a pointer to it) keeps the
/// lock: it may guard more than the chain.
///
/// An exclusive lock (a mutex, a semaphore, a spinlock, a write lock)
/// held around a call of the chain also runs the callouts one at a time,
/// which the chain's own protection does not (a blocking chain's readers
/// share its rwsem, an atomic chain's share RCU), and a spinning one, a
/// read lock too, runs them with preemption off: such a lock is reported
/// apart, since removing it is safe only when no callout relies on that.
//
// Confidence: High
// Copyright: (C) 2026 the notifier-series authors.
// Comments: Held only across chain operations, such a lock is also held
// across the callouts of a call, where it can deadlock with a callout
// that takes a lock ordered before it.
// Options: --no-includes --include-headers
// Keywords: notifier, lock, redundant

virtual context
virtual org
virtual report

@initialize:python@
@@
import re

sections = {}   # (file, lock) -> [(lock line, unlock line, text)]
uses = {}       # (file, lock) -> lines of its uses but for its definition
defined = {}    # (file, lock) -> the line of its definition


def redundant(file, lock):
    """The critical sections of `lock` in words, and the lines where it
    serializes calls of the chain, when it guards nothing else; else
    None."""
    key = (file, lock)
    if key not in sections or uses.get(key, set()) - {defined.get(key)}:
        return None
    found = sorted(sections[key])
    return ([text for _, text, _ in found],
            ["%s (line %s)" % (how, line) for line, _, how in found if how])


def message(lock, found):
    texts, alone = found
    if alone:
        return ("%s guards nothing but notifier chain operations, but runs "
                "the callouts %s: remove it only if no callout relies on "
                "that: %s" % (lock, ", ".join(alone), "; ".join(texts)))
    return ("%s guards nothing but notifier chain operations: %s"
            % (lock, "; ".join(texts)))


def calls(args):
    """Whether the arguments of a chain operation call anything."""
    return re.search(r"\w\s*\(", str(args or "")) is not None

// The chain API, in full for spatch's search of the files to parse: the
// typed heads' (not raw chains': their lock is their only protection),
// struct notifier_head's and 2005's.
@has_op@
@@
(
atomic_notifier_chain_register(...)
|
atomic_notifier_chain_register_unique_prio(...)
|
atomic_notifier_chain_unregister(...)
|
atomic_notifier_call_chain(...)
|
blocking_notifier_chain_register(...)
|
blocking_notifier_chain_register_unique_prio(...)
|
blocking_notifier_chain_unregister(...)
|
blocking_notifier_call_chain(...)
|
blocking_notifier_call_chain_robust(...)
|
srcu_notifier_chain_register(...)
|
srcu_notifier_chain_unregister(...)
|
srcu_notifier_call_chain(...)
|
notifier_chain_register(...)
|
notifier_chain_register_unique_prio(...)
|
notifier_chain_unregister(...)
|
notifier_call_chain(...)
|
notifier_call_chain_robust(...)
)

@def depends on has_op@
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

@use@
identifier def.L;
position u;
@@
L@u

@script:python@
L << def.L;
u << use.u;
@@
uses.setdefault((u[0].file, L), set()).add(u[0].line)

@init@
identifier def.L;
identifier i =~ "^(mutex_init|init_rwsem|spin_lock_init|raw_spin_lock_init|rwlock_init|sema_init|init_MUTEX)$";
position p;
@@
i@p(&L, ...)

@script:python@
L << def.L;
p << init.p;
@@
uses.get((p[0].file, L), set()).discard(p[0].line)

@sect@
identifier def.L;
identifier lk =~ "^(mutex_lock|down|down_read|down_write|spin_lock|spin_lock_irq|spin_lock_irqsave|spin_lock_bh|raw_spin_lock|raw_spin_lock_irq|raw_spin_lock_irqsave|read_lock|read_lock_irq|read_lock_irqsave|read_lock_bh|write_lock|write_lock_irq|write_lock_irqsave|write_lock_bh)$";
identifier ul =~ "^(mutex_unlock|up|up_read|up_write|spin_unlock|spin_unlock_irq|spin_unlock_irqrestore|spin_unlock_bh|raw_spin_unlock|raw_spin_unlock_irq|raw_spin_unlock_irqrestore|read_unlock|read_unlock_irq|read_unlock_irqrestore|read_unlock_bh|write_unlock|write_unlock_irq|write_unlock_irqrestore|write_unlock_bh)$";
identifier f1 = {atomic_notifier_chain_register, atomic_notifier_chain_register_unique_prio, atomic_notifier_chain_unregister, atomic_notifier_call_chain, blocking_notifier_chain_register, blocking_notifier_chain_register_unique_prio, blocking_notifier_chain_unregister, blocking_notifier_call_chain, blocking_notifier_call_chain_robust, srcu_notifier_chain_register, srcu_notifier_chain_unregister, srcu_notifier_call_chain, notifier_chain_register, notifier_chain_register_unique_prio, notifier_chain_unregister, notifier_call_chain, notifier_call_chain_robust};
identifier f2 = {atomic_notifier_chain_register, atomic_notifier_chain_register_unique_prio, atomic_notifier_chain_unregister, atomic_notifier_call_chain, blocking_notifier_chain_register, blocking_notifier_chain_register_unique_prio, blocking_notifier_chain_unregister, blocking_notifier_call_chain, blocking_notifier_call_chain_robust, srcu_notifier_chain_register, srcu_notifier_chain_unregister, srcu_notifier_call_chain, notifier_chain_register, notifier_chain_register_unique_prio, notifier_chain_unregister, notifier_call_chain, notifier_call_chain_robust};
local idexpression x1, x2;
expression list es1, es2;
position p1, p2;
@@
(
lk@p1(&L, ...);
\( f1(es1); \| x1 = f1(es1); \)
ul@p2(&L, ...);
|
lk@p1(&L, ...);
\( f1(es1); \| x1 = f1(es1); \)
\( f2(es2); \| x2 = f2(es2); \)
ul@p2(&L, ...);
)

@script:python@
L << def.L;
lk << sect.lk;
ul << sect.ul;
f1 << sect.f1;
es1 << sect.es1;
f2 << sect.f2 = "";
es2 << sect.es2 = "";
p1 << sect.p1;
p2 << sect.p2;
@@
key = (p1[0].file, L)
if not calls(es1) and not calls(es2):
    ops = " and ".join("%s()" % f for f in (f1, f2) if f)
    alone = None
    if "call_chain" in f1 + f2 and lk != "down_read":
        alone = "one at a time"
        if lk.startswith("read_lock"):
            alone = "with preemption off"
        elif lk.startswith(("spin_", "raw_spin_", "write_lock")):
            alone = "one at a time with preemption off"
    sections.setdefault(key, []).append((int(p1[0].line), "%s under %s() on line %s, %s() on line %s" % (ops, lk, p1[0].line, ul, p2[0].line), alone))
    uses.get(key, set()).difference_update({p1[0].line, p2[0].line})

@script:python@
L << def.L;
d << def.d;
@@
defined[(d[0].file, L)] = d[0].line

@script:python depends on report@
L << def.L;
d << def.d;
@@
found = redundant(d[0].file, L)
if found:
    coccilib.report.print_report(d[0], "WARNING: " + message(L, found))

@script:python depends on org@
L << def.L;
d << def.d;
@@
if redundant(d[0].file, L):
    cocci.print_main("%s guards nothing but chain operations" % L, d)

@depends on context@
identifier def.L;
position q : script:python(L) { redundant(q[0].file, L) is not None };
@@
* L@q
