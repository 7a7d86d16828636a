"""The MFU waterfall's definitions (mfu_tracker/timing/_waterfall.py), by hand."""
from __future__ import annotations

import math
import random

from mfu_tracker.timing._waterfall import busy_s, closing_share, waterfall


def test_a_waterfall_by_hand():
    # a 1 s step: data 0.1 s, forward 0.2 s + backward 0.4 s, MFU 0.3, HFU 0.4 (0.05 over-compute)
    lost = waterfall(0.3, 0.4, 1.0, {"data": 0.1, "forward": 0.2, "backward": 0.4}, overcompute=0.05)
    assert lost["data"] == 0.1
    assert math.isclose(lost["recompute"], 0.4 - 0.3 - 0.05)      # HFU - MFU - over-compute
    assert math.isclose(lost["compute"], 0.6 - 0.3 - 0.05)        # (fwd + bwd) - MFU - recompute
    assert math.isclose(lost["other"], 1 - 0.3 - 0.1 - 0.05 - 0.25)
    assert math.fsum([0.3, *lost.values()]) == 1.0


def test_no_waterfall_without_mfu_step_time_or_phases():
    assert waterfall(None, None, 1.0, {"data": 0.1}) is None
    assert waterfall(0.3, None, 0.0, {"data": 0.1}) is None
    assert waterfall(0.3, None, 1.0, {}) is None


def test_the_closing_share_makes_the_sum_exactly_one():
    # shares that leave a closing share in [0, 1], as a step's fractions do
    rng = random.Random(7)
    for _ in range(2000):
        shares = [rng.uniform(0.0, 0.25) for _ in range(rng.randint(1, 4))]
        assert math.fsum([*shares, closing_share(shares)]) == 1.0


def test_busy_time_leaves_out_exposed_communication_and_the_bubble():
    assert busy_s(1.0, {"communication": 0.2, "pipeline_bubble": 0.1, "data": 0.3}) == 1.0 - 0.2 - 0.1
    assert busy_s(1.0, None) is None and busy_s(None, {"data": 0.1}) is None
