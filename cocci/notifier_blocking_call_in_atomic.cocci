// SPDX-License-Identifier: GPL-2.0-only
/// A blocking notifier chain is walked with its rwsem held for reading,
/// and its callouts may sleep: calling it with a spinlock held,
/// interrupts or preemption disabled, in an RCU read-side section, or
/// from an interrupt handler, timer, tasklet or irq_work is a bug.  The
/// chain is atomic, or the call must move to process context.
//
// Confidence: High
// Copyright: (C) 2026 the notifier-series authors.
// Comments: Callbacks are recognised where this file passes them to
// request_irq(), devm_request_irq(), request_threaded_irq() (the hard
// handler), timer_setup(), tasklet_init(), tasklet_setup() or
// init_irq_work().
// Options: --no-includes --include-headers
// Keywords: notifier, blocking_notifier_call_chain, atomic context

virtual context
virtual org
virtual report

@has@
position p;
@@
(
blocking_notifier_call_chain@p(...)
|
blocking_notifier_call_chain_robust@p(...)
|
srcu_notifier_call_chain@p(...)
)

@locked depends on has exists@
identifier lock =~ "^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?|get_cpu)$";
identifier unlock =~ "^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu)$";
identifier call = {blocking_notifier_call_chain,
                   blocking_notifier_call_chain_robust,
                   srcu_notifier_call_chain};
position p1, p2;
@@
lock@p1(...);
... when != unlock(...)
call@p2(...)

@callback depends on has@
identifier F;
expression E1, E2;
@@
(
request_irq(E1, F, ...)
|
request_threaded_irq(E1, F, ...)
|
devm_request_irq(E1, E2, F, ...)
|
devm_request_threaded_irq(E1, E2, F, ...)
|
timer_setup(E1, F, E2)
|
tasklet_init(E1, F, E2)
|
tasklet_setup(E1, F)
|
init_irq_work(E1, F)
)

@in_callback@
identifier callback.F;
identifier call = {blocking_notifier_call_chain,
                   blocking_notifier_call_chain_robust,
                   srcu_notifier_call_chain};
position p;
@@
F(...) { <+... call@p(...) ...+> }

@depends on context@
identifier locked.lock, locked.call;
position locked.p1, locked.p2;
@@
* lock@p1(...);
  ...
* call@p2(...)

@depends on context@
identifier in_callback.call;
position in_callback.p;
@@
* call@p(...)

@script:python depends on org@
p1 << locked.p1;
p2 << locked.p2;
lock << locked.lock;
@@
cocci.print_main("blocking chain called under %s()" % lock, p2)
cocci.print_secs("taken here", p1)

@script:python depends on org@
p << in_callback.p;
F << callback.F;
@@
cocci.print_main("blocking chain called from the callback %s()" % F, p)

@script:python depends on report@
p1 << locked.p1;
p2 << locked.p2;
lock << locked.lock;
call << locked.call;
@@
coccilib.report.print_report(p2[0], "ERROR: %s() may sleep, called under %s() taken on line %s" % (call, lock, p1[0].line))

@script:python depends on report@
p << in_callback.p;
F << callback.F;
call << in_callback.call;
@@
coccilib.report.print_report(p[0], "ERROR: %s() may sleep, called from %s(), an interrupt, timer or tasklet callback" % (call, F))
