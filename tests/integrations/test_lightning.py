"""MFUCallback with a real ``lightning.Trainer`` on CPU (one process), and Fabric.

A token MLP (Embedding -> Linear -> ReLU -> Linear) whose FLOPs are written by
hand below, in-memory token batches, a made-up peak (``peak_tflops``) so MFU
is defined on the CPU. The logged figures are read back from the loggers' own
files -- CSVLogger's ``metrics.csv``, TensorBoardLogger's event files -- and
compared with the hand count and the window time the callback used
(``callback.history``). On the fake GPU driver (tests/conftest.py) the clock
is the simulated GPU timeline, so there the window time is known exactly too.

No timing asserts: times are whatever the clock said; only the arithmetic
around them is checked (the 2-rank DDP run is in test_lightning_ddp.py).
"""
from __future__ import annotations

import csv
import glob
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning")

from lightning.fabric import Fabric  # noqa: E402
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger  # noqa: E402

from mfu_tracker import user_gpu_spec  # noqa: E402
from mfu_tracker.integrations._lightning_precision import PRECISION_DTYPES  # noqa: E402
from mfu_tracker.integrations.fabric import (  # noqa: E402
    dtype_from_precision,
    fabric_dtype,
    fabric_tracker,
)
from mfu_tracker.integrations.lightning import MFUCallback  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PEAK_TFLOPS = 0.5          # 5e11 FLOP/s: a made-up CPU peak so MFU is defined
PEAK = PEAK_TFLOPS * 1e12
VOCAB, EMB, HIDDEN = 64, 16, 32
B, S = 2, 8                # micro-batch: 2 sequences of 8 tokens
MS = 1_000_000             # ns

# Hand count of one micro-batch (N = B x S = 16 token rows). Each Linear is
# one mm of [N, d_in] x [d_in, d_out]: 2·N·d_in·d_out forward, and its
# backward needs grad of the input (the embedding output requires grad: the
# embedding is trained) and of the weight, 2·N·d_in·d_out each: 6·N·d_in·d_out.
# Embedding lookup, ReLU, cross-entropy: 0.
#   Linear(16, 32): 6 · 16 · 16 · 32 = 49,152
#   Linear(32, 64): 6 · 16 · 32 · 64 = 196,608
MICRO_BATCH_FLOPS = 6 * B * S * EMB * HIDDEN + 6 * B * S * HIDDEN * VOCAB
assert MICRO_BATCH_FLOPS == 245_760


class TokenMLP(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Embedding(VOCAB, EMB), torch.nn.Linear(EMB, HIDDEN),
                                       torch.nn.ReLU(), torch.nn.Linear(HIDDEN, VOCAB))

    def training_step(self, batch, batch_idx):
        ids = batch["input_ids"] if isinstance(batch, dict) else batch
        logits = self.net(ids)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), ids.reshape(-1))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Tokens(torch.utils.data.Dataset):
    """n sequences of S token ids, as {"input_ids": ...} (or bare tensors)."""

    def __init__(self, n: int = 64, as_dict: bool = True) -> None:
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, VOCAB, (n, S), generator=g)
        self.as_dict = as_dict

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return {"input_ids": self.ids[i]} if self.as_dict else self.ids[i]


def fit(tmp_path, callbacks, *, loggers=None, dataset=None, max_steps=6, **overrides):
    kwargs = dict(accelerator="cpu", devices=1, max_steps=max_steps, log_every_n_steps=2,
                  enable_progress_bar=False, enable_checkpointing=False,
                  enable_model_summary=False, default_root_dir=str(tmp_path),
                  logger=loggers if loggers is not None else False)
    kwargs.update(overrides)
    trainer = L.Trainer(callbacks=callbacks, **kwargs)
    loader = torch.utils.data.DataLoader(dataset or Tokens(), batch_size=B)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's advice; the peak warning is tested on its own
        trainer.fit(TokenMLP(), loader)
    return trainer


def check_entry(entry, per_step_flops, tokens_per_step, *, prefix="throughput"):
    """An emitted window against the hand count and the callback's clock."""
    steps, window_s = entry["steps"], entry["window_s"]
    assert steps >= 1 and window_s > 0
    assert entry["step_flops"] == [pytest.approx(per_step_flops, rel=1e-12)] * steps
    model_flops = per_step_flops * steps
    assert entry["model_flops"] == pytest.approx(model_flops, rel=1e-12)
    m = entry["metrics"]
    # MFU = Σ model FLOPs / window time / peak
    assert m[f"{prefix}/mfu"] == pytest.approx(model_flops / window_s / PEAK, rel=1e-9)
    assert m[f"{prefix}/hfu"] == pytest.approx(model_flops / window_s / PEAK, rel=1e-9)  # no recompute
    assert m[f"{prefix}/achieved_tflops"] == pytest.approx(model_flops / window_s / 1e12, rel=1e-9)
    assert m[f"{prefix}/tokens_per_sec"] == pytest.approx(tokens_per_step * steps / window_s, rel=1e-9)
    assert m[f"{prefix}/step_time_s"] == pytest.approx(window_s / steps, rel=1e-9)
    assert m[f"{prefix}/peak_tflops"] == pytest.approx(PEAK_TFLOPS, rel=1e-12)


