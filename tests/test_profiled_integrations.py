"""``profile_steps=`` on every integration: a real run of each (CPU) logs
the profiled steps' kernel breakdowns, at the steps the schedule names.

HF Trainer and Lightning (the callbacks), Fabric (``fabric_tracker``) and
``MFUOptimizerWrapper`` (the Accelerate path); each with a JSONL log read
back. Bad values are named at construction.
"""
from __future__ import annotations

import json
import math
import warnings

import pytest
import torch

from mfu_tracker.breakdown._record import ROWS, figures_of_record

PEAK_TFLOPS = 0.5          # a made-up CPU peak


def breakdowns(path):
    rows = [json.loads(line) for line in open(path)]
    out = [figures_of_record(r) for r in rows if r.get("record") == "breakdown"]
    for b in out:           # each one's rows add up to its step
        assert math.fsum(b.time_of(row) for row in ROWS) == pytest.approx(b.step_s, rel=1e-9)
        assert b.classes["gemm"].count > 0 and b.classes["gemm"].flops > 0
    return out


def test_hf_trainer(tmp_path):
    pytest.importorskip("accelerate")
    from tests.integrations.test_hf_trainer import Fixed, gpt2, train
    from mfu_tracker.integrations.hf_trainer import MFUCallback

    log = tmp_path / "hf.jsonl"
    callback = MFUCallback(peak_tflops=PEAK_TFLOPS, log_path=str(log), profile_steps=2, warmup=1)
    train(tmp_path, gpt2(), Fixed(), callback, max_steps=5)
    # warm-up 1: the first step after it is 2, then every 2nd
    assert [b.step for b in breakdowns(log)] == [2, 4]


def test_lightning(tmp_path):
    pytest.importorskip("lightning")
    from tests.integrations.test_lightning import fit
    from mfu_tracker.integrations.lightning import MFUCallback

    log = tmp_path / "lightning.jsonl"
    fit(tmp_path, [MFUCallback(peak_tflops=PEAK_TFLOPS, log_path=str(log), profile_steps=[3],
                               warmup=1)], max_steps=4)
    assert [b.step for b in breakdowns(log)] == [3]


def test_fabric(tmp_path):
    L = pytest.importorskip("lightning")
    from mfu_tracker.integrations.fabric import fabric_tracker

    fabric = L.Fabric(accelerator="cpu", devices=1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = fabric.setup(model, optimizer)
    log = tmp_path / "fabric.jsonl"
    tracker = fabric_tracker(fabric, 1e6, peak_tflops=PEAK_TFLOPS, log_path=str(log),
                             profile_steps=2, warmup=1)
    tracker.step()
    x = torch.randn(16, 32)
    for _ in range(4):
        fabric.backward(model(x).square().mean())
        optimizer.step()
        optimizer.zero_grad()
        tracker.step()
    tracker.close()
    assert [b.step for b in breakdowns(log)] == [2, 4]
    assert tracker.last_breakdown.step == 4


def test_optimizer_wrapper(tmp_path):
    from mfu_tracker import MFUOptimizerWrapper

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    log = tmp_path / "wrapper.jsonl"
    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, dtype="fp32",
                              peak_tflops=PEAK_TFLOPS, log_path=str(log), profile_steps=[2, 3],
                              warmup=1)
    x = torch.randn(16, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            with opt.track_step(num_tokens=16):
                model(x).square().mean().backward()
            opt.step()
    opt.tracker.close()
    found = breakdowns(log)
    assert [b.step for b in found] == [2, 3]
    assert opt.tracker.last_breakdown.step == 3


@pytest.mark.parametrize("make", ["hf", "lightning", "wrapper"])
def test_bad_profile_steps_are_named_at_construction(make):
    if make == "hf":
        pytest.importorskip("transformers")
        from mfu_tracker.integrations.hf_trainer import MFUCallback
        build = lambda **kw: MFUCallback(**kw)   # noqa: E731
    elif make == "lightning":
        pytest.importorskip("lightning")
        from mfu_tracker.integrations.lightning import MFUCallback as LCallback
        build = lambda **kw: LCallback(**kw)   # noqa: E731
    else:
        from mfu_tracker import MFUOptimizerWrapper
        model = torch.nn.Linear(2, 2)
        build = lambda **kw: MFUOptimizerWrapper(  # noqa: E731
            torch.optim.SGD(model.parameters(), lr=0.1), model, dtype="fp32", **kw)
    with pytest.raises(ValueError, match="profile_steps: -2 is negative"):
        build(profile_steps=-2)
    with pytest.raises(TypeError, match="profile_steps: expected"):
        build(profile_steps="every")
