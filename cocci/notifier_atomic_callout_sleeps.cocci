// SPDX-License-Identifier: GPL-2.0-only
/// The callouts of an atomic notifier chain run under rcu_read_lock(),
/// often from interrupts: they must not sleep.  This finds callouts
/// registered on an atomic chain in the same file (directly, or on the
/// die chain) that call a sleeping function or allocate with a sleeping
/// GFP mask.  The chain is blocking, or the callout must defer the work.
//
// Confidence: High
// Copyright: (C) 2026 the notifier-series authors.
// Comments: Only direct calls in the callout are seen.
// Options: --no-includes --include-headers
// Keywords: notifier, atomic_notifier_chain_register, might_sleep

virtual context
virtual org
virtual report

@reg@
identifier N;
expression C;
@@
(
atomic_notifier_chain_register(C, &N)
|
atomic_notifier_chain_register_unique_prio(C, &N)
|
register_die_notifier(&N)
)

@block@
identifier reg.N, F;
@@
(
struct notifier_block N = { ..., .notifier_call = F, ... };
|
struct notifier_block N = { F, ... };
)

@r@
identifier block.F;
identifier s =~ "^(mutex_lock(_interruptible|_killable|_nested|_io)?|down|down_(interruptible|killable|timeout|read|write|read_interruptible|read_killable|write_killable|read_nested|write_nested)|msleep(_interruptible)?|ssleep|usleep_range(_state)?|fsleep|schedule|schedule_timeout(_interruptible|_killable|_uninterruptible|_idle)?|wait_for_completion(_interruptible|_killable|_timeout|_interruptible_timeout|_killable_timeout|_io|_io_timeout)?|wait_event(_interruptible|_killable|_timeout|_interruptible_timeout|_freezable)?|flush_work|flush_delayed_work|flush_workqueue|flush_scheduled_work|cancel_work_sync|cancel_delayed_work_sync|drain_workqueue|destroy_workqueue|synchronize_rcu(_expedited)?|synchronize_srcu|synchronize_net|synchronize_irq|rcu_barrier|might_sleep|cond_resched|copy_from_user|copy_to_user|vmalloc|vzalloc|kthread_stop|request_firmware|rtnl_lock|lock_sock)$";
identifier gfp =~ "^GFP_(KERNEL|KERNEL_ACCOUNT|USER|HIGHUSER|NOIO|NOFS)$";
identifier alloc;
position p;
@@
F(...) {
  <+...
(
  s@p(...)
|
  alloc@p(..., gfp, ...)
)
  ...+>
}

@depends on context@
position r.p;
identifier f;
@@
* f@p(...)

@script:python depends on org@
p << r.p;
F << block.F;
@@
cocci.print_main("%s(), a callout of an atomic chain, may sleep" % F, p)

@script:python depends on report@
p << r.p;
F << block.F;
@@
coccilib.report.print_report(p[0], "ERROR: %s() is a callout of an atomic notifier chain and may sleep here" % F)
