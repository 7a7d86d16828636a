"""Padded rows of a grouped GEMM in executed vs model FLOPs (docs/moe.md,
"Padding in HFU and MFU"): a tracker told its FLOPs are counted books the
last sampled step's padded FLOPs as over-compute on the steps after it, so
HFU - MFU is the padded share; an analytic count is left as it is.

One layer, tests/_moe_layers.py's AlignedExperts(4 experts, hidden 16, width
32, groups aligned to 8), 16 tokens routed (12, 2, 1, 1): rows (16, 8, 8, 8),
40 computed of which 24 padded. A row costs 2*16*32 + 2*32*16 = 2,048
forward FLOPs. With the weights trainable and the layer's input not (a
leaf without grad), the backward that runs: the up GEMM's input needs no
gradient (+1x: its weight's), the down GEMM's both (+2x): a row's model FLOPs
2*16*32 * 2 + 2*32*16 * 3 = 2,048 + 3,072 = 5,120.
"""
from __future__ import annotations

import pytest
import torch

from _moe_layers import AlignedExperts, MoEBlock
from mfu_tracker import Tracker
from mfu_tracker.counter import FlopCounter

SKEWED = [0] * 12 + [1, 1, 2, 3]      # (12, 2, 1, 1)
ROW = 2 * 16 * 32 * 2 + 2 * 32 * 16 * 3   # 5,120: a row forward + backward
COUNTED = 40 * ROW                    # 204,800: every computed row
PADDED = 24 * ROW                     # 122,880
ROUTED = 16 * ROW                     # 81,920: the model FLOPs


def _block() -> MoEBlock:
    torch.manual_seed(0)
    return MoEBlock(AlignedExperts(4, 16, 32, align=8), SKEWED)


def _counted_step(block: MoEBlock) -> FlopCounter:
    with FlopCounter() as fc:
        block(torch.randn(16, 16)).sum().backward()
    return fc


def _records(tracker: Tracker):
    return {r["step"]: r for r in tracker.window_steps()}


def test_the_counter_charges_every_computed_row():
    fc = _counted_step(_block())
    assert fc.model_flops == fc.executed_flops == COUNTED


def test_counted_steps_book_the_padding_as_overcompute():
    block = _block()
    tracker = Tracker(peak_tflops=1.0, clock="cpu", warmup=0, moe=block, moe_every=1,
                      model_info={"flops": "counted"})
    for _ in range(4):
        fc = _counted_step(block)
        tracker.step(model_flops=fc.model_flops, executed_flops=fc.executed_flops,
                     overcompute_flops=fc.overcompute_flops)
    assert tracker.last_moe_load.padded_model_flops == PADDED
    records = _records(tracker)
    # step 1 ran before any sample was read: as counted
    assert records[1]["model_flops"] == COUNTED and records[1]["overcompute_flops"] == 0
    for step in (2, 3):
        r = records[step]
        assert r["model_flops"] == ROUTED == COUNTED - PADDED
        assert r["executed_flops"] == COUNTED
        assert r["overcompute_flops"] == PADDED
        # HFU - MFU over HFU: the padded FLOPs' share, the moe/ figure's
        assert (r["executed_flops"] - r["model_flops"]) / r["executed_flops"] == 24 / 40
    assert tracker.last_moe_load.figures()["moe_padded_flops_share"] == pytest.approx(24 / 40)


def test_a_per_step_default_that_is_counted_keeps_its_executed_flops():
    block = _block()
    tracker = Tracker(COUNTED, executed_flops_per_step=COUNTED, peak_tflops=1.0, clock="cpu",
                      warmup=0, moe=block, moe_every=1, model_info={"flops": "counted"})
    for _ in range(4):
        block(torch.randn(16, 16)).sum().backward()
        tracker.step()
    r = _records(tracker)[3]
    assert (r["model_flops"], r["executed_flops"], r["overcompute_flops"]) == \
        (ROUTED, COUNTED, PADDED)


@pytest.mark.parametrize("source", [None, "declared", "analytic"])
def test_an_analytic_or_declared_count_is_left_as_it_is(source):
    # transformer_flops charges the routed tokens only: nothing to take off
    block = _block()
    info = None if source is None else {"flops": source}
    tracker = Tracker(ROUTED, peak_tflops=1.0, clock="cpu", warmup=0, moe=block, moe_every=1,
                      model_info=info)
    for _ in range(4):
        block(torch.randn(16, 16)).sum().backward()
        tracker.step()
    r = _records(tracker)[3]
    assert r["model_flops"] == ROUTED and r["overcompute_flops"] == 0


def test_forward_only_charges_the_forward():
    # no_grad: no backward will run; a padded row costs its 2,048 forward FLOPs
    block = _block()
    tracker = Tracker(peak_tflops=1.0, clock="cpu", warmup=0, moe=block, moe_every=1,
                      model_info={"flops": "counted"})
    for _ in range(4):
        with torch.no_grad(), FlopCounter() as fc:
            block(torch.randn(16, 16))
        tracker.step(model_flops=fc.model_flops, executed_flops=fc.executed_flops)
    assert fc.model_flops == 40 * 2_048
    r = _records(tracker)[3]
    assert (r["model_flops"], r["executed_flops"], r["overcompute_flops"]) == \
        (16 * 2_048, 40 * 2_048, 24 * 2_048)
