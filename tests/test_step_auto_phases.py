"""Automatic phases in the integrations (docs/waterfall.md): ``MFUOptimizerWrapper``
in a bare loop and ``MFUCallback`` in a ``transformers.Trainer``, on the CPU
clock with injected sleeps (lower bounds only) and the exact waterfall sum."""
from __future__ import annotations

import math
import time
import warnings

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker import MFUOptimizerWrapper  # noqa: E402

PHASE_KEYS = {f"throughput/phase_s/{p}" for p in ("data", "forward", "backward", "optimizer")}


def _lost(m: dict) -> dict:
    return {k: v for k, v in m.items() if k.startswith("throughput/mfu_lost/")}


class SlowStep(torch.optim.SGD):
    def step(self, closure=None):  # type: ignore[override]
        time.sleep(0.004)
        return super().step(closure)


def test_optimizer_wrapper_marks_the_phases():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = MFUOptimizerWrapper(SlowStep(model.parameters(), lr=0.01), model, dtype="fp32",
                              peak_tflops=0.5, clock="cpu", warmup=0, window=4)
    x = torch.randn(16, 32)
    for _ in range(5):
        time.sleep(0.006)                        # the loader
        with opt.track_step(num_tokens=16):
            model(x).sum().backward()
        opt.step()
    m = opt.metrics()
    assert PHASE_KEYS <= set(m)
    assert m["throughput/phase_s/data"] >= 0.006
    assert m["throughput/phase_s/optimizer"] >= 0.004
    assert math.fsum([m["throughput/mfu"], *_lost(m).values()]) == 1.0
    assert opt.tracker.phase_depth() == 1  # the next step's data wait runs


def test_eval_forwards_are_not_marked_and_phases_can_be_off():
    model = torch.nn.Linear(8, 8)
    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, dtype="fp32",
                              peak_tflops=0.5, clock="cpu", warmup=0, phases=False)
    x = torch.randn(4, 8)
    for _ in range(3):
        with opt.track_step(num_tokens=4):
            model(x).sum().backward()
        opt.step()
    assert not any("phase_s" in k or "mfu_lost" in k for k in opt.metrics())
    with pytest.raises(TypeError, match="phases"):
        MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, phases="yes")

    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, dtype="fp32",
                              peak_tflops=0.5, clock="cpu", warmup=0)
    opt.zero_grad()                              # starts the clock: data runs
    model.eval()
    with torch.no_grad():
        model(x)                                 # not a training forward: no switch
    assert opt.tracker.phase_depth() == 1
    model.train()


def test_trainer_callback_marks_the_phases(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from mfu_tracker.integrations.hf_trainer import MFUCallback

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=64,
                                       n_positions=64, bos_token_id=0, eos_token_id=0))
    ids = torch.randint(1, 64, (48, 8), generator=torch.Generator().manual_seed(1))

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return len(ids)

        def __getitem__(self, i):
            return {"input_ids": ids[i], "labels": ids[i]}

    def slow_collate(items):
        time.sleep(0.01)                         # the loader: 10 ms per micro-batch
        batch = torch.stack([x["input_ids"] for x in items])
        return {"input_ids": batch, "labels": batch}

    cb = MFUCallback(peak_tflops=0.5, clock="cpu", warmup=0)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=6,
                             per_device_train_batch_size=2, gradient_accumulation_steps=2,
                             logging_steps=3, report_to=[], use_cpu=True, save_strategy="no",
                             disable_tqdm=True, learning_rate=1e-3, seed=0,
                             dataloader_num_workers=0)
    trainer = Trainer(model=model, args=args, train_dataset=Data(), callbacks=[cb],
                      data_collator=slow_collate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    logged = [entry["metrics"] for entry in cb.history]
    assert logged
    for m in logged:
        assert PHASE_KEYS <= set(m)
        # two micro-batches per optimizer step, each collated in >= 10 ms, from
        # the previous step's boundary on (step 1's were fetched before the
        # clock started: its data wait is not seen; the first window holds it)
        assert m["throughput/phase_s/data"] >= 0.02 * 2 / 3
        assert math.fsum([m["throughput/mfu"], *_lost(m).values()]) == 1.0
    assert logged[-1]["throughput/phase_s/data"] >= 0.02     # steps 4-6: all steady
    assert all(k.startswith("throughput/") for k in logged[-1])


DDP_SCRIPT = r"""
import math, os, tempfile, warnings
import torch, torch.distributed as dist
from mfu_tracker import MFUOptimizerWrapper
store = os.path.join(tempfile.mkdtemp(), "store")
dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 16))
opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, dtype="fp32",
                          peak_tflops=0.5, clock="cpu", warmup=0)
x = torch.randn(4, 16)
with warnings.catch_warnings():
    warnings.simplefilter("error", RuntimeWarning)
    for _ in range(4):
        with opt.track_step(num_tokens=4):
            model(x).sum().backward()
        opt.step()
    m = opt.metrics()
assert "throughput/phase_s/communication" in m, sorted(m)
assert "throughput/mfu_lost/communication" in m
assert math.fsum([m["throughput/mfu"]] + [v for k, v in m.items() if "/mfu_lost/" in k]) == 1.0
dist.destroy_process_group()
print("ok")
"""


def test_optimizer_wrapper_separates_ddp_communication():
    """A DDP model gets the marking communication hook (world size 1, gloo, in
    a subprocess: a process group here would make every later Tracker distributed)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", DDP_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
