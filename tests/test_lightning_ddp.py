"""MFUCallback under ``lightning.Trainer(strategy="ddp", devices=2)`` on CPU (gloo).

Real processes: the test runs this file as a script, and Lightning's own DDP
launcher starts rank 1 by running the same command again (as for any user
script). Every rank writes its ``callback.history`` -- its local window
(FLOPs, tokens, window time) and the logged (global) figures --, and the row
it contributed to each aggregation (its phase seconds per step, step time,
interval time: what combine() receives); rank 0's loggers write their files.
The global figures are recomputed here by hand from the per-rank windows and
rows: MFU = Σ_r (FLOPs_r / window_r) / Σ_r peak_r, each ``mfu_lost`` share
the peak-weighted mean of the ranks' shares, ``phase_s`` the ranks' mean, the
straggler the rank with the most busy seconds (step time less exposed
communication). Rank 1 sleeps ``DELAY_S`` in every training_step, so the
straggler is rank 1 and rank 0's wait in the all-reduce is its exposed
communication -- on a quiet machine; the test checks the straggler the rows
name, whatever the machine's load made of them.

Only a hang is timed (the subprocess timeout).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "integrations"))  # test_lightning
# the model, its batches and its hand count (245,760 FLOPs per micro-batch)
from test_lightning import MICRO_BATCH_FLOPS, PEAK, PEAK_TFLOPS, B, S  # noqa: E402

LAUNCH_TIMEOUT_S = 300  # a run takes ~30 s on 2 busy cores; only a hang gets near this
DELAY_S = 0.04          # rank 1's sleep in every training_step (the forward phase)


def worker(out: Path, accumulate: int) -> None:
    """One rank (run as a script: rank 0 by the test, rank 1 by Lightning)."""
    import time

    import lightning as L
    import torch
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
    from test_lightning import TokenMLP, Tokens

    from _rows import record_rows
    from mfu_tracker.integrations.lightning import MFUCallback

    class SlowRank1(TokenMLP):
        """Rank 1 is the straggler: DELAY_S more in every forward."""

        def training_step(self, batch, batch_idx):
            if self.global_rank == 1:
                time.sleep(DELAY_S)
            return super().training_step(batch, batch_idx)

    # record the row this rank contributes to each aggregation (its own figures)
    recorded: dict = {}
    record_rows(recorded)
    cb = MFUCallback(peak_tflops=PEAK_TFLOPS)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=6,
                        log_every_n_steps=2, accumulate_grad_batches=accumulate,
                        enable_progress_bar=False, enable_checkpointing=False,
                        enable_model_summary=False, default_root_dir=str(out),
                        logger=[CSVLogger(str(out / "csv")), TensorBoardLogger(str(out / "tb"))],
                        callbacks=[cb])
    trainer.fit(SlowRank1(), torch.utils.data.DataLoader(Tokens(), batch_size=B))
    rank = trainer.global_rank
    (out / f"rank{rank}.json").write_text(json.dumps({
        "rank": rank, "world_size": trainer.world_size, "history": list(cb.history),
        "rows": recorded.get("rows", []),
        "counters": cb._tracker.distributed_counters() if cb._tracker is not None else None,
    }))


def launch(tmp_path: Path, accumulate: int) -> list:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    env.pop("LOCAL_RANK", None)
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(tmp_path), str(accumulate)],
                          env=env, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]


def test_ddp_two_ranks_log_the_global_mfu_on_every_rank(tmp_path):
    """With gradient accumulation 2 (accumulation alone: test_lightning.py)."""
    pytest.importorskip("lightning")
    accumulate = 2
    ranks = launch(tmp_path, accumulate)
    assert [r["world_size"] for r in ranks] == [2, 2]
    per_step = accumulate * MICRO_BATCH_FLOPS          # each rank's own micro-batches
    histories = [r["history"] for r in ranks]
    for history in histories:
        assert [e["step"] for e in history] == [2, 4, 6]
        assert [e["steps"] for e in history] == [1, 2, 2]
        for entry in history:
            assert entry["step_flops"] == [per_step] * entry["steps"]
            assert entry["tokens"] == accumulate * B * S * entry["steps"]
    # one collective per logging step, on every rank
    assert [r["counters"]["aggregations"] for r in ranks] == [3, 3]
    assert [len(r["rows"]) for r in ranks] == [3, 3]    # one row per aggregation
    for index, entries in enumerate(zip(*histories)):
        m = entries[0]["metrics"]
        assert all(e["metrics"] == m for e in entries)     # the same global figures on every rank
        # by hand: sum of per-rank achieved FLOP/s over the sum of the ranks' peaks
        achieved = [e["model_flops"] / e["window_s"] for e in entries]
        tokens = [e["tokens"] / e["window_s"] for e in entries]
        assert m["throughput/mfu"] == pytest.approx(sum(achieved) / (2 * PEAK), rel=1e-9)
        assert m["throughput/achieved_tflops"] == pytest.approx(sum(achieved) * 1e-12, rel=1e-9)
        assert m["throughput/peak_tflops"] == pytest.approx(2 * PEAK_TFLOPS, rel=1e-12)
        assert m["throughput/tokens_per_sec"] == pytest.approx(sum(tokens), rel=1e-9)
        assert m["throughput/mfu_rank_min"] == pytest.approx(min(achieved) / PEAK, rel=1e-9)
        assert m["throughput/mfu_rank_max"] == pytest.approx(max(achieved) / PEAK, rel=1e-9)
        assert m["throughput/step_time_s"] == pytest.approx(
            max(e["window_s"] / e["steps"] for e in entries), rel=1e-9)
        # the rows each rank contributed: its own window, as its history says
        rows = [r["rows"][index] for r in ranks]
        assert [row["rank"] for row in rows] == [0, 1]
        for row, e in zip(rows, entries):
            assert row["steps"] == e["steps"]
            assert row["window_s"] == pytest.approx(e["window_s"], rel=1e-12)
        check_rank_figures_by_hand(m, rows)
        # the DDP strategy's all-reduce, observed with no hook: one bucket
        # per optimizer step (accumulation syncs once) holding every parameter,
        # Embedding(64, 16) + Linear(16, 32) + Linear(32, 64):
        # (64 * 16 + 16 * 32 + 32 + 32 * 64 + 64) * 4 B = 14,720 B
        assert m["throughput/comm_bytes/all_reduce"] == (64 * 16 + 16 * 32 + 32 + 32 * 64 + 64) * 4
        assert m["throughput/comm_s/all_reduce"] >= 0
        # exposed communication is its own share of the waterfall, which still adds
        # up to 1 exactly
        lost = {k: v for k, v in m.items() if "/mfu_lost/" in k}
        assert "throughput/mfu_lost/communication" in lost
        assert m["throughput/phase_s/communication"] >= 0
        assert math.fsum([m["throughput/mfu"], *lost.values()]) == 1.0
        # rank 1 sleeps DELAY_S in each of its 2 forwards per step; the straggler is the
        # rank with the most busy seconds per step (its period less its exposed
        # communication) as the rows say -- rank 1, unless the machine held rank 0 up
        # for longer
        assert rows[1]["phase_forward_s"] >= accumulate * DELAY_S
        busy = [row["step_time_s"] - row["phase_communication_s"] for row in rows]
        assert m["throughput/straggler_rank"] == (1 if busy[1] > busy[0] else 0)

    # rank 0's loggers wrote the global figures
    import csv
    import glob

    (path,) = glob.glob(str(tmp_path / "csv" / "**" / "metrics.csv"), recursive=True)
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("throughput/mfu")]
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    for row, entry in zip(rows, histories[0]):
        for key, value in entry["metrics"].items():
            assert float(row[key]) == pytest.approx(value, rel=1e-12)

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = glob.glob(str(tmp_path / "tb" / "**" / "events.out.tfevents*"), recursive=True)
    assert len(events) == 1   # rank 0 only
    acc = EventAccumulator(os.path.dirname(events[0]))
    acc.Reload()
    scalars = acc.Scalars("throughput/mfu")
    assert [s.step for s in scalars] == [2, 4, 6]
    for scalar, entry in zip(scalars, histories[0]):
        assert scalar.value == pytest.approx(entry["metrics"]["throughput/mfu"], rel=1e-6)


def check_rank_figures_by_hand(m: dict, rows: list) -> None:
    """The logged global figures of one aggregation, by hand from each rank's row
    (peaks are equal here, but the weights are written out as combine() defines them)."""
    peaks = [row["peak_flops_per_sec"] for row in rows]
    assert peaks == [PEAK, PEAK]
    step = [row["step_time_s"] for row in rows]
    phases = {name: [row[f"phase_{name}_s"] for row in rows]
              for name in ("data", "forward", "backward", "optimizer", "communication")}
    assert all(None not in values for values in phases.values())   # every phase marked

    def weighted(shares):                        # sum_r P_r share_r / sum_r P_r
        return math.fsum(p * x for p, x in zip(peaks, shares)) / math.fsum(peaks)

    for name, seconds in phases.items():         # phase_s: the mean over ranks
        assert m[f"throughput/phase_s/{name}"] == pytest.approx((seconds[0] + seconds[1]) / 2,
                                                                rel=1e-12)
    for name in ("data", "communication", "optimizer"):   # share = t_phase / T per rank
        expected = weighted([t / T for t, T in zip(phases[name], step)])
        assert m[f"throughput/mfu_lost/{name}"] == pytest.approx(expected, rel=1e-9, abs=1e-15)
    # a row carries its window's sums per second (docs/step-records.md)
    mfu = [row["sums"]["model_flops"] / p for row, p in zip(rows, peaks)]
    hfu = [row["sums"]["executed_flops"] / p for row, p in zip(rows, peaks)]
    # recompute = hfu - mfu; compute = (t_forward + t_backward) / T - mfu - recompute
    assert m["throughput/mfu_lost/recompute"] == pytest.approx(
        weighted([h - u for h, u in zip(hfu, mfu)]), rel=1e-9, abs=1e-15)
    assert m["throughput/mfu_lost/compute"] == pytest.approx(weighted(
        [(f + b) / T - h for f, b, T, h in zip(phases["forward"], phases["backward"], step, hfu)]),
        rel=1e-9)
    assert m["throughput/mfu_rank_mean"] == pytest.approx((mfu[0] + mfu[1]) / 2, rel=1e-12)
    # straggler: the most busy seconds per step (T - exposed communication), lowest rank on
    # ties; straggler_lost: the other rank's wait for it over the job's step time (max T)
    busy = [T - c for T, c in zip(step, phases["communication"])]
    straggler = 0 if busy[0] >= busy[1] else 1
    assert m["throughput/straggler_rank"] == straggler
    assert m["throughput/straggler_lost"] == pytest.approx(
        (busy[straggler] - busy[1 - straggler]) / max(step), rel=1e-9, abs=1e-15)
    # slowest rank: the longest host interval per step since the previous aggregation
    interval = [row["interval_s"] / row["interval_steps"] for row in rows]
    assert m["throughput/slowest_rank"] == (0 if interval[0] >= interval[1] else 1)
    assert m["throughput/step_time_rank_max"] == pytest.approx(max(interval), rel=1e-12)
    assert m["throughput/step_time_rank_min"] == pytest.approx(min(interval), rel=1e-12)


if __name__ == "__main__":
    worker(Path(sys.argv[1]), int(sys.argv[2]))
