// SPDX-License-Identifier: GPL-2.0-only
/// A notifier chain written by hand: a list of callback holders that
/// functions of the file add to (and remove from), walked by hand with
/// each holder's callback called in turn.  Such a list needs its own
/// locking against the walk, and usually has none or too much; a notifier
/// chain (struct notifier_head) has both decided once.  Converting it is a
/// person's work, not a mechanical one: the 2005 series' model is the USB
/// core's conversion ("[RFC][PATCH 7/7]: use notify call chain mechanism
/// for usb notification"), which replaced the list, its lock and its walk
/// with a blocking chain and notifier_call_chain().
///
/// Reported: a list_for_each_entry() (or _rcu, _safe, hlist) walk of a
/// list head H whose body calls a function pointer of the entry
/// (x->fn(...)), in a file where something is list_add()ed to H; or a
/// walk along a bare next pointer (for (x = H; x; x = x->next)) calling
/// x->fn(...), where something is linked in front of H (n->next = H;
/// H = n;).  The walk must call every entry: one that may stop early
/// (break, return, goto) looks an entry up, or takes the first that
/// answers, and is no notification.  The notifier core's own walk is not
/// reported either: its heads are the chains' own (*nl), no list of the
/// file.  Nor is a list declared inside a function, built and used up
/// there.
//
// Confidence: Moderate
// Copyright: (C) 2026 the notifier-series authors.
// Comments: Lists of objects with an operations table (x->ops->fn()) are
// not reported: they are drivers' objects, not a chain.  A person
// decides the rest: of 12 of Linux 6.1's 34 findings read by hand, 8 were
// notification lists, 3 lists of a subsystem's own objects and 1 a
// lookup table.  Removals are matched by the list member's name only,
// and unlinking by hand is not seen.
// Options: --no-includes --include-headers
// Keywords: notifier, list, callback

virtual context
virtual org
virtual report

@initialize:python@
@@
walks = {}      # (file, head) -> [walk position]
adds = {}       # (file, head) -> [add position]
removes = {}    # (file, member) -> [remove position]
members = {}    # (file, head) -> the name of the list member
reported = set()        # (file, head)
stopped = set()         # (file, line) of walks that may stop early
locals_ = set()         # (file, head) of lists local to a function


def rolled(file, head):
    """The walks, adds and removes of `head` when it is a chain by hand."""
    key = (file, head)
    calling = [p for p in walks.get(key, [])
               if (p.file, p.line) not in stopped]
    if not calling or key not in adds or key in locals_:
        return None
    return (calling, adds[key],
            removes.get((file, members.get(key)), []))


def tell(head, p, report=None):
    """Reports `head` once, when it is a chain by hand: with `report`
    (report mode), else as org mode does."""
    found = rolled(p[0].file, head)
    if not found or (p[0].file, head) in reported:
        return
    reported.add((p[0].file, head))
    w, a, r = found
    if report is None:
        cocci.print_main("%s: maybe a notifier chain written by hand" % head,
                         w)
        cocci.print_secs("added to", a)
        return
    first = min(w, key=lambda p: int(p.line))
    report(first, "WARNING: %s may be a notifier chain written by hand: "
           "walked calling each entry's callback on line %s, added to on "
           "line %s, %s; if it tells its clients of events, make it a "
           "struct notifier_head (the 2005 series' USB conversion is the "
           "model)" % (head, lines(w), lines(a),
                       "entries unlinked by the same member on line "
                       + lines(r) + " (of this list or another)"
                       if r else "no entry unlinked by that member"))


def lines(positions):
    return ", ".join(sorted({p.line for p in positions}, key=int))

@add@
identifier H, member;
expression E;
position p;
@@
(
list_add@p(&E->member, &H)
|
list_add@p(&E.member, &H)
|
list_add_tail@p(&E->member, &H)
|
list_add_tail@p(&E.member, &H)
|
list_add_rcu@p(&E->member, &H)
|
list_add_rcu@p(&E.member, &H)
|
list_add_tail_rcu@p(&E->member, &H)
|
list_add_tail_rcu@p(&E.member, &H)
|
hlist_add_head@p(&E->member, &H)
|
hlist_add_head@p(&E.member, &H)
|
hlist_add_head_rcu@p(&E->member, &H)
|
hlist_add_head_rcu@p(&E.member, &H)
)

@script:python@
H << add.H;
p << add.p;
@@
adds.setdefault((p[0].file, H), []).append(p[0])

@link@
identifier H;
expression n;
position p;
@@
n->next = H;
H@p = n;

