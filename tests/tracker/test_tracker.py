"""mfu_tracker/tracker/_tracker.py: the Tracker's figures through its public
API -- MFU is the window's achieved FLOP/s over the peak, achieved FLOP/s
the work per step over the mean step time (docs/ conventions), checked
against the step times it reports; a tracker after close() still answers."""
from __future__ import annotations

import time

import pytest

import mfu_tracker.tracker
from mfu_tracker import Tracker

FLOPS = 2e9            # per step
PEAK_TFLOPS = 0.5      # 5e11 FLOP/s


def test_mfu_is_work_per_step_over_step_time_over_peak():
    tracker = Tracker(FLOPS, dtype="fp32", peak_tflops=PEAK_TFLOPS, clock="cpu", window=4,
                      warmup=0, distributed=False)
    for _ in range(5):
        tracker.step(num_tokens=128)
        time.sleep(0.01)
    m = tracker.metrics()
    step_s = m["throughput/step_time_s"]
    assert step_s >= 0.01
    assert m["throughput/achieved_tflops"] == pytest.approx(FLOPS / step_s / 1e12, rel=1e-9)
    assert m["throughput/mfu"] == pytest.approx(FLOPS / step_s / (PEAK_TFLOPS * 1e12), rel=1e-9)
    assert m["throughput/tokens_per_sec"] == pytest.approx(128 / step_s, rel=1e-9)
    assert tracker.peak.flops_per_sec == PEAK_TFLOPS * 1e12 and tracker.peak.source == "user"
    tracker.close()


def test_no_peak_means_no_mfu_never_a_guess(recwarn):
    tracker = Tracker(FLOPS, dtype="fp32", device="cpu", clock="cpu", warmup=0, window=2,
                      distributed=False)
    for _ in range(3):
        tracker.step()
    m = tracker.metrics()
    assert "throughput/mfu" not in m and m["throughput/achieved_tflops"] > 0
    tracker.close()


def test_global_step_counts_from_start_step_and_close_is_idempotent():
    with Tracker(FLOPS, dtype="fp32", peak_tflops=PEAK_TFLOPS, clock="cpu", start_step=100,
                 distributed=False) as tracker:
        for _ in range(4):
            tracker.step()
        assert tracker.start_step == 100
        assert tracker.global_step == 103  # 4 boundaries: 3 steps completed
    tracker.close()


def test_the_package_exports_the_one_tracker():
    assert mfu_tracker.tracker.__all__[0] == "Tracker"
    assert set(mfu_tracker.tracker.__all__) == {"Tracker", "Roles", "RoleRun"}   # and the roles
    assert mfu_tracker.tracker.Tracker is Tracker
