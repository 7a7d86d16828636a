"""Every example runs on a CPU with tiny sizes and prints what it promises.

Each is run as a subprocess (as a user would), a few steps only. No timing
asserts: only that it finished, and the shape of what it printed.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NUMBER = r"(?:\d+\.\d+|n/a)"


def run(script: str, *args: str, tmp_path: Path) -> str:
    env = dict(os.environ, MFU_TRACKER_PEAK_TFLOPS="0.05",  # skip the measurement: a user peak
               CUDA_VISIBLE_DEVICES="", WANDB_MODE="offline", WANDB_DIR=str(tmp_path),
               TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                          text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_bare_loop_runs_both_readme_patterns(tmp_path):
    out = run("bare_loop.py", "--steps", "2", "--seq-len", "16", "--batch-size", "2",
              "--compile-backend", "eager", tmp_path=tmp_path)
    assert "user peak 0.05 TFLOP/s" in out
    track_lines = re.findall(rf"^MFU: ({NUMBER})  MBU: ({NUMBER})  \d+ ms/step$", out, re.M)
    assert len(track_lines) == 2 and all(mfu != "n/a" for mfu, _ in track_lines)
    wrapper_lines = re.findall(rf"^MFU ({NUMBER})  MBU ({NUMBER})$", out, re.M)
    assert len(wrapper_lines) == 2 and all(mfu != "n/a" for mfu, _ in wrapper_lines)
    assert "end to end over 1 optimizer steps" in out   # 2 steps, warm-up 1
    # every key after its prefix, the waterfall's included (not collapsed into one "mfu_lost")
    summary = out[out.index("end to end over"):]
    for key in ("'mfu'", "'mfu_lost/compute'", "'mfu_lost/optimizer'", "'phase_s/forward'"):
        assert key in summary, summary


def test_hf_trainer_example_logs_mfu_with_accumulation_and_checkpointing(tmp_path):
    out = run("hf_trainer_mfu.py", "--steps", "2", "--logging-steps", "1", "--batch-size", "2",
              "--seq-len", "16", "--gradient-accumulation-steps", "2", "--gradient-checkpointing",
              "--report-to", "tensorboard", "--output-dir", str(tmp_path / "out"), tmp_path=tmp_path)
    assert "dtype fp32" in out
    rows = re.findall(r"^\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+\d+\.\d\s", out, re.M)
    assert [r[0] for r in rows] == ["2"]   # step 1 is the warm-up
    step, mfu, hfu = rows[0]
    assert float(hfu) > float(mfu) > 0     # checkpointing recomputes the forward: HFU > MFU
    assert list((tmp_path / "out").rglob("events.out.tfevents*"))


def test_benchmark_prints_a_row_per_configuration(tmp_path):
    out = run("benchmark_mfu.py", "--steps", "1", "--warmup", "1", "--seq-len", "16",
              "--batch-size", "2", "--compile-backend", "eager", tmp_path=tmp_path)
    assert "peak: user peak 0.05 TFLOP/s" in out
    for row in ("eager", "sdpa", "compile", "checkpointing"):
        match = re.search(rf"^{row}\s+(\d+\.\d+)\s+(\d+\.\d+)\s+\d+\.\d\s+\d+\s+\d+\.\d+$", out, re.M)
        assert match, (row, out)
        mfu, hfu = map(float, match.groups())
        assert mfu > 0 and (hfu > mfu if row == "checkpointing" else hfu == pytest.approx(mfu, rel=0.02))


def test_benchmark_rejects_an_unknown_row(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / "benchmark_mfu.py"), "--rows", "fast"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, MFU_TRACKER_PEAK_TFLOPS="0.05"))
    assert proc.returncode != 0 and "unknown --rows" in proc.stderr


def test_goodput_job_crashes_resumes_and_prints_the_ledger(tmp_path):
    out = run("goodput_job.py", "--steps", "10", "--crash-at", "7", "--checkpoint-every", "3",
              "--eval-every", "4", "--log-every", "2", "--seq-len", "16", "--restart-gap", "0.1",
              "--workdir", str(tmp_path / "job"), "--out", str(tmp_path / "g.png"),
              tmp_path=tmp_path)
    assert "run 1: killed after step 7" in out and "run 1 exited with status 1" in out
    assert "metrics.jsonl: 2 run(s)" in out
    runs = re.findall(r"^  run=(\d) start_step=(\d+) ", out, re.M)
    assert runs == [("1", "0"), ("2", "6")]          # resumed from the step-6 checkpoint
    figures = dict(re.findall(r"^(goodput|badput/\w+)=(\S+)$", out, re.M))
    assert float(figures["badput/lost_progress"]) > 0    # steps 6, 7 were trained twice
    assert float(figures["badput/compile"]) != 0 and float(figures["badput/checkpoint"]) > 0
    assert re.search(r"^largest loss: .+, \d+\.\d% of the job's wall time", out, re.M)
    assert (tmp_path / "g.png").stat().st_size > 0
