"""mfu_tracker/distributed/_row.py: where each figure sits in a rank's row,
which rows it refuses, and what a row reads as -- its ratios formed from its
sums against its ceilings, each checked by hand arithmetic."""
from __future__ import annotations

import math

import pytest

from mfu_tracker.distributed._row import (
    RECORD_COLUMNS,
    ROW_FIELDS,
    ROW_LAYOUT,
    ROW_VERSION,
    RankFigures,
    comm_families,
)
from mfu_tracker.timing._totals import StepSums


def rank(**changes):
    """Rank 3's window: 10 steps of 0.1 s, 1 TFLOP/s of peak on one device."""
    values = dict(rank=3, boundaries=12, steps=10, window_s=1.0, step_time_s=0.1,
                  step_time_min_s=0.08, step_time_max_s=0.13,
                  sums=StepSums(model_flops=3e11, executed_flops=4.5e11, param_bytes=2e11,
                                num_tokens=1000.0, wait_s=0.02),
                  peak_flops_per_sec=1e12, peak_bytes_per_sec=1e12, num_devices=1,
                  model_parallel=2, interval_s=1.5, interval_steps=10)
    values.update(changes)
    return RankFigures(**values)


def test_each_value_sits_in_its_named_column():
    r = rank(phase_forward_s=0.04, power_w=350.0,
             comm=(("comm_s", {"p2p": 0.01}), ("comm_bytes", {"all_reduce": 4096.0})))
    row = dict(zip(ROW_FIELDS, r.to_row()))
    assert row["layout"] == ROW_LAYOUT and int(row["layout"]) == ROW_VERSION == 6
    assert (row["rank"], row["boundaries"], row["model_parallel"]) == (3.0, 12.0, 2.0)
    assert row["phase_forward_s"] == 0.04 and row["power_w"] == 350.0
    assert row["comm_s_p2p"] == 0.01 and row["comm_bytes_all_reduce"] == 4096.0
    assert math.isnan(row["comm_s_all_reduce"])            # a kind not observed: NaN
    assert math.isnan(row["phase_data_s"])                 # None on the wire is NaN
    # the record's fields: a sum per second, or a per-step field's seconds per step
    assert row["model_flops_per_sec"] == 3e11 and row["num_tokens_per_sec"] == 1000.0
    assert row["wait_s_per_step"] == 0.02 and "wait_s_per_sec" not in row
    assert math.isnan(row["language_flops_per_sec"])


def test_the_record_columns_are_last_and_named_by_how_each_field_is_carried():
    columns = dict(RECORD_COLUMNS)
    assert columns["model_flops"] == "model_flops_per_sec"
    assert columns["idle_s"] == "idle_s_per_step" and columns["wait_s"] == "wait_s_per_step"
    assert ROW_FIELDS[-len(RECORD_COLUMNS):] == tuple(c for _, c in RECORD_COLUMNS)
    assert len(set(ROW_FIELDS)) == len(ROW_FIELDS)


def test_a_row_read_back_has_its_counts_as_ints_and_nan_as_none():
    back = RankFigures.from_row(rank(throttled=0.0).to_row())
    assert type(back.rank) is int and type(back.steps) is int and type(back.num_devices) is int
    assert back.phase_data_s is None and back.power_w is None
    assert back.throttled == 0.0                       # a reading of 0 is no missing reading
    assert back.sums.model_flops == 3e11 and back.sums.language_flops is None


@pytest.mark.parametrize("row, what", [
    ([], "layout None and 0 fields"),
    ([6.0] + [0.0] * (len(ROW_FIELDS) - 1), "layout 6.0"),       # the version, no fingerprint
    ([ROW_LAYOUT] + [0.0] * (len(ROW_FIELDS) - 2), f"{len(ROW_FIELDS) - 1} fields"),
    ([7.0, 1.0], "layout 7.0"),
])
def test_a_row_of_another_layout_is_refused_naming_it(row, what):
    with pytest.raises(ValueError, match=what):
        RankFigures.from_row(row)


def test_ratios_are_formed_from_the_sums_against_the_ceilings():
    r = rank()
    assert r.mfu == pytest.approx(0.3, rel=1e-12)              # 3e11 / 1e12
    assert r.hfu == pytest.approx(0.45, rel=1e-12)             # 4.5e11 / 1e12
    assert r.mbu == pytest.approx(0.2, rel=1e-12)              # 2e11 B/s / 1e12 B/s
    assert r.tokens_per_sec == pytest.approx(1000.0, rel=1e-12)  # 1,000 tokens over 1 s
    assert r.executed_flops_per_sec == 4.5e11                  # a field's rate, as carried
    assert rank(peak_flops_per_sec=None).mfu is None           # no peak, no MFU (never 0)


def test_an_unknown_attribute_is_an_attribute_error():
    r = rank()
    with pytest.raises(AttributeError, match="mfu_typo"):
        r.mfu_typo
    with pytest.raises(AttributeError, match="bogus_per_sec"):
        r.bogus_per_sec                                        # no such field of the record
    assert not hasattr(r, "_private")


def test_interval_step_time_phases_and_busy_time_by_hand():
    r = rank(phase_forward_s=0.05, phase_communication_s=0.02, phase_pipeline_bubble_s=0.01)
    assert r.interval_step_time_s == pytest.approx(0.15)       # 1.5 s over 10 steps
    assert rank(interval_steps=0).interval_step_time_s is None
    assert rank(interval_s=None).interval_step_time_s is None
    assert r.phase_s == {"forward": 0.05, "communication": 0.02, "pipeline_bubble": 0.01}
    assert r.busy_s == pytest.approx(0.07)                     # 0.1 - 0.02 - 0.01
    assert rank().busy_s is None                               # no phase marked


def test_comm_families_keeps_the_non_empty_in_their_order():
    given = {"comm_busbw_gbs": {"all_reduce": 2.0}, "comm_bytes": {}, "comm_s": {"p2p": 0.5},
             "net_utilization": 0.4}
    assert comm_families(given) == (("comm_s", {"p2p": 0.5}),
                                    ("comm_busbw_gbs", {"all_reduce": 2.0}))
    r = rank(comm=comm_families(given))
    assert r.comm_family("comm_s") == {"p2p": 0.5} and r.comm_family("comm_bytes") == {}
