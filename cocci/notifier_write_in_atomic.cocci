// SPDX-License-Identifier: GPL-2.0-only
/// Registering or unregistering a notifier on an atomic or blocking chain
/// takes the chain head's rwsem once struct notifier_head is in, and may
/// sleep: it must not happen with a spinlock held, interrupts or
/// preemption disabled, or in an RCU read-side section.
///
/// Functions are taken for the chain API by name: the typed writers, and
/// register/unregister functions whose name says notifier (some of which
/// serve raw chains or other lists, hence the moderate confidence).
//
// Confidence: Moderate
// Copyright: (C) 2026 the notifier-series authors.
// Comments: Only files that declare a struct notifier_block, or take one
// as a parameter, are searched.
// Wrappers called under a lock in another file need an interprocedural
// view, which tools/notifier-series classify has.
// Options: --no-includes --include-headers
// Keywords: notifier, register, atomic context

virtual context
virtual org
virtual report

@has_decl@
identifier nb;
@@
(
struct notifier_block nb;
|
struct notifier_block *nb;
|
struct notifier_block nb = {...};
)

@has_param@
identifier nb, f;
@@
f(..., struct notifier_block *nb, ...) { ... }

@r depends on has_decl || has_param exists@
identifier lock =~ "^(spin_lock(_irq|_irqsave|_bh|_nested|_irqsave_nested)?|raw_spin_lock(_irq|_irqsave|_bh|_nested)?|read_lock(_irq|_irqsave|_bh)?|write_lock(_irq|_irqsave|_bh)?|local_irq_save|local_irq_disable|local_bh_disable|preempt_disable|rcu_read_lock(_bh|_sched)?|get_cpu)$";
identifier unlock =~ "^(spin_unlock(_irq|_irqrestore|_bh)?|raw_spin_unlock(_irq|_irqrestore|_bh)?|read_unlock(_irq|_irqrestore|_bh)?|write_unlock(_irq|_irqrestore|_bh)?|local_irq_restore|local_irq_enable|local_bh_enable|preempt_enable(_no_resched)?|rcu_read_unlock(_bh|_sched)?|put_cpu)$";
identifier writer =~ "^(?!raw_|srcu_)((atomic|blocking)_notifier_chain_(un)?register(_unique_prio)?|(un)?register_[A-Za-z0-9_]*notifier[A-Za-z0-9_]*|[A-Za-z0-9_]+_(un)?register_[A-Za-z0-9_]*notifier[A-Za-z0-9_]*|[A-Za-z0-9_]*notifier[A-Za-z0-9_]*_(un)?register)$";
position p1, p2;
@@
lock@p1(...);
... when != unlock(...)
writer@p2(...)

@depends on context@
identifier r.lock, r.writer;
position r.p1, r.p2;
@@
* lock@p1(...);
  ...
* writer@p2(...)

@script:python depends on org@
p1 << r.p1;
p2 << r.p2;
writer << r.writer;
lock << r.lock;
@@
# The chain API's own implementation takes its locks on purpose.
if not p2[0].file.endswith("kernel/notifier.c"):
    cocci.print_main("%s() under %s()" % (writer, lock), p2)
    cocci.print_secs("taken here", p1)

@script:python depends on report@
p1 << r.p1;
p2 << r.p2;
writer << r.writer;
lock << r.lock;
@@
# The chain API's own implementation takes its locks on purpose.
if not p2[0].file.endswith("kernel/notifier.c"):
    coccilib.report.print_report(p2[0], "WARNING: %s() may sleep, called under %s() taken on line %s" % (writer, lock, p1[0].line))
