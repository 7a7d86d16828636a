"""What counting kernels outside aten and the audit cost, measured in one run.

1. The audit: GPT-2 124M (the ``gpt2`` preset) forward + backward, batch
   8 x 1024, on ``meta`` (the framework's time, not arithmetic), uncounted vs
   ``FlopCounter(modules=False)`` vs ``FlopCounter(modules=False,
   audit=True)``, round-robin, as this thread's CPU time with one torch
   thread. The audit sees every op (a RecordFunction callback with inputs),
   so it is for one step, not every step: the integrations audit their
   first counted step only.
2. Higher-order ops: one ``flex_attention`` forward on the CPU ([1, 4, 256,
   64], no mask) and one ``torch.cond`` whose branch is a matmul, uncounted
   vs counted (the Python kernel of the counting key: a count through the C
   core for flex_attention, a pass-through for cond): microseconds added per
   call, medians of interleaved rounds.

    .venv/bin/python benchmarks/outside_aten_overhead.py [--reps 9] [--calls 200]
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import time
import warnings

import torch
import transformers
from torch.nn.attention.flex_attention import flex_attention

from mfu_tracker.counter import FlopCounter, counter_backend
from mfu_tracker.presets import load_preset


def gpt2_meta():
    config = dict(load_preset("gpt2"))
    config.pop("model_type")
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**config))
    ids = torch.zeros(8, 1024, dtype=torch.long, device="meta")

    def step():
        model(input_ids=ids).logits.sum().backward()
        model.zero_grad(set_to_none=True)

    return step


def thread_seconds(fn, ctx) -> tuple[float, object]:
    gc.collect()
    gc.disable()
    try:
        t0 = time.thread_time()
        with ctx:
            fn()
        return time.thread_time() - t0, ctx
    finally:
        gc.enable()


def bench_audit(reps: int) -> None:
    step = gpt2_meta()
    step()
    variants = {
        "uncounted": contextlib.nullcontext,
        "FlopCounter(modules=False)": lambda: FlopCounter(modules=False),
        "FlopCounter(modules=False, audit=True)": lambda: FlopCounter(modules=False, audit=True),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    counters: dict[str, object] = {}
    for _ in range(reps):
        for name, make in variants.items():
            seconds, ctx = thread_seconds(step, make())
            times[name].append(seconds)
            counters[name] = ctx
    base = statistics.median(times["uncounted"])
    print(f"1. GPT-2 124M fwd+bwd on meta, batch 8 x 1024 ({reps} interleaved rounds, "
          f"thread CPU time, backend {counter_backend()}):")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"   {name:<42} median {med * 1e3:8.1f} ms  (+{(med - base) * 1e3:7.1f} ms, "
              f"{med / base:5.2f}x uncounted; range {min(values) * 1e3:.1f}-"
              f"{max(values) * 1e3:.1f} ms)")
    audited = counters["FlopCounter(modules=False, audit=True)"]
    plain = counters["FlopCounter(modules=False)"]
    rows = audited.uncounted()  # type: ignore[attr-defined]
    assert audited.executed_flops == plain.executed_flops  # type: ignore[attr-defined]
    print(f"   the audit listed {len(rows)} uncounted ops ({sum(r.heavy for r in rows)} FLOP-heavy); "
          "executed totals identical")


def per_call(fn, calls: int, ctx_factory) -> float:
    with ctx_factory():
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) / calls


def bench_hops(reps: int, calls: int) -> None:
    q = torch.randn(1, 4, 256, 64)
    a = torch.randn(64, 64)
    pred = torch.tensor(True)
    cases = {
        "flex_attention forward [1, 4, 256, 64]": lambda: flex_attention(q, q, q),
        "torch.cond(matmul branch) [64, 64]": lambda: torch.cond(pred, lambda x: x @ x,
                                                                 lambda x: x + 1, (a,)),
    }
    print(f"2. higher-order ops, per call ({reps} interleaved rounds of {calls} calls, medians):")
    for name, fn in cases.items():
        for _ in range(3):
            fn()  # warm up (flex_attention and cond compile themselves once)
        with FlopCounter(modules=False):
            fn()
        plain, counted = [], []
        for _ in range(reps):
            plain.append(per_call(fn, calls, contextlib.nullcontext))
            counted.append(per_call(fn, calls, lambda: FlopCounter(modules=False)))
        added = [c - p for c, p in zip(counted, plain)]
        print(f"   {name:<40} uncounted {statistics.median(plain) * 1e6:8.1f} us, "
              f"counted +{statistics.median(added) * 1e6:6.1f} us "
              f"(range {min(added) * 1e6:+.1f} to {max(added) * 1e6:+.1f} us)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--only", choices=["audit", "hops"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", UserWarning)  # flex_attention: "without torch.compile"
    if args.only in (None, "audit"):
        bench_audit(args.reps)
    if args.only in (None, "hops"):
        bench_hops(args.reps, args.calls)


if __name__ == "__main__":
    main()
