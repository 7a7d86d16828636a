"""The device layer's front (mfu_tracker/device/__init__.py): it owns the
device readings, and reading them never requires torch at import time (the
package root imports the tracker, which imports this layer, and ``import
mfu_tracker`` loads no torch)."""
from __future__ import annotations

import subprocess
import sys

import mfu_tracker.device

MODULES = ("_telemetry", "_memory", "_consistency", "_hardware")


def test_the_layer_says_what_it_owns_and_where_it_sits():
    doc = mfu_tracker.device.__doc__
    for module in MODULES:
        assert f":mod:`.{module}`" in doc, module
    assert "Layer 4 (peaks -> flops -> timing -> device -> breakdown" in doc


def test_every_module_of_the_layer_imports_without_torch():
    names = ", ".join(f"mfu_tracker.device.{m}" for m in MODULES)
    code = f"import sys, {names}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
