"""What a step did as an adapter saw it (integrations/_step_record.py):
tokens from the inputs, read in one transfer; Flops arithmetic."""
from __future__ import annotations

import pytest
import torch

from mfu_tracker.integrations._step_record import (Flops, StepRecord, batch_tokens, dtype_shares,
                                                   read_tokens)
from mfu_tracker.timing._totals import StepSums


def test_flops_scale_and_subtract_every_kind():
    a = Flops(StepSums(model_flops=100.0, executed_flops=150.0), 40.0)
    b = Flops(StepSums(model_flops=30.0, executed_flops=50.0), 10.0)
    assert a.scaled(2.0) == Flops(StepSums(model_flops=200.0, executed_flops=300.0), 80.0)
    diff = a.minus(b)
    assert (diff.model_flops, diff.executed_flops, diff.forward_flops) == (70.0, 100.0, 30.0)
    # a kind one side lacks stays not given
    assert Flops(StepSums(model_flops=1.0), 0.0).minus(b).executed_flops is None


def test_dtype_shares():
    assert dtype_shares({"bf16": 300.0, "fp32": 100.0, "fp16": 0.0}) == {"bf16": 0.75, "fp32": 0.25}
    assert dtype_shares({}) is None
    assert dtype_shares({"bf16": 0.0}) is None


def test_batch_tokens_prefers_the_mask_then_the_ids():
    ids = torch.ones(2, 5, dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]])
    assert batch_tokens({"input_ids": ids, "attention_mask": mask}) == 3 + 4
    assert batch_tokens({"input_ids": ids}) == 10
    assert batch_tokens(ids) == 10
    assert batch_tokens(torch.ones(2, 5)) is None      # floats are no tokens
    assert batch_tokens({"pixel_values": torch.ones(1)}) is None


def test_recorded_inputs_give_work_tokens_real_tokens_and_lengths():
    record = StepRecord()
    ids = torch.zeros(2, 4, dtype=torch.long)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]])
    record.record_inputs((), {"input_ids": ids, "attention_mask": mask})
    record.record_inputs((torch.zeros(3, dtype=torch.long),), {})    # 1-d: one sequence of 3
    assert record.micro_batches == 2
    assert record.work_tokens == 2 * 4 + 3          # padded positions that ran
    assert [(b.batch, b.seq_len) for b in record.batches] == [(2, 4), (1, 3)]
    reads = read_tokens([record])
    assert reads.tokens == [2 + 3 + 3]              # the mask's ones, then the 3 ids
    assert reads.lengths == [[[2, 3], []]]


def test_inputs_embeds_count_their_positions_and_unknown_inputs_nothing():
    record = StepRecord()
    record.record_inputs((), {"inputs_embeds": torch.zeros(2, 6, 8)})
    record.record_inputs((), {"pixel_values": torch.zeros(1, 3)})   # no tokens: not a micro-batch
    assert record.micro_batches == 1 and record.work_tokens == 12
    assert read_tokens([record]).tokens == [12.0]


def test_vlm_grids_are_read_as_rows():
    record = StepRecord()
    grid = torch.tensor([[1, 4, 6], [2, 2, 2]])
    record.record_inputs((), {"input_ids": torch.zeros(1, 5, dtype=torch.long),
                              "image_grid_thw": grid})
    (grids,) = read_tokens([record]).grids
    assert grids[0].image == [[1, 4, 6], [2, 2, 2]] and grids[0].video is None


def test_user_blocks_and_a_missing_count():
    given = StepRecord()
    given.add_block(100)
    given.add_block(28.0)
    missing = StepRecord()
    missing.add_block(10)
    missing.add_block(None)
    assert given.work_tokens == 128 and given.micro_batches == 2
    assert read_tokens([given, missing, StepRecord()]).tokens == [pytest.approx(128.0), None, None]
