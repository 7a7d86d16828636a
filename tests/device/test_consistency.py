"""The self-check of MFU against the tensor pipes (mfu_tracker/device/_consistency.py)."""
from __future__ import annotations

from mfu_tracker.device._consistency import GPM_REFRESH_S, HIGH_MARGIN, high_limit, mfu_consistency, verdict


def test_the_ratio_and_when_it_is_unknown():
    assert mfu_consistency(0.4, 0.5) == 0.4 / 0.5
    assert mfu_consistency(None, 0.5) is None
    assert mfu_consistency(0.4, 0.0) is None  # idle pipes: no ratio


def test_the_high_limit_widens_for_short_windows():
    # 1 + margin + 2 x refresh / window
    assert high_limit(1.0) == 1.0 + HIGH_MARGIN + 2 * GPM_REFRESH_S / 1.0
    assert high_limit(10.0) < high_limit(1.0)
    assert high_limit(None) == 1.0 + HIGH_MARGIN + 2.0


def test_no_verdict_off_the_tensor_pipes_or_without_readings():
    assert verdict({"mfu": 0.9, "hw_tensor_active": 0.1, "hw_window_s": 1.0, "dtype": "fp32"}) is None
    assert verdict({"mfu": None, "hw_tensor_active": 0.1, "hw_window_s": 1.0, "dtype": "bf16"}) is None


def test_mfu_far_above_the_pipes_is_high():
    assert verdict({"mfu": 0.9, "hw_tensor_active": 0.3, "hw_window_s": 10.0, "dtype": "bf16"}) == "high"
    assert verdict({"mfu": 0.3, "hw_tensor_active": 0.3, "hw_window_s": 10.0, "dtype": "bf16"}) is None
