"""How a boot ends: QEMU's own exit, a timeout, a console gone silent (a
hang), and a kernel that shut down on a machine that could not stop."""

import os
import sys
import tempfile
import unittest

from tests import tools_path  # noqa: F401
from notifier_series import qemu


def fake(script):
    """A command standing in for QEMU: a Python script's output."""
    return [sys.executable, "-c", "import sys, time\n" + script]


class BootEndTest(unittest.TestCase):
    def setUp(self):
        self.log = tempfile.NamedTemporaryFile(suffix=".log", delete=False)
        self.log.close()

    def tearDown(self):
        os.unlink(self.log.name)

    def boot(self, script, timeout=30, silence=30, grace=None, activity=()):
        rc, seconds, killed, self.stopped = qemu.boot(
            fake(script), self.log.name, timeout, restart_grace=grace,
            silence=silence, activity=activity)
        with open(self.log.name) as f:
            return rc, seconds, killed, f.read()

    def test_exit(self):
        rc, _, killed, text = self.boot("print('ok 1 notifier'); "
                                        "sys.exit(3)")
        self.assertEqual((rc, killed), (3, None))
        self.assertIn("ok 1 notifier", text)

    def test_timeout(self):
        rc, seconds, killed, _ = self.boot(
            "while True: print('tick', flush=True); time.sleep(0.2)",
            timeout=2)
        self.assertIsNone(rc)
        self.assertIn("QEMU still ran after 2s", killed)
        self.assertLess(seconds, 10)

    def test_a_silent_console_is_a_hang(self):
        rc, seconds, killed, text = self.boot(
            "print('spinning', flush=True); time.sleep(60)", silence=2)
        self.assertIsNone(rc)
        self.assertIn("silent for 2s", killed)
        self.assertLess(seconds, 10)
        self.assertIn("spinning", text)

    def test_a_shutdown_the_machine_cannot_do_ends_the_boot(self):
        script = ("print('[    1.2] reboot: Restarting system', flush=True); "
                  "print('Unable to reboot. Err=-5', flush=True); "
                  "time.sleep(60)")
        rc, seconds, killed, text = self.boot(script, grace=1)
        self.assertEqual((rc, killed, self.stopped), (0, None, True))
        self.assertLess(seconds, 10)
        self.assertIn("Unable to reboot", text)

    def test_the_grace_waits_for_what_follows_the_shutdown(self):
        # A power-off handler's dump after "Power down", for longer than
        # the grace, then the last line.
        script = ("print('reboot: Power down', flush=True)\n"
                  "for i in range(3):\n"
                  "    time.sleep(1); print('dump', i, flush=True)\n"
                  "print('dump ends', flush=True); time.sleep(60)")
        rc, _, killed, text = self.boot(script, grace=2.5)
        self.assertEqual((rc, killed, self.stopped), (0, None, True))
        self.assertIn("dump ends", text)

    def test_a_shutdown_that_never_ends_is_stopped_all_the_same(self):
        script = ("print('reboot: Power down', flush=True)\n"
                  "while True:\n"
                  "    time.sleep(0.2); print('still here', flush=True)")
        rc, seconds, killed, _ = self.boot(script, grace=1, silence=3)
        self.assertEqual((rc, killed, self.stopped), (0, None, True))
        self.assertLess(seconds, 10)

    def test_another_port_s_output_is_no_silence(self):
        with tempfile.TemporaryDirectory() as d:
            port = os.path.join(d, "trace.log")
            script = (f"print('printing', flush=True)\n"
                      f"for i in range(8):\n"
                      f"    open({port!r}, 'a').write('x'); time.sleep(0.5)\n"
                      f"print('printed', flush=True)")
            rc, _, killed, text = self.boot(script, silence=2,
                                            activity=[port])
        self.assertEqual((rc, killed), (0, None))
        self.assertIn("printed", text)

    def test_without_a_grace_a_hung_restart_is_a_hang(self):
        rc, _, killed, _ = self.boot(
            "print('reboot: Restarting system', flush=True); "
            "time.sleep(60)", silence=2)
        self.assertIsNone(rc)
        self.assertIn("silent", killed)
        self.assertFalse(self.stopped)


if __name__ == "__main__":
    unittest.main()
