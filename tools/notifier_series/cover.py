"""The series' cover letter: the 2005 RFC and what changed since, the
classes of the chains, the rule violations and their fixes, the findings
of the 2005 series' other rules, what the series costs, the checks run
and the changes since the last revision."""

from . import gate, mail, rulechecks, split


def cover_letter(kver, version, entries, groups, checks, patches,
                 violations, rules=None, locks=(), added=(), costs=(),
                 changes=None):
    """The body of the cover letter.  `rules` are the audit's findings of
    the 2005 series' other rule checks (None when the audit of this tree
    has none), `locks` the locks that the conversion removed, `added`
    the unregister wrappers it added and `costs` the sentences of
    bench.costs()."""
    lines = []
    for paragraph in _intro(kver, version):
        lines += split.wrap(paragraph) + [""]
    lines += _classes(entries)
    lines += _violations(violations)
    lines += [""] + rule_findings(rules, locks, added)
    if costs:
        lines += [""] + split.wrap("What this costs.  " + costs[0])
        lines += [f"  {line}" for line in costs[1:]]
    lines += ["", "Checks run on the series:", ""]
    lines += [f"  - {line}" for line in checks]
    lines += ["", f"{len(patches)} patches: the core patches, "
              f"{len(groups)} subsystem patches, the removal."]
    lines += [""] + split.wrap(
        f"To regenerate it: make series KVER={kver} (tools/notifier-series "
        f"series {kver}); b4 prep --compare-to vN in the tree's b4 branch "
        f"{mail.branch(kver)} shows what changed since revision N.")
    if changes:
        lines += [""] + changes
    return "\n".join(lines) + "\n"


def _intro(kver, version):
    """The cover letter's first paragraphs: the 2005 RFC, mainline's
    design, why this series revisits it, how it is made."""
    return [
        "In November 2005 Chandra Seetharaman posted, with Alan Stern, "
        "\"[RFC][PATCH 0/7]: Fix for unsafe notifier chain\": notifier "
        "chains were walked without a lock, so every chain got one head, "
        "struct notifier_head, that says whether it is ATOMIC (walked under "
        "RCU, its unregister waits for synchronize_rcu()) or BLOCKING "
        "(walked under the head's rwsem), with writers in process context "
        "taking the rwsem.",
        "Mainline took another design in 2006 (commit e041c683412d, "
        "\"Notifier chain update: API changes\", in 2.6.17): a head type "
        "per kind, atomic heads whose writers take a spinlock, blocking "
        "heads on an rwsem, raw heads that their users lock, and SRCU heads "
        "later.  Under a spinlock an atomic chain's writers may run in any "
        "context, where the 2005 rule needed every writer of an atomic "
        "chain in process context, and the RFC had to fix callers to get "
        "there.",
        "This series revisits the 2005 design because that rule can now be "
        "checked.  Each chain's class is a reviewed decision, "
        f"classify/linux-{kver}.yaml, with the evidence of its callers and "
        "callouts.  The writers that run in atomic context are found through "
        "the call graph and fixed by patches placed before the core patch, "
        "so that the rule holds at every point of the series (the sites and "
        "their status are below).  Writers that run before the scheduler "
        "take the early-boot path that mainline's blocking chains have, on "
        "atomic chains too.  Its cost in bytes and instructions is said "
        "below.  What the kernel learned since 2005 stays: unique-priority "
        "registration, robust calls of blocking chains, is-empty, the "
        "duplicate-registration warning, sparse's __rcu and lockdep-checked "
        "dereferences.",
        f"The series is generated for Linux {version}: the fixes and the "
        "core patches are hand-written, the conversion is "
        "cocci/notifier_convert.cocci driven by the classification, split "
        "per MAINTAINERS section, and the last patch removes the typed "
        "API.  With the compatibility macros of the core patch in place "
        "until then, every conversion patch is independent of the others "
        "and can go through its subsystem's tree.",
    ]


