"""The main job: a short real training loop of a small GPT-2 on CPU, printing MFU per step.

The model is built from a ``transformers.GPT2Config`` (no download). FLOPs per
step come from the analytic per-matmul count (``transformer_flops``), checked
against the op-level ``FlopCounter`` on the first step; on a CPU no datasheet
gives a peak, so the peak is measured with a GEMM micro-benchmark
(``measured_gpu_spec``) and every MFU is labelled "vs measured peak".

Each row is one ``track()`` block (forward, backward, optimizer: the compute
window); a ``Tracker`` marks step boundaries and the phases inside a step
(data, forward, backward, optimizer) and gives the end-to-end figures over
the last steps at the end, with the waterfall: where the step time that is
not MFU went. With ``--log-path FILE`` the tracker's
figures are read every step (over the steps so far after the warm-up) and
appended to FILE, one JSON line each, after the run's record and before its
end record, with the peak re-measured after training: the input of
``mfu-tracker report`` (``make run`` draws ``build/run/report.png`` from it) and
``mfu-tracker goodput``.

    python examples/train_gpt2.py [--steps 12] [--batch-size 8] [--seq-len 128] [--log-path FILE]
"""
from __future__ import annotations

import argparse
import contextlib
import math
import time

import torch

from mfu_tracker import (
    FlopCounter,
    Tracker,
    measured_gpu_spec,
    param_bytes,
    track,
    transformer_flops,
)

# make run's GPT-2 and its flags: one definition, in the script that knows nothing of
# mfu_tracker (examples/ is this script's directory)
from train_plain import add_model_args, build_model  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    add_model_args(parser)
    parser.add_argument("--log-path", default=None,
                        help="append the tracker's metrics every step to this JSONL file "
                             "(for `mfu-tracker report`)")
    return parser.parse_args()


