"""Booting a kernel in qemu-system-x86_64 under TCG, as kunit.py does."""

import subprocess
import threading
import time

QEMU = ["qemu-system-x86_64", "-nodefaults", "-m", "1024", "-no-reboot", "-nographic", "-serial", "stdio", "-bios", "qboot.rom"]
# One host thread per vCPU, as fast as TCG goes.
MULTI = ["-accel", "tcg,thread=multi"]
# Deterministic instruction counting: the vCPUs take turns on one host
# thread and the guest's clock advances 1 ns per instruction (shift=0),
# skipping idle time (sleep=off), so that a guest's timing is the number
# of instructions it ran, whatever else the host is doing.  x86 guests
# with several vCPUs hang while bringing up the second one under it: use
# it with one vCPU.
ICOUNT = ["-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off"]


def command(kernel, append, accel=MULTI, cpus=2):
    return (QEMU + ["-smp", str(cpus)] + accel
            + ["-kernel", kernel, "-append", append])


def boot(cmd, console_log, timeout, on_line=None):
    """Runs `cmd`, copying the console to `console_log` and each line to
    `on_line`.  Kills QEMU after `timeout` seconds.  Returns (exit status
    or None on timeout, seconds)."""
    start = time.monotonic()
    with open(console_log, "w", encoding="utf-8", errors="replace") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors="replace")

        def copy():
            for line in proc.stdout:
                log.write(line)
                if on_line:
                    on_line(line.rstrip("\r\n"))

        reader = threading.Thread(target=copy, daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        reader.join(timeout=10)
    return rc, time.monotonic() - start
