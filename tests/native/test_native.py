"""The compiled extensions' front (mfu_tracker/_native/__init__.py): the C
core of this very version, and the in-place C++ observer."""
from __future__ import annotations

from mfu_tracker import _native
from mfu_tracker._native import _C, packaged_torch_extension
from mfu_tracker._version import __version__


def test_the_c_core_is_the_packages_build():
    assert _C.__name__ == "mfu_tracker._C"
    assert _C.__version__ == __version__
    assert _native.__all__ == ["_C", "packaged_torch_extension"]


def test_the_in_place_observer_is_found():
    # make build builds _torch in place (the Makefile's build target)
    module = packaged_torch_extension()
    assert module is not None and module.__name__ == "mfu_tracker._torch"
