"""The end-to-end check's arithmetic: the waterfall an independent clock
implies, and the tracker's keys read the same way."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.doctor._end_to_end import _off, expected_shares, measured_shares


def test_the_clocks_shares_by_hand():
    # a 10 ms step: forward 3, backward 5, optimizer 1 ms -> 1 ms unmarked
    shares = expected_shares(0.4, 10e-3, {"forward": 3e-3, "backward": 5e-3, "optimizer": 1e-3})
    assert shares["phase/forward"] == pytest.approx(0.3)
    assert shares["optimizer"] == pytest.approx(0.1)
    assert shares["mfu+recompute+compute"] == pytest.approx(0.8)     # 0.3 + 0.5
    assert shares["other"] == pytest.approx(0.1)                     # 1 - 0.9


def test_the_trackers_keys_give_the_same_quantities():
    metrics = {"step_time_s": 0.01, "phase_s/forward": 0.003, "mfu": 0.4,
               "mfu_lost/recompute": 0.1, "mfu_lost/compute": 0.3,
               "mfu_lost/optimizer": 0.1, "mfu_lost/other": 0.1}
    shares = measured_shares(metrics)
    assert shares["phase/forward"] == pytest.approx(0.3)
    assert shares["mfu+recompute+compute"] == pytest.approx(0.8)     # 0.4 + 0.1 + 0.3
    assert shares["optimizer"] == 0.1 and shares["other"] == 0.1


def test_off_is_the_relative_difference():
    assert _off(1.02, 1.0) == pytest.approx(0.02)
    assert _off(0.95, 1.0) == pytest.approx(0.05)
    assert _off(None, 1.0) is None and _off(1.0, 0.0) is None
