"""The step-FLOPs policy (integrations/_step_flops.py): counted, scaled,
profiled, the HFU factor, and a step without FLOPs warning once.

Model: Linear(8 -> 4, no bias). A (2, 8) input's forward is one matmul of
2 x 2 x 8 x 4 = 128 FLOPs; its backward (the input needs no grad) only the
weight's gradient, another 128: 256 model FLOPs a step.
"""
from __future__ import annotations

import pytest
import torch

from mfu_tracker._dtypes import DTYPE_NAMES
from mfu_tracker.integrations._step_flops import StepFlops
from mfu_tracker.integrations._step_record import StepRecord

FORWARD = 2 * 2 * 8 * 4          # = 128
STEP = 2 * FORWARD               # forward + weight gradient = 256


class Warnings:
    def __init__(self):
        self.keys = []

    def __call__(self, key, message):
        self.keys.append(key)


def _policy(count_every=1, hfu_factor=None, sample_batch=None):
    warn = Warnings()
    policy = StepFlops(count_every=count_every, causal_attention="full", hfu_factor=hfu_factor,
                       warn_once=warn, sample_batch=sample_batch)
    model = torch.nn.Linear(8, 4, bias=False)
    policy.attach(model)
    return policy, model, warn


def _run_step(policy, model, batch_rows=2):
    record, counter = StepRecord(), policy.step_counter()
    if counter is not None:
        counter.start()
    record.record_inputs((torch.zeros(batch_rows, 8, dtype=torch.long),), {})
    model(torch.ones(batch_rows, 8)).sum().backward()
    policy.close(record, counter)
    return record


def test_every_second_step_counted_the_others_scaled_by_their_tokens():
    policy, model, warn = _policy(count_every=2)
    counted = _run_step(policy, model)              # step 0: counted
    scaled = _run_step(policy, model, batch_rows=4)  # step 1: twice the work tokens
    assert counted.counted is not None and scaled.counted is None
    assert policy.resolve(counted).model_flops == STEP
    assert policy.resolve(counted).forward_flops == FORWARD
    assert policy.resolve(scaled).model_flops == 2 * STEP       # 256 x 16 / 8 tokens
    assert policy.flops_by_dtype(scaled, 512.0) == {"fp32": 512.0}
    assert warn.keys == []


def test_the_hfu_factor_sets_executed_from_the_forward():
    policy, model, _ = _policy(hfu_factor=4.0)
    record = _run_step(policy, model)
    flops = policy.resolve(record)
    assert flops.model_flops == STEP                # model FLOPs never change with it
    assert flops.executed_flops == 4.0 * FORWARD


def test_a_float_sample_batch_is_profiled_and_taken_per_micro_batch():
    policy, model, _ = _policy(count_every=0, sample_batch=torch.ones(2, 8))
    policy.prepare()                                # the only source: profiled before the clock
    assert policy.profile.model_flops == STEP
    assert model.weight.grad is None                # the profile leaves no .grad behind
    record = _run_step(policy, model)
    # a float batch has no token count: the profile x the step's micro-batches (1)
    assert policy.resolve(record).model_flops == STEP


def test_a_token_sample_batch_is_scaled_by_the_steps_real_tokens():
    sample = {"input_ids": torch.zeros(2, 3, dtype=torch.long)}      # 6 tokens

    class Ids(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.out = torch.nn.Embedding(10, 8), torch.nn.Linear(8, 4, bias=False)

        def forward(self, input_ids):
            return self.out(self.embed(input_ids))

    warn = Warnings()
    policy = StepFlops(count_every=0, causal_attention="full", hfu_factor=None, warn_once=warn,
                       sample_batch=sample)
    policy.attach(Ids())
    policy.prepare()
    assert policy.profile_tokens == 6
    record = StepRecord()
    record.add_block(None)
    # 12 real tokens = twice the sample's: twice its FLOPs
    assert policy.resolve(record, tokens=12.0).model_flops == 2 * policy.profile.model_flops
    assert policy.profile.model_flops >= 2 * 6 * 8 * 4   # at least the output matmul's forward


def test_a_step_without_any_source_warns_once_and_books_only_tokens():
    policy, model, warn = _policy(count_every=0)
    record = _run_step(policy, model)
    work = policy.step_work(record, 16.0, None, None, [1e12])
    assert work.model_flops is None and work.num_tokens == 16.0
    policy.step_work(record, 16.0, None, None, [1e12])
    assert warn.keys == ["noflops", "noflops"]      # the adapter's warn_once dedupes by key


def test_step_work_books_the_ideal_seconds_at_the_dtype_peak():
    policy, model, _ = _policy()
    record = _run_step(policy, model)
    # the fp32 peak 1 GFLOP/s, no other dtype's: every counted FLOP ran in fp32
    peaks = [1e9 if name == "fp32" else None for name in DTYPE_NAMES]
    work = policy.step_work(record, 8.0, None, None, peaks)
    assert work.ideal_s == pytest.approx(STEP / 1e9)
    assert work.model_flops == STEP and work.num_tokens == 8.0
