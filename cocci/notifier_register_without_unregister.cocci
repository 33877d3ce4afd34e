// SPDX-License-Identifier: GPL-2.0-only
/// A chain that can be registered on but not unregistered from: a module
/// that registers can never safely be unloaded, since its callout would
/// stay on the chain.  Two cases:
///
/// - an exported function (EXPORT_SYMBOL*(), so modules can call it)
///   registers on a chain head defined in this file, and nothing in this
///   file unregisters from that head: add the unregister wrapper, as the
///   2005 series added unregister_die_notifier() for the exported
///   register_die_notifier() ("[RFC][PATCH 4/7]");
/// - a module's init function registers a notifier block, and neither its
///   exit function nor a function that the exit function calls
///   unregisters it: unregister it in exit.
//
// Confidence: Moderate
// Copyright: (C) 2026 the notifier-series authors.
// Comments: A head that is not static may be unregistered from in
// another file: tools/notifier-series classify looks at the whole tree.
// Only the init and exit functions themselves (and the exit function's
// direct callees) are searched: a block registered in a probe function
// is the driver's unbind path's business.  With -D patch, an exported
// wrapper that is only "return <register>(&head, nb);" gets its
// unregister wrapper next to it, named with "unregister" for its
// "register" and exported the same way, as 4/7 did; other wrappers, and
// modules, are left for a person, and so are wrappers with an attribute
// (__init) or a name without "register" as a word of its own.  When
// the environment's NOTIFIER_COMPLETE is set, only the wrappers it names
// (separated by spaces) are completed: tools/notifier-series convert
// names those whose chain no other file unregisters from and whose
// unregister name is free in the whole tree.
// Options: --no-includes --include-headers
// Keywords: notifier, register, unregister, module_exit

virtual patch
virtual context
virtual org
virtual report

@initialize:python@
@@
import os
import re

registered = {}     # (file, head) -> [(function, line)]
unregistered = set()    # (file, head)
exported = set()        # (file, function)
module_blocks = {}      # (file, block) -> [(register function, line)]
module_unregistered = set()     # (file, block)
functions = set()       # (file, function defined), with -D patch
complete = os.environ.get("NOTIFIER_COMPLETE")
complete = None if complete is None else set(complete.split())


def unregister_name(register):
    """The unregister wrapper of `register`, or None."""
    name = re.sub(r"(^|_)register(?=_|$)", r"\1unregister", register,
                  count=1)
    return None if name == register else name


def attributed(p):
    """Whether the definition at `p` carries an attribute (__init)."""
    with open(p.file, encoding="utf-8", errors="replace") as f:
        line = f.read().splitlines()[int(p.line) - 1]
    return re.search(r"\b__\w+", line) is not None


def defined(file):
    return {fn for f, fn in functions if f == file}


def leaked(file):
    """The module blocks of `file` registered in init and not
    unregistered in exit: [(block, register function, position)]."""
    return [(block, r, p) for (f, block), sites in sorted(
        module_blocks.items()) for r, p in sites
        if f == file and (f, block) not in module_unregistered]


def open_chain(file, head):
    """The exported wrappers registering on `head` when nothing in the
    file unregisters from it."""
    if (file, head) in unregistered:
        return []
    return [(f, line) for f, line in registered.get((file, head), [])
            if (file, f) in exported]

@head@
identifier H;
declarer name ATOMIC_NOTIFIER_HEAD, BLOCKING_NOTIFIER_HEAD,
  RAW_NOTIFIER_HEAD, SRCU_NOTIFIER_HEAD, SRCU_NOTIFIER_HEAD_STATIC;
type T;
position d;
@@
(
ATOMIC_NOTIFIER_HEAD@d(H);
|
BLOCKING_NOTIFIER_HEAD@d(H);
|
RAW_NOTIFIER_HEAD@d(H);
|
SRCU_NOTIFIER_HEAD@d(H);
|
SRCU_NOTIFIER_HEAD_STATIC@d(H);
|
struct notifier_block *H@d;
|
struct notifier_head H@d;
|
struct notifier_head H@d = ...;
|
T H@d = ATOMIC_NOTIFIER_INIT(...);
|
T H@d = BLOCKING_NOTIFIER_INIT(...);
)

@reg@
identifier head.H, F;
identifier r = {atomic_notifier_chain_register, atomic_notifier_chain_register_unique_prio, blocking_notifier_chain_register, blocking_notifier_chain_register_unique_prio, raw_notifier_chain_register, srcu_notifier_chain_register, notifier_chain_register, notifier_chain_register_unique_prio};
position p;
@@
F(...) {
  <+... r@p(&H, ...) ...+>
}

@script:python@
H << head.H;
F << reg.F;
p << reg.p;
@@
registered.setdefault((p[0].file, H), []).append((F, p[0].line))

@unreg@
identifier head.H;
identifier u = {atomic_notifier_chain_unregister, blocking_notifier_chain_unregister, raw_notifier_chain_unregister, srcu_notifier_chain_unregister, notifier_chain_unregister};
position p;
@@
u@p(&H, ...)

@script:python@
H << head.H;
p << unreg.p;
@@
unregistered.add((p[0].file, H))

