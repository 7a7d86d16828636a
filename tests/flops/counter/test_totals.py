"""A counter's totals merged over blocks (mfu_tracker/flops/counter/_totals.py):
merging adds every count and table, settling adds the anticipated backward
only to a count that ran none, and FLOPs read with their unit."""
from __future__ import annotations

import pytest

from mfu_tracker._native import _C
from mfu_tracker.flops.counter._totals import (
    BY_DTYPE_KEYS,
    COUNT_KEYS,
    format_flops,
    merge,
    settle,
    zero_totals,
)


def test_zero_totals_hold_every_key_at_zero():
    totals = zero_totals()
    assert all(totals[key] == 0 for key in COUNT_KEYS)
    assert all(totals[key] == [0] * len(_C.dtype_names()) for key in BY_DTYPE_KEYS)
    assert (totals["ops"], totals["modules"], totals["first_error"]) == ({}, {}, None)


def test_merge_adds_counts_tables_and_keeps_the_first_error():
    into = zero_totals()
    more = zero_totals()
    more.update(forward_flops=10, counted_calls=2, first_error="first",
                ops={"aten::mm": (2, 10)}, modules={"m": (10, 30, 1)})
    more["model_flops_by_dtype"][0] = 30
    merge(into, more)
    more["first_error"] = "second"
    merge(into, more)
    assert (into["forward_flops"], into["counted_calls"]) == (20, 4)
    assert into["ops"] == {"aten::mm": (4, 20)} and into["modules"] == {"m": (20, 60, 2)}
    assert into["model_flops_by_dtype"][0] == 60 and into["first_error"] == "first"


@pytest.mark.parametrize("backward, model", [(0, 10 + 20), (20, 10)])
def test_settle_adds_the_anticipated_backward_only_when_none_ran(backward, model):
    totals = zero_totals()
    totals.update(model_flops=10, backward_flops=backward, anticipated_flops=20,
                  overcompute_flops=1, anticipated_overcompute_flops=2)
    totals["model_flops_by_dtype"][0] = 10
    totals["anticipated_flops_by_dtype"][0] = 20
    settle(totals)
    assert totals["model_flops"] == model and totals["model_flops_by_dtype"][0] == model
    assert totals["overcompute_flops"] == (3 if backward == 0 else 1)


def test_format_flops_picks_the_unit():
    assert format_flops(0) == "0 FLOP"
    assert format_flops(999) == "999 FLOP"
    assert format_flops(1_500) == "1.500 KFLOP"
    assert format_flops(2.5e9) == "2.500 GFLOP"
    assert format_flops(3e15) == "3.000 PFLOP"
    assert format_flops(-2e12) == "-2.000 TFLOP"


def test_a_forward_only_count_settles_to_three_times_its_forward():
    torch = pytest.importorskip("torch")
    from mfu_tracker.flops.counter import FlopCounter

    layer = torch.nn.Linear(8, 16, bias=False)
    with FlopCounter() as counter:  # a forward whose backward runs outside the count
        out = layer(torch.ones(4, 8, requires_grad=True))
    out.sum().backward()
    # 2*4*8*16 = 1,024 forward; its anticipated backward (input and weight grads) 2,048
    assert (counter.forward_flops, counter.model_flops) == (1_024, 3_072)