def train(args: argparse.Namespace, model: torch.nn.Module, model_flops: float, spec,
          tracker: Tracker) -> None:
    """The loop: one ``track()`` block per step (printed), phases and step
    boundaries on ``tracker``; step 1 also counted by a ``FlopCounter``."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens_per_step = args.batch_size * args.seq_len
    weights_bytes = param_bytes(model)
    # A fixed random corpus: the loss falls as the model memorises it.
    corpus = torch.randint(0, args.vocab_size, (4, args.batch_size, args.seq_len))
    counter = FlopCounter(modules=False)
    # Steps are numbered as the tracker's log numbers them (steps completed:
    # the first row is step 1), so `mfu-tracker report`'s steps are these rows.
    print(f"{'step':>4} {'loss':>7} {'ms/step':>8} {'tokens/s':>9} {'GFLOP/s':>8}  MFU vs measured peak")
    for step in range(args.steps):
        tracker.step(tokens_per_step if step else None)  # a step boundary: end-to-end period
        with tracker.phase("data"):
            input_ids = corpus[step % corpus.shape[0]].clone()
        with counter if step == 0 else contextlib.nullcontext(), track(
            model_flops, weights_bytes, num_tokens=tokens_per_step, dtype="fp32", spec=spec,
        ) as result:
            with tracker.phase("forward"):
                loss = model(input_ids=input_ids, labels=input_ids).loss
            with tracker.phase("backward"):
                loss.backward()
            with tracker.phase("optimizer"):
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        print(
            f"{step + 1:>4} {loss.item():>7.3f} {result.elapsed_sec * 1e3:>8.1f} "
            f"{result.tokens_per_sec:>9.0f} {result.achieved_tflops * 1e3:>8.2f}  {_ratio(result.mfu)}",
            flush=True,
        )
        if step == 0:
            print(f"     step 1 counted by FlopCounter: {counter.model_flops / 1e9:.2f} GFLOP model, "
                  f"{counter.executed_flops / 1e9:.2f} GFLOP executed "
                  f"(formula above: {model_flops / 1e9:.2f})", flush=True)
        if args.log_path is not None:
            tracker.metrics("throughput")  # one line in the log ({} -- none -- during warm-up)
    tracker.step(tokens_per_step)


def _ratio(value) -> str:
    """MFU to three places; "n/a" without a peak (the machine was too busy to measure one)."""
    return "n/a" if value is None else f"{value:.3f}"


def print_summary(args: argparse.Namespace, summary: dict, elapsed_s: float) -> None:
    """The end-to-end figures and the waterfall (which needs the peak)."""
    mfu = summary.get("throughput/mfu")
    print(f"\n{args.steps} steps in {elapsed_s:.1f} s; end to end over steps "
          f"3..{args.steps} (step boundaries, everything included; steps 1-2: warm-up): "
          f"{summary['throughput/step_time_s'] * 1e3:.1f} ms/step, "
          f"{summary['throughput/tokens_per_sec']:.0f} tokens/s, "
          f"MFU {_ratio(mfu)} vs measured peak")
    if mfu is None:
        return
    # The waterfall: mfu + the shares lost to each cause add up to 1 (mfu_tracker/timing/_waterfall.py).
    lost = {key.rsplit("/", 1)[1]: value for key, value in summary.items()
            if key.startswith("throughput/mfu_lost/")}
    print("where the step went: " + ", ".join(
        [f"mfu {mfu:.3f}"] + [f"{name} {share:.3f}" for name, share in lost.items()])
        + f" (sum {math.fsum([mfu, *lost.values()]):.3f})")


def recheck_peak(summary: dict, peak_gflops: float, tracker: Tracker) -> None:
    """A GEMM benchmark run while other work competes for the cores reads low:
    measure again and say so when the two disagree, rather than trust one. The
    second measurement goes into the tracker's log (a peak_check record), so
    `mfu-tracker report` carries the same caveat."""
    spec = measured_gpu_spec("fp32", "cpu")
    if not spec.has_peak("fp32"):
        print("the peak was not measured again after training: the machine was busy")
        return
    again = spec.peak_flops_per_sec("fp32") / 1e9
    if tracker.peak_check(again * 1e9):   # they differ by more than 25%
        best = max(again, peak_gflops)
        mfu_best = summary["throughput/achieved_tflops"] * 1e3 / best
        print(f"note: the peak measured {peak_gflops:.1f} GFLOP/s before training and {again:.1f} after: "
              f"the machine was busy. Against {best:.1f} GFLOP/s the end-to-end MFU is {mfu_best:.3f}.")
    else:
        print(f"peak re-measured after training: {again:.1f} GFLOP/s (within 25% of the first)")


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    model = build_model(args)
    model.train()
    counted = transformer_flops(
        model.config, seq_len=args.seq_len, batch_size=args.batch_size, formula="matmul"
    )
    print("measuring the CPU's fp32 GEMM peak (no datasheet covers a CPU) ...", flush=True)
    spec = measured_gpu_spec("fp32", "cpu")   # no peak on a machine too busy to measure: a warning
    peak_gflops = spec.peak_flops_per_sec("fp32") / 1e9 if spec.has_peak("fp32") else None
    peak_line = (f"{peak_gflops:.1f} GFLOP/s fp32 (measured GEMM on this CPU)" if peak_gflops
                 else "not measured (the machine is busy): MFU n/a")
    print(
        f"model: GPT-2 {args.layers}x{args.hidden}, {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params; "
        f"batch {args.batch_size} x seq {args.seq_len} = {args.batch_size * args.seq_len} tokens/step\n"
        f"model FLOPs/step: {counted.model_flops / 1e9:.2f} GFLOP ({counted.conventions_str})\n"
        f"peak: {peak_line}\n"
    )
    tracker = Tracker(counted.model_flops, dtype="fp32", spec=spec, window=args.steps, warmup=2,
                      param_bytes=param_bytes(model), log_path=args.log_path)
    started = time.perf_counter()
    train(args, model, counted.model_flops, spec, tracker)
    summary = tracker.metrics("throughput")
    print_summary(args, summary, time.perf_counter() - started)
    if peak_gflops:
        recheck_peak(summary, peak_gflops, tracker)
    tracker.close()                       # the run's end record


if __name__ == "__main__":
    main()