def csv_rows(logger_dir) -> list:
    """metrics.csv rows that carry the MFU keys (Lightning's own rows aside)."""
    files = glob.glob(str(Path(logger_dir) / "**" / "metrics.csv"), recursive=True)
    assert len(files) == 1, files
    with open(files[0], newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("throughput/mfu")]


def tensorboard_scalars(logger_dir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = glob.glob(str(Path(logger_dir) / "**" / "events.out.tfevents*"), recursive=True)
    assert events
    acc = EventAccumulator(os.path.dirname(events[0]))
    acc.Reload()
    return acc.Scalars(tag)


# ---- the loggers' files ------------------------------------------------------------


@pytest.mark.parametrize("accumulate", [1, 2])
def test_csv_and_tensorboard_files_hold_the_counted_mfu(tmp_path, accumulate):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    loggers = [CSVLogger(str(tmp_path / "csv")), TensorBoardLogger(str(tmp_path / "tb"))]
    fit(tmp_path, [cb], loggers=loggers, accumulate_grad_batches=accumulate)
    # an optimizer step = `accumulate` micro-batches, each counted on its shapes
    per_step = accumulate * MICRO_BATCH_FLOPS           # 245,760 or 491,520
    # logs at steps 2, 4, 6; window = log_every_n_steps = 2, warmup 1 -> 1, 2, 2 steps
    assert [e["step"] for e in cb.history] == [2, 4, 6]
    assert [e["steps"] for e in cb.history] == [1, 2, 2]
    for entry in cb.history:
        check_entry(entry, per_step, accumulate * B * S)

    rows = csv_rows(tmp_path / "csv")
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    for row, entry in zip(rows, cb.history):
        for key, value in entry["metrics"].items():
            assert float(row[key]) == pytest.approx(value, rel=1e-12)
        # from the file alone: mfu = achieved TFLOP/s / peak TFLOP/s, and the
        # achieved rate is the hand count over the window time
        mfu = float(row["throughput/mfu"])
        assert mfu == pytest.approx(float(row["throughput/achieved_tflops"])
                                    / float(row["throughput/peak_tflops"]), rel=1e-9)
        assert mfu == pytest.approx(per_step * entry["steps"] / entry["window_s"] / PEAK, rel=1e-9)

    for key in ("mfu", "hfu", "tokens_per_sec", "achieved_tflops", "step_time_s", "peak_tflops"):
        scalars = tensorboard_scalars(tmp_path / "tb", f"throughput/{key}")
        assert [s.step for s in scalars] == [2, 4, 6]
        for scalar, entry in zip(scalars, cb.history):
            # event files store float32
            assert scalar.value == pytest.approx(entry["metrics"][f"throughput/{key}"], rel=1e-6)


def test_mlflow_and_wandb_loggers_hold_the_counted_mfu(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    wandb = pytest.importorskip("wandb")
    from lightning.pytorch.loggers import MLFlowLogger, WandbLogger
    from mlflow.tracking import MlflowClient

    sys.path.insert(0, str(ROOT / "tests" / "integrations"))
    from _wandb_log import history_rows
    from mlflow.tracking._tracking_service import utils as mlflow_uri

    # MLFlowLogger sets mlflow's process-wide tracking URI; restore it after the
    # test so a later test's MLFLOW_TRACKING_URI is not overridden by this one.
    monkeypatch.setattr(mlflow_uri, "_tracking_uri", mlflow_uri._tracking_uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    uri = (tmp_path / "mlruns").as_uri()
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    loggers = [MLFlowLogger(experiment_name="mfu", tracking_uri=uri),
               WandbLogger(project="mfu", offline=True, save_dir=str(tmp_path))]
    try:
        fit(tmp_path, [cb], loggers=loggers, max_steps=4)
    finally:
        wandb.finish()
        wandb.teardown()  # stops wandb-core: the transaction log is complete on disk
    assert [e["step"] for e in cb.history] == [2, 4]  # the loops below are not vacuous
    for entry in cb.history:
        check_entry(entry, MICRO_BATCH_FLOPS, B * S)
    keys = ("mfu", "hfu", "tokens_per_sec", "achieved_tflops", "peak_tflops")

    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("mfu").experiment_id])
    for key in keys:
        history = sorted(client.get_metric_history(run.info.run_id, f"throughput/{key}"),
                         key=lambda m: m.step)
        assert [m.step for m in history] == [2, 4]
        for metric, entry in zip(history, cb.history):
            assert metric.value == pytest.approx(entry["metrics"][f"throughput/{key}"], rel=1e-12)

    (log,) = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "run-*.wandb"))
    rows = [r for r in history_rows(Path(log)) if "throughput/mfu" in r]
    assert [r["trainer/global_step"] for r in rows] == [2, 4]
    for row, entry in zip(rows, cb.history):
        for key in keys:
            assert row[f"throughput/{key}"] == pytest.approx(entry["metrics"][f"throughput/{key}"],
                                                            rel=1e-12)


