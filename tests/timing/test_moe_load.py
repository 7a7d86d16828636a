"""mfu_tracker/timing/_moe_load.py: a layer's load, the expert-parallel wait
and the model's figures, by hand."""
from __future__ import annotations

import pytest

from mfu_tracker.timing._moe_load import layer_load, model_load, rank_loads


def test_a_layer_padded_to_eight_rows_by_hand():
    # routed 12, 2, 1, 1 padded to multiples of 8: rows 16, 8, 8, 8
    layer = layer_load("l0", [12, 2, 1, 1], [16, 8, 8, 8], row_flops=10.0)
    assert layer.padded_rows == 4 + 6 + 7 + 7 == 24 and layer.dropped == 0
    assert layer.mean == 4.0 and layer.imbalance == 3.0 and layer.straggler == 0
    assert layer.computed_rows == 40
    assert layer.padded_model_flops == 24 * 10.0             # forward only: row_flops


def test_a_capacity_drops_what_exceeds_it():
    layer = layer_load("l0", [12, 2, 1, 1], [6, 6, 6, 6])
    assert layer.dropped == 6 and layer.padded_rows == 4 + 5 + 5 == 14


def test_a_layer_that_saw_no_token_has_no_imbalance():
    assert layer_load("l", [0, 0]).imbalance is None


@pytest.mark.parametrize("routed, rows", [([], None), ([1, -1], None), ([1, 1], [1])])
def test_bad_counts_are_refused(routed, rows):
    with pytest.raises(ValueError):
        layer_load("l", routed, rows)


def test_the_expert_parallel_wait_by_hand():
    # two ranks, two layers: rank 0 took 3 s and 1 s, rank 1 1 s and 2 s
    seconds = [[3.0, 1.0], [1.0, 2.0]]
    busiest = [[24.0, 5.0], [2.0, 30.0]]
    mine = rank_loads(1, seconds, busiest)
    assert mine.wait_s == (3.0 - 1.0) + (2.0 - 2.0)
    assert rank_loads(0, seconds, busiest).wait_s == 0.0 + (2.0 - 1.0)
    assert mine.straggler_rank == 1                           # 30 tokens, layer 1


def test_the_model_load_carries_its_layers():
    load = model_load(7, [layer_load("a", [4, 4]), layer_load("b", [6, 2])])
    assert load.step == 7 and len(load.layers) == 2 and load.ranks is None
