"""What exact FLOP counting costs, measured in one run.

1. GPT-2 124M (the ``gpt2`` preset), forward + backward, batch 8 x 1024, on
   the ``meta`` device (so the time is the framework's, not arithmetic):
   uncounted vs ``FlopCounter()`` (C++ observer, its defaults) vs
   ``FlopCounter(modules=True)`` (the per-module table on) vs
   ``torch.utils.flop_counter.FlopCounterMode``,
   timed as this thread's CPU time with one torch thread (other processes'
   load does not count).
   Reports the time each adds over the uncounted run, the ratio of those
   overheads and the total-time ratios, and
   checks that the executed totals are identical (target: FlopCounterMode's
   added time >= 20x ours, with the module table on too).
2. End to end: a real CPU training step (forward, backward, AdamW) of a
   small Llama (d=128, L=4, batch 2 x 128, ~30-40 ms), eager and then
   compiled (``torch.compile``, inductor), with every variant interleaved in
   each round, in a shuffled order (seeded): uncounted, uncounted again (the
   machine's own spread: the same step against itself), counted every step
   with the defaults as the README shows it (a new ``FlopCounter()`` per
   step), and one counter reused. Then, each set on its own: the step
   through ``MFUOptimizerWrapper`` with its defaults on a twin model against
   the twin without it; and uncounted against a new
   ``FlopCounter(modules=True)`` per step (the per-module table, off by
   default: what turning it on costs). Apart, because a step that follows
   the other model's step finds its weights evicted from the caches (a
   rotating order made that a bias of up to 0.75%; shuffled, it is noise),
   and a live module table puts its wrapper in every variant's step. Per run: the median
   of the paired relative differences (same round) and their interquartile
   range; ``--runs`` runs and the median over them (target <= 1%).
3. Per op call (``--only ops``): a loop of one counted op (``mm`` of meta
   [64, 64] tensors, requiring grad, and a varlen
   ``_flash_attention_forward`` with host cumulative lengths) and one
   uncounted op (``add``), uncounted vs ``FlopCounter(modules=False)`` vs
   the same with its audit (a RecordFunction callback with inputs on every
   op: what observing ops through RecordFunction costs, docs/dispatch_keys.md)
   vs ``FlopCounterMode``: the ns each adds per call. This is where the
   counter's own per-call work shows (parts 1 and 2 drown it in the model);
   then one empty counted block (a block's start and stop with the check of
   the borrowed dispatch key, docs/dispatch_keys.md).

    .venv/bin/python benchmarks/counter_overhead.py [--reps 15] [--steps 60] [--runs 3]
        [--threads 1] [--only meta|training|ops]
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
        "FlopCounter()": FlopCounter,
        "FlopCounter(modules=True)": lambda: FlopCounter(modules=True),
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
    ours_total = last["FlopCounter()"].executed_flops
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
    for name in ("FlopCounter()", "FlopCounter(modules=True)"):
        added = best[name] - base
        ratio = f"{fcm_added / added:.1f}x" if added > 0 else "inf (no measurable overhead)"
        print(f"  overhead ratio FlopCounterMode / {name}: {ratio}")
    print(f"  total-time ratio FlopCounterMode / FlopCounter: "
          f"{best['FlopCounterMode'] / best['FlopCounter()']:.2f}x")


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
        # the audit is a thread-local RecordFunction callback with inputs:
        # what observing every op through RecordFunction costs an op
        "... audit=True (RecordFunction)": lambda: FlopCounter(modules=False, audit=True),
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
            print(f"  {label:<24}{name:<32}{min(ts) / calls * 1e9:>9.0f}"
                  f"{(min(ts) - base) / calls * 1e9:>10.0f}")
        ours = min(times["FlopCounter(modules=False)"]) - base
        fcm = min(times["FlopCounterMode"]) - base
        ratio = f"{fcm / ours:.1f}x" if ours > 0 else "inf (no measurable overhead)"
        print(f"  {label:<24}overhead ratio FlopCounterMode / FlopCounter(modules=False): {ratio}")
    bench_blocks(reps)


def bench_blocks(reps: int, blocks: int = 2_000) -> None:
    """The cost of one empty counted block: the start and stop of a block,
    with the check at each that no other library's kernel took a counted op
    (docs/dispatch_keys.md), on a new counter and on one reused."""
    import contextlib

    reused = FlopCounter()
    variants = {"nullcontext()": contextlib.nullcontext, "FlopCounter() new": FlopCounter,
                "FlopCounter() reused": lambda: reused}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(reps):
        for name, make in variants.items():
            gc.collect()
            t0 = time.thread_time()
            for _ in range(blocks):
                with make():
                    pass
            times[name].append(time.thread_time() - t0)
    base = min(times["nullcontext()"])
    print(f"Empty counted block: {blocks:,} blocks per rep, thread CPU time, best of {reps} reps")
    for name, ts in times.items():
        print(f"  {name:<24}{min(ts) / blocks * 1e6:>8.1f} us/block"
              f"{(min(ts) - base) / blocks * 1e6:>8.1f} us added")


def _llama(hidden: int, batch: int, seq: int):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=hidden, num_hidden_layers=4, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=hidden * 8 // 3,
                                   vocab_size=2048)
    model = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="sdpa")
    ids = torch.randint(0, 2048, (batch, seq))
    return model, ids


def _spread(diffs: list[float]) -> tuple[float, float, float]:
    """Median and interquartile range of paired relative differences."""
    d = sorted(diffs)
    return statistics.median(d), d[len(d) // 4], d[(3 * len(d)) // 4]


def _training_variants(hidden: int, seq: int, batch: int, compiled: bool):
    """Three sets of interleaved variants of one small Llama training step
    (forward, backward, AdamW), each set timed on its own (module
    docstring): uncounted twice (A and A', the machine's own run-to-run
    spread), counted with the defaults as the README shows it (a new
    ``FlopCounter()`` per step, model FLOPs read) and one counter reused over
    steps; the same step on a twin of the model, plain and trained through
    ``MFUOptimizerWrapper`` with its defaults (counting every step); and
    uncounted against a new ``FlopCounter(modules=True)`` per step, its
    table read, the last one kept as a loop's ``with
    FlopCounter(modules=True) as fc`` keeps it."""
    from mfu_tracker import MFUOptimizerWrapper, user_gpu_spec

    def make():
        model, ids = _llama(hidden, batch, seq)
        run = torch.compile(model) if compiled else model
        return model, run, ids

    model, run, ids = make()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    twin, twin_run, _ = make()
    wrapped = MFUOptimizerWrapper(torch.optim.AdamW(twin.parameters(), lr=1e-4), twin,
                                  dtype="fp32", spec=user_gpu_spec(1.0, name="bench"))
    reused = FlopCounter()
    last: list[FlopCounter] = []

    def train_step():
        run(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def counted_new():
        with FlopCounter() as fc:
            train_step()
        return fc.model_flops

    def counted_modules():
        with FlopCounter(modules=True) as fc:
            train_step()
        last[:] = [fc]
        return fc.model_flops, fc.by_module

    def counted_reused():
        with reused:
            train_step()
        flops = reused.model_flops
        reused.reset()
        return flops

    def wrapper_step():
        twin_run(input_ids=ids, labels=ids).loss.backward()
        wrapped.step()
        wrapped.zero_grad(set_to_none=True)

    def twin_plain():  # the twin without the wrapper: the wrapper's baseline
        twin_run(input_ids=ids, labels=ids).loss.backward()
        wrapped.optimizer.step()
        wrapped.optimizer.zero_grad(set_to_none=True)

    main = {"uncounted": train_step, "uncounted again": train_step,
            "FlopCounter() per step": counted_new, "FlopCounter() reused": counted_reused}
    twins = {"twin, plain": twin_plain, "twin, MFUOptimizerWrapper": wrapper_step}
    table = {"uncounted": train_step, "FlopCounter(modules=True)": counted_modules}
    return main, twins, table


def _interleaved(variants: dict, pairs: dict[str, str], steps: int, runs: int,
                 base: str = "uncounted") -> None:
    """``runs`` runs of ``steps`` rounds, every variant once a round (in a
    seeded shuffled order: module docstring), thread CPU time: per run, the
    median of the paired relative differences and their interquartile range;
    then the median over runs."""
    import random

    order = random.Random(0)
    for _ in range(3):  # compile (torch.compile) and warm up, the tool set up first
        for fn in variants.values():
            fn()
    medians: dict[str, list[float]] = {name: [] for name in pairs}
    names = list(variants)
    for run in range(runs):
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(steps):
            for name in order.sample(names, len(names)):
                gc.disable()
                t0 = time.thread_time()
                variants[name]()
                times[name].append(time.thread_time() - t0)
                gc.enable()
        print(f"  run {run + 1}: {base} step median {statistics.median(times[base]) * 1e3:.2f} ms")
        for name, base in pairs.items():
            med, q1, q3 = _spread([(c - u) / u for c, u in zip(times[name], times[base])])
            medians[name].append(med)
            print(f"    {name:<28} vs {base:<12} median {100 * med:+6.2f}%  "
                  f"(interquartile {100 * q1:+.2f}% .. {100 * q3:+.2f}%)")
    if runs > 1:
        print("  median over runs: " + ", ".join(
            f"{name} {100 * statistics.median(m):+.2f}%" for name, m in medians.items()))


def bench_step(steps: int, runs: int, hidden: int, seq: int, batch: int, compiled: bool) -> None:
    """The small Llama CPU training step, every variant interleaved (in a
    shuffled order each round), thread CPU time: per run, the median of the
    paired relative differences against the uncounted step of the same round
    and their interquartile range; the uncounted step against itself is the
    machine's spread. Then the median over runs. The integration and the
    module table after, each on its own."""
    main, twins, table = _training_variants(hidden, seq, batch, compiled)
    main["uncounted"]()
    with FlopCounter() as probe:
        main["uncounted"]()
    label = "compiled (inductor)" if compiled else "eager"
    print(f"Small Llama CPU training step, {label} (d={hidden}, L=4, batch {batch} x {seq}, "
          f"AdamW), {torch.get_num_threads()} thread, thread CPU time; model FLOPs/step "
          f"{probe.model_flops:,}; {runs} run(s) of {steps} interleaved rounds")
    _interleaved(main, {"uncounted again": "uncounted", "FlopCounter() per step": "uncounted",
                        "FlopCounter() reused": "uncounted"}, steps, runs)
    print("  the integration, on a twin of the model:")
    _interleaved(twins, {"twin, MFUOptimizerWrapper": "twin, plain"}, steps, runs,
                 base="twin, plain")
    print("  the per-module table (off by default), on its own:")
    _interleaved(table, {"FlopCounter(modules=True)": "uncounted"}, steps, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--steps", type=int, default=60, help="interleaved rounds per run")
    parser.add_argument("--runs", type=int, default=3, help="training runs (their median)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--only", choices=("meta", "training", "ops"), default=None,
                        help="run one part (meta: GPT-2 on meta; training: the small Llama "
                             "step, eager and compiled, with the per-call costs; ops: the "
                             "per-op cost against FlopCounterMode, not run by default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.only == "ops":
        bench_ops(args.reps)
        return
    if args.only is None:
        bench_meta(args.reps)
    if args.only == "meta":
        return
    bench_step(args.steps, args.runs, hidden=128, seq=128, batch=2, compiled=False)
    bench_step(args.steps, args.runs, hidden=128, seq=128, batch=2, compiled=True)


if __name__ == "__main__":
    main()
