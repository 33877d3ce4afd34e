// SPDX-License-Identifier: GPL-2.0-only
/// A notifier callout must not unregister its own notifier_block: the
/// chain's rwsem, held while the chain is walked, or the RCU grace period
/// that unregistration of an atomic chain waits for, deadlocks.  Set a
/// flag in the callout and unregister from process context, as the 2005
/// series did for parisc's led_halt() and gdth_halt().
//
// Confidence: High
// Copyright: (C) 2026 the notifier-series authors.
// Options: --no-includes --include-headers
// Keywords: notifier, notifier_call, unregister

virtual context
virtual org
virtual report

@block@
identifier N, F;
@@
(
struct notifier_block N = { ..., .notifier_call = F, ... };
|
struct notifier_block N = { F, ... };
)

@r@
identifier block.F, block.N, nb;
identifier unreg =~ "unregister";
position p;
@@
F(struct notifier_block *nb, ...) {
  <+...
(
  unreg@p(..., &N, ...)
|
  unreg@p(..., nb, ...)
)
  ...+>
}

@depends on context@
identifier r.unreg;
position r.p;
@@
* unreg@p(...)

@script:python depends on org@
p << r.p;
F << block.F;
@@
cocci.print_main("%s() unregisters its own notifier" % F, p)

@script:python depends on report@
p << r.p;
F << block.F;
unreg << r.unreg;
@@
coccilib.report.print_report(p[0], "ERROR: %s() called from %s(), the notifier's own callout: deadlock" % (unreg, F))
