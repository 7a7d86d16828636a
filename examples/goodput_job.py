"""A training job that crashes and resumes, and its goodput.

    python examples/goodput_job.py [--steps 40] [--crash-at 27] [--out docs/goodput.png]

The job is two real processes (as a scheduler would start them) appending to
one metrics log:

1. run 1 trains a tiny GPT-2 compiled with ``torch.compile`` through
   ``MFUOptimizerWrapper`` (its first step is marked ``compile``), saves a
   checkpoint every ``--checkpoint-every`` steps (``tracker.phase("checkpoint")``),
   evaluates every ``--eval-every`` steps (``tracker.phase("eval")``) and is
   killed after step ``--crash-at`` -- no run-end record;
2. after a restart gap, run 2 loads the last checkpoint, resumes at its step
   (``start_step``: the steps after it are done twice, lost progress) and
   trains to ``--steps``.

Then ``mfu-tracker goodput`` prints the job ledger, and with ``--out`` the
report draws it (one bar per run and the job's). On a CPU the peak is a
measured GEMM peak (``MFU_TRACKER_PEAK_TFLOPS`` to give one).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from _common import build_model, ensure_peak, recheck_peak  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--crash-at", type=int, default=27, help="run 1 dies after this step")
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--eval-every", type=int, default=15)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--restart-gap", type=float, default=1.0, help="seconds between the runs")
    parser.add_argument("--compile-backend", default="eager",
                        help="torch.compile backend (eager: dynamo's tracing only, fast)")
    parser.add_argument("--workdir", default="build/goodput_job")
    parser.add_argument("--out", default=None, help="draw the report here (.png / .html)")
    parser.add_argument("--worker", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args()


def batch(vocab: int, args: argparse.Namespace, step: int) -> dict:
    g = torch.Generator().manual_seed(step)
    ids = torch.randint(0, vocab, (args.batch_size, args.seq_len), generator=g)
    return {"input_ids": ids, "labels": ids}


def worker(args: argparse.Namespace, run: int) -> None:
    """One run: resume from the last checkpoint (if any), train, checkpoint, evaluate."""
    from mfu_tracker import MFUOptimizerWrapper

    ckpt = os.path.join(args.workdir, "checkpoint.pt")
    model = build_model("gpt2-tiny")
    vocab = model.config.vocab_size
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    start = 0
    if run > 1 and os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    compiled = torch.compile(model, backend=args.compile_backend)
    wrapper = MFUOptimizerWrapper(optimizer, compiled, dtype="fp32", warmup=1,
                                  sample_batch=batch(vocab, args, -1), start_step=start,
                                  log_path=os.path.join(args.workdir, "metrics.jsonl"))
    tracker = wrapper.tracker
    end = args.steps if run > 1 else args.crash_at + 1
    for step in range(start, end):
        with wrapper.track_step(num_tokens=args.batch_size * args.seq_len):
            compiled(**batch(vocab, args, step)).loss.backward()
        wrapper.step()
        if (step + 1) % args.checkpoint_every == 0:
            with tracker.phase("checkpoint"):
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "step": step + 1}, ckpt)
        if (step + 1) % args.eval_every == 0:
            with tracker.phase("eval"), torch.no_grad():
                for k in range(4):
                    model(**batch(vocab, args, 10_000 + k))
        if (step + 1) % args.log_every == 0:
            print(f"run {run} step {step + 1}: {wrapper.metrics()}", flush=True)
        if run == 1 and step == args.crash_at:
            print(f"run {run}: killed after step {step}", flush=True)
            os._exit(1)                  # no run-end record: a crash
    wrapper.close()


def main() -> None:
    args = parse_args()
    if args.worker:
        worker(args, args.worker)
        return
    print(ensure_peak(torch.device("cpu"), "fp32"))
    os.makedirs(args.workdir, exist_ok=True)
    for name in ("metrics.jsonl", "checkpoint.pt"):
        if os.path.exists(os.path.join(args.workdir, name)):
            os.remove(os.path.join(args.workdir, name))
    command = [sys.executable, os.path.abspath(__file__), *sys.argv[1:]]
    for run in (1, 2):
        done = subprocess.run(command + ["--worker", str(run)])
        print(f"run {run} exited with status {done.returncode}")
        if run == 1:
            time.sleep(args.restart_gap)  # the scheduler notices and restarts the job
    recheck = recheck_peak()
    if recheck:
        print(recheck)
    log = os.path.join(args.workdir, "metrics.jsonl")
    subprocess.run([sys.executable, "-m", "mfu_tracker", "goodput", log], check=True)
    if args.out:
        subprocess.run([sys.executable, "-m", "mfu_tracker", "report", log, "--run", "all",
                        "--out", args.out, "--title", "a job that crashed at step "
                        f"{args.crash_at} and resumed from step "
                        f"{args.crash_at + 1 - (args.crash_at + 1) % args.checkpoint_every}"],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
