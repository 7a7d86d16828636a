"""mfu_tracker.integrations: the package imports no framework; MFUCallback
is the HF Trainer callback, imported on first use."""
from __future__ import annotations

import subprocess
import sys

import pytest

import mfu_tracker.integrations as integrations


def test_importing_the_package_imports_no_framework():
    # a fresh interpreter: this process may have imported them already
    code = ("import sys, mfu_tracker.integrations; "
            "print(sorted(m for m in ('transformers', 'lightning', 'trl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_mfu_callback_is_the_hf_trainer_callback():
    from mfu_tracker.integrations.hf_trainer import MFUCallback

    assert integrations.MFUCallback is MFUCallback
    assert integrations.__all__ == ["MFUCallback"]


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="no_such_callback"):
        integrations.no_such_callback  # noqa: B018
