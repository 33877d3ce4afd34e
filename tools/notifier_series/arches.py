"""The architectures the boot test builds and boots: how to build each
(make's ARCH and CROSS_COMPILE, the target and the image it makes), its
Kconfig fragment, and how QEMU boots it under TCG."""

import glob
import os
import shutil
from dataclasses import dataclass

from .progress import Error
from .tree import REPO

TOOLS = os.path.join(REPO, "tools")
COMMON_FRAGMENT = os.path.join(TOOLS, "boot-test.config")
# What catches a misbehaving chain, in every kernel booted.
DEBUG_FRAGMENT = os.path.join(TOOLS, "debug.config")


def cc(cross=""):
    """make's CC for the compiler of CROSS_COMPILE `cross`, through ccache
    when it is installed (and so through distcc with CCACHE_PREFIX)."""
    return [f"CC=ccache {cross}gcc"] if shutil.which("ccache") else []


@dataclass(frozen=True)
class Arch:
    name: str           # as make's ARCH= and in file names
    cross: str          # CROSS_COMPILE prefix, "" for the machine's gcc
    target: str         # what make builds
    image: str          # the file QEMU boots, in the build folder
    console: str        # the kernel's console= device
    qemu: tuple         # QEMU's command line but -smp, -kernel, -append
    package: str        # the Debian package of that QEMU
    cmdline: str = ""   # kernel parameters of its own
    # Seconds after the kernel's restart line to stop a machine that
    # cannot restart (None: QEMU exits by itself, -no-reboot).
    restart_grace: float = None

    @property
    def fragment(self):
        return os.path.join(TOOLS, f"boot-test-{self.name}.config")

    @property
    def fragments(self):
        return [COMMON_FRAGMENT, DEBUG_FRAGMENT, self.fragment]

    def make_args(self):
        """make's arguments for this architecture, with ccache if any."""
        args = [f"ARCH={self.name}"]
        if self.cross:
            args.append(f"CROSS_COMPILE={self.cross}")
        return args + cc(self.cross)

    def harness(self, kver):
        """Test-only patches this machine's kernels need, applied on top of
        the patches under test: tests/kernel-harness/<kver>/<arch>/."""
        folder = os.path.join(REPO, "tests", "kernel-harness", kver,
                              self.name)
        return sorted(glob.glob(os.path.join(folder, "*.patch")))

    def folder(self, name):
        """The output folder name of a boot `name` on this architecture:
        x86_64 keeps the plain name, others add their own."""
        return name if self.name == "x86_64" else f"{name}-{self.name}"


ARCHES = {
    "x86_64": Arch(
        "x86_64", "", "bzImage", "arch/x86/boot/bzImage", "ttyS0",
        ("qemu-system-x86_64", "-nodefaults", "-m", "1024", "-no-reboot",
         "-nographic", "-serial", "stdio", "-bios", "qboot.rom"),
        "qemu-system-x86"),
    # skiboot (OPAL) comes with qemu-system-data; its console is the LPC
    # UART that -serial connects.
    "powerpc": Arch(
        "powerpc", "powerpc64le-linux-gnu-", "vmlinux", "vmlinux", "hvc0",
        ("qemu-system-ppc64", "-nodefaults", "-M", "powernv9", "-m", "2048",
         "-no-reboot", "-nographic", "-serial", "stdio"),
        "qemu-system-ppc",
        # initcall_debug, printed at KERN_DEBUG (loglevel=8): archboot sees
        # the initcalls that run the fixed sites end.  powernv answers
        # OPAL's reboot request with an error.
        cmdline="initcall_debug loglevel=8", restart_grace=10),
    # The console on virtio, not on SCLP: see boot-test-s390.config; and
    # tests/kernel-harness/<kver>/s390/ so that it prints the whole log.
    "s390": Arch(
        "s390", "s390x-linux-gnu-", "bzImage", "arch/s390/boot/bzImage",
        "hvc0",
        ("qemu-system-s390x", "-nodefaults", "-M", "s390-ccw-virtio", "-m",
         "1024", "-no-reboot", "-nographic", "-chardev", "stdio,id=con",
         "-device", "virtio-serial-ccw", "-device",
         "virtconsole,chardev=con"),
        "qemu-system-misc", cmdline="initcall_debug loglevel=8"),
}
DEFAULT = "x86_64"


def get(name):
    try:
        return ARCHES[name]
    except KeyError:
        raise Error(f"no boot test for ARCH={name}: one of "
                    + ", ".join(ARCHES))
