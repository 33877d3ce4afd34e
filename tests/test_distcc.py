"""Builds through distcc (--distcc): two distccd on 127.0.0.1, on two
ports, stand in for two machines of a farm, allowed to run only the
toolkit's compilers; a make with the toolkit's CC must reach both, as
their own logs say."""

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
from unittest import mock

from tests import tools_path  # noqa: F401
from notifier_series import arches, distcc
from notifier_series.progress import Error

FILES = 8
NEEDED = ("distcc", "distccd", "ccache", "gcc", "make")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(all(map(shutil.which, NEEDED)),
                     "needs " + ", ".join(NEEDED) + " (tools/notifier-series "
                     "deps)")
class DistccTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # distccd started by root runs as the user distcc: its log folder
        # must let it write.
        self.logs = os.path.join(self.tmp, "logs")
        os.makedirs(self.logs)
        os.chmod(self.logs, 0o1777)
        cmdlist = os.path.join(self.tmp, "cmdlist")
        with open(cmdlist, "w", encoding="utf-8") as f:
            f.write("\n".join(distcc.compilers()) + "\n")
        os.chmod(self.tmp, 0o755)
        os.chmod(cmdlist, 0o644)
        self.daemons = []
        hosts = []
        for k in range(2):
            port = free_port()
            log = os.path.join(self.logs, f"distccd-{k}.log")
            proc = subprocess.Popen(
                ["distccd", "--daemon", "--no-detach", "--listen",
                 "127.0.0.1", "--port", str(port), "--allow",
                 "127.0.0.1/32", "--jobs", "2", "--log-level", "info",
                 "--log-file", log],
                env=dict(os.environ, DISTCC_CMDLIST=cmdlist),
                start_new_session=True)
            self.addCleanup(self.stop, proc)
            self.daemons.append(log)
            hosts.append(f"127.0.0.1:{port}/2")
            self.wait_for(port)
        self.hosts = " ".join(hosts)
        self.env = mock.patch.dict(os.environ, {
            "DISTCC_DIR": os.path.join(self.tmp, "client"),
            "CCACHE_DIR": os.path.join(self.tmp, "ccache")})
        self.env.start()
        self.addCleanup(self.env.stop)
        for name in ("DISTCC_HOSTS", "CCACHE_PREFIX", "DISTCC_BACKOFF_PERIOD"):
            os.environ.pop(name, None)
        os.makedirs(os.environ["DISTCC_DIR"])

    @staticmethod
    def stop(proc):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    @staticmethod
    def wait_for(port):
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"distccd did not listen on port {port}")

    def sources(self):
        src = os.path.join(self.tmp, "src")
        os.makedirs(src)
        for k in range(FILES):
            with open(os.path.join(src, f"f{k}.c"), "w",
                      encoding="utf-8") as f:
                f.write(f"int f{k}(int x)\n{{\n\treturn x * {k};\n}}\n")
        with open(os.path.join(src, "Makefile"), "w",
                  encoding="utf-8") as f:
            f.write(f"all: {' '.join(f'f{k}.o' for k in range(FILES))}\n"
                    "%.o: %.c\n\t$(CC) -O2 -c -o $@ $<\n")
        return src

    def compiled_on(self):
        """COMPILE_OK lines of each daemon's log."""
        counts = []
        for log in self.daemons:
            with open(log, encoding="utf-8", errors="replace") as f:
                counts.append(sum("COMPILE_OK" in line for line in f))
        return counts

    def test_a_build_reaches_both_daemons(self):
        self.assertEqual(distcc.configure(self.hosts), 4)
        self.assertEqual(os.environ["CCACHE_PREFIX"], "distcc")
        self.assertEqual(distcc.build_jobs(), 4)
        self.assertEqual(distcc.build_jobs(3), 3)
        # The compiler exactly as the toolkit's kernel builds name it.
        cc = [a for a in arches.get(arches.DEFAULT).make_args()
              if a.startswith("CC=")]
        src = self.sources()
        proc = subprocess.run(["make", "-C", src,
                               f"-j{distcc.build_jobs()}"] + cc,
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(glob.glob(os.path.join(src, "*.o"))), FILES)
        counts = self.compiled_on()
        self.assertEqual(sum(counts), FILES, counts)
        self.assertTrue(all(counts), f"a daemon compiled nothing: {counts}")

    def test_a_compiler_the_toolkit_does_not_use_is_refused(self):
        distcc.configure(self.hosts)
        other = os.path.realpath(shutil.which("gcc"))
        self.assertNotIn(other, distcc.compilers())
        src = self.sources()
        # Without the fallback to this machine, the refusal shows.
        proc = subprocess.run(["distcc", other, "-c", "-o", "f0.o",
                               "f0.c"], cwd=src, capture_output=True,
                              text=True,
                              env=dict(os.environ, DISTCC_FALLBACK="0"))
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(self.compiled_on(), [0, 0])
        said = ""
        for log in self.daemons:
            with open(log, encoding="utf-8", errors="replace") as f:
                said += f.read()
        self.assertIn(f"lookup of {other} in DISTCC_CMDLIST failed", said)

    def test_a_host_that_does_not_answer_stops_the_run(self):
        hosts = f"{self.hosts} 127.0.0.1:{free_port()}/4"
        with self.assertRaisesRegex(Error, "do not answer: 127.0.0.1:"):
            distcc.configure(hosts)
        self.assertNotIn("CCACHE_PREFIX", os.environ)
        self.assertEqual(distcc.tcp_hosts("a/8 b:3700/2,lzo localhost/2 "
                                          "@c/4"),
                         [("a", 3632), ("b", 3700)])

    def test_without_hosts_nothing_changes(self):
        self.assertIsNone(distcc.configure(None))
        self.assertNotIn("CCACHE_PREFIX", os.environ)
        self.assertEqual(distcc.build_jobs(), os.cpu_count())
