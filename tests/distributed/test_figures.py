"""mfu_tracker/distributed/_figures.py: combine() -- the job's figures from
every rank's row, by hand arithmetic (sums over ranks of achieved and peak,
the slowest rank, the per-rank spread; a figure is summed only when every
rank has it)."""
from __future__ import annotations

import pytest

from mfu_tracker.distributed._figures import DistributedFigures, RankFigures, combine
from mfu_tracker.timing._totals import StepSums


def row(rank, *, achieved, peak=1e12, step_s=0.1, interval_s=1.0, tokens=None, steps=10,
        boundaries=11, devices=1):
    """A rank's row: its window's sums per second (model FLOP/s ``achieved``, tokens/s)."""
    return RankFigures(rank=rank, boundaries=boundaries, steps=steps, window_s=steps * step_s,
                       step_time_s=step_s, step_time_min_s=step_s * 0.9,
                       step_time_max_s=step_s * 1.1,
                       sums=StepSums(model_flops=achieved, num_tokens=tokens),
                       peak_flops_per_sec=peak, peak_bytes_per_sec=None, num_devices=devices,
                       model_parallel=1, interval_s=interval_s, interval_steps=10)


def test_global_mfu_is_the_sum_of_achieved_over_the_sum_of_peaks():
    job = combine([row(0, achieved=0.5e12, tokens=100.0),
                   row(1, achieved=0.2e12, peak=2e12, step_s=0.2, interval_s=3.0, tokens=50.0)])
    assert isinstance(job, DistributedFigures) and job.world_size == 2
    assert job.mfu == pytest.approx((0.5 + 0.2) / (1 + 2))       # not the mean of 0.5 and 0.1
    assert job.mfu_rank_mean == pytest.approx((0.5 + 0.1) / 2)
    assert (job.mfu_rank_min, job.mfu_rank_max) == (pytest.approx(0.1), pytest.approx(0.5))
    assert job.tokens_per_sec == 150.0 and job.tokens_per_sec_per_device == 75.0
    assert job.step_time_s == 0.2                                  # the job's pace: the slowest
    assert job.step_time_min_s == pytest.approx(0.09) and job.step_time_max_s == pytest.approx(0.22)
    # interval step time: rank 0 1.0 s / 10 steps, rank 1 3.0 s / 10 steps
    assert job.slowest_rank == 1 and job.step_time_rank_max == pytest.approx(0.3)
    assert job.step_time_rank_min == pytest.approx(0.1)
    assert job.steps_match and job.hfu is None and job.mbu is None
    assert job.metrics()["throughput/mfu"] == pytest.approx(0.7 / 3)


def test_a_figure_one_rank_lacks_is_not_summed():
    job = combine([row(0, achieved=0.5e12, tokens=100.0), row(1, achieved=0.5e12)])
    assert job.tokens_per_sec is None            # never the sum of the ranks that had it
    assert job.mfu == pytest.approx(0.5)


def test_a_rank_without_steps_leaves_the_rates_out():
    job = combine([row(0, achieved=0.5e12), row(1, achieved=None, steps=0, boundaries=1)])
    assert job.mfu is None and job.step_time_s is None
    assert job.peak_flops_per_sec == 2e12        # the peaks are known either way
    assert not job.steps_match


def test_ties_name_the_lowest_rank_and_no_rows_is_an_error():
    job = combine([row(2, achieved=1e11), row(1, achieved=1e11), row(3, achieved=1e11)])
    assert job.slowest_rank == 1
    with pytest.raises(ValueError, match="at least one rank"):
        combine([])
