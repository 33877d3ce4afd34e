// SPDX-License-Identifier: GPL-2.0-only
/// Collect the evidence that classifies notifier chains: chain heads, every
/// use of the notifier chain API with the locks held there, the notifier
/// blocks and their callouts, how functions are called back (interrupt,
/// timer, work item...), and which functions sleep.  With
/// NOTIFIER_WRAPPERS=a,b in the environment, also the calls of those
/// functions: the chains' own register and call wrappers.
///
/// Prints one JSON record per line, prefixed "NSEV ", for
/// tools/notifier-series classify; see tools/notifier_series/evidence.py.
//
// Confidence: High for heads, sites and blocks; Moderate for contexts,
// which are seen one function deep.
// Copyright: (C) 2026 the notifier-series authors.
// Options: --include-headers
// Keywords: notifier, notifier_block, notifier_head
// Requires: 1.1.1

virtual evidence

@initialize:python@
@@
import json
import os

WRAPPERS = frozenset(w for w in os.environ.get("NOTIFIER_WRAPPERS",
                                               "").split(",") if w)


def is_wrapper(name):
    return name in WRAPPERS


def emit(kind, p, **fields):
    fields.update(kind=kind, file=p[0].file, line=int(p[0].line),
                  fn=p[0].current_element)
    print("NSEV " + json.dumps(fields, sort_keys=True), flush=True)


def text(e):
    return " ".join(str(e).split())

// ---------------------------------------------------------------------
// Chain heads

@head_macro@
declarer name ATOMIC_NOTIFIER_HEAD, BLOCKING_NOTIFIER_HEAD,
              RAW_NOTIFIER_HEAD, SRCU_NOTIFIER_HEAD,
              SRCU_NOTIFIER_HEAD_STATIC;
identifier x;
position p;
@@
(
ATOMIC_NOTIFIER_HEAD@p(x);
|
BLOCKING_NOTIFIER_HEAD@p(x);
|
RAW_NOTIFIER_HEAD@p(x);
|
SRCU_NOTIFIER_HEAD@p(x);
|
SRCU_NOTIFIER_HEAD_STATIC@p(x);
)

@script:python@
x << head_macro.x;
p << head_macro.p;
@@
emit("head", p, form="macro", symbol=x)

@head_extern@
identifier K =~ "^(atomic|blocking|raw|srcu)_notifier_head$";
identifier x;
position p;
@@
extern struct K x@p;

@script:python@
K << head_extern.K;
x << head_extern.x;
p << head_extern.p;
@@
emit("head", p, form="extern", symbol=x, declared=K.split("_")[0])

@head_var@
identifier K =~ "^(atomic|blocking|raw|srcu)_notifier_head$";
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
K << head_var.K;
x << head_var.x;
p << head_var.p;
@@
emit("head", p, form="variable", symbol=x, declared=K.split("_")[0])

@head_member@
identifier K =~ "^(atomic|blocking|raw|srcu)_notifier_head$";
identifier T, fld;
position p;
@@
struct T { ... struct K fld@p; ... };

@script:python@
K << head_member.K;
T << head_member.T;
fld << head_member.fld;
p << head_member.p;
@@
emit("head", p, form="member", struct="struct " + T, member=fld,
     declared=K.split("_")[0])

@head_member_array@
identifier K =~ "^(atomic|blocking|raw|srcu)_notifier_head$";
identifier T, fld;
expression N;
position p;
@@
struct T { ... struct K fld@p[N]; ... };

@script:python@
K << head_member_array.K;
T << head_member_array.T;
fld << head_member_array.fld;
p << head_member_array.p;
@@
emit("head", p, form="member", struct="struct " + T, member=fld,
     declared=K.split("_")[0], array=True)

@head_anonymous@
identifier K =~ "^(atomic|blocking|raw|srcu)_notifier_head$";
identifier x, fld;
position p;
@@
struct { ... struct K fld@p; ... } x;

@script:python@
K << head_anonymous.K;
x << head_anonymous.x;
fld << head_anonymous.fld;
p << head_anonymous.p;
@@
emit("head", p, form="anonymous", symbol=x, member=fld,
     declared=K.split("_")[0])