def test_gpu_clock_never_synchronizes_and_gives_the_exact_window(tmp_path, fake):
    """On the fake driver each micro-batch takes 2 ms of the GPU timeline, so
    the window time is known: MFU = 2 x 245,760 / (2 x 2 ms) / 5e11 exactly."""
    fake.set_work_ns(0)
    fake.set_lag_ns(0)
    syncs = []

    class Clock(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            fake.advance(2 * MS)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            syncs.append(fake.sync_calls())

    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, clock="cuda")
    fit(tmp_path, [Clock(), cb], accumulate_grad_batches=2)
    assert len(syncs) == 12 and set(syncs) == {0}   # 6 steps x 2 micro-batches, no wait
    assert [e["steps"] for e in cb.history] == [1, 2, 2]
    for entry in cb.history:
        assert entry["window_s"] == pytest.approx(entry["steps"] * 0.004, rel=1e-9)  # 2 x 2 ms
        # 491,520 FLOPs / 0.004 s / 5e11 FLOP/s = 2.4576e-4
        assert entry["metrics"]["throughput/mfu"] == pytest.approx(2.4576e-4, rel=1e-9)
        check_entry(entry, 2 * MICRO_BATCH_FLOPS, 2 * B * S)


def test_phases_give_the_waterfall_on_the_gpu_timeline_and_the_jsonl_log(tmp_path, fake):
    """Each hook of a step advances the fake's clock by a set time just before
    MFUCallback's own mark at that hook (the Clock callback runs first), so each
    phase's seconds are known exactly: data 1 ms (batch end -> next batch
    start), forward 3 ms, backward 2 ms, 0.5 ms between phases with none
    running (after backward -> before the optimizer: clipping, zero_grad):
    idle, out of other (docs/waterfall.md), optimizer 1.5 ms. Period 8 ms."""
    fake.set_work_ns(0)
    fake.set_lag_ns(0)
    advance_ms = {"on_train_batch_start": 1.0, "on_before_backward": 3.0,
                  "on_after_backward": 2.0, "on_before_optimizer_step": 0.5,
                  "on_train_batch_end": 1.5}

    class Clock(L.Callback):
        pass

    for hook, ms in advance_ms.items():
        setattr(Clock, hook, lambda self, *a, _ms=ms, **k: fake.advance(int(_ms * MS)))

    log = tmp_path / "mfu.jsonl"
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, clock="cuda", log_path=log)
    fit(tmp_path, [Clock(), cb])
    assert [e["steps"] for e in cb.history] == [1, 2, 2]
    for entry in cb.history:
        m = entry["metrics"]
        assert entry["window_s"] == pytest.approx(entry["steps"] * 0.008, rel=1e-9)
        for phase, seconds in (("data", 1e-3), ("forward", 3e-3), ("backward", 2e-3),
                               ("optimizer", 1.5e-3)):
            assert m[f"throughput/phase_s/{phase}"] == pytest.approx(seconds, rel=1e-9)
        mfu = m["throughput/mfu"]          # 245,760 / 0.008 s / 5e11 = 6.144e-5
        assert mfu == pytest.approx(6.144e-5, rel=1e-9)
        assert m["throughput/mfu_lost/data"] == pytest.approx(1 / 8, rel=1e-9)
        assert m["throughput/mfu_lost/optimizer"] == pytest.approx(1.5 / 8, rel=1e-9)
        assert m["throughput/mfu_lost/idle"] == pytest.approx(0.5 / 8, rel=1e-9)
        assert m["throughput/idle_s"] == pytest.approx(0.5e-3, rel=1e-9)
        assert m["throughput/mfu_lost/other"] == pytest.approx(0.0, abs=1e-12)
        assert m["throughput/mfu_lost/recompute"] == pytest.approx(0.0, abs=1e-15)
        assert m["throughput/mfu_lost/compute"] == pytest.approx(5 / 8 - mfu, rel=1e-9)
        shares = [v for k, v in m.items() if k.startswith("throughput/mfu_lost/")]
        assert math.fsum([mfu] + shares) == 1.0
    # the JSONL log holds exactly what was logged, one line per logging step
    import json

    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines = [line for line in lines if "record" not in line]   # not the run / run-end records
    assert [line["step"] for line in lines] == [2, 4, 6]
    for line, entry in zip(lines, cb.history):
        assert {k: v for k, v in line.items() if k not in ("step", "time", "ledger")} == \
            entry["metrics"]


