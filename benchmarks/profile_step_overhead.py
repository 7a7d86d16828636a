"""What a profiled step costs (``Tracker(profile_steps=)``), on CPU.

A small GPT-2 trains under a Tracker with ``profile_steps=EVERY``: every
EVERY-th step runs under torch.profiler + the FLOP counter and is reduced
to a breakdown. Each loop iteration (the training step, then
``tracker.step()``) is timed with ``perf_counter``. A profiled step p costs
iteration p-1's boundary (the profiler's start) plus iteration p (the
profiled step itself and, at its closing boundary, the profiler's stop and
the reduction). Its added time is (iter p-1 + iter p) - 2 x the median of
the unprofiled iterations in the same run, one figure per profiled step;
the median of those is printed with the spread, and amortized over the
default interval (DEFAULT_EVERY steps).

    .venv/bin/python benchmarks/profile_step_overhead.py [--cycles 6] [--layers 2] [--hidden 128]
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=6, help="profiled steps measured")
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=64)
    args = parser.parse_args()

    import transformers

    from mfu_tracker import Tracker
    from mfu_tracker.breakdown._step_profile import DEFAULT_EVERY

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=args.layers, n_embd=args.hidden, n_head=4,
                                  vocab_size=1024, n_positions=args.seq_len)
    model = transformers.GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 1024, (args.batch_size, args.seq_len))
    warmup = 2
    tracker = Tracker(1e9, dtype="fp32", peak_tflops=1.0, warmup=warmup,
                      profile_steps=args.every)
    steps = warmup + 1 + args.cycles * args.every
    iteration = {}
    tracker.step()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(1, steps + 1):
            start = time.perf_counter()
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()
            opt.zero_grad()
            tracker.step()
            iteration[step] = time.perf_counter() - start
    tracker.close()
    first = warmup + 1
    profiled = [s for s in range(first, steps + 1) if (s - first) % args.every == 0]
    touched = set(profiled) | {s - 1 for s in profiled}
    plain = [t for s, t in iteration.items() if s > warmup and s not in touched]
    base = statistics.median(plain)
    added = [iteration[p - 1] + iteration[p] - 2 * base for p in profiled]
    med = statistics.median(added)
    print(f"torch {torch.__version__}; GPT-2 {args.layers}x{args.hidden}, batch "
          f"{args.batch_size} x seq {args.seq_len}, CPU, {torch.get_num_threads()} threads")
    print(f"unprofiled step: median {base * 1e3:.2f} ms over {len(plain)} steps "
          f"(min {min(plain) * 1e3:.2f}, max {max(plain) * 1e3:.2f})")
    print(f"profiled step's added time: median {med * 1e3:.2f} ms over {len(added)} profiled "
          f"steps (min {min(added) * 1e3:.2f}, max {max(added) * 1e3:.2f}) = "
          f"{med / base:.2f} x an unprofiled step")
    print(f"amortized at the default interval ({DEFAULT_EVERY} steps): "
          f"{med / DEFAULT_EVERY * 1e3:.3f} ms per step = {med / DEFAULT_EVERY / base * 100:.2f}% "
          f"of a step")


if __name__ == "__main__":
    main()