// A 2005 head: a bare struct notifier_block pointer.
@head_bare@
identifier x;
position p;
@@
struct notifier_block *x@p;

@script:python@
x << head_bare.x;
p << head_bare.p;
@@
if p[0].current_element == x:
    emit("bare", p, symbol=x)

// ---------------------------------------------------------------------
// Uses of the chain API: the chain argument, and the block for writers

@site@
identifier api =~ "^((atomic|blocking|raw|srcu)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust|call_chain_is_empty)|notifier_chain_register|notifier_chain_unregister|notifier_call_chain)$";
expression C;
expression list args;
position p;
@@
api@p(C, args)

@script:python@
api << site.api;
C << site.C;
args << site.args;
p << site.p;
@@
emit("site", p, api=api, chain=text(C), args=text(args))

@site_ptr_type@
identifier api =~ "^((atomic|blocking|raw|srcu)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust|call_chain_is_empty)|notifier_chain_register|notifier_chain_unregister|notifier_call_chain)$";
type T;
T *e;
identifier fld;
expression i;
position p;
@@
(
api@p(&e->fld, ...)
|
api@p(&e->fld[i], ...)
)

@script:python@
T << site_ptr_type.T;
fld << site_ptr_type.fld;
p << site_ptr_type.p;
@@
emit("site_type", p, struct=text(T), member=fld)

@site_obj_type@
identifier api =~ "^((atomic|blocking|raw|srcu)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust|call_chain_is_empty)|notifier_chain_register|notifier_chain_unregister|notifier_call_chain)$";
type T;
T e;
identifier fld;
expression i;
position p;
@@
(
api@p(&e.fld, ...)
|
api@p(&e.fld[i], ...)
)

@script:python@
T << site_obj_type.T;
fld << site_obj_type.fld;
p << site_obj_type.p;
@@
emit("site_type", p, struct=text(T), member=fld)

// A function that passes its notifier_block parameter to a writer: a
// register or unregister wrapper, with the index of that parameter.
@writer_wrapper@
identifier W, nb;
identifier api =~ "^((atomic|blocking)_notifier_(chain_register|chain_register_unique_prio|chain_unregister)|notifier_chain_register|notifier_chain_unregister)$";
expression C;
parameter list[n] ps;
position p;
@@
W(ps, struct notifier_block *nb, ...) { <+... api@p(C, nb) ...+> }

@script:python@
W << writer_wrapper.W;
n << writer_wrapper.n;
p << writer_wrapper.p;
@@
emit("writer_wrapper", p, wrapper=W, nb_index=int(n))

// The chains' wrappers, called elsewhere (NOTIFIER_WRAPPERS)
@wrapper_call@
identifier w : script:python() { is_wrapper(w) };
expression list args;
position p;
@@
w@p(args)

@script:python@
w << wrapper_call.w;
args << wrapper_call.args;
p << wrapper_call.p;
@@
emit("wrapper_call", p, wrapper=w, args=[text(a) for a in str(args).split(",")])

// ---------------------------------------------------------------------
// Atomic context around a use: a lock held, interrupts, bottom halves or
// preemption disabled, an RCU read-side section, on some path to it.

@atomic_region exists@
identifier api =~ "^((atomic|blocking|raw|srcu)_notifier_(chain_register|chain_register_unique_prio|chain_unregister|call_chain|call_chain_robust)|notifier_chain_register|notifier_chain_unregister|notifier_call_chain)$";
identifier lock =~ "^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?|get_cpu)$";
identifier unlock =~ "^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu)$";
position p, q;
@@
lock@q(...);
... when != unlock(...)
api@p(...)

@script:python@
lock << atomic_region.lock;
p << atomic_region.p;
q << atomic_region.q;
@@
emit("atomic", p, why=lock, since=int(q[0].line))

@atomic_region_wrapper exists@
identifier w : script:python() { is_wrapper(w) };
identifier lock =~ "^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?|get_cpu)$";
identifier unlock =~ "^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu)$";
position p, q;
@@
lock@q(...);
... when != unlock(...)
w@p(...)