def test_phases_false_gives_no_waterfall(tmp_path):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, phases=False)
    fit(tmp_path, [cb])
    assert cb.history and not any("mfu_lost" in k or "phase_s" in k
                                  for e in cb.history for k in e["metrics"])


def test_manual_optimization_with_accumulation_counts_both_micro_batches(tmp_path):
    class Manual(TokenMLP):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False

        def training_step(self, batch, batch_idx):
            optimizer = self.optimizers()
            self.manual_backward(super().training_step(batch, batch_idx))
            if batch_idx % 2 == 1:        # accumulate 2 micro-batches by hand
                optimizer.step()
                optimizer.zero_grad()

    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=4, log_every_n_steps=2,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, logger=False, callbacks=[cb])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(Manual(), torch.utils.data.DataLoader(Tokens(), batch_size=B))
    assert [e["step"] for e in cb.history] == [2, 4]
    for entry in cb.history:
        check_entry(entry, 2 * MICRO_BATCH_FLOPS, 2 * B * S)   # 491,520 FLOPs, 32 tokens


def test_tensor_batches_count_their_elements_as_tokens(tmp_path):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    fit(tmp_path, [cb], dataset=Tokens(as_dict=False), max_steps=4)
    assert [e["step"] for e in cb.history] == [2, 4]
    for entry in cb.history:
        check_entry(entry, MICRO_BATCH_FLOPS, B * S)


def test_count_every_scales_the_uncounted_steps(tmp_path):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, count_every=3, warmup=0, log_every_n_steps=6)
    fit(tmp_path, [cb], max_steps=6)
    (entry,) = cb.history
    assert entry["steps"] == 6   # steps 1 and 4 counted, the others equal shapes: the same
    check_entry(entry, MICRO_BATCH_FLOPS, B * S)


class SingleTokens(Tokens):
    """One token id per item: a batch is a 1-D tensor of B ids."""

    def __getitem__(self, i: int):
        return self.ids[i][0]


def test_one_dimensional_integer_batches_count_their_elements_as_tokens(tmp_path):
    # N = B = 2 token rows per micro-batch: 6 · 2 · 16 · 32 + 6 · 2 · 32 · 64 = 30,720 FLOPs
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    fit(tmp_path, [cb], dataset=SingleTokens(), max_steps=4)
    assert [e["step"] for e in cb.history] == [2, 4]
    for entry in cb.history:
        check_entry(entry, 30_720, B)


def test_window_sets_the_steps_each_log_covers(tmp_path):
    # logs every 2 optimizer steps; window=1: each log covers its last step only
    # (the default window, log_every_n_steps, covers 2: 1, 2 after the warm-up step)
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS, window=1)
    fit(tmp_path, [cb], max_steps=4)
    assert [e["step"] for e in cb.history] == [2, 4]
    assert [e["steps"] for e in cb.history] == [1, 1]
    for entry in cb.history:
        check_entry(entry, MICRO_BATCH_FLOPS, B * S)


# ---- mixed precision: each dtype at its own peak; the optimizer's own work ---------------

# The first Linear under bf16 autocast, the second in fp32 (hand count as above):
# bf16 6 · 16 · 16 · 32 = 49,152 and fp32 6 · 16 · 32 · 64 = 196,608 FLOPs per micro-batch.
BF16_FLOPS, FP32_FLOPS = 6 * B * S * EMB * HIDDEN, 6 * B * S * HIDDEN * VOCAB
MIXED_SPEC_TFLOPS = {"bf16": 2.0, "fp32": 0.5}   # a made-up device with two peaks


class MatmulSGD(torch.optim.SGD):
    """SGD whose step also runs a matmul after the closure (as Shampoo's or Muon's
    preconditioning does): 2 · 32 · 16 · 32 = 32,768 FLOPs per step that are the
    optimizer's, never model FLOPs. (Lightning runs forward and backward inside
    optimizer.step's closure; on_before_optimizer_step follows it.)"""

    def step(self, closure=None):
        loss = super().step(closure)
        with torch.no_grad():
            weight = self.param_groups[0]["params"][1]      # Linear(16, 32).weight [32, 16]
            weight @ weight.T                                # [32, 16] @ [16, 32]
        return loss


class TwoDtypeMLP(TokenMLP):
    def training_step(self, batch, batch_idx):
        ids = batch["input_ids"]
        embedding, first, relu, last = self.net
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = relu(first(embedding(ids)))
        logits = last(hidden.float())
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), ids.reshape(-1))

    def configure_optimizers(self):
        return MatmulSGD(self.parameters(), lr=0.1)


