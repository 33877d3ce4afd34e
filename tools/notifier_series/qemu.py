"""Booting a kernel in qemu-system-x86_64 under TCG, as kunit.py does."""

import subprocess
import threading
import time

QEMU = ["qemu-system-x86_64", "-nodefaults", "-m", "1024", "-smp", "2",
        "-accel", "tcg,thread=multi", "-no-reboot", "-nographic",
        "-serial", "stdio", "-bios", "qboot.rom"]


def command(kernel, append):
    return QEMU + ["-kernel", kernel, "-append", append]


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