def _classes(entries):
    """The cover letter's listing of the chains by class."""
    by_class = {"blocking": [], "atomic": [], "excluded": []}
    for e in entries:
        by_class[e["class"]].append(e)
    width = 48

    def listing(items):
        return [f"{e['defined'] + ':':<{width}}{e['chain']}"
                for e in sorted(items, key=lambda e: (e["defined"],
                                                      e["chain"]))]

    lines = ["Here is the classification of the chains:", "", "BLOCKING:",
             "+++++++++"]
    lines += listing(by_class["blocking"])
    lines += ["", "ATOMIC:", "+++++++"]
    lines += listing(by_class["atomic"])
    lines += ["", "Left alone (raw chains: their callers provide the locking;",
              "SRCU chains: SRCU protects their readers; chains that a fix",
              "before the core patch makes raw):", ""]
    for e in sorted(by_class["excluded"],
                    key=lambda e: (e["defined"], e["chain"])):
        lines.append(f"{e['defined'] + ':':<{width}}{e['chain']} "
                     f"({e['declared']})")
        if e["declared"] not in ("raw", "srcu"):
            lines += split.wrap(e["reason"], indent="    ", hanging="    ")
    return lines


def _violations(violations):
    """The cover letter's paragraphs on the rule violations and their
    fixes."""
    fixes = [v for v in violations if v["status"] == "fixed"]
    lines = [""] + split.wrap(
        "The rule checks of the classification (writers in process "
        "context, no sleeping callout on an atomic chain, no writer in a "
        "callout of its own chain...) found "
        + (f"{len(violations)} sites that break the context rule of the "
           "new head:" if violations else "no site that breaks the "
           "context rule of the new head."))
    if violations:
        lines += [""] + [f"  - {line}" for line in gate.lines(violations)]
    if fixes:
        lines += [""] + split.wrap(
            f"The {len(gate_fix_names(fixes))} patches that fix them come "
            "before the core patch, which changes the rule, so that every "
            "point of the series is free of them; they are independent of "
            "the rest and can go through their subsystems' trees.")
    return lines


def rule_findings(rules, locks, added=()):
    """The cover letter's paragraph on the 2005 series' patches 3/7, 4/7
    and 7/7: what their rule checks found on the pristine tree, what the
    conversion removed, and the findings left for their maintainers."""
    removes = (f"  The conversion removes {len(locks)} "
               f"lock{'s' if len(locks) != 1 else ''} guarding nothing but "
               "converted chains, each in its chain's patch, as 3/7 did."
               if locks else "")
    removes += (f"  The conversion adds {len(added)} unregister "
                f"wrapper{'s' if len(added) != 1 else ''} beside register "
                "wrappers that had none, each in its chain's patch, as 4/7 "
                "did: " + ", ".join(f"{a['wrapper']}()" for a in added) + "."
                if added else "")
    if rules is None:
        return split.wrap(
            "The rule checks of the 2005 series' other patches (redundant "
            "locks, register without unregister, chains written by hand) "
            "have not run on this tree, or ran with other checks: make "
            "classify runs them." + removes)
    counts = rulechecks.counts(rules)
    text = ("The rule checks of the 2005 series' other patches found, on "
            "the pristine tree: "
            f"3/7, locks guarding nothing but chain operations: "
            f"{counts['redundant-lock']}; 4/7, exported functions "
            "registering on a chain of their file that nothing unregisters "
            "from, and modules that register in init and not in exit: "
            f"{counts['register-without-unregister']}; 7/7, lists walked "
            "by hand calling each entry's callback, as a notifier chain "
            f"does: {counts['hand-rolled-chain']}, for a person to tell the "
            "notification lists among them (from tables of a subsystem's "
            "own objects, and lookups) and fold those onto the chain API "
            "as 7/7 did the USB core's list.")
    text += removes
    removed = {(r["file"], r["lock"]) for r in locks} | {
        (a["file"], a["register"] + "()") for a in added}
    left = {name: [r for r in rows if not rulechecks.not_counted(r) and
                   (r["at"].rpartition(":")[0],
                    r["message"].split()[0]) not in removed]
            for name, rows in rules.items()}
    found = rulechecks.lines(left)
    if found:
        text += "  Left for their maintainers:"
    return split.wrap(text) + ([""] + [f"  - {line}" for line in found]
                               if found else [])


def gate_fix_names(violations):
    return sorted({p for v in violations for p in v.get("fixed_by", [])})


def write_cover(cover, kver, version, entries, groups, checks, files,
                violations, rules, locks, added, costs, changes):
    """Fills in format-patch's cover letter; returns its body."""
    with open(cover, encoding="utf-8") as f:
        text = f.read()
    body = cover_letter(kver, version, entries, groups, checks, files,
                        violations, rules, locks, added, costs, changes)
    text = text.replace("*** SUBJECT HERE ***", mail.SUBJECT)
    text = text.replace("*** BLURB HERE ***", body.rstrip("\n"))
    with open(cover, "w", encoding="utf-8") as f:
        f.write(text)
    return body
