"""mfu_tracker/distributed/_row_v5.py: a layout-5 row (rates and ratios, as
the previous version wrote it) read into today's sums, each by hand: its
rates are sums per second, ``mfu_mixed`` x devices its ideal seconds per
second, ``mfu_language`` x the peak its language FLOP/s, ``mfu`` dropped."""
from __future__ import annotations

import math

import pytest

from mfu_tracker.distributed._row import RankFigures
from mfu_tracker.distributed._row_v5 import LAYOUT_5_FIELDS, read_v5
from mfu_tracker.timing._totals import StepSums

KINDS_5 = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast", "p2p",
           "other")


def v5_row(**values):
    """A layout-5 row: 5.0 first, NaN where not given."""
    return [5.0 if name == "layout" else float(values.get(name, math.nan))
            for name in LAYOUT_5_FIELDS]


def test_the_layout_is_the_one_the_previous_version_wrote():
    # 34 scalar columns, then 3 families x the 7 collective kinds of that version,
    # then 3 more: 34 + 21 + 3 = 58
    assert len(LAYOUT_5_FIELDS) == 58
    assert LAYOUT_5_FIELDS[:4] == ("layout", "rank", "boundaries", "steps")
    assert LAYOUT_5_FIELDS[34:55] == tuple(f"{family}_{kind}" for family in
                                           ("comm_bytes", "comm_s", "comm_busbw_gbs")
                                           for kind in KINDS_5)
    assert LAYOUT_5_FIELDS[-1] == "overcompute_flops_per_sec"


def test_rates_and_ratios_become_sums_per_second():
    kwargs = read_v5(v5_row(
        rank=2, boundaries=21, steps=20, num_devices=4, model_parallel=2, interval_steps=20,
        peak_flops_per_sec=2e12, achieved_flops_per_sec=5e11, executed_flops_per_sec=6e11,
        achieved_bytes_per_sec=2e11, tokens_per_sec=1000.0, overcompute_flops_per_sec=1e10,
        mfu=0.25, mfu_mixed=0.0625, mfu_language=0.2, phase_backward_s=0.05,
        comm_s_p2p=0.003, comm_busbw_gbs_all_to_all=12.5))
    assert kwargs["sums"] == StepSums(
        model_flops=5e11, executed_flops=6e11, param_bytes=2e11, num_tokens=1000.0,
        overcompute_flops=1e10,
        ideal_s=0.25,               # mfu_mixed 0.0625 x 4 devices
        language_flops=4e11)        # mfu_language 0.2 x 2e12 FLOP/s
    assert not {"mfu", "mfu_mixed", "mfu_language", "achieved_flops_per_sec"} & set(kwargs)
    assert (kwargs["rank"], kwargs["num_devices"], kwargs["model_parallel"]) == (2, 4, 2)
    assert type(kwargs["steps"]) is int and kwargs["phase_backward_s"] == 0.05
    assert kwargs["phase_data_s"] is None and kwargs["power_w"] is None     # NaN: unknown
    assert kwargs["comm"] == {"comm_bytes": {}, "comm_s": {"p2p": 0.003},
                              "comm_busbw_gbs": {"all_to_all": 12.5}}


def test_a_ratio_without_its_factor_stays_unknown():
    kwargs = read_v5(v5_row(num_devices=2, mfu_mixed=0.5, mfu_language=0.3))   # no peak
    assert kwargs["sums"].ideal_s == 1.0                  # 0.5 x 2 devices
    assert kwargs["sums"].language_flops is None          # 0.3 x an unknown peak
    none = read_v5(v5_row(num_devices=2))
    assert none["sums"].ideal_s is None and none["sums"].model_flops is None
    assert none["interval_steps"] == 0                    # a count that was NaN: none counted


def test_its_arguments_make_todays_figures_and_its_length_is_checked():
    r = RankFigures.from_row(v5_row(rank=1, steps=10, num_devices=1, model_parallel=1,
                                    peak_flops_per_sec=1e12, achieved_flops_per_sec=4e11,
                                    comm_bytes_broadcast=64.0))
    assert r.mfu == pytest.approx(0.4, rel=1e-12)         # formed again: 4e11 / 1e12
    assert r.comm == (("comm_bytes", {"broadcast": 64.0}),)
    with pytest.raises(ValueError, match="layout-5 rank row has 58 fields, not 57"):
        read_v5(v5_row()[:-1])
