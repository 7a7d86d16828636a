"""mfu_tracker/distributed/_collective.py: the Aggregator in a world of one
(a gloo group in this process: no side group, no collective, combine() of
its own row), its interval since the previous aggregation, and the
all-gather of rows on the real gloo path with a mismatched layout refused."""
from __future__ import annotations

import warnings

import pytest

from mfu_tracker.distributed._collective import Aggregator, process_group_initialized
from mfu_tracker.distributed._figures import RankFigures

from tests._process_group import process_group
from mfu_tracker.timing._totals import StepSums


def row(boundaries=11):
    return RankFigures(rank=0, boundaries=boundaries, steps=10, window_s=1.0, step_time_s=0.1,
                       step_time_min_s=0.1, step_time_max_s=0.1,
                       sums=StepSums(model_flops=4e11), peak_flops_per_sec=1e12,
                       peak_bytes_per_sec=None, num_devices=1, model_parallel=1,
                       interval_s=None, interval_steps=10)


def test_a_world_of_one_combines_its_own_row_without_a_collective():
    with process_group("gloo", 1):
        assert process_group_initialized()
        agg = Aggregator(5.0)
        assert agg.group is None
        figures = agg.aggregate(row())
        assert figures.mfu == pytest.approx(0.4) and figures.world_size == 1
        assert agg.counters() == {"aggregations": 1, "collectives": 0, "failures": 0,
                                  "world_size": 1, "active": 1}
        seconds, steps = agg.interval(15)
        assert steps == 15 - 11 and seconds >= 0
        assert agg.interval(15, first_window_boundary=12) is None  # the warm-up is left out
        agg.close()
    assert not process_group_initialized()


def test_gather_refuses_rows_of_another_layout():
    with process_group("gloo", 1):
        agg = Aggregator(5.0)
        good = row().to_row()
        assert agg.gather(good)[0] == row()             # the gloo all-gather, one rank
        with pytest.warns(RuntimeWarning, match="row layouts differ"):
            assert agg.gather([99.0, *good[1:]]) is None
        assert agg.counters()["failures"] == 1 and agg.counters()["active"] == 0
        assert agg.counters()["collectives"] == 2
