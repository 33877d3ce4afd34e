"""make bench's distcc figure: one kernel, the pristine tree's x86_64
tinyconfig, built twice from an empty build folder and an empty ccache,
with the toolkit's compiler (`ccache gcc`): once plainly, with make -j
of this machine's CPUs, and once through two distccd on 127.0.0.1
(distcc.local_daemons()), which share this machine's CPUs between them,
with make -j of their slots, and without distcc's fallback to a local
compile.  On one machine the figure is distcc's own cost, not what a
farm gains."""

import os
import shutil
import subprocess
import tempfile
import time

from . import arches, classify, distcc, tree
from .progress import Error, Step, say

CONFIG = "tinyconfig"
DAEMONS = 2


def build(source, folder, jobs, env, log):
    """Seconds of `make tinyconfig` and `make -j<jobs>` of `source` in
    the new build folder `folder`."""
    shutil.rmtree(folder, ignore_errors=True)
    make = (["make", "-C", source, f"O={folder}"]
            + arches.get("x86_64").make_args())
    start = time.monotonic()
    with open(log, "a", encoding="utf-8") as f:
        for args in ([CONFIG], [f"-j{jobs}"]):
            if subprocess.run(make + args, env=env, stdout=f,
                              stderr=subprocess.STDOUT).returncode:
                raise Error(f"{' '.join(make + args)} failed: see {log}")
    return round(time.monotonic() - start, 1)


def run(kver, *, work=None, out=None, jobs=None):
    """{"config", "kernel", "cpus", "log", "plain": {seconds, jobs},
    "farm": {seconds, jobs, hosts, jobs_per_daemon}}: "farm" is the
    build through distcc."""
    missing = [t for t in ("ccache", "distcc", "distccd")
               if not shutil.which(t)]
    if missing:
        raise Error(f"the distcc figure needs {', '.join(missing)} (ccache "
                    "hands the compiler to distcc; tools/notifier-series "
                    "deps)")
    kernel_tree = tree.prepare(kver, work)
    source = classify.pristine_checkout(kernel_tree)
    folder = os.path.join(os.path.dirname(kernel_tree.path),
                          f"build-{kver}-distcc-bench")
    out = tree.out_folder(out)
    log = os.path.join(out, kver, "bench-distcc.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    open(log, "w", encoding="utf-8").close()
    record = {"config": f"x86_64 {CONFIG}", "kernel": kernel_tree.version,
              "cpus": os.cpu_count(), "log": log}
    plain = {k: v for k, v in os.environ.items()
             if k not in (distcc.HOSTS, "CCACHE_PREFIX", "CCACHE_DISABLE")}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            jobs = tree.jobs(jobs)
            with Step(f"{CONFIG} of Linux {kernel_tree.version}, plain "
                      f"(-j{jobs})"):
                record["plain"] = {"jobs": jobs, "seconds": build(
                    source, folder, jobs, dict(
                        plain, CCACHE_DIR=os.path.join(tmp, "plain")), log)}
            each = max(1, jobs // DAEMONS)
            with distcc.local_daemons(DAEMONS, each) as (hosts, logs):
                # No job compiled here in silence: a job the daemons do
                # not take fails the build.
                env = dict(plain, CCACHE_DIR=os.path.join(tmp, "distcc"),
                           DISTCC_DIR=os.path.join(tmp, "client"),
                           CCACHE_PREFIX="distcc", DISTCC_FALLBACK="0")
                # Without its folder distcc compiles here, unseen.
                os.makedirs(env["DISTCC_DIR"])
                env[distcc.HOSTS] = hosts
                slots = DAEMONS * each
                with Step(f"{CONFIG} of Linux {kernel_tree.version} through "
                          f"distcc on {hosts} (-j{slots})"):
                    seconds = build(source, folder, slots, env, log)
                done = distcc.jobs_done(logs)
                if not sum(done):
                    raise Error(f"no job reached the distccd on {hosts}: "
                                f"see {log}")
                record["farm"] = {"jobs": slots, "seconds": seconds,
                                    "hosts": hosts, "jobs_per_daemon": done}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    say(f"  {CONFIG}: plain {record['plain']['seconds']}s, through distcc "
        f"{record['farm']['seconds']}s (jobs per daemon: "
        f"{record['farm']['jobs_per_daemon']})")
    return record
