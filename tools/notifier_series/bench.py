"""make bench: figures, never a verdict.  The in-kernel microbenchmark
(kernel_bench), the memory the new head costs (headcost), the toolkit's
own timings (toolkit_bench) and a build through distcc against a plain
one (distcc_bench), written together to
out/<kver>/bench.json; the cover letter quotes the first two (costs())."""

import datetime
import os

from . import (distcc, distcc_bench, headcost, kernel_bench, output,
               toolkit_bench, tree)
from .progress import say


def path_of(out, kver):
    """out/<kver>/bench.json."""
    return os.path.join(out, kver, "bench.json")


def run(kver, *, work=None, out=None, jobs=None, timeout=1200, kernel=True,
        toolkit=True, memory=True, farm=True):
    out = tree.out_folder(out)
    path = path_of(out, kver)
    record = {}
    if os.path.exists(path):
        # A partial run (--kernel-only, --toolkit-only) keeps the rest.
        record = output.read_json(path)
    now = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    where = {"work": work, "out": out, "jobs": jobs}
    parts = (("kernel_bench", kernel, lambda: kernel_bench.run(
                  kver, timeout=timeout, **where)),
             ("memory", memory, lambda: headcost.measure(kver, **where)),
             ("toolkit", toolkit, lambda: toolkit_bench.run(kver, **where)),
             ("distcc_build", farm, lambda: distcc_bench.run(kver, **where)))
    for stale in set(record) - {name for name, _, _ in parts}:
        del record[stale]           # a part of an older bench
    for name, wanted, measure in parts:
        if wanted:
            # Written after each part: a later one that fails does not
            # take the figures of the others with it.
            record[name] = dict(measure(), when=now,
                                distcc=os.environ.get(distcc.HOSTS))
            output.write_json(path, record)
    say(f"benchmark figures in {path}")
    return 0


def costs(out, kver, version, core, series):
    """The cover letter's sentences on what the series costs, from
    bench.json when it measured Linux `version` with the core patches
    of digest `core` (patches.digest()) and, for the memory, the series'
    git tree `series`."""
    path = path_of(out, kver)
    record = output.read_json(path) if os.path.exists(path) else {}
    said = []
    calls = record.get("kernel_bench", {})
    if calls.get("kernel") == version and calls.get("core") == core:
        ratios = [c for c in calls["cases"] if c["mode"] == "icount"
                  and c["op"] == "call" and c["readers"] == 1]
        said.append("Instructions per call against mainline's (QEMU's "
                    "instruction count, one reader): " + "; ".join(
                        f"{c['type']} with {c['callouts']} callouts "
                        f"x{c['ratio']:.3f}" for c in ratios) + ".")
    else:
        said.append("The cost of a call was not measured on these core "
                    f"patches (make bench KVER={kver}).")
    memory = record.get("memory", {})
    if memory.get("kernel") == version and \
            memory.get("trees", {}).get("series") == series:
        said += headcost.lines(memory)
    else:
        said.append("The memory of the heads was not measured on this "
                    f"series (make bench KVER={kver} --memory-only).")
    return said