def fit_two_dtypes(tmp_path, cb):
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=6, log_every_n_steps=3,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, default_root_dir=str(tmp_path), logger=False,
                        callbacks=[cb])
    trainer.fit(TwoDtypeMLP(), torch.utils.data.DataLoader(Tokens(), batch_size=B))


def test_mfu_mixed_charges_each_dtype_to_its_peak_and_the_optimizer_nothing(tmp_path):
    cb = MFUCallback(spec=user_gpu_spec(MIXED_SPEC_TFLOPS, name="two peaks"), dtype="fp32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_two_dtypes(tmp_path, cb)
    assert [e["steps"] for e in cb.history] == [2, 3]       # warm-up 1, window 3
    for entry in cb.history:
        steps, window_s, m = entry["steps"], entry["window_s"], entry["metrics"]
        # the model's FLOPs only: MatmulSGD's 32,768 per step are not in them
        assert entry["step_flops"] == [BF16_FLOPS + FP32_FLOPS] * steps
        # mfu: every FLOP at the fp32 peak; mfu_mixed: bf16 FLOPs at 2e12, fp32 at 5e11
        assert m["throughput/mfu"] == pytest.approx(
            (BF16_FLOPS + FP32_FLOPS) * steps / window_s / 0.5e12, rel=1e-9)
        ideal_s = steps * (BF16_FLOPS / 2e12 + FP32_FLOPS / 0.5e12)   # 4.1779e-7 s per step
        assert m["throughput/mfu_mixed"] == pytest.approx(ideal_s / window_s, rel=1e-9)


def test_a_dtype_without_a_peak_warns_once_and_leaves_mfu_mixed_out(tmp_path):
    # the device has an fp32 peak only: the bf16 FLOPs have none -> no mfu_mixed, one warning
    cb = MFUCallback(spec=user_gpu_spec({"fp32": 0.5}, name="fp32 only"), dtype="fp32")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_two_dtypes(tmp_path, cb)
    ours = [str(w.message) for w in caught if "no peak for" in str(w.message)]
    assert len(ours) == 1 and "bf16" in ours[0] and "mfu_mixed is left out" in ours[0]
    assert len(cb.history) == 2
    for entry in cb.history:
        assert "throughput/mfu_mixed" not in entry["metrics"]
        assert entry["metrics"]["throughput/mfu"] > 0


# ---- no peak, failing loggers and hooks, bad input --------------------------------------


def test_cpu_without_a_peak_omits_mfu_with_one_warning(tmp_path):
    cb = MFUCallback()  # no peak: a CPU has no datasheet row
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=4, log_every_n_steps=2,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, logger=CSVLogger(str(tmp_path / "csv")),
                        callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(TokenMLP(), torch.utils.data.DataLoader(Tokens(), batch_size=B))
    ours = [w for w in caught if "mfu_tracker" in str(w.message)]
    assert len(ours) == 1 and "MFU is unavailable" in str(ours[0].message)
    assert cb.resolved_dtype == "fp32"
    assert [e["step"] for e in cb.history] == [2, 4]  # the loop below is not vacuous
    for entry in cb.history:
        assert "throughput/mfu" not in entry["metrics"]
        assert "throughput/peak_tflops" not in entry["metrics"]
        assert entry["metrics"]["throughput/tokens_per_sec"] == pytest.approx(
            entry["steps"] * B * S / entry["window_s"])


class Broken(Logger):
    """A logger whose every write fails."""

    calls = 0

    @property
    def name(self):
        return "broken"

    @property
    def version(self):
        return 0

    def log_hyperparams(self, params, *args, **kwargs):
        pass

    def log_metrics(self, metrics, step=None):
        Broken.calls += 1
        raise OSError("disk full")


def test_a_failing_logger_never_stops_training(tmp_path):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    Broken.calls = 0
    loggers = [Broken(), CSVLogger(str(tmp_path / "csv"))]
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=6, log_every_n_steps=2,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, logger=loggers, callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(TokenMLP(), torch.utils.data.DataLoader(Tokens(), batch_size=B))
    assert trainer.global_step == 6
    assert Broken.calls == 3   # tried at every logging step
    ours = [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]
    assert len(ours) == 1 and "Broken.log_metrics failed" in ours[0] and "disk full" in ours[0]
    # the logger after it still got every log
    rows = csv_rows(tmp_path / "csv")
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    for row, entry in zip(rows, cb.history):
        assert float(row["throughput/mfu"]) == pytest.approx(entry["metrics"]["throughput/mfu"])


def test_a_failing_hook_warns_once_and_never_raises(tmp_path, monkeypatch):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)

    def broken(*args):
        raise RuntimeError("broken dtype detection")

    monkeypatch.setattr(cb, "_resolve_dtype", broken)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=4, log_every_n_steps=2,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, logger=False, callbacks=[cb])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(TokenMLP(), torch.utils.data.DataLoader(Tokens(), batch_size=B))
    assert trainer.global_step == 4
    ours = [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]
    assert len(ours) == 1 and "on_train_start failed" in ours[0]
    assert list(cb.history) == []


