"""Booting a kernel in QEMU under TCG, as kunit.py does."""

import os
import re
import subprocess
import threading
import time

from . import arches

# A console silent for this long is a hang: the boot is stopped as a
# timeout, not waited for to its end.
SILENCE = 120
# The kernel's last words when it restarts or powers off.  On a machine
# whose firmware cannot do it (QEMU's powernv answers OPAL's reboot
# request with an error), boot() may stop QEMU a grace period after them.
SHUTDOWN = re.compile(r"^(?:\[[^]]*\] )?reboot: (Restarting system|"
                      r"Power down|System halted)")
# One host thread per vCPU, as fast as TCG goes.
MULTI = ["-accel", "tcg,thread=multi"]
# Deterministic instruction counting: the vCPUs take turns on one host
# thread and the guest's clock advances 1 ns per instruction (shift=0),
# skipping idle time (sleep=off), so that a guest's timing is the number
# of instructions it ran, whatever else the host is doing.  x86 guests
# with several vCPUs hang while bringing up the second one under it: use
# it with one vCPU.
ICOUNT = ["-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off"]


def command(kernel, append, accel=MULTI, cpus=2, arch=None):
    arch = arch or arches.get(arches.DEFAULT)
    return (list(arch.qemu) + ["-smp", str(cpus)] + accel
            + ["-kernel", kernel, "-append", append])


def _sizes(paths):
    return [os.path.getsize(p) if os.path.exists(p) else 0 for p in paths]


def boot(cmd, console_log, timeout, on_line=None, restart_grace=None,
         silence=SILENCE, activity=()):
    """Runs `cmd`, copying the console to `console_log` and each line to
    `on_line`.  Kills QEMU after `timeout` seconds, or once the console
    and the files of `activity` (other serial ports' logs) have been
    silent for `silence` seconds; with `restart_grace`, stops it once
    the console has been silent for that many seconds after the kernel
    said it restarts or powers off (what the kernel prints then, a
    power-off handler's, is waited for; other ports' output does not
    count), or `silence` seconds after it said so whatever it prints, as
    if QEMU had exited with 0.
    Returns (exit status, or None when QEMU was killed, seconds, why it
    was killed or None, whether it was stopped after the kernel's
    restart)."""
    start = time.monotonic()
    last = [start]      # the console's or another port's last output
    printed = [start]   # the console's
    down = [None]       # when the kernel said it shuts down
    with open(console_log, "w", encoding="utf-8", errors="replace") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors="replace")

        def copy():
            for line in proc.stdout:
                last[0] = printed[0] = time.monotonic()
                if down[0] is None and SHUTDOWN.search(line):
                    down[0] = last[0]
                log.write(line)
                if on_line:
                    on_line(line.rstrip("\r\n"))

        reader = threading.Thread(target=copy, daemon=True)
        reader.start()
        killed, stopped = None, False
        sizes = _sizes(activity)
        while True:
            try:
                rc = proc.wait(timeout=1)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                grown = _sizes(activity)
                if grown != sizes:
                    sizes, last[0] = grown, now
                if restart_grace is not None and down[0] is not None and (
                        now - max(down[0], printed[0]) >= restart_grace
                        or now - down[0] >= silence):
                    proc.kill()
                    proc.wait()
                    rc, stopped = 0, True
                    break
                if now - start >= timeout:
                    killed = f"QEMU still ran after {timeout}s"
                elif now - last[0] >= silence:
                    killed = (f"the console was silent for {silence}s "
                              f"after {last[0] - start:.0f}s: a hang")
                if killed:
                    proc.kill()
                    proc.wait()
                    rc = None
                    break
        reader.join(timeout=10)
    return rc, time.monotonic() - start, killed, stopped
