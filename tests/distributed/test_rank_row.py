"""mfu_tracker/distributed/_rank_row.py: a tracker's window figures made into
the row its rank contributes -- sums per second and peaks divided by the
model-parallel degree (the rank's share), per-step fields per step, the
rest copied -- each by hand from a figures mapping written here."""
from __future__ import annotations

import pytest

from mfu_tracker.distributed._rank_row import rank_row, window_sums
from mfu_tracker.distributed._row import RankFigures

# A replica's window: 4 steps over 2 s, on devices of 4e14 FLOP/s together.
FIGURES = {
    "boundaries": 5.0, "steps": 4, "window_s": 2.0, "step_time_s": 0.5,
    "step_time_min_s": 0.4, "step_time_max_s": 0.6, "peak_flops_per_sec": 4e14,
    "model_flops": 8e12, "num_tokens": 4096.0, "wait_s": 0.2, "executed_flops": None,
    "net_utilization": 0.3, "comm_overlap": 0.5,
    "phase_s": {"forward": 0.2, "communication": 0.1},
    "comm_bytes": {"all_reduce": 1e6}, "comm_s": {}, "comm_busbw_gbs": {"all_reduce": 40.0},
}


def row(**changes):
    kwargs = dict(rank=1, interval_s=2.5, interval_steps=4, num_devices=1, model_parallel=2,
                  peak_bytes_per_sec=6e12, measured_flops_per_sec=3e14,
                  readings={"power_w": 400.0, "clock_ratio": 0.9, "not_a_field": 1.0},
                  comm_observed=True, ledger_model_flops=1e13)
    kwargs.update(changes)
    return rank_row(FIGURES, **kwargs)


def test_window_sums_are_per_second_and_the_ranks_share():
    sums = window_sums(FIGURES, model_parallel=2)
    assert sums.model_flops == 2e12        # 8e12 FLOPs / 2 s / 2 ranks of the replica
    assert sums.num_tokens == 1024.0       # 4,096 tokens / 2 s / 2
    assert sums.wait_s == 0.05             # a per-step field: 0.2 s / 4 steps, not shared
    assert sums.executed_flops is None and sums.language_flops is None   # not in the figures


def test_an_empty_window_has_no_sums():
    sums = window_sums(dict(FIGURES, window_s=0.0, steps=0), model_parallel=1)
    assert sums.model_flops is None and sums.wait_s is None     # never a division by zero
    assert window_sums(dict(FIGURES, window_s=None), 1).num_tokens is None


def test_peaks_and_the_ledger_are_shared_the_measured_peak_is_not():
    r = row()
    assert r.peak_flops_per_sec == 2e14      # 4e14 / 2
    assert r.peak_bytes_per_sec == 3e12      # 6e12 / 2
    assert r.ledger_model_flops == 5e12      # 1e13 / 2
    assert r.measured_flops_per_sec == 3e14  # this process's own devices
    # the share cancels in a ratio: the rank's MFU is the replica's,
    # 8e12 FLOPs / 2 s / 4e14 FLOP/s = 0.01
    assert r.mfu == pytest.approx(0.01, rel=1e-12)
    unknown = row(peak_bytes_per_sec=None, ledger_model_flops=None)
    assert unknown.peak_bytes_per_sec is None and unknown.ledger_model_flops is None


def test_the_rest_is_copied_or_read_from_the_rank():
    r = row()
    assert isinstance(r, RankFigures)
    assert (r.rank, r.boundaries, r.steps, r.window_s, r.step_time_max_s) == (1, 5, 4, 2.0, 0.6)
    assert type(r.boundaries) is int
    assert (r.net_utilization, r.comm_overlap) == (0.3, 0.5)
    assert r.phase_s == {"forward": 0.2, "communication": 0.1} and r.phase_data_s is None
    assert (r.power_w, r.clock_ratio, r.sm_clock_mhz) == (400.0, 0.9, None)
    assert r.comm_observed == 1.0 and row(comm_observed=False).comm_observed is None
    # the communication families the figures have, empty ones left out
    assert r.comm == (("comm_bytes", {"all_reduce": 1e6}), ("comm_busbw_gbs", {"all_reduce": 40.0}))
    assert r.interval_step_time_s == 0.625  # 2.5 s / 4 steps
    assert RankFigures.from_row(r.to_row()) == r