def test_an_exception_in_training_leaves_no_counter_active(tmp_path):
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    class Failing(TokenMLP):
        def training_step(self, batch, batch_idx):
            if batch_idx == 2:
                raise ValueError("bad batch")
            return super().training_step(batch, batch_idx)

    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=6, enable_progress_bar=False,
                        enable_checkpointing=False, enable_model_summary=False, logger=False,
                        callbacks=[cb])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="bad batch"):
            trainer.fit(Failing(), torch.utils.data.DataLoader(Tokens(), batch_size=B))
    assert _get_current_dispatch_mode_stack() == []


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(sample_batch="input_ids"), TypeError, "sample_batch"),
    (dict(dtype="bf17"), ValueError, "dtype"),
    (dict(num_gpus=0), ValueError, "num_gpus"),
    (dict(hfu_backward_factor=3.0, backward_factor=4.0), ValueError, "not both"),
    (dict(metric_prefix=None), TypeError, "metric_prefix"),
    (dict(peak_tflops=math.nan), ValueError, "peak_tflops"),
    (dict(spec="H100"), TypeError, "spec"),
    (dict(count_every=-1), ValueError, "count_every"),
    (dict(log_every_n_steps=0), ValueError, "log_every_n_steps"),
    (dict(window=0), ValueError, "window"),
    (dict(causal_attention="quarter"), ValueError, "causal_attention"),
    (dict(clock="gpu"), ValueError, "clock"),
])
def test_bad_arguments_raise_at_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        MFUCallback(**kwargs)


# ---- dtype from the precision plugin ------------------------------------------------------


@pytest.mark.parametrize("precision, dtype", [
    ("bf16-mixed", "bf16"), ("bf16-true", "bf16"), ("bf16", "bf16"),
    ("16-mixed", "fp16"), ("16-true", "fp16"), (16, "fp16"), ("16", "fp16"),
    ("32-true", "fp32"), (32, "fp32"), ("64-true", "fp64"), (64, "fp64"),
    ("transformer-engine", "fp8"), ("transformer-engine-float16", "fp8"),
    ("nf4", None), (None, None), (True, None),
])
def test_dtype_from_precision_strings(precision, dtype):
    assert dtype_from_precision(precision) == dtype


@pytest.mark.parametrize("text", ["BF16-Mixed", " bf16-mixed ", "BF16-MIXED\n"])
def test_precision_strings_are_read_whatever_their_case_and_blanks(text):
    assert dtype_from_precision(text) == "bf16"


def test_every_lightning_precision_string_has_a_dtype():
    from typing import get_args

    from lightning.fabric.plugins.precision.precision import (
        _PRECISION_INPUT_INT,
        _PRECISION_INPUT_STR,
        _PRECISION_INPUT_STR_ALIAS,
    )

    names = get_args(_PRECISION_INPUT_STR) + get_args(_PRECISION_INPUT_STR_ALIAS)
    assert {str(n) for n in get_args(_PRECISION_INPUT_INT)} <= set(PRECISION_DTYPES)
    assert set(names) == set(PRECISION_DTYPES)


def test_dtype_from_precision_plugins():
    from lightning.pytorch.plugins.precision import (
        DoublePrecision,
        HalfPrecision,
        MixedPrecision,
        Precision,
    )

    assert dtype_from_precision(HalfPrecision("bf16-true")) == "bf16"
    assert dtype_from_precision(HalfPrecision("16-true")) == "fp16"
    assert dtype_from_precision(MixedPrecision("bf16-mixed", "cpu")) == "bf16"
    assert dtype_from_precision(DoublePrecision()) == "fp64"
    assert dtype_from_precision(Precision()) == "fp32"

    class TransformerEngineLike:   # TransformerEnginePrecision needs transformer_engine installed
        precision = "transformer-engine"

    class BitsandbytesLike:        # BitsandbytesPrecision: its compute dtype, precision left default
        precision = "32-true"
        dtype = torch.float16

    assert dtype_from_precision(TransformerEngineLike()) == "fp8"
    assert dtype_from_precision(BitsandbytesLike()) == "fp16"


def test_fp32_on_cuda_is_tf32_when_matmuls_allow_it():
    previous = torch.backends.cuda.matmul.allow_tf32
    precision = torch.get_float32_matmul_precision()
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        assert dtype_from_precision("32-true", device=torch.device("cuda", 0)) == "fp32"
        torch.set_float32_matmul_precision("high")
        assert dtype_from_precision("32-true", device=torch.device("cuda", 0)) == "tf32"
        assert dtype_from_precision("32-true", device=torch.device("cpu")) == "fp32"
        assert dtype_from_precision("bf16-mixed", device=torch.device("cuda", 0)) == "bf16"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
        torch.set_float32_matmul_precision(precision)


