"""The README's two bare-loop patterns, verbatim, on a tiny GPT-2.

    python examples/bare_loop.py [--steps 8] [--device cpu] [--compile-backend inductor]

1. ``track()`` around forward + backward, FLOPs profiled once before training.
2. ``MFUOptimizerWrapper``: profile before ``torch.compile``, ``track_step()``
   per step, ``optimizer.step()`` after the block.

The code inside the two ``# --- README`` blocks is the README's; the only
change is in the prints: a figure the device cannot give (MBU on a CPU, which
has no memory-bandwidth row) prints as "n/a" instead of crashing the f-string.
On a CPU the peak is a measured GEMM peak, labelled as such.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from _common import build_model, default_device, ensure_peak, print_recheck  # noqa: E402


class Fig(float):
    """A float that formats None as n/a (README prints use :.3f)."""

    def __new__(cls, value):
        obj = super().__new__(cls, float("nan") if value is None else value)
        obj.missing = value is None
        return obj

    def __format__(self, spec):
        return "n/a" if self.missing else super().__format__(spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--device", default=str(default_device()))
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile backend for pattern 2 (eager: no compiler, fast)")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(ensure_peak(device, "bf16"))
    if args.compile_backend != "inductor":
        torch.compile = functools.partial(torch.compile, backend=args.compile_backend)

    model = build_model("gpt2-tiny").to(device)
    vocab = model.config.vocab_size

    def loader(batch_size):
        for _ in range(args.steps):
            ids = torch.randint(0, vocab, (batch_size, args.seq_len), device=device)
            yield {"input_ids": ids, "labels": ids}

    # The README profiles one row (batch["input_ids"][:1]): its loop's batches
    # must then be one row too, or the FLOPs are batch_size x too low.
    dataloader = loader(1)
    batch = next(loader(1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    print("== pattern 1: track() ==")
    # --- README: Context manager (bare PyTorch)
    from mfu_tracker import track, profile_flops, param_bytes

    # Profile once on the uncompiled model before training begins
    sample = {"input_ids": batch["input_ids"][:1]}
    flops = profile_flops(model, kwargs=sample, with_backward=True)
    p_bytes = param_bytes(model)

    for batch in dataloader:
        optimizer.zero_grad()
        with track(flops, p_bytes, dtype="bf16") as result:
            loss = model(**batch).loss
            loss.backward()
        optimizer.step()

        print(f"MFU: {Fig(result.mfu):.3f}  MBU: {Fig(result.mbu):.3f}  {result.elapsed_sec*1000:.0f} ms/step")
    # --- end README

    print("== pattern 2: MFUOptimizerWrapper ==")
    dataloader = loader(args.batch_size)
    sample_ids = next(loader(args.batch_size))["input_ids"]
    step = 0
    # --- README: Optimizer wrapper
    from mfu_tracker import MFUOptimizerWrapper

    base_optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    optimizer = MFUOptimizerWrapper(
        base_optimizer, model,
        sample_batch={"input_ids": sample_ids},
        dtype="bf16",
    )

    # Profile before compiling — FlopCounterMode may not trace compiled graphs
    optimizer.profile()
    model = torch.compile(model)

    for batch in dataloader:
        with optimizer.track_step() as result:  # calls zero_grad() at block entry
            loss = model(**batch).loss
            loss.backward()
        optimizer.step()                        # outside the timing window

        if step % 10 == 0:
            print(f"MFU {Fig(result.mfu):.3f}  MBU {Fig(result.mbu):.3f}")
    # --- end README

    m = optimizer.metrics()
    # Keys keep everything after the prefix: "mfu_lost/data", "phase_s/forward", ...
    print("end to end over", optimizer.summary()["steps"], "optimizer steps:",
          {k.split("/", 1)[1]: round(v, 6) for k, v in m.items()})
    optimizer.close()


if __name__ == "__main__":
    main()
    print_recheck()   # a measured peak, measured again: did a busy machine skew it?
