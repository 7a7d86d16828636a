"""What ``mfu-tracker run`` costs a training step, measured end to end.

The unmodified script ``examples/train_plain.py`` (``make run``'s GPT-2:
4 layers x 256, batch 8 x 128, AdamW, on the CPU) runs as separate
processes, three variants in each round, in a seeded shuffled order:

* ``bare``: ``python examples/train_plain.py``;
* ``bare again``: the same, a second time (the machine's own spread: the
  same step against itself);
* ``run``: ``mfu-tracker run -- python examples/train_plain.py`` (defaults:
  every step counted, the phases marked, a metrics line every 10 steps).

Each process reports its own per-step time from step ``--timed-from`` on
(the first steps warm up: the agent builds its tracker there): the training
thread's CPU time (one torch thread, so the step's work and every hook of
the agent run on it; robust to other processes' load) and the wall clock.
Per run: the median of the paired relative differences (same round) and
their range; ``--runs`` runs and the median over them, with the runs'
spread beside it (target <= 1%).

Across processes the noise is a few percent (a process's memory layout and
caches); the second part pairs steps inside one process: blocks of
``--block`` steps of the same model alternate bare and measured by an agent
armed for the block (``Agent(...).install()``, as the startup hook arms it;
the block's first step, where the agent finds the model and builds its
tracker, is not timed; after each bare block, the measured one and a
second bare one in turn), ``--in-process-rounds`` rounds, the training
thread's CPU time per step. That is the agent's cost to a step, with the
machine's own spread (a bare block against the next bare one) beside it.

    .venv/bin/python benchmarks/run_overhead.py [--runs 3] [--rounds 4] [--steps 10]
        [--timed-from 3] [--model-args "--batch-size 8 ..."] [--in-process-rounds 12]
        [--block 4] [--only processes|in-process]
"""
from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "examples" / "train_plain.py"
_TIMES = re.compile(r"([0-9.]+) ms/step wall, ([0-9.]+) ms/step CPU")


def _env() -> Dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    env.pop("MFU_TRACKER_RUN", None)
    return env


def _command(variant: str, script_args: List[str], log_dir: str) -> List[str]:
    plain = [sys.executable, str(SCRIPT), *script_args]
    if variant != "run":
        return plain
    log = os.path.join(log_dir, f"run-{random.getrandbits(32):08x}.jsonl")
    return [sys.executable, "-m", "mfu_tracker", "run", "--log", log, "--", *plain]


