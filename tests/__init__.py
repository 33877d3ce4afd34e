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
