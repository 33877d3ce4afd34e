"""Each chain's evidence from the call graph (callgraph.py), as paths of
file:line steps: how its call and write sites are reached in atomic
context, how its callouts and the functions calling it may sleep.

Kinds of evidence:
  atomic-caller     a path from an atomic root or region to a call site
  atomic-writer     the same to a register or unregister site
  sleeping-callout  a path from a callout to a sleeping function
  sleeping-caller   a path from the function of a call site to a sleeping
                    function: its callers must be able to sleep
A chain called from a callout of an atomic chain is in atomic context:
the callouts of the chains in `atomic` are roots of their own.
"""

from . import callgraph

KINDS = ("atomic-caller", "atomic-writer", "sleeping-callout",
         "sleeping-caller")


def _step(file, line, function, note):
    return {"file": file, "line": line, "function": function, "note": note}


def _item(kind, path, subject):
    return {"kind": kind, "path": path, "depth": len(path),
            "subject": subject}


def attach(model, graph, atomic, depth=callgraph.DEPTH):
    """Sets `evidence` (a list of items, the shortest per kind and
    subject), `conflicts` and `searched` on every chain of `model`;
    `atomic` holds the keys of the chains whose callouts run in atomic
    context.  A chain's conflict, when it has one, is its shortest path
    from atomic context to a call and its shortest from a callout to a
    sleep: the evidence that it is neither class.  A call site has one
    path from atomic context, its shortest: the site's other roots show
    only once that one is gone.  Returns
    {"atomic_functions", "sleeping_functions"}."""
    sleeping = graph.sleeping()
    extra = []
    for chain in model.chains.values():
        if chain.key not in atomic:
            continue
        for c in chain.callouts.values():
            n = _node(graph, c["function"], c["file"])
            if n is not None:
                block_file, _, block_line = c["block"].rpartition(":")
                extra.append((n, f"{c['function']}() is a callout of the "
                                 f"atomic chain {chain.id}", block_file,
                              int(block_line)))
    reach = graph.atomic_reach(extra)
    for chain in model.chains.values():
        _chain(chain, graph, reach, sleeping, depth)
    return {"atomic_functions": len(reach),
            "sleeping_functions": len(sleeping)}


# What spatch names a use outside any function, and a NULL callout.
NOT_FUNCTIONS = ("something_else", "NULL")


def _node(graph, function, file):
    """The node of `function` as seen from `file`: defined there, or
    else the one that name resolution gives (not an ambiguous one)."""
    n = graph.node_of(function, file)
    if n is None:
        nodes, how = graph.resolve(function, file)
        nodes = [m for m in nodes if not graph.macro[m]]
        if how in ("direct", "alternative") and nodes:
            n = nodes[0]
    return n


def _chain(chain, graph, reach, sleeping, depth):
    found, missing = {}, set()

    def add(item):
        key = (item["kind"], item["subject"])
        if key not in found or item["depth"] < found[key]["depth"]:
            found[key] = item

    def node(function, file):
        """The node of a site's or callout's function; None (recorded
        as missing unless it is no function) when the graph lacks it."""
        if function in NOT_FUNCTIONS:
            return None
        n = _node(graph, function, file)
        if n is None:
            missing.add(f"{function}() in {file}")
        return n

    for s in chain.sites + chain.callers:
        n = node(s["fn"], s["file"])
        if n is None:
            continue
        api = s.get("via") or s["api"]
        here = _step(s["file"], s["line"], s["fn"], f"calls {api}()")
        subject = f"{s['file']}:{s['line']}"
        kind = "atomic-caller" if s["op"] == "call" else "atomic-writer"
        if s["op"] not in ("call", "register", "unregister"):
            continue
        region = graph.region_at(n, s["line"])
        if region:
            here["note"] += f" under {region[0]}() from line {region[1]}"
            add(_item(kind, [here], subject))
        elif n in reach:
            path = graph.atomic_path(n, reach, depth - 1)
            if path:
                add(_item(kind, path + [here], subject))
        if s["op"] == "call" and n in sleeping:
            path = graph.sleep_path(n, sleeping, depth - 1)
            if path:
                add(_item("sleeping-caller", [here] + path, subject))
    for c in chain.callouts.values():
        n = node(c["function"], c["file"])
        if n is not None and n in sleeping:
            path = graph.sleep_path(n, sleeping, depth)
            if path:
                add(_item("sleeping-callout", path,
                          f"{c['function']}() ({c['block']})"))
    chain.evidence = sorted(found.values(), key=lambda i: (
        KINDS.index(i["kind"]), i["depth"], i["subject"]))
    atomic = [i for i in chain.evidence if i["kind"] == "atomic-caller"]
    sleeps = [i for i in chain.evidence if i["kind"] == "sleeping-callout"]
    chain.conflicts = ([{"atomic": atomic[0], "sleeps": sleeps[0]}]
                       if atomic and sleeps else [])
    chain.searched = {
        "call_sites": sum(s["op"] == "call" for s in chain.sites)
        + len(chain.callers),
        "write_sites": sum(s["op"] in ("register", "unregister")
                           for s in chain.sites),
        "callouts": len(chain.callouts), "depth": depth,
        "not_in_graph": sorted(missing)}


def render(item):
    """One line per step of an item's path."""
    return [f"{s['file']}:{s['line']} {s['function']}(): {s['note']}"
            for s in item["path"]]


def summary(item):
    """The item in one line: its kind, subject and the path's ends."""
    first, last = item["path"][0], item["path"][-1]
    return (f"{item['kind']} {item['subject']}, {item['depth']} steps: "
            f"{first['file']}:{first['line']} {first['function']}(): "
            f"{first['note']}"
            + (f" ... {last['file']}:{last['line']} {last['function']}(): "
               f"{last['note']}" if len(item["path"]) > 1 else ""))
