"""make bench: figures, never a verdict.  The in-kernel microbenchmark
(kernel_bench) and the toolkit's own timings (toolkit_bench), written
together to out/<kver>/bench.json."""

import datetime
import os

from . import kernel_bench, output, toolkit_bench, tree
from .progress import say


def run(kver, work=None, out=None, jobs=None, timeout=1200, kernel=True,
        toolkit=True):
    out = os.path.abspath(out or os.path.join(tree.REPO, "out"))
    path = os.path.join(out, kver, "bench.json")
    record = {}
    if os.path.exists(path):
        # A partial run (--kernel-only, --toolkit-only) keeps the rest.
        record = output.read_json(path)
    now = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    if kernel:
        record["kernel_bench"] = dict(
            kernel_bench.run(kver, work, out, jobs, timeout), when=now)
    if toolkit:
        record["toolkit"] = dict(toolkit_bench.run(kver, work, out, jobs),
                                 when=now)
    output.write_json(path, record)
    say(f"benchmark figures in {path}")
    return 0
