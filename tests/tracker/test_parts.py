"""The parts a Tracker is built of (tracker/_parts.py), each from a checked
configuration: its clock, the device window, the communication observer,
the measured peak's warning."""
from __future__ import annotations

import inspect
import warnings

import pytest

from _process_group import process_group
from mfu_tracker import Tracker, user_gpu_spec
from mfu_tracker.peaks._resolve import resolve_peak
from mfu_tracker.tracker._config import TrackerConfig
from mfu_tracker.tracker._parts import Clock, clock_of, communication, device_window, measured_peak

SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)


def _config(**given):
    arguments = {name: p.default for name, p in inspect.signature(Tracker.__init__).parameters.items()
                 if name != "self"}
    arguments.update(given)
    return TrackerConfig.check(**arguments)


def test_the_cpu_clock_and_auto_without_a_gpu():
    assert clock_of(_config(clock="cpu")) == Clock("cpu", None, None, 0)
    assert clock_of(_config(clock="auto", device="cpu")).kind == "cpu"


def test_the_gpu_clock_on_the_fake_driver_takes_the_stream_given(fake):
    assert clock_of(_config(clock="cuda", stream=7)) == Clock("cuda", None, None, 7)
    assert clock_of(_config(clock="cuda")).stream == 0     # no torch GPU: the null stream


def test_a_device_window_without_telemetry_or_memory_reads_nothing():
    config = _config(telemetry=False, memory=False, device="cpu", peak_tflops=1.0)
    peak = resolve_peak("bf16", device="cpu", peak_tflops=1.0)
    window = device_window(config, peak, clock_of(config))
    assert window.telemetry is None and window.memory is None
    assert window.reading() == {} and window.figures({"mfu": 0.5}) == {}


def test_no_communication_part_without_a_group_or_with_comm_false():
    peak = resolve_peak("bf16", device="cpu", spec=SPEC)
    tracker = Tracker(1e9, spec=SPEC, warmup=0)
    config = _config(spec=SPEC)
    assert communication(tracker, config, peak, clock_of(config), None) is None
    with process_group("gloo", world_size=1):
        off = _config(spec=SPEC, comm=False)
        assert communication(tracker, off, peak, clock_of(off), None) is None
    tracker.close()


def test_a_measured_peak_above_the_peak_in_use_warns():
    """A 1 FLOP/s peak: any CPU's measured GEMM rate exceeds it."""
    peak = resolve_peak("fp32", device="cpu", peak_tflops=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        measured = measured_peak(peak, Clock("cpu", None, None, 0))
    messages = [str(w.message) for w in caught]
    if measured is None:           # the machine was too busy to measure: it said so
        assert any("busy" in m or "measure" in m for m in messages), messages
        return
    assert measured > 1.0
    assert any("the measured fp32 GEMM peak" in m and "exceeds" in m for m in messages), messages