def measure(variant: str, script_args: List[str], log_dir: str) -> Tuple[float, float]:
    """(wall ms/step, CPU ms/step) of one process of ``variant``."""
    done = subprocess.run(_command(variant, script_args, log_dir), env=_env(),
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    found = _TIMES.search(done.stdout)
    if found is None:
        raise RuntimeError(f"{variant}: no timing line in:\n{done.stdout[-1000:]}")
    return float(found.group(1)), float(found.group(2))


def _paired(times: Dict[str, List[float]], name: str) -> List[float]:
    return [(t - b) / b for t, b in zip(times[name], times["bare"])]


def one_run(rounds: int, script_args: List[str], order: random.Random,
            log_dir: str) -> Dict[str, Dict[str, float]]:
    """``rounds`` rounds of every variant; per clock and variant, the median
    paired difference against ``bare`` and its range."""
    variants = ("bare", "bare again", "run")
    times = {clock: {v: [] for v in variants} for clock in ("wall", "cpu")}
    for _ in range(rounds):
        for variant in order.sample(variants, len(variants)):
            wall, cpu = measure(variant, script_args, log_dir)
            times["wall"][variant].append(wall)
            times["cpu"][variant].append(cpu)
    out: Dict[str, Dict[str, float]] = {}
    for clock, by_variant in times.items():
        print(f"    {clock:>4}: bare step median {statistics.median(by_variant['bare']):.1f} ms")
        for name in ("bare again", "run"):
            diffs = _paired(by_variant, name)
            out[f"{clock}/{name}"] = {"median": statistics.median(diffs), "low": min(diffs),
                                      "high": max(diffs)}
            print(f"      {name:<11} vs bare: median {100 * statistics.median(diffs):+6.2f}%  "
                  f"(range {100 * min(diffs):+.2f}% .. {100 * max(diffs):+.2f}%, "
                  f"{len(diffs)} rounds)")
    return out


def _in_process_step(model_args: List[str]):
    """make run's GPT-2 and one AdamW training step of it (train_plain.py's loop body)."""
    import torch

    sys.path.insert(0, str(ROOT / "examples"))
    from train_plain import add_model_args, build_model

    parser = argparse.ArgumentParser()
    add_model_args(parser)
    args = parser.parse_args(model_args)
    torch.manual_seed(args.seed)
    model = build_model(args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, args.vocab_size, (args.batch_size, args.seq_len))

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def _block(step, n: int, skip: int) -> float:
    """Mean CPU seconds per step of ``n`` steps after ``skip`` untimed ones."""
    import gc
    import time

    for _ in range(skip):
        step()
    gc.collect()
    t0 = time.thread_time()
    for _ in range(n):
        step()
    return (time.thread_time() - t0) / n


def in_process(rounds: int, block: int, model_args: List[str], log_dir: str) -> None:
    """Blocks of bare and measured steps alternating in one process (module docstring)."""
    import atexit

    import torch

    from mfu_tracker.agent._agent import Agent
    from mfu_tracker.agent._config import RunConfig

    torch.set_num_threads(1)
    step = _in_process_step(model_args)
    _block(step, 2, 1)   # warm up
    bare, again, armed = [], [], []

    def measured(r: int) -> float:
        agent = Agent(RunConfig.checked(log_path=os.path.join(log_dir, f"in-process-{r}.jsonl")))
        agent.install()
        seconds = _block(step, block, 1)     # its first step: found, tracker built
        agent.finish()
        atexit.unregister(agent.finish)
        return seconds

    for r in range(rounds):
        bare.append(_block(step, block, 1))
        # after the bare block, the other two in turn: neither always comes second
        if r % 2:
            again.append(_block(step, block, 1))
            armed.append(measured(r))
        else:
            armed.append(measured(r))
            again.append(_block(step, block, 1))
    print(f"  in process: {rounds} rounds of {block}-step blocks, bare step median "
          f"{statistics.median(bare) * 1e3:.1f} ms CPU")
    for name, values, base in (("bare again", again, bare), ("armed", armed, bare)):
        diffs = [(v - b) / b for v, b in zip(values, base)]
        print(f"    {name:<11} vs bare: median {100 * statistics.median(diffs):+6.2f}%  (range "
              f"{100 * min(diffs):+.2f}% .. {100 * max(diffs):+.2f}%), "
              f"{1e6 * statistics.median([v - b for v, b in zip(values, base)]):+.0f} us/step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4, help="rounds per run (3 processes each)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--timed-from", type=int, default=3)
    parser.add_argument("--model-args", default="", help="more train_plain.py flags")
    parser.add_argument("--in-process-rounds", type=int, default=12)
    parser.add_argument("--block", type=int, default=4, help="timed steps per in-process block")
    parser.add_argument("--only", choices=("processes", "in-process"), default=None)
    args = parser.parse_args()
    if args.only != "processes":
        with tempfile.TemporaryDirectory() as log_dir:
            in_process(args.in_process_rounds, args.block, args.model_args.split(), log_dir)
    if args.only == "in-process":
        return
    script_args = ["--steps", str(args.steps), "--timed-from", str(args.timed_from), "--quiet",
                   *args.model_args.split()]
    order = random.Random(0)
    print(f"mfu-tracker run vs bare: examples/train_plain.py {' '.join(script_args)}; one torch "
          f"thread; {args.runs} run(s) of {args.rounds} rounds, variants shuffled in each round")
    medians: Dict[str, List[float]] = {}
    with tempfile.TemporaryDirectory() as log_dir:
        for run in range(args.runs):
            print(f"  run {run + 1}:")
            for key, figures in one_run(args.rounds, script_args, order, log_dir).items():
                medians.setdefault(key, []).append(figures["median"])
    print("  median over runs (spread: the runs' medians, min .. max):")
    for key, values in medians.items():
        print(f"    {key:<16} {100 * statistics.median(values):+6.2f}%  "
              f"({100 * min(values):+.2f}% .. {100 * max(values):+.2f}%)")


if __name__ == "__main__":
    main()
