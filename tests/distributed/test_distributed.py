"""mfu_tracker/distributed (the package): its documented names and the row
layout it exports for tests and benchmarks, consistent with the row type."""
from __future__ import annotations

import math

import mfu_tracker.distributed as distributed
from mfu_tracker.distributed import ROW_FIELDS, ROW_LAYOUT, RankFigures, combine
from mfu_tracker.timing._totals import StepSums


def test_documented_names():
    assert set(distributed.__all__) == {"RankFigures", "DistributedFigures"}
    assert all(hasattr(distributed, name) for name in distributed.__all__)
    assert combine.__module__ == "mfu_tracker.distributed._figures"


def test_a_row_travels_as_floats_and_comes_back_the_same():
    figures = RankFigures(rank=2, boundaries=11, steps=10, window_s=1.0, step_time_s=0.1,
                          step_time_min_s=0.09, step_time_max_s=0.12,
                          sums=StepSums(model_flops=3e11, num_tokens=64.0),
                          peak_flops_per_sec=1e12, peak_bytes_per_sec=None, num_devices=1,
                          model_parallel=1, interval_s=1.1, interval_steps=10,
                          phase_data_s=0.02, comm=(("comm_bytes", {"all_reduce": 4096.0}),))
    row = figures.to_row()
    assert len(row) == len(ROW_FIELDS) and row[0] == ROW_LAYOUT
    assert row[ROW_FIELDS.index("rank")] == 2.0
    assert math.isnan(row[ROW_FIELDS.index("executed_flops_per_sec")])  # NaN = unavailable
    assert RankFigures.from_row(row) == figures