def test_trainer_precision_sets_the_dtype(tmp_path):
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    fit(tmp_path, [cb], precision="bf16-mixed", max_steps=2)
    assert cb.resolved_dtype == "bf16"
    assert cb.history[-1]["dtype"] == "bf16"
    assert MFUCallback(dtype="float16", peak_tflops=PEAK_TFLOPS)._resolve_dtype(None, None) == "fp16"


# ---- Fabric --------------------------------------------------------------------------


def test_fabric_tracker_logs_through_fabric_log_dict(tmp_path):
    from lightning.fabric.loggers import CSVLogger as FabricCSVLogger

    from mfu_tracker import param_bytes, profile_flops

    fabric = Fabric(accelerator="cpu", devices=1, precision="bf16-mixed",
                    loggers=FabricCSVLogger(str(tmp_path / "csv")))
    fabric.launch()
    module = TokenMLP()
    model, optimizer = fabric.setup(module, torch.optim.SGD(module.parameters(), lr=0.1))
    loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(Tokens(), batch_size=B))
    # the FLOPs per step, counted once on a batch (fp32, outside autocast) = the hand count
    sample = next(iter(loader))["input_ids"]
    assert profile_flops(module.net, (sample,), with_backward=True) == MICRO_BATCH_FLOPS
    tracker = fabric_tracker(fabric, MICRO_BATCH_FLOPS, peak_tflops=PEAK_TFLOPS, window=4,
                             param_bytes=param_bytes(module))
    assert fabric_dtype(fabric) == "bf16" and tracker.peak.dtype == "bf16"
    logged = []
    tracker.step()   # starts the clock
    for step, batch in enumerate(loader, 1):
        loss = model.training_step(batch, step)
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        tracker.step(num_tokens=batch["input_ids"].numel())
        if step % 4 == 0:
            metrics = tracker.metrics()
            summary = tracker.summary()
            fabric.log_dict(metrics, step=step)
            logged.append((metrics, summary))
        if step == 8:
            break
    tracker.close()
    fabric.logger.finalize("success")
    rows = csv_rows(tmp_path / "csv")
    assert [int(r["step"]) for r in rows] == [4, 8]
    for row, (metrics, summary) in zip(rows, logged):
        steps, window_s = summary["steps"], summary["window_s"]
        assert steps == (3 if row["step"] == "4" else 4)   # warm-up 1
        # MFU = Σ FLOPs / window time / peak
        assert float(row["throughput/mfu"]) == pytest.approx(
            steps * MICRO_BATCH_FLOPS / window_s / PEAK, rel=1e-9)
        assert float(row["throughput/tokens_per_sec"]) == pytest.approx(
            steps * B * S / window_s, rel=1e-9)
        assert float(row["throughput/mfu"]) == pytest.approx(metrics["throughput/mfu"], rel=1e-12)


# ---- the example ---------------------------------------------------------------------


def test_lightning_example_logs_mfu_with_accumulation_and_bf16(tmp_path):
    pytest.importorskip("transformers")
    from transformers import GPT2Config

    from mfu_tracker import transformer_flops

    env = dict(os.environ, MFU_TRACKER_PEAK_TFLOPS="0.05", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "lightning_mfu.py"), "--steps", "4",
                           "--log-every", "2", "--accumulate", "2", "--seq-len", "16",
                           "--batch-size", "2", "--precision", "bf16-mixed", "--device", "cpu",
                           "--output-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "user peak 0.05 TFLOP/s" in out and "dtype bf16" in out
    rows = re.findall(r"^\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+\d+\.\d\s+(\d+)$", out, re.M)
    assert [r[0] for r in rows] == ["2", "4"]
    # the example's model (examples/_common.py "gpt2-tiny"), every matmul's 2·m·n·k
    # of a 2 x 16 micro-batch, x 2 micro-batches per optimizer step
    config = GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1024, n_positions=1024)
    micro = transformer_flops(config, seq_len=16, batch_size=2, formula="matmul").model_flops
    for _, mfu, hfu, flops in rows:
        assert int(flops) == 2 * micro and float(mfu) > 0 and float(hfu) == float(mfu)
    assert len(csv_rows(tmp_path / "out" / "csv")) == 2
    assert tensorboard_scalars(tmp_path / "out" / "tb", "throughput/mfu")


# ---- packaging -----------------------------------------------------------------------