@script:python@
H << link.H;
p << link.p;
@@
adds.setdefault((p[0].file, H), []).append(p[0])

@walk depends on add@
identifier H, member, fn;
expression x, t;
iterator name list_for_each_entry, list_for_each_entry_rcu,
  list_for_each_entry_safe, hlist_for_each_entry, hlist_for_each_entry_rcu;
position p;
@@
(
list_for_each_entry@p(x, &H, member) { <+... x->fn(...) ...+> }
|
list_for_each_entry_rcu@p(x, &H, member, ...) { <+... x->fn(...) ...+> }
|
list_for_each_entry_safe@p(x, t, &H, member) { <+... x->fn(...) ...+> }
|
hlist_for_each_entry@p(x, &H, member) { <+... x->fn(...) ...+> }
|
hlist_for_each_entry_rcu@p(x, &H, member, ...) { <+... x->fn(...) ...+> }
)

@script:python@
H << walk.H;
member << walk.member;
p << walk.p;
@@
walks.setdefault((p[0].file, H), []).append(p[0])
members[(p[0].file, H)] = member

@bare depends on link@
identifier H, fn;
expression x;
position p;
@@
(
for@p (x = H; x; x = x->next) { <+... x->fn(...) ...+> }
|
for@p (x = H; x != NULL; x = x->next) { <+... x->fn(...) ...+> }
)

@script:python@
H << bare.H;
p << bare.p;
@@
walks.setdefault((p[0].file, H), []).append(p[0])

// A walk that may stop before the last entry (break, return, goto) looks
// an entry up, or stops at the first that answers: no notification.
@stops depends on walk@
identifier H, member, l;
expression x, t;
iterator name list_for_each_entry, list_for_each_entry_rcu,
  list_for_each_entry_safe, hlist_for_each_entry, hlist_for_each_entry_rcu;
position p;
@@
(
list_for_each_entry@p(x, &H, member) { <+... \( break; \| return ...; \| goto l; \) ...+> }
|
list_for_each_entry_rcu@p(x, &H, member, ...) { <+... \( break; \| return ...; \| goto l; \) ...+> }
|
list_for_each_entry_safe@p(x, t, &H, member) { <+... \( break; \| return ...; \| goto l; \) ...+> }
|
hlist_for_each_entry@p(x, &H, member) { <+... \( break; \| return ...; \| goto l; \) ...+> }
|
hlist_for_each_entry_rcu@p(x, &H, member, ...) { <+... \( break; \| return ...; \| goto l; \) ...+> }
)

@script:python@
p << stops.p;
@@
stopped.add((p[0].file, p[0].line))

@bare_stops depends on bare@
identifier H, l;
expression x;
position p;
@@
(
for@p (x = H; x; x = x->next) { <+... \( break; \| return ...; \| goto l; \) ...+> }
|
for@p (x = H; x != NULL; x = x->next) { <+... \( break; \| return ...; \| goto l; \) ...+> }
)

@script:python@
p << bare_stops.p;
@@
stopped.add((p[0].file, p[0].line))

// A list of a function's own, built and used up there, is no chain.
@own_list depends on walk@
identifier f, H;
declarer name LIST_HEAD, HLIST_HEAD;
position p;
@@
f(...) {
  ... when any
(
  LIST_HEAD@p(H);
|
  struct list_head H@p;
|
  struct hlist_head H@p;
)
  ... when any
}

@script:python@
H << own_list.H;
p << own_list.p;
@@
locals_.add((p[0].file, H))

@remove depends on walk@
identifier member;
expression E;
position p;
@@
(
list_del@p(&E->member)
|
list_del_init@p(&E->member)
|
list_del_rcu@p(&E->member)
|
hlist_del@p(&E->member)
|
hlist_del_init@p(&E->member)
|
hlist_del_rcu@p(&E->member)
)

@script:python@
member << remove.member;
p << remove.p;
@@
removes.setdefault((p[0].file, member), []).append(p[0])

@script:python depends on report@
H << walk.H;
p << walk.p;
@@
tell(H, p, coccilib.report.print_report)

@script:python depends on report@
H << bare.H;
p << bare.p;
@@
tell(H, p, coccilib.report.print_report)

@script:python depends on org@
H << walk.H;
p << walk.p;
@@
tell(H, p)

@script:python depends on org@
H << bare.H;
p << bare.p;
@@
tell(H, p)

@depends on context && (walk || bare)@
identifier H;
position q : script:python(H) { rolled(q[0].file, H) is not None };
@@
* H@q
