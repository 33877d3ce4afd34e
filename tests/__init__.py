"""Unit tests of the toolkit: python3 -m unittest discover -s tests -t ."""

import os
import sys

tools_path = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tools")
if tools_path not in sys.path:
    sys.path.insert(0, tools_path)

import shutil      # noqa: E402
import unittest    # noqa: E402

# The tests that run Coccinelle: skipped, with the reason, without it.
needs_spatch = unittest.skipUnless(
    shutil.which("spatch"), "spatch is not installed (make deps installs "
    "coccinelle)")


def booted(**fields):
    """A boot test's result with `fields`, the rest as boottest.run()
    starts it."""
    from notifier_series.records import BootResult
    return BootResult(**{"kernel": "9.9", "package": "linux-source-9.9",
                         "arch": "x86_64", "commit": "0" * 40,
                         "timeout": 600, "reproduce": {}, **fields})