@script:python@
lock << atomic_region_wrapper.lock;
p << atomic_region_wrapper.p;
q << atomic_region_wrapper.q;
@@
emit("atomic", p, why=lock, since=int(q[0].line))

// ---------------------------------------------------------------------
// How functions are called back

@callback_how@
identifier F;
identifier reg =~ "^(request_irq|request_threaded_irq|request_any_context_irq|request_percpu_irq|devm_request_irq|devm_request_threaded_irq|init_irq_work|timer_setup|timer_setup_on_stack|tasklet_init|tasklet_setup|call_rcu|INIT_WORK|INIT_DELAYED_WORK|kthread_run|kthread_create)$";
expression list[n] before;
position p;
@@
reg@p(before, F, ...)

@script:python@
F << callback_how.F;
reg << callback_how.reg;
n << callback_how.n;
p << callback_how.p;
@@
emit("callback_arg", p, function=F, api=reg, index=int(n))

@hrtimer_callback@
struct hrtimer *h;
struct hrtimer t;
identifier F;
position p;
@@
(
h->function@p = F
|
t.function@p = F
)

@script:python@
F << hrtimer_callback.F;
p << hrtimer_callback.p;
@@
emit("callback_arg", p, function=F, api="hrtimer", index=0)

// ---------------------------------------------------------------------
// Notifier blocks and their callouts

@block_init@
identifier N, F;
position p;
@@
struct notifier_block N@p = { ..., .notifier_call = F, ... };

@script:python@
N << block_init.N;
F << block_init.F;
p << block_init.p;
@@
emit("block", p, block=N, callout=F)

@block_init_positional@
identifier N, F;
position p;
@@
struct notifier_block N@p = { F, ... };

@script:python@
N << block_init_positional.N;
F << block_init_positional.F;
p << block_init_positional.p;
@@
emit("block", p, block=N, callout=F)

@block_assign@
expression E;
identifier F;
position p;
@@
E.notifier_call@p = F

@script:python@
E << block_assign.E;
F << block_assign.F;
p << block_assign.p;
@@
emit("block", p, block=text(E), callout=F)

@block_assign_ptr@
expression E;
identifier F;
position p;
@@
E->notifier_call@p = F

@script:python@
E << block_assign_ptr.E;
F << block_assign_ptr.F;
p << block_assign_ptr.p;
@@
emit("block", p, block="*" + text(E), callout=F)

// ---------------------------------------------------------------------
// Direct calls of functions that may sleep

@sleeps@
identifier s =~ "^(mutex_lock(_interruptible|_killable|_nested|_io)?|down|down_(interruptible|killable|timeout|read|write|read_interruptible|read_killable|write_killable|read_nested|write_nested)|msleep(_interruptible)?|ssleep|usleep_range(_state)?|fsleep|schedule|schedule_timeout(_interruptible|_killable|_uninterruptible|_idle)?|wait_for_completion(_interruptible|_killable|_timeout|_interruptible_timeout|_killable_timeout|_io|_io_timeout)?|wait_event(_interruptible|_killable|_timeout|_interruptible_timeout|_freezable)?|flush_work|flush_delayed_work|flush_workqueue|flush_scheduled_work|cancel_work_sync|cancel_delayed_work_sync|drain_workqueue|destroy_workqueue|synchronize_rcu(_expedited)?|synchronize_srcu|synchronize_net|synchronize_irq|rcu_barrier|might_sleep|cond_resched|copy_from_user|copy_to_user|vmalloc|vzalloc|kthread_stop|request_firmware|rtnl_lock|lock_sock)$";
position p;
@@
s@p(...)

@script:python@
s << sleeps.s;
p << sleeps.p;
@@
emit("sleeps", p, function=p[0].current_element, call=s)

@sleeps_gfp@
identifier alloc;
identifier gfp =~ "^GFP_(KERNEL|KERNEL_ACCOUNT|USER|HIGHUSER|NOIO|NOFS)$";
position p;
@@
alloc@p(..., gfp, ...)

@script:python@
alloc << sleeps_gfp.alloc;
gfp << sleeps_gfp.gfp;
p << sleeps_gfp.p;
@@
emit("sleeps", p, function=p[0].current_element,
     call="%s(%s)" % (alloc, gfp))
