"""fabric_tracker / fabric_dtype with a real lightning.fabric.Fabric on the CPU."""
from __future__ import annotations

import pytest

from mfu_tracker import Tracker
from mfu_tracker.integrations.fabric import fabric_dtype, fabric_tracker

fabric_module = pytest.importorskip("lightning.fabric")


def _fabric(precision):
    return fabric_module.Fabric(accelerator="cpu", devices=1, precision=precision)


@pytest.mark.parametrize("precision, dtype", [("bf16-mixed", "bf16"), ("32-true", "fp32"),
                                              ("64-true", "fp64")])
def test_fabric_dtype_reads_the_strategy_precision(precision, dtype):
    assert fabric_dtype(_fabric(precision)) == dtype


def test_fabric_dtype_of_something_without_a_strategy_is_none():
    assert fabric_dtype(object()) is None


def test_fabric_tracker_takes_dtype_and_device_from_fabric():
    tracker = fabric_tracker(_fabric("bf16-mixed"), 1e9, peak_tflops=2.0, clock="cpu")
    try:
        assert isinstance(tracker, Tracker)
        assert tracker.summary()["dtype"] == "bf16"
        # the peak given: 2 TFLOP/s
        assert tracker.peak.flops_per_sec == pytest.approx(2e12)
    finally:
        tracker.close()


def test_fabric_tracker_falls_back_to_fp32_and_a_given_dtype_wins():
    tracker = fabric_tracker(object(), 1e9, peak_tflops=1.0, clock="cpu")
    given = fabric_tracker(_fabric("bf16-mixed"), 1e9, dtype="fp16", peak_tflops=1.0,
                           clock="cpu")
    try:
        assert tracker.summary()["dtype"] == "fp32"
        assert given.summary()["dtype"] == "fp16"
    finally:
        tracker.close()
        given.close()


def test_a_bad_tracker_argument_names_it():
    with pytest.raises((TypeError, ValueError), match="window"):
        fabric_tracker(_fabric("32-true"), 1e9, peak_tflops=1.0, window=0)
