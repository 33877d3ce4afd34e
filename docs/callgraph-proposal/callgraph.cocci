// Per-file facts for the call graph (issue 15): one record per line,
// prefixed "CG ", JSON.  Regions are seen flow-sensitively by CTL.
@initialize:python@
@@
import json, os
PARAMS = {}
LOCKWRAP = frozenset(os.environ.get("CG_LOCK_WRAPPERS", "").split(",")) - {""}
def emit(kind, p, **f):
    f.update(k=kind, l=int(p[0].line), c=int(p[0].column),
             fn=p[0].current_element)
    print("CG " + json.dumps(f, separators=(",", ":")))
def txt(e):
    return " ".join(str(e).split())

// -- definitions --------------------------------------------------------
@fdef@
identifier f; type T; position p;
@@
T f@p(...) { ... }

@script:python@
f << fdef.f; p << fdef.p;
@@
emit("def", p, name=f)

@fstatic@
identifier f; type T; position p;
@@
static T f@p(...) { ... }

@script:python@
f << fstatic.f; p << fstatic.p;
@@
emit("static", p, name=f)

// -- direct and indirect calls -----------------------------------------
@dcall@
identifier f; position p;
@@
f@p(...)

@script:python@
f << dcall.f; p << dcall.p;
@@
emit("call", p, callee=f)

@icall@
expression e; identifier fld; position p;
@@
(
e->fld@p(...)
|
e.fld@p(...)
|
 (*e->fld@p)(...)
)

@script:python@
e << icall.e; fld << icall.fld; p << icall.p;
@@
emit("icall", p, base=txt(e), member=fld)

@icall_t@
type T; T *e; T e2; identifier fld; position p;
@@
(
e->fld@p(...)
|
e2.fld@p(...)
)

@script:python@
T << icall_t.T; fld << icall_t.fld; p << icall_t.p;
@@
emit("icall_t", p, struct=txt(T), member=fld)

// -- function pointers stored by struct type and member ------------------
@finit@
identifier T, x, fld, F; position p;
@@
struct T x = { ..., .fld = F@p, ... };

@script:python@
T << finit.T; fld << finit.fld; F << finit.F; p << finit.p;
@@
emit("fptr", p, struct="struct " + T, member=fld, target=F)

@finit_arr@
identifier T, x, fld, F; position p;
@@
struct T x[...] = { ..., { ..., .fld = F@p, ... }, ... };

@script:python@
T << finit_arr.T; fld << finit_arr.fld; F << finit_arr.F; p << finit_arr.p;
@@
emit("fptr", p, struct="struct " + T, member=fld, target=F, arr=1)

@fassign@
type T; T *e; T e2; identifier fld, F; position p;
@@
(
e->fld@p = F
|
e2.fld@p = F
)

@script:python@
T << fassign.T; fld << fassign.fld; F << fassign.F; p << fassign.p;
@@
emit("fptr", p, struct=txt(T), member=fld, target=F, assign=1)

@fassign_u@
expression e; identifier fld, F; position p;
@@
(
e->fld@p = F
|
e.fld@p = F
)

@script:python@
e << fassign_u.e; fld << fassign_u.fld; F << fassign_u.F; p << fassign_u.p;
@@
emit("fptr_u", p, base=txt(e), member=fld, target=F)

// -- callbacks: roots, by API and argument index --------------------------
@reg@
identifier F;
identifier api =~ "^(request_irq|request_threaded_irq|request_any_context_irq|request_percpu_irq|request_nmi|devm_request_irq|devm_request_threaded_irq|devm_request_any_context_irq|init_irq_work|timer_setup|timer_setup_on_stack|tasklet_init|tasklet_setup|call_rcu|call_rcu_tasks|call_srcu|INIT_WORK|INIT_WORK_ONSTACK|INIT_DELAYED_WORK|INIT_DEFERRABLE_WORK|INIT_RCU_WORK|kthread_init_work|kthread_init_delayed_work|kthread_run|kthread_create|kthread_create_on_node|kthread_create_on_cpu|kthread_run_on_cpu|netif_napi_add|netif_napi_add_weight|netif_napi_add_tx|netif_napi_add_tx_weight|hrtimer_init|IRQ_WORK_INIT|IRQ_WORK_INIT_HARD)$";
expression list[n] before; position p;
@@
api@p(before, F, ...)

@script:python@
F << reg.F; api << reg.api; n << reg.n; p << reg.p;
@@
emit("reg", p, api=api, idx=int(n), target=F)

@reg_decl@
declarer name DECLARE_WORK, DECLARE_DELAYED_WORK, DECLARE_TASKLET, DEFINE_TIMER, DECLARE_TASKLET_OLD;
identifier x, F; position p;
@@
(
DECLARE_WORK@p(x, F);
|
DECLARE_DELAYED_WORK@p(x, F);
|
DECLARE_TASKLET@p(x, F);
|
DECLARE_TASKLET_OLD@p(x, F);
|
DEFINE_TIMER@p(x, F);
)

@script:python@
F << reg_decl.F; p << reg_decl.p;
@@
emit("reg", p, api="DECLARE", idx=1, target=F)

// A function handing its own parameter on to another call: with the
// registration APIs, a registration wrapper (closed over in Python).
@param@
identifier W, h; type T; parameter list[n] ps; position p;
@@
W@p(ps, T h, ...) { ... }

@script:python@
W << param.W; h << param.h; n << param.n; p << param.p;
@@
PARAMS.setdefault((p[0].file, W), {})[h] = int(n)

@fwd@
identifier api;
identifier h : script:python() { any(h in v for v in PARAMS.values()) };
expression list[m] before; position p;
@@
api@p(before, h, ...)

@script:python@
api << fwd.api; h << fwd.h; m << fwd.m; p << fwd.p;
@@
n = PARAMS.get((p[0].file, p[0].current_element), {}).get(h)
if n is not None:
    emit("fwd", p, param=n, api=api, idx=int(m))

// -- atomic regions, flow-sensitive --------------------------------------
@region exists@
identifier lock =~ "^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|spin_trylock(_irq|_irqsave|_bh)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?|get_cpu|get_cpu_var)$";
identifier unlock =~ "^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu|put_cpu_var)$";
expression list args; expression E;
position q, p;
@@
lock@q(args);
... when != unlock(...)
E@p(...)

@script:python@
lock << region.lock; q << region.q; p << region.p;
@@
emit("in", p, lock=lock, since=int(q[0].line))

// Functions that return with a lock taken: lock wrappers.
@lockwrap@
identifier W;
identifier lock =~ "^(spin_lock(_irq|_irqsave|_bh|_nested)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?)$";
identifier unlock =~ "^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?)$";
position p;
@@
W(...) {
  ... when != unlock(...)
  lock@p(...);
  ... when != unlock(...)
}

@script:python@
W << lockwrap.W; lock << lockwrap.lock; p << lockwrap.p;
@@
emit("lockwrap", p, wrapper=W, lock=lock)

// -- sleeping primitives: GFP flags that may sleep -----------------------
@gfp@
identifier alloc;
identifier g =~ "^GFP_(KERNEL|KERNEL_ACCOUNT|USER|HIGHUSER|HIGHUSER_MOVABLE|NOIO|NOFS)$";
position p;
@@
alloc@p(..., g, ...)

@script:python@
alloc << gfp.alloc; g << gfp.g; p << gfp.p;
@@
emit("gfp", p, callee=alloc, gfp=g)
