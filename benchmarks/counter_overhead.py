"""What exact FLOP counting costs, measured in one run.

1. GPT-2 124M (the ``gpt2`` preset), forward + backward, batch 8 x 1024, on
   the ``meta`` device (so the time is the framework's, not arithmetic):
   uncounted vs ``FlopCounter`` (C++ observer, module table on) vs
   ``FlopCounter(modules=False)`` vs ``torch.utils.flop_counter.FlopCounterMode``,
   timed as this thread's CPU time with one torch thread (other processes'
   load does not count).
   Reports the time each adds over the uncounted run, the ratio of those
   overheads and the total-time ratios, and
   checks that the executed totals are identical (target: FlopCounterMode's
   added time >= 20x ours with the module table on).
2. A real CPU training step (forward, backward, AdamW) of a small Llama
   (batch 2 x 128, ~36 ms), uncounted vs counted every step with
   ``FlopCounter(modules=False)`` and with the default ``FlopCounter()``
   (module table), the three interleaved (targets: counting <= 1%, the
   module table <= 2% more); then the same step on batch 16, to show how the
   cost scales with the work per op.
3. Per op call (``--only ops``): a loop of one counted op (``mm`` of meta
   [64, 64] tensors, requiring grad, and a varlen
   ``_flash_attention_forward`` with host cumulative lengths) and one
   uncounted op (``add``), uncounted vs ``FlopCounter(modules=False)`` vs
   ``FlopCounterMode``: the ns each adds per call. This is where the
   counter's own per-call work shows (parts 1 and 2 drown it in the model).

    .venv/bin/python benchmarks/counter_overhead.py [--reps 15] [--steps 60] [--threads 1]
        [--only meta|training]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from mfu_tracker.counter import FlopCounter, counter_backend
from mfu_tracker.presets import load_preset


def gpt2_meta():
    config = dict(load_preset("gpt2"))
    config.pop("model_type")
    cfg = transformers.GPT2Config(**config)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.zeros(8, 1024, dtype=torch.long, device="meta")

    def step():
        model(input_ids=ids).logits.sum().backward()
        model.zero_grad(set_to_none=True)

    return step


def timed(step, make_ctx) -> tuple[float, object]:
    gc.collect()
    gc.disable()
    try:
        ctx = make_ctx()
        t0 = time.thread_time()  # this thread's CPU time: robust to other load
        with ctx:
            step()
        return time.thread_time() - t0, ctx
    finally:
        gc.enable()


def bench_meta(reps: int) -> None:
    import contextlib

    step = gpt2_meta()
    step()  # warm up
    variants = {
        "uncounted": contextlib.nullcontext,
        "FlopCounter": FlopCounter,
        "FlopCounter(modules=False)": lambda: FlopCounter(modules=False),
        "FlopCounterMode": lambda: FlopCounterMode(display=False),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    last: dict[str, object] = {}
    for _ in range(reps):  # round-robin, so load changes hit every variant
        for name, make in variants.items():
            t, last[name] = timed(step, make)
            times[name].append(t)
    best = {name: min(ts) for name, ts in times.items()}
    base = best["uncounted"]
    ours_total = last["FlopCounter"].executed_flops
    fcm_total = last["FlopCounterMode"].get_total_flops()
    print(f"GPT-2 124M fwd+bwd, batch 8 x seq 1024, meta, backend {counter_backend()}, "
          f"thread CPU time, best of {reps} round-robin reps ({torch.get_num_threads()} thread)")
    print(f"  executed FLOPs: FlopCounter {ours_total:,}  FlopCounterMode {fcm_total:,}  "
          f"identical: {ours_total == fcm_total}")
    print(f"  {'variant':<28}{'best ms':>10}{'median ms':>11}{'added ms':>10}{'x uncounted':>13}")
    for name, ts in times.items():
        print(f"  {name:<28}{best[name] * 1e3:>10.2f}{statistics.median(ts) * 1e3:>11.2f}"
              f"{(best[name] - base) * 1e3:>10.2f}{best[name] / base:>13.3f}")
    fcm_added = best["FlopCounterMode"] - base
    for name in ("FlopCounter", "FlopCounter(modules=False)"):
        added = best[name] - base
        ratio = f"{fcm_added / added:.1f}x" if added > 0 else "inf (no measurable overhead)"
        print(f"  overhead ratio FlopCounterMode / {name}: {ratio}")
    print(f"  total-time ratio FlopCounterMode / FlopCounter: "
          f"{best['FlopCounterMode'] / best['FlopCounter']:.2f}x")


def bench_ops(reps: int, calls: int = 20_000) -> None:
    import contextlib

    a = torch.empty(64, 64, device="meta", requires_grad=True)
    q = torch.empty(10, 4, 8, device="meta")
    cu = torch.tensor([0, 3, 10], dtype=torch.int32)
    flash = torch.ops.aten._flash_attention_forward

    def mm_loop() -> None:
        for _ in range(calls):
            torch.mm(a, a)

    def flash_loop() -> None:
        for _ in range(calls):
            flash(q, q, q, cu, cu, 7, 7, 0.0, True, False)

    # An uncounted op on the CPU (1.5 us): on meta, add takes a slow path of
    # ~87 us whose own run-to-run noise (+-3 us) hides any counter cost.
    b = torch.ones(64, 64)

    def add_loop() -> None:
        for _ in range(calls):
            torch.add(b, b)

    loops = {"mm (counted)": mm_loop, "varlen flash (counted)": flash_loop,
             "add, cpu (not counted)": add_loop}
    variants = {
        "uncounted": contextlib.nullcontext,
        "FlopCounter(modules=False)": lambda: FlopCounter(modules=False),
        "FlopCounterMode": lambda: FlopCounterMode(display=False),
    }
    print(f"Per op call: {calls:,} calls per loop, meta tensors (add: cpu), backend {counter_backend()}, "
          f"thread CPU time, best of {reps} round-robin reps")
    print(f"  {'op':<24}{'variant':<28}{'ns/call':>9}{'added ns':>10}")
    for label, loop in loops.items():
        loop()  # warm up
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(reps):
            for name, make in variants.items():
                times[name].append(timed(loop, make)[0])
        base = min(times["uncounted"])
        for name, ts in times.items():
            print(f"  {label:<24}{name:<28}{min(ts) / calls * 1e9:>9.0f}"
                  f"{(min(ts) - base) / calls * 1e9:>10.0f}")
        ours = min(times["FlopCounter(modules=False)"]) - base
        fcm = min(times["FlopCounterMode"]) - base
        ratio = f"{fcm / ours:.1f}x" if ours > 0 else "inf (no measurable overhead)"
        print(f"  {label:<24}overhead ratio FlopCounterMode / FlopCounter(modules=False): {ratio}")


def bench_training(steps: int, hidden: int, seq: int, batch: int) -> None:
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=hidden, num_hidden_layers=4, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=hidden * 8 // 3,
                                   vocab_size=2048)
    model = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="sdpa")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 2048, (batch, seq))

    def train_step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def counted(counter):
        def step():
            with counter:
                train_step()
            flops = counter.model_flops
            counter.reset()
            return flops
        return step

    variants = {
        "uncounted": train_step,
        "FlopCounter(modules=False)": counted(FlopCounter(modules=False)),
        "FlopCounter() (module table)": counted(FlopCounter()),
    }
    for _ in range(3):
        for fn in variants.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in variants}
    flops = 0
    names = list(variants)
    for i in range(steps):  # interleaved, rotating which goes first
        for name in names[i % 3:] + names[:i % 3]:
            t0 = time.thread_time()
            out = variants[name]()
            times[name].append(time.thread_time() - t0)
            if out:
                flops = out
    print(f"Small Llama CPU training step (d={hidden}, L=4, batch {batch} x {seq}, AdamW), "
          f"{steps} steps each, interleaved, thread CPU time, {torch.get_num_threads()} thread; "
          f"counted every step; model FLOPs/step {flops:,}")
    for label, agg in (("best", min), ("median", statistics.median)):
        base = agg(times["uncounted"])
        nomod = agg(times["FlopCounter(modules=False)"])
        mod = agg(times["FlopCounter() (module table)"])
        print(f"  {label:<6} uncounted {base * 1e3:.2f} ms; modules=False {nomod * 1e3:.2f} ms "
              f"({100 * (nomod / base - 1):+.2f}%); default (module table) {mod * 1e3:.2f} ms "
              f"({100 * (mod / base - 1):+.2f}%; the table alone {100 * (mod - nomod) / base:+.2f}%)")
    # per round: each variant against the uncounted step of the same round
    # (robust to load that drifts over the run)
    rel = {name: statistics.median(t / b for t, b in zip(times[name], times["uncounted"]))
           for name in names[1:]}
    nomod, mod = rel["FlopCounter(modules=False)"], rel["FlopCounter() (module table)"]
    print(f"  median of per-round ratios: modules=False {100 * (nomod - 1):+.2f}%; default "
          f"{100 * (mod - 1):+.2f}% (the table alone {100 * (mod - nomod):+.2f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--only", choices=("meta", "training", "ops"), default=None,
                        help="run one part (meta: GPT-2 on meta; training: the CPU training "
                             "step; ops: the per-call cost, not run by default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.only == "ops":
        bench_ops(args.reps)
        return
    if args.only != "training":
        bench_meta(args.reps)
    if args.only == "meta":
        return
    bench_training(args.steps, hidden=128, seq=128, batch=2)   # the issue's ~36 ms step
    bench_training(args.steps, hidden=128, seq=128, batch=16)  # the same step, 8x the batch


if __name__ == "__main__":
    main()
