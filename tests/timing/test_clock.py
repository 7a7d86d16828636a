"""mfu_tracker/timing/_clock.py: which clock a block is timed on, and
track()'s resolution of its peak, on this machine's CPU."""
from __future__ import annotations

import pytest

from mfu_tracker import user_gpu_spec
from mfu_tracker.timing import _clock

SPEC = user_gpu_spec(100.0, memory_bandwidth_tbs=2.0, name="declared")


def test_the_cpu_clock_has_no_timer_and_no_device():
    assert _clock.block_clock("cpu", None) == _clock.BlockClock(None, None, None)
    assert _clock.resolve_clock("cpu", None)[0] == "cpu"


def test_a_declared_spec_resolves_to_its_peaks_per_device():
    resolved = _clock.resolve_track("bf16", None, SPEC, None, "cpu")
    assert isinstance(resolved, _clock.TrackResolution)
    assert resolved.peak_flops_per_sec == 100e12          # 100 TFLOP/s
    assert resolved.peak_bytes_per_sec == 2e12            # 2 TB/s
    assert resolved.dtype == "bf16" and resolved.spec is SPEC and resolved.timer is None


def test_peak_tflops_wins_over_the_spec():
    resolved = _clock.resolve_track("bf16", None, SPEC, 50.0, "cpu")
    assert resolved.peak_flops_per_sec == 50e12


def test_an_unknown_clock_is_refused_naming_it():
    with pytest.raises(ValueError, match="clock"):
        _clock.block_clock("sundial", None)
