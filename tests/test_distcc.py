"""Builds through distcc (--distcc): two distccd on 127.0.0.1, on two
ports, stand in for two machines of a farm, allowed to run only the
toolkit's compilers; a make with the toolkit's CC must reach both, as
their own logs say."""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from tests import tools_path  # noqa: F401
from notifier_series import arches, distcc
from notifier_series.progress import Error

FILES = 8
NEEDED = ("distcc", "distccd", "ccache", "gcc", "make")


@unittest.skipUnless(all(map(shutil.which, NEEDED)),
                     "needs " + ", ".join(NEEDED) + " (tools/notifier-series "
                     "deps)")
class DistccTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.hosts, self.daemons = self.enterContext(
            distcc.local_daemons())
        self.env = mock.patch.dict(os.environ, {
            "DISTCC_DIR": os.path.join(self.tmp, "client"),
            "CCACHE_DIR": os.path.join(self.tmp, "ccache")})
        self.env.start()
        self.addCleanup(self.env.stop)
        for name in ("DISTCC_HOSTS", "CCACHE_PREFIX", "DISTCC_BACKOFF_PERIOD"):
            os.environ.pop(name, None)
        os.makedirs(os.environ["DISTCC_DIR"])

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
        return distcc.jobs_done(self.daemons)

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
        hosts = f"{self.hosts} 127.0.0.1:{distcc._free_port()}/4"
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
