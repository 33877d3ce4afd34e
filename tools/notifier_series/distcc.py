"""Kernel builds spread over a distcc farm (--distcc HOSTS, or DISTCC_HOSTS
in the environment): every build of the toolkit calls its compiler as
`ccache <cross>gcc` (arches.Arch.make_args, compiletest.ccache), and
ccache runs what it does not hold through distcc when CCACHE_PREFIX says
so; make's -j becomes the farm's slots.  Without hosts nothing changes.

Each helper runs Debian's distccd with the same compilers (the toolkit
calls them by their absolute path, /usr/bin/gcc, /usr/bin/<cross>-gcc),
and allows exactly these in the file its DISTCC_CMDLIST names
(compilers())."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from . import compiletest, tree
from .progress import Error, say

HOSTS = "DISTCC_HOSTS"
PORT = 3632     # distccd's


def configure(hosts=None):
    """Sends the compilations of this process and its children to
    `hosts` (distcc's host list; default: DISTCC_HOSTS of the
    environment), through ccache.  Returns the number of slots, or None
    without hosts."""
    hosts = hosts or os.environ.get(HOSTS)
    if not hosts:
        return None
    for tool in ("distcc", "ccache"):
        if not shutil.which(tool):
            raise Error(f"--distcc needs {tool} (tools/notifier-series "
                        "deps)")
    silent = [host for host in tcp_hosts(hosts) if not answers(*host)]
    if silent:
        # distcc would compile their jobs here, unseen.
        raise Error("distcc hosts that do not answer: " + ", ".join(
            f"{h}:{p}" for h, p in silent))
    os.environ[HOSTS] = hosts
    os.environ["CCACHE_PREFIX"] = "distcc"
    jobs = slots()
    say(f"distcc: compiling on {hosts} ({jobs} slots), through ccache")
    return jobs


def tcp_hosts(hosts):
    """(host, port) of each TCP host of distcc's host list `hosts`
    (HOST[:PORT][/LIMIT][,OPTIONS]; localhost runs jobs here, and
    @HOST over ssh is left to distcc)."""
    found = []
    for word in hosts.split():
        spec = word.split("/")[0].split(",")[0]
        if spec.startswith(("@", "--")) or spec in ("localhost", "+zeroconf"):
            continue
        host, _, port = spec.partition(":")
        found.append((host, int(port or PORT)))
    return found


def answers(host, port, timeout=5):
    """Whether something listens on `host`:`port`."""
    try:
        socket.create_connection((host, port), timeout).close()
        return True
    except OSError:
        return False


def slots():
    """The compilations the farm of DISTCC_HOSTS takes at once (distcc -j)."""
    proc = subprocess.run(["distcc", "-j"], capture_output=True, text=True)
    if proc.returncode or not proc.stdout.strip().isdigit():
        raise Error(f"distcc -j failed for {HOSTS}="
                    f"{os.environ.get(HOSTS)!r}: {proc.stderr.strip()}")
    return int(proc.stdout)


def build_jobs(jobs=None):
    """make's -j for a kernel build: `jobs` when given, else the farm's
    slots with distcc, else this machine's CPUs."""
    if jobs:
        return jobs
    if os.environ.get(HOSTS) and os.environ.get("CCACHE_PREFIX"):
        return slots()
    return tree.jobs()


def compilers():
    """The absolute paths of the compilers the toolkit's builds call, the
    lines of a helper's DISTCC_CMDLIST file."""
    return [os.path.join("/usr/bin", f"{prefix}gcc") for prefix in
            sorted(set(compiletest.CROSS.values()))]


@contextlib.contextmanager
def local_daemons(count=2, jobs=2):
    """`count` distccd on 127.0.0.1, on free ports, allowed to run only
    compilers(): they stand in for the machines of a farm.  Yields
    (hosts, logs): distcc's host list and the daemons' log files (a job
    they ran says COMPILE_OK there), in a folder of their own that
    distccd, which started as root runs as the user distcc, can read
    and write; stopped and removed on exit."""
    folder = tempfile.mkdtemp(prefix="distccd-")
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, True)
        os.chmod(folder, 0o1777)
        cmdlist = os.path.join(folder, "cmdlist")
        with open(cmdlist, "w", encoding="utf-8") as f:
            f.write("\n".join(compilers()) + "\n")
        os.chmod(cmdlist, 0o644)
        hosts, logs = [], []
        for k in range(count):
            port = _free_port()
            logs.append(os.path.join(folder, f"distccd-{k}.log"))
            proc = subprocess.Popen(
                ["distccd", "--daemon", "--no-detach", "--listen",
                 "127.0.0.1", "--port", str(port), "--allow",
                 "127.0.0.1/32", "--jobs", str(jobs), "--log-level",
                 "info", "--log-file", logs[-1]],
                env=dict(os.environ, DISTCC_CMDLIST=cmdlist),
                start_new_session=True)
            stack.callback(_stop, proc)
            _wait_for(proc, port)
            hosts.append(f"127.0.0.1:{port}/{jobs}")
        yield " ".join(hosts), logs


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(proc, port):
    for _ in range(100):
        if proc.poll() is not None:
            raise Error(f"distccd on 127.0.0.1:{port} exited with status "
                        f"{proc.returncode}")
        if answers("127.0.0.1", port, 1):
            return
        time.sleep(0.1)
    raise Error(f"distccd did not listen on 127.0.0.1:{port}")


def _stop(proc):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def jobs_done(logs):
    """The jobs each daemon of local_daemons() compiled, by its log."""
    counts = []
    for log in logs:
        with open(log, encoding="utf-8", errors="replace") as f:
            counts.append(sum("COMPILE_OK" in line for line in f))
    return counts
