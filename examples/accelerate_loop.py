"""MFU of a bare Hugging Face Accelerate loop: ``Accelerator`` + ``MFUOptimizerWrapper``.

Wrap the optimizer *before* ``accelerator.prepare()``; put one
``track_step(zero_grad=False)`` block around each micro-batch's forward and
``accelerator.backward()``; inside ``accelerator.accumulate(model)`` the
prepared optimizer steps (and the wrapper closes an optimizer step) only when
the gradients sync, so an optimizer step's FLOPs, tokens and time cover all
its micro-batches.

    python examples/accelerate_loop.py --steps 8 --gradient-accumulation-steps 2

Runs on a CPU (a measured or MFU_TRACKER_PEAK_TFLOPS peak) or a GPU (the
datasheet peak for the Accelerator's mixed precision).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from _common import build_model, ensure_peak, print_recheck  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps")
    parser.add_argument("--gradient-accumulation-steps", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--mixed-precision", default="no", choices=("no", "bf16", "fp16", "fp8"))
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even with a GPU")
    parser.add_argument("--log-every", type=int, default=2, help="optimizer steps between prints")
    args = parser.parse_args()

    from accelerate import Accelerator

    from mfu_tracker import MFUOptimizerWrapper

    accumulation = args.gradient_accumulation_steps
    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision,
                              gradient_accumulation_steps=accumulation)
    # the peak's dtype: what the matmuls run in under this mixed precision
    dtype = {"no": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}[args.mixed_precision]
    accelerator.print(ensure_peak(accelerator.device, dtype), "| dtype", dtype)

    model = build_model("gpt2-tiny")
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (args.steps * accumulation * args.batch_size, args.seq_len),
                        generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader([{"input_ids": row, "labels": row} for row in ids],
                                         batch_size=args.batch_size)

    # Wrap first, then prepare: Accelerate's optimizer drives the wrapper.
    optimizer = MFUOptimizerWrapper(torch.optim.AdamW(model.parameters(), lr=3e-4), model,
                                    dtype=dtype, window=args.log_every,
                                    device=accelerator.device)
    model, prepared, loader = accelerator.prepare(model, optimizer, loader)

    model.train()
    for micro, batch in enumerate(loader, 1):
        with accelerator.accumulate(model):
            with optimizer.track_step(zero_grad=False, num_tokens=batch["input_ids"].numel()):
                loss = model(**batch).loss
                accelerator.backward(loss)
            prepared.step()          # steps the wrapper only when the gradients sync
            prepared.zero_grad()
        if accelerator.sync_gradients:
            step = micro // accumulation
            if step % args.log_every == 0:
                m = optimizer.metrics()          # never blocks; under `accelerate launch` a
                #                                  collective: every rank, global figures
                mfu = m.get("throughput/mfu")
                tokens = m.get("throughput/tokens_per_sec")
                accelerator.print(f"step {step:4d}  MFU {'n/a' if mfu is None else f'{mfu:.6f}'}  "
                      f"tokens/s {'n/a' if tokens is None else f'{tokens:.1f}'}")

    optimizer.close()                            # resolves every step (one wait)
    s = optimizer.summary()
    model_flops, executed_flops = optimizer.last_step_flops or (None, None)
    accelerator.print(f"model FLOPs per optimizer step: {model_flops}")
    accelerator.print(f"end to end over {s['steps']} optimizer steps: window_s {s['window_s']!r} "
          f"mfu {s['mfu']!r} peak_flops_per_sec {s['peak_flops_per_sec']!r}")


if __name__ == "__main__":
    main()
    print_recheck()   # a measured peak, measured again: did a busy machine skew it?
