"""The kernel breakdown of a profiled step: ``make run``'s GPT-2 on CPU, eager or compiled.

The same model, batch and loop as ``examples/train_gpt2.py`` (GPT-2 4x256,
batch 8 x seq 128, AdamW, the phases marked for the waterfall), with
``Tracker(profile_steps=N)``: the first step after the warm-up, then every
N-th, runs under ``torch.profiler`` and a FLOP counter and is reduced to a
kernel breakdown (GEMM, attention, fused, reduction, elementwise, optimizer,
other, memory, communication, idle), logged with the metrics. Then::

    mfu-tracker report eager.jsonl --out eager.png      # the breakdown panel + advice
    mfu-tracker advise eager.jsonl                       # what to change
    mfu-tracker report eager.jsonl compiled.jsonl --out compare.png   # side by side

``make docs-breakdown`` runs it eager and compiled and draws
``docs/kernel-breakdown.png``.

    python examples/kernel_breakdown.py --log-path eager.jsonl [--compile] [--steps 8]
        [--peak-from eager.jsonl]
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from mfu_tracker import Tracker, measured_gpu_spec, param_bytes, transformer_flops
from train_gpt2 import add_model_args, build_model  # the make run model (examples/ is the script's directory)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-path", required=True, help="the JSONL metrics log to write")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--profile-every", type=int, default=4,
                        help="profile the first step after the warm-up, then every N-th")
    add_model_args(parser)
    parser.add_argument("--peak-from", default=None,
                        help="take the peak from this log's run record (another run of this "
                             "script on the same machine: both MFUs against one peak)")
    return parser.parse_args()


def peak_of_log(path: str) -> float:
    """The measured peak (TFLOP/s) in the run record of a metrics log."""
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record.get("record") == "run" and record.get("peak_tflops"):
                return float(record["peak_tflops"])
    raise SystemExit(f"--peak-from: no run record with peak_tflops in {path}")


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    model = build_model(args)
    model.train()
    flops = transformer_flops(model.config, seq_len=args.seq_len, batch_size=args.batch_size,
                              formula="matmul").model_flops
    if args.peak_from:      # the other run's measurement: one peak for both
        peak = {"peak_tflops": peak_of_log(args.peak_from)}
    else:                   # a CPU has no datasheet peak: measured
        peak = {"spec": measured_gpu_spec("fp32", "cpu")}
    tracker = Tracker(flops, dtype="fp32", window=args.steps, warmup=2, **peak,
                      param_bytes=param_bytes(model), log_path=args.log_path,
                      profile_steps=args.profile_every)
    run = torch.compile(model) if args.compile else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    corpus = torch.randint(0, args.vocab_size, (4, args.batch_size, args.seq_len))
    tokens = args.batch_size * args.seq_len
    started = time.perf_counter()
    for step in range(args.steps):
        tracker.step(tokens if step else None)
        with tracker.phase("data"):
            input_ids = corpus[step % corpus.shape[0]].clone()
        with tracker.phase("forward"):
            loss = run(input_ids=input_ids, labels=input_ids).loss
        with tracker.phase("backward"):
            loss.backward()
        with tracker.phase("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        tracker.metrics("throughput")
        print(f"step {step}: loss {loss.item():.3f}", flush=True)
    tracker.step(tokens)
    tracker.metrics("throughput")
    breakdown = tracker.last_breakdown
    tracker.close()
    mode = "compiled" if args.compile else "eager"
    print(f"{args.steps} steps ({mode}) in {time.perf_counter() - started:.1f} s; log: "
          f"{args.log_path}")
    if breakdown is not None:
        shares = ", ".join(f"{name} {share:.3f}" for name, share in breakdown.shares().items()
                           if share)
        print(f"profiled step {breakdown.step} ({breakdown.step_s * 1e3:.1f} ms): {shares}")


if __name__ == "__main__":
    main()