def test_import_mfu_tracker_is_free_of_lightning():
    code = ("import sys, mfu_tracker, mfu_tracker.integrations, mfu_tracker.integrations.fabric\n"
            "from mfu_tracker.integrations.fabric import dtype_from_precision\n"
            "assert dtype_from_precision('bf16-mixed') == 'bf16'\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('lightning', 'lightning_fabric', 'pytorch_lightning', 'transformers')]\n"
            "assert not bad, bad\n"
            "import mfu_tracker.integrations.lightning\n"
            "assert 'lightning.pytorch' in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_lightning_extra_is_declared():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'lightning = ["lightning>=2.1"]' in text


# ---- the job ledger: a fit resumed from a checkpoint (docs/goodput.md) --------


class Validated(TokenMLP):
    """TokenMLP with a validation loop, which clocks itself, and a clocked
    checkpoint save (the phases the callback marks must hold them)."""

    clocked = None

    def validation_step(self, batch, batch_idx):
        return self.training_step(batch, batch_idx)

    # the epoch hooks run inside on_validation_start / _end (the callback's marks)
    def on_validation_epoch_start(self):
        import time

        self._started = time.perf_counter()

    def on_validation_epoch_end(self):
        import time

        if not self.trainer.sanity_checking:
            self.clocked["eval"].append(time.perf_counter() - self._started)


def _fit_resumable(tmp_path, log, max_steps, clocked, ckpt_path=None):
    import time

    from lightning.pytorch.callbacks import ModelCheckpoint

    saver = ModelCheckpoint(dirpath=str(tmp_path / "ckpt"), every_n_train_steps=4, save_top_k=-1,
                            filename="{step}")
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=max_steps, log_every_n_steps=2,
                        enable_progress_bar=False, enable_model_summary=False, logger=False,
                        default_root_dir=str(tmp_path), val_check_interval=3,
                        num_sanity_val_steps=0, limit_val_batches=2,
                        callbacks=[MFUCallback(peak_tflops=PEAK_TFLOPS, log_path=log), saver])
    save = trainer.save_checkpoint

    def clocked_save(*args, **kwargs):   # the Trainer's own method, clocked (under the callback's)
        start = time.perf_counter()
        try:
            return save(*args, **kwargs)
        finally:
            clocked["checkpoint"].append(time.perf_counter() - start)

    trainer.save_checkpoint = clocked_save
    module = Validated()
    module.clocked = clocked
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=B)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, loader, torch.utils.data.DataLoader(Tokens(8), batch_size=B),
                    ckpt_path=ckpt_path)
    return trainer


def test_a_resumed_fit_shows_the_job_ledger(tmp_path, capsys):
    """Run 1 fits 6 steps (a checkpoint at step 4, validation at 3 and 6); run
    2 resumes from the step-4 checkpoint and fits to 8: steps 4, 5 twice."""
    import json

    from mfu_tracker.cli import main

    log = tmp_path / "job.jsonl"
    clocked = [{"checkpoint": [], "eval": []} for _ in range(2)]
    _fit_resumable(tmp_path, log, 6, clocked[0])
    assert os.path.exists(tmp_path / "ckpt" / "step=4.ckpt")
    _fit_resumable(tmp_path, log, 8, clocked[1], ckpt_path=str(tmp_path / "ckpt" / "step=4.ckpt"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    starts = [i for i, line in enumerate(lines) if line.get("record") == "run"]
    runs = [lines[starts[0]:starts[1]], lines[starts[1]:]]
    assert [run[0]["start_step"] for run in runs] == [0, 4]      # trainer.global_step
    for run, clock, (first, end) in zip(runs, clocked, ((0, 6), (4, 8))):
        spans = [(x["ledger"]["from_step"], x["ledger"]["to_step"]) for x in run if "ledger" in x]
        assert spans[0][0] == first and spans[-1][1] == end
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        assert run[-1]["record"] == "run_end"
        phases = [x["ledger"]["phase_s"] for x in run if "ledger" in x]
        for phase in ("checkpoint", "eval"):
            assert clock[phase]              # the wrapped save and the validation hooks bracket them
            assert math.fsum(p.get(phase, 0.0) for p in phases) >= math.fsum(clock[phase])

    status = main(["goodput", str(log), "--json", str(tmp_path / "g.json")])
    out, err = capsys.readouterr()
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    lost = math.fsum(x["ledger"]["step_s"] for x in runs[0]
                     if "ledger" in x and x["ledger"]["from_step"] >= 4)
    assert g["badput_s/lost_progress"] == pytest.approx(lost, rel=1e-12) and lost > 0
    assert math.fsum([g["goodput"], *(v for k, v in g.items() if k.startswith("badput/"))]) == 1.0
    # job MFU by hand: 8 kept steps of 245,760 FLOPs over the device-seconds x 5e11
    device_s = (runs[0][-1]["time"] - runs[0][0]["process_start"]) + \
        (runs[1][-1]["time"] - runs[0][-1]["time"])
    assert g["job_mfu"] == pytest.approx(8 * MICRO_BATCH_FLOPS / device_s / PEAK, rel=1e-9)
    status = main(["report", str(log), "--out", str(tmp_path / "r.png"), "--run", "all",
                   "--numbers"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "runs: the file holds 2" in out and "  run=2 start_step=4 " in out
