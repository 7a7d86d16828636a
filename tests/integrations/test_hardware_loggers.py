"""The hardware counters and memory headroom through the frameworks' own
loggers: a HuggingFace Trainer run read back from its TensorBoard event
files, a Lightning run from CSVLogger's metrics.csv.

The device is the fake GPU driver (step times), the fake NVML built from the
real nvml.h (scripted GPM metrics) and the fake caching-allocator statistics
(tests/_fake_allocator.py). Each step sleeps 60 ms on the host so that a
window of two steps passes GPM's 100 ms minimum.
"""
from __future__ import annotations

import csv
import glob
import os
import time
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from _fake_allocator import GIB, FakeAllocator  # noqa: E402
from _fake_nvml import UUID, fake_nvml  # noqa: E402

MS = 1_000_000
HOLD_S = 0.06       # per step: two steps per log pass 100 ms
TENSOR, DRAM = 20.0, 31.0   # percent, as NVML reports them


@pytest.fixture
def device(monkeypatch, fake):
    nvml = fake_nvml(monkeypatch)
    nvml.script_gpm(TENSOR, DRAM, 80.0, 30.0)
    fake.set_work_ns(0)
    fake.set_lag_ns(0)
    allocator = FakeAllocator().install(monkeypatch, torch)
    allocator.malloc(2 * GIB)                     # held before training
    yield nvml, allocator
    nvml.lib.fake_nvml_reset()


def _check_hardware(rows, read):
    """Every logged row's hardware and memory keys, by hand: 20 % -> 0.2, 31 % -> 0.31;
    the running peak 2 GiB, then 8 GiB once step 3 held 6 GiB more."""
    assert len(rows) == 3
    for i, row in enumerate(rows):
        assert read(row, "throughput/hw/tensor_active") == pytest.approx(0.2, rel=1e-6)
        assert read(row, "throughput/hw/dram_bw_util") == pytest.approx(0.31, rel=1e-6)
        assert read(row, "throughput/hw/sm_active") == pytest.approx(0.8, rel=1e-6)
        mfu = read(row, "throughput/mfu")
        assert read(row, "throughput/hw/mfu_consistency") == pytest.approx(mfu / 0.2, rel=1e-5)
        peak = 2.0 if i == 0 else 8.0
        assert read(row, "throughput/memory/peak_allocated_gib") == peak
        assert read(row, "throughput/memory/peak_allocated_frac") == pytest.approx(peak / 80.0)
        assert read(row, "throughput/memory/alloc_retries") == 0.0


def test_hf_trainer_logs_the_hardware_keys_to_tensorboard(tmp_path, device, fake):
    transformers = pytest.importorskip("transformers")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

    from mfu_tracker.integrations.hf_trainer import MFUCallback

    _, allocator = device

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            fake.advance(2 * MS)
            if state.global_step == 2:            # step 3: 6 GiB more, then freed
                allocator.malloc(6 * GIB)
                allocator.free(6 * GIB)

        def on_step_end(self, args, state, control, **kwargs):
            time.sleep(HOLD_S)

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=64,
                                       n_positions=64, bos_token_id=0, eos_token_id=0))
    ids = torch.randint(1, 64, (32, 8), generator=torch.Generator().manual_seed(1))
    data = [{"input_ids": row, "labels": row} for row in ids]
    cb = MFUCallback(peak_tflops=0.5, dtype="bf16", clock="cuda", telemetry=UUID, memory=True)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=6,
                             per_device_train_batch_size=2, logging_steps=2,
                             report_to=["tensorboard"], use_cpu=True, save_strategy="no",
                             disable_tqdm=True, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # the self-check's (CPU speed vs 20 %)
        Trainer(model=model, args=args, train_dataset=data, callbacks=[Clock(), cb]).train()
    assert transformers is not None
    assert [e["step"] for e in cb.history] == [2, 4, 6]

    events = glob.glob(str(tmp_path / "out" / "**" / "events.out.tfevents*"), recursive=True)
    acc = EventAccumulator(os.path.dirname(events[0]))
    acc.Reload()
    scalars = {tag: {s.step: s.value for s in acc.Scalars(tag)}
               for tag in acc.Tags()["scalars"] if tag.startswith("train/throughput/")}
    rows = [{tag[len("train/"):]: values[step] for tag, values in scalars.items()
             if step in values} for step in (2, 4, 6)]
    _check_hardware(rows, lambda row, key: row[key])
    for row, entry in zip(rows, cb.history):      # the file holds what was logged
        for key in ("throughput/hw/tensor_active", "throughput/memory/peak_reserved_gib"):
            assert row[key] == pytest.approx(entry["metrics"][key], rel=1e-6)   # float32


def test_lightning_logs_the_hardware_keys_to_csv(tmp_path, device, fake):
    L = pytest.importorskip("lightning")
    from lightning.pytorch.loggers import CSVLogger

    from mfu_tracker.integrations.lightning import MFUCallback

    _, allocator = device

    class Clock(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            fake.advance(2 * MS)
            if batch_idx == 2:
                allocator.malloc(6 * GIB)
                allocator.free(6 * GIB)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            time.sleep(HOLD_S)

    class TokenMLP(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.net = torch.nn.Sequential(torch.nn.Embedding(64, 16), torch.nn.Linear(16, 64))

        def training_step(self, batch, batch_idx):
            return torch.nn.functional.cross_entropy(self.net(batch).reshape(-1, 64),
                                                     batch.reshape(-1))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    cb = MFUCallback(peak_tflops=0.5, dtype="bf16", clock="cuda", telemetry=UUID, memory=True)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=6, log_every_n_steps=2,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, default_root_dir=str(tmp_path),
                        logger=CSVLogger(str(tmp_path / "csv")), callbacks=[Clock(), cb])
    loader = torch.utils.data.DataLoader(torch.randint(0, 64, (32, 8)), batch_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(TokenMLP(), loader)
    files = glob.glob(str(Path(tmp_path) / "csv" / "**" / "metrics.csv"), recursive=True)
    with open(files[0], newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("throughput/mfu")]
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    _check_hardware(rows, lambda row, key: float(row[key]))
    for row, entry in zip(rows, cb.history):
        for key, value in entry["metrics"].items():
            assert float(row[key]) == pytest.approx(value, rel=1e-12)


def test_fabric_tracker_takes_the_hardware_arguments(tmp_path, device, fake):
    from lightning.fabric import Fabric

    from mfu_tracker.integrations.fabric import fabric_tracker

    _, allocator = device
    fabric = Fabric(accelerator="cpu", devices=1)
    tracker = fabric_tracker(fabric, 5e11, dtype="bf16", peak_tflops=1000.0, clock="cuda",
                             stream=0, warmup=0, telemetry=UUID, memory="window")
    tracker.step()
    for _ in range(2):
        fake.advance(1 * MS)                      # 5e11 FLOPs per 1 ms / 1e15 = MFU 0.5
        tracker.step()
    tracker.flush()
    time.sleep(0.11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # MFU 0.5 vs 20 %: the self-check's warning
        m = tracker.metrics()
    assert m["throughput/hw/tensor_active"] == 0.2
    assert m["throughput/hw/mfu_consistency"] == pytest.approx(0.5 / 0.2)
    assert m["throughput/memory/peak_allocated_gib"] == 2.0
    assert allocator.resets == 2                   # per-window peaks: construction + this edge
