"""mfu_tracker/timing/_roles.py: each role's figures over its own seconds
and the job's end-to-end MFU over the window's wall time, by hand."""
from __future__ import annotations

import math

import pytest

from mfu_tracker.timing._roles import ROLES, role_figures


def _window(**roles):
    window = {"steps": 2, "window_s": 10.0}
    for role in ROLES:
        window.update({f"{role}_flops": 0.0, f"{role}_bytes": 0.0, f"{role}_tokens": 0.0,
                       f"{role}_s": 0.0})
    for role, (flops, nbytes, tokens, seconds) in roles.items():
        window.update({f"{role}_flops": flops, f"{role}_bytes": nbytes,
                       f"{role}_tokens": tokens, f"{role}_s": seconds})
    return window


def test_each_role_over_its_own_seconds():
    window = _window(rollout=(4e12, 6e12, 400.0, 6.0), learner=(3e12, 0.0, 800.0, 2.0))
    out = role_figures(window, peak_flops_per_sec=1e12, peak_bytes_per_sec=2e12)
    rollout, learner = out["roles"]["rollout"], out["roles"]["learner"]
    assert rollout["mfu"] == pytest.approx(4e12 / 6.0 / 1e12, rel=1e-12)
    assert rollout["mbu"] == pytest.approx(6e12 / 6.0 / 2e12, rel=1e-12)
    assert rollout["tokens_per_sec"] == pytest.approx(400.0 / 6.0, rel=1e-12)
    assert learner["mfu"] == pytest.approx(3e12 / 2.0 / 1e12, rel=1e-12)
    assert rollout["seconds_per_step"] == 3.0                      # 6 s over 2 steps
    assert set(out["roles"]) == {"rollout", "learner"}            # the roles that ran
    # end to end: every role's FLOPs over the whole window (the wait counts against it)
    assert out["mfu_end_to_end"] == pytest.approx(7e12 / 10.0 / 1e12, rel=1e-12)


def test_no_role_ran_no_figures():
    assert role_figures(_window(), peak_flops_per_sec=1e12, peak_bytes_per_sec=None) == {}


def test_an_unknown_role_flops_leaves_end_to_end_out():
    window = _window(rollout=(0.0, 0.0, 10.0, 1.0), learner=(1e12, 0.0, 10.0, 1.0))
    del window["rollout_flops"]              # unknown: summary() leaves the sum out
    out = role_figures(window, peak_flops_per_sec=1e12, peak_bytes_per_sec=None)
    assert out["roles"]["learner"]["mfu"] == pytest.approx(1.0)
    assert out["mfu_end_to_end"] is None or math.isnan(out["mfu_end_to_end"])
