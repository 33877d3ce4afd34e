// SPDX-License-Identifier: GPL-2.0-only
/// A notifier callout must not register a notifier on the chain that is
/// calling it: the chain's rwsem is held for reading while it is walked,
/// and registering the block that is being called corrupts the chain.
/// Give the block the priority that orders it where it must run instead,
/// as the 2005 series did for dcdbas_reboot_notify().
//
// Confidence: Moderate
// Copyright: (C) 2026 the notifier-series authors.
// Comments: Any function whose name says register (but not unregister)
// and that is given the callout's own block counts.
// Options: --no-includes --include-headers
// Keywords: notifier, notifier_call, register

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
identifier reg =~ "^(?!.*unregister).*register";
position p;
@@
F(struct notifier_block *nb, ...) {
  <+...
(
  reg@p(..., &N, ...)
|
  reg@p(..., nb, ...)
)
  ...+>
}

@depends on context@
identifier r.reg;
position r.p;
@@
* reg@p(...)

@script:python depends on org@
p << r.p;
F << block.F;
@@
cocci.print_main("%s() registers its own notifier" % F, p)

@script:python depends on report@
p << r.p;
F << block.F;
reg << r.reg;
@@
coccilib.report.print_report(p[0], "ERROR: %s() called from %s(), the notifier's own callout" % (reg, F))
