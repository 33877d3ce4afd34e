"""The toolkit's own timings for make bench: each command of the pipeline
run cold (a new work folder, so the tree is extracted again and every
object is built, with ccache disabled) and then warm (the same folder
again, with ccache), and the conversion's time on a quarter, a half and
the whole of the files it searches."""

import os
import re
import shutil
import subprocess
import sys
import time

from . import classification, classify, convert, tree
from .progress import Step, say

CLI = os.path.join(tree.REPO, "tools", "notifier-series")
# The pipeline in the order the README gives it; prepare only runs cold.
COMMANDS = (("prepare", ["prepare"]), ("classify", ["classify"]),
            ("conversion", ["convert-tree"]), ("series", ["series"]),
            ("boot test", ["boot-test"]))
DONE = re.compile(r"^    (?P<label>.+): done in (?P<seconds>[\d.]+)s$")
# The steps of a series run worth a line of their own.
SERIES_STEPS = (("conversion (spatch, twice)", r"^converting"),
                ("MAINTAINERS split", r"^finding the MAINTAINERS"),
                ("commits", r"^committing"),
                ("call graphs (pristine, with the fixes)", r"^call graph"),
                ("evidence (spatch; pristine, with the fixes)",
                 r"^collecting the evidence"),
                ("checkpatch", r"^checkpatch.pl --strict on \d+ patches"),
                ("To: and Cc:", r"^To: and Cc:"),
                ("git apply check", r"^applying the series"),
                ("b4 send", r"^b4 send"),
                ("compile-test", r"^compile-test|^compiling the"),
                ("boot test checkpatch", r"^checkpatch.pl --strict on the "
                 "core patches"),
                ("boot test build", r"^building Linux"),
                ("boot test sparse", r"^sparse"),
                ("boot test QEMU", r"^booting in qemu-system-"))


def steps(output):
    """[(label, seconds)] of the Step lines of a command's output."""
    return [(m["label"], float(m["seconds"]))
            for m in map(DONE.match, output.splitlines()) if m]


def series_steps(timed):
    """{step name: seconds} of a series run, from its Step lines."""
    found = {}
    for label, seconds in timed:
        for name, pattern in SERIES_STEPS:
            if re.search(pattern, label):
                found[name] = round(found.get(name, 0) + seconds, 1)
                break
    return found


def command(kver, args, work, out, env):
    """Runs one CLI command; returns (seconds, exit status, its steps)."""
    cmd = ([sys.executable, CLI, "--work", work] + args + [kver]
           + ([] if args == ["prepare"] else ["--out", out]))
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          errors="replace")
    seconds = round(time.monotonic() - start, 1)
    with open(os.path.join(out, f"{args[0]}.log"), "a",
              encoding="utf-8") as f:
        f.write(proc.stdout + proc.stderr)
    return seconds, proc.returncode, steps(proc.stdout)


def pipeline(kver, work, out, warm):
    """{command: {seconds, status}} of one pass over COMMANDS."""
    env = dict(os.environ)
    if not warm:
        env["CCACHE_DISABLE"] = "1"
    record = {}
    for name, args in COMMANDS:
        if warm and name == "prepare":
            continue
        with Step(f"{'warm' if warm else 'cold'}: notifier-series "
                  f"{' '.join(args)} {kver}"):
            seconds, status, timed = command(kver, args, work, out, env)
        record[name] = {"seconds": seconds, "status": status}
        if name == "series":
            record[name]["steps"] = series_steps(timed)
        say(f"    {name}: {seconds:.0f}s, exit status {status}")
    return record


def scaling(kver, work, jobs):
    """The conversion (spatch only) of every 4th, every 2nd and every
    candidate file of the pristine tree: [{files, seconds}]."""
    kernel_tree = tree.prepare(kver, work)
    directory = classify.pristine_checkout(kernel_tree)
    _, entries = classification.load(classification.yaml_path(kver))
    table = convert.class_table(entries)
    files = convert.candidates(directory, {e["chain"] for e in entries
                                           if e["declared"] == "bare"})
    rows = []
    for step in (4, 2, 1):
        subset = files[::step]
        with Step(f"conversion of {len(subset)}/{len(files)} files "
                  "(spatch only)") as s:
            convert.run_spatch(directory, subset, table, jobs)
        rows.append({"files": len(subset), "of": len(files),
                     "seconds": round(s.seconds, 1),
                     "ms_per_file": round(1000 * s.seconds / len(subset))})
    return rows


def run(kver, *, work=None, out=None, jobs=None):
    """The toolkit's timings: the pipeline cold, then again."""
    work = os.path.abspath(work or tree.default_work())
    out = tree.out_folder(out)
    jobs = tree.jobs(jobs)
    logs = os.path.join(out, kver, "bench-toolkit")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    record = {"cpus": os.cpu_count(), "logs": logs}
    cold_work = os.path.join(work, f"bench-cold-{kver}")
    shutil.rmtree(cold_work, ignore_errors=True)
    try:
        record["cold"] = pipeline(kver, cold_work, logs, warm=False)
        record["warm"] = pipeline(kver, cold_work, logs, warm=True)
    finally:
        shutil.rmtree(cold_work, ignore_errors=True)
    record["conversion_scaling"] = scaling(kver, work, jobs)
    for label in ("cold", "warm"):
        say(f"  {label}: " + ", ".join(f"{name} {r['seconds']:.0f}s"
                                       for name, r in record[label].items()))
    say("  conversion: " + ", ".join(
        f"{r['files']} files {r['seconds']:.0f}s" for r in
        record["conversion_scaling"]))
    return record
