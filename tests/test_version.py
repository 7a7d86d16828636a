"""The one version string (mfu_tracker/_version.py): the package's, the C
core's (refused at import when they differ) and the build's (setup.py reads
this file)."""
from __future__ import annotations

import re
from pathlib import Path

import mfu_tracker
from mfu_tracker import _C
from mfu_tracker._version import __version__


def test_the_version_is_a_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_the_package_and_the_c_core_carry_it():
    assert mfu_tracker.__version__ == __version__
    assert _C.__version__ == __version__


def test_the_build_reads_it_from_this_file():
    setup = (Path(__file__).resolve().parent.parent / "setup.py").read_text()
    assert '"_version.py"' in setup and "version=VERSION" in setup
