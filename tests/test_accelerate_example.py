"""examples/accelerate_loop.py: a bare Accelerate loop (``Accelerator`` +
``MFUOptimizerWrapper``, ``accelerator.backward``, gradient accumulation 2)
run on the CPU as a user would, its printed figures checked against an
independent FLOP count and the arithmetic around the printed window time.

No timing asserts: the window time is whatever the clock said.
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
pytest.importorskip("accelerate")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "accelerate_loop.py"
PEAK_TFLOPS = 0.05


def test_accelerate_loop_counts_every_micro_batch_of_an_optimizer_step(tmp_path):
    from transformers import GPT2Config

    from mfu_tracker import transformer_flops

    env = dict(os.environ, MFU_TRACKER_PEAK_TFLOPS=str(PEAK_TFLOPS), CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=str(ROOT), ACCELERATE_DISABLE_RICH="1")
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "4", "--seq-len", "16",
                           "--batch-size", "2", "--gradient-accumulation-steps", "2", "--cpu",
                           "--log-every", "2"],
                          capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "user peak 0.05 TFLOP/s | dtype fp32" in out
    # a print every 2 optimizer steps (= 4 micro-batches), MFU defined
    rows = re.findall(r"^step\s+(\d+)  MFU (\d+\.\d+)  tokens/s (\d+\.\d)$", out, re.M)
    assert [r[0] for r in rows] == ["2", "4"]
    # the example's model (examples/_common.py "gpt2-tiny"): every matmul's
    # 2·m·n·k of one micro-batch of 2 x 16 tokens, x 2 micro-batches
    config = GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1024, n_positions=1024)
    micro = transformer_flops(config, seq_len=16, batch_size=2, formula="matmul").model_flops
    (flops,) = re.findall(r"^model FLOPs per optimizer step: (\S+)$", out, re.M)
    assert float(flops) == pytest.approx(2 * micro, rel=1e-12)
    steps, window_s, mfu, peak = re.search(
        r"^end to end over (\d+) optimizer steps: window_s (\S+) mfu (\S+) peak_flops_per_sec (\S+)$",
        out, re.M).groups()
    assert int(steps) == 2 and float(peak) == PEAK_TFLOPS * 1e12   # window 2 of 3 timed steps
    # MFU = Σ FLOPs / window time / peak
    assert float(mfu) == pytest.approx(int(steps) * 2 * micro / float(window_s) / float(peak),
                                       rel=1e-9)
