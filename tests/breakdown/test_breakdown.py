"""The kernel breakdown layer's front (mfu_tracker/breakdown/__init__.py):
its one re-export is the type ``Tracker.last_breakdown`` holds, and none of
its modules loads torch at import (the profiler and the FLOP counter are
imported when a step is profiled)."""
from __future__ import annotations

import subprocess
import sys
import typing

import mfu_tracker.breakdown
from mfu_tracker import Tracker
from mfu_tracker.breakdown import _record

MODULES = ("_record", "_trace", "_reduce", "_step_profile")


def test_the_front_is_the_breakdown_type_and_nothing_else():
    assert mfu_tracker.breakdown.__all__ == ["Breakdown"]
    assert mfu_tracker.breakdown.Breakdown is _record.Breakdown


def test_it_is_the_type_tracker_last_breakdown_holds():
    hint = typing.get_type_hints(Tracker.last_breakdown.fget)["return"]
    assert mfu_tracker.breakdown.Breakdown in typing.get_args(hint)


def test_every_module_of_the_layer_imports_without_torch():
    names = ", ".join(f"mfu_tracker.breakdown.{m}" for m in MODULES)
    code = f"import sys, {names}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