@export depends on reg@
declarer name EXPORT_SYMBOL, EXPORT_SYMBOL_GPL;
identifier F;
position p;
@@
(
EXPORT_SYMBOL@p(F);
|
EXPORT_SYMBOL_GPL@p(F);
)

@script:python@
F << export.F;
p << export.p;
@@
exported.add((p[0].file, F))

@script:python depends on report@
H << head.H;
d << head.d;
@@
for f, line in open_chain(d[0].file, H):
    coccilib.report.print_report(d[0], "WARNING: %s() registers on %s on line %s, and nothing in this file unregisters from it: add the unregister wrapper" % (f, H, line))

@script:python depends on org@
H << head.H;
d << head.d;
@@
for f, line in open_chain(d[0].file, H):
    cocci.print_main("%s() registers on %s, which has no unregister" % (f, H), d)

@depends on context@
identifier head.H;
position q : script:python(H) { open_chain(q[0].file, H) != [] };
@@
* H@q

// The fix: the unregister wrapper beside the register wrapper.

@defn depends on patch@
identifier fn;
position p;
@@
fn@p(...) { ... }

@script:python depends on patch@
fn << defn.fn;
p << defn.p;
@@
functions.add((p[0].file, fn))

@wrap depends on patch@
identifier head.H, F, nb;
identifier r = {atomic_notifier_chain_register, atomic_notifier_chain_register_unique_prio, blocking_notifier_chain_register, blocking_notifier_chain_register_unique_prio, raw_notifier_chain_register, srcu_notifier_chain_register, notifier_chain_register, notifier_chain_register_unique_prio};
type T;
position p;
@@
T F@p(struct notifier_block *nb)
{
	return r(&H, nb);
}

@script:python named depends on patch@
H << head.H;
F << wrap.F;
r << wrap.r;
p << wrap.p;
U;
UR;
@@
name = unregister_name(F)
if (name and name not in defined(p[0].file) and not attributed(p[0]) and
        (complete is None or F in complete) and
        F in [f for f, _ in open_chain(p[0].file, H)]):
    coccinelle.U = cocci.make_ident(name)
    coccinelle.UR = cocci.make_ident(r.replace("_unique_prio", "").replace("chain_register", "chain_unregister"))
else:
    cocci.include_match(False)

@fix depends on patch@
identifier head.H, wrap.F, wrap.nb, named.U, named.UR;
type wrap.T;
declarer name EXPORT_SYMBOL;
@@
EXPORT_SYMBOL(F);
+T U(struct notifier_block *nb)
+{
+	return UR(&H, nb);
+}
+EXPORT_SYMBOL(U);

@fix_gpl depends on patch@
identifier head.H, wrap.F, wrap.nb, named.U, named.UR;
type wrap.T;
declarer name EXPORT_SYMBOL_GPL;
@@
EXPORT_SYMBOL_GPL(F);
+T U(struct notifier_block *nb)
+{
+	return UR(&H, nb);
+}
+EXPORT_SYMBOL_GPL(U);

// The module's part.

@mod_init@
declarer name module_init;
identifier I;
@@
module_init(I);

@mod_exit@
declarer name module_exit;
identifier E;
position p;
@@
module_exit@p(E);

@init_reg depends on mod_exit@
identifier mod_init.I;
identifier r =~ "^(register_[a-z0-9_]*notifier[a-z0-9_]*|[a-z0-9_]*notifier[a-z0-9_]*_register|((atomic|blocking|raw|srcu)_)?notifier_chain_register(_unique_prio)?)$";
expression N;
position p;
@@
I(...) {
  <+... r@p(..., &N) ...+>
}

@script:python@
N << init_reg.N;
r << init_reg.r;
p << init_reg.p;
@@
module_blocks.setdefault((p[0].file, str(N)), []).append((r, p[0]))

@exit_callee@
identifier mod_exit.E, g;
@@
E(...) {
  <+... g(...) ...+>
}

@exit_unreg@
identifier mod_exit.E;
identifier u =~ "unregister";
expression N;
position p;
@@
E(...) {
  <+... u@p(..., &N) ...+>
}

@script:python@
N << exit_unreg.N;
p << exit_unreg.p;
@@
module_unregistered.add((p[0].file, str(N)))

@callee_unreg@
identifier exit_callee.g;
identifier u =~ "unregister";
expression N;
position p;
@@
g(...) {
  <+... u@p(..., &N) ...+>
}

@script:python@
N << callee_unreg.N;
p << callee_unreg.p;
@@
module_unregistered.add((p[0].file, str(N)))

@script:python depends on report@
E << mod_exit.E;
x << mod_exit.p;
@@
for block, r, p in leaked(x[0].file):
    coccilib.report.print_report(p, "WARNING: &%s registered with %s() in the module's init and not unregistered in %s(): the module cannot be unloaded safely" % (block, r, E))

@script:python depends on org@
E << mod_exit.E;
x << mod_exit.p;
@@
for block, r, p in leaked(x[0].file):
    cocci.print_main("&%s registered in init, not unregistered in %s()" % (block, E), [p])

@depends on context && mod_exit@
identifier init_reg.r;
position q : script:python() { any(p.line == q[0].line for _, _, p in leaked(q[0].file)) };
@@
* r@q(...)
