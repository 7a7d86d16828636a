"""mfu_tracker/distributed/_rank_row.py: a rank's row from its tracker's
window figures -- rates and peaks shared by the model-parallel degree, HFU
and MBU turned back into rates, the phases per field (hand arithmetic)."""
from __future__ import annotations

import pytest

from mfu_tracker.distributed._rank_row import rank_row

FIGURES = {"boundaries": 11, "steps": 10, "window_s": 2.0, "step_time_s": 0.2,
           "step_time_min_s": 0.18, "step_time_max_s": 0.25, "mfu": 0.4,
           "achieved_flops_per_sec": 400e12, "tokens_per_sec": 8000.0,
           "peak_flops_per_sec": 1000e12, "hfu": 0.5, "mbu": 0.25,
           "phase_s": {"data": 0.01, "forward": 0.06}}


def make(**changes):
    kwargs = dict(rank=3, interval_s=4.0, interval_steps=20, num_devices=1, model_parallel=4,
                  peak_bytes_per_sec=8e12, measured_flops_per_sec=900e12, readings={},
                  comm_observed=True, ledger_model_flops=8e15)
    kwargs.update(changes)
    return rank_row(FIGURES, **kwargs)


def test_rates_and_peaks_are_this_rank_s_share():
    row = make()
    assert row.achieved_flops_per_sec == 100e12          # 400e12 / 4
    assert row.peak_flops_per_sec == 250e12              # 1000e12 / 4
    assert row.tokens_per_sec == 2000.0                  # 8000 / 4
    assert row.executed_flops_per_sec == pytest.approx(0.5 * 1000e12 / 4)  # HFU x peak / 4
    assert row.achieved_bytes_per_sec == pytest.approx(0.25 * 8e12 / 4)    # MBU x bandwidth / 4
    assert row.peak_bytes_per_sec == 2e12
    assert row.ledger_model_flops == 2e15
    assert row.measured_flops_per_sec == 900e12          # the process's own: not shared


def test_copied_fields_phases_and_the_rank_s_own():
    row = make(model_parallel=1)
    assert (row.rank, row.boundaries, row.steps, row.mfu) == (3, 11, 10, 0.4)
    assert row.step_time_s == 0.2 and row.window_s == 2.0
    assert row.phase_data_s == 0.01 and row.phase_forward_s == 0.06
    assert row.phase_backward_s is None                   # not marked: unknown, not 0
    assert row.interval_step_time_s == pytest.approx(4.0 / 20)
    assert row.comm_observed == 1.0
    assert make(comm_observed=False).comm_observed is None
    assert make(peak_bytes_per_sec=None).achieved_bytes_per_sec is None  # no bandwidth, no rate
