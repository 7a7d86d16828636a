"""MFU of one model under eager attention, SDPA, torch.compile and activation checkpointing.

    python examples/benchmark_mfu.py --model gpt2 --dtype bf16 --seq-len 1024 --steps 20
    python examples/benchmark_mfu.py                      # tiny GPT-2 on the CPU, < 1 min

Each row trains the same model for --warmup + --steps optimizer steps through
MFUOptimizerWrapper: FLOPs counted on every step (model FLOPs for MFU,
executed FLOPs -- recompute included -- for HFU), end-to-end step periods
from the step tracker. The compiled row's model / executed split comes from a
profile of the uncompiled model. On a CPU the peak is a measured GEMM peak,
labelled as such (a CPU has no datasheet row).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from _common import MODELS, batch, build_model, default_device, ensure_peak, print_recheck  # noqa: E402

ROWS = ("eager", "sdpa", "compile", "checkpointing")
TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
                "tf32": torch.float32}


def run_row(row: str, args: argparse.Namespace, device: torch.device) -> dict:
    from mfu_tracker.optim import MFUOptimizerWrapper

    model = build_model(args.model, attn="eager" if row == "eager" else "sdpa").to(device)
    if row == "checkpointing":
        enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
        enable()
    model.train()
    sample = batch(model, args.batch_size, args.seq_len, device)
    optimizer = MFUOptimizerWrapper(torch.optim.AdamW(model.parameters(), lr=1e-4), model,
                                    sample_batch=sample, dtype=args.dtype, warmup=args.warmup,
                                    window=max(1, args.steps), device=device)
    if row == "compile":
        optimizer.profile()  # the model / executed split, on the uncompiled model
        model = torch.compile(model, backend=args.compile_backend)
    autocast = torch.autocast(device.type, dtype=TORCH_DTYPES[args.dtype],
                              enabled=args.dtype in ("bf16", "fp16"))
    for _ in range(args.warmup + args.steps):
        data = batch(model, args.batch_size, args.seq_len, device)
        with optimizer.track_step(num_tokens=data["input_ids"].numel()):
            with autocast:
                loss = model(**data).loss
            loss.backward()
        optimizer.step()
    optimizer.close()  # resolves every step (waits for the GPU once, at the end)
    return optimizer.summary()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2-tiny", choices=MODELS)
    parser.add_argument("--dtype", default=None, choices=sorted(TORCH_DTYPES),
                        help="default: bf16 on a GPU, fp32 on a CPU")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default=str(default_device()))
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {ROWS}")
    parser.add_argument("--compile-backend", default="inductor")
    args = parser.parse_args()
    device = torch.device(args.device)
    args.dtype = args.dtype or ("bf16" if device.type == "cuda" else "fp32")
    if args.dtype == "tf32" and device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    rows = [r for r in args.rows.split(",") if r]
    unknown = set(rows) - set(ROWS)
    if unknown:
        raise SystemExit(f"unknown --rows {sorted(unknown)}; choose from {ROWS}")
    label = ensure_peak(device, args.dtype)
    print(f"{args.model}, batch {args.batch_size} x {args.seq_len} tokens, {args.dtype}, {device}; "
          f"{args.steps} steps after {args.warmup} warm-up\npeak: {label}\n")
    print(f"{'config':<14} {'MFU':>8} {'HFU':>8} {'ms/step':>9} {'tokens/s':>11} {'TFLOP/s':>9}")
    for row in rows:
        s = run_row(row, args, device)

        def fmt(key: str, width: int, scale: float = 1.0, digits: int = 4) -> str:
            value = s.get(key)
            return f"{'n/a':>{width}}" if value is None else f"{value * scale:>{width}.{digits}f}"

        print(f"{row:<14} {fmt('mfu', 8)} {fmt('hfu', 8)} {fmt('step_time_s', 9, 1e3, 1)} "
              f"{fmt('tokens_per_sec', 11, 1.0, 0)} {fmt('achieved_tflops', 9)}")
    print(f"\nMFU = model FLOPs / step time / peak ({label}); step time is end to end "
          "(forward, backward, optimizer).")


if __name__ == "__main__":
    main()
    print_recheck()   # a measured peak, measured again: did a busy machine skew it?
