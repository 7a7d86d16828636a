"""CPU cost of the step tracker's ``step()`` and of a GPU-path ``track()`` block,
against Python equivalents of the same shape and ``nullcontext()``, in one run.

* ``Tracker.step()`` on the CPU clock and on the CUDA clock (the fake driver of
  tests/c/fake_driver, built here with ``cc``: no GPU needed). The fake is set
  to complete every event as soon as it is recorded, so each step makes the
  steady-state driver calls (record, query, elapsed) and never waits.
* ``track()`` blocks on the CPU clock and on the fake CUDA clock (two marks,
  results read every block).
* Phase marks (docs/waterfall.md): ``begin_phase()`` + ``end_phase()`` and a
  ``with tracker.phase("forward"):`` block, on the CPU clock and on the fake
  CUDA clock, reported per *mark* (half a pair / block); and ``metrics()``
  with the waterfall (every phase marked in a 100-step window).
* Mixed precision (docs/mixed-precision.md): ``step(4096, flops_by_dtype={fp8, bf16})`` and a
  ``track(..., flops_by_dtype=...)`` block with ``mfu_mixed`` read, on the CPU
  clock, beside the same calls without the dict.
* Python equivalents: a class doing ``time.perf_counter()`` marks and a
  ``collections.deque`` window (for ``step()``), and a context manager reading
  ``perf_counter()`` on enter and exit (for ``track()``). The natural GPU
  equivalent, ``torch.cuda.Event(enable_timing=True)`` record / elapsed_time,
  cannot be created without a GPU (torch raises on a CPU build), so it is not
  measured here; on a GPU it adds two event records and a query per step in
  Python on top of this shape -- and ``elapsed_time`` needs a synchronize.

"ns per call" is the thread CPU time (``time.thread_time_ns``) of a tight loop,
best of ``--rounds``; "net" subtracts the same loop calling the builtin
``id(4096)``, i.e. it is the cost of the call itself beyond calling any C
function.

    .venv/bin/python benchmarks/step_overhead.py [--calls 1000000] [--rounds 5]

Before / after a change, on a noisy machine: ``--compare OTHER_CHECKOUT`` runs
this script in child processes, alternating between OTHER_CHECKOUT's build and
this checkout's (``PYTHONPATH`` first on the path, so each imports its own
``mfu_tracker``), ``--pairs`` times, with the order flipped every pair, and
prints each row's median over the pairs for both and their ratio:

    .venv/bin/python benchmarks/step_overhead.py --compare /path/to/old/checkout \
        --pairs 7 --calls 300000 --rounds 3
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Optional
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE_SOURCE = ROOT / "tests" / "c" / "fake_driver" / "fake_cuda.c"
FAKE_LIBRARY = ROOT / "build" / "bench" / "libfake_cuda.so"


def build_fake_driver() -> str:
    if not FAKE_LIBRARY.exists() or FAKE_LIBRARY.stat().st_mtime < FAKE_SOURCE.stat().st_mtime:
        FAKE_LIBRARY.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-fPIC", "-shared",
                        "-o", str(FAKE_LIBRARY), str(FAKE_SOURCE)], check=True)
    return str(FAKE_LIBRARY)


# Before mfu_tracker loads a driver (once per process).
os.environ["MFU_TRACKER_CUDA_LIBRARY"] = build_fake_driver()


class PyStepTracker:
    """The Python shape of a CPU-clock step tracker: perf_counter marks, a
    deque window of (period, tokens), sums computed when read."""

    def __init__(self, flops_per_step: float, window: int = 100) -> None:
        self.flops_per_step = flops_per_step
        self.periods: deque = deque(maxlen=window)
        self.tokens: deque = deque(maxlen=window)
        self.last = None

    def step(self, num_tokens=None) -> None:
        now = time.perf_counter()
        if self.last is not None:
            self.periods.append(now - self.last)
            self.tokens.append(num_tokens)
        self.last = now


class PyBlock:
    """The Python shape of a CPU-clock track() block."""

    __slots__ = ("start", "elapsed_sec")

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed_sec = time.perf_counter() - self.start
        return False


# Thread CPU time: what the loop cost this thread, not what other processes
# on a shared machine took from it.
clock_ns = time.thread_time_ns


def per_call_ns(fn, calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = clock_ns()
        for _ in range(calls):
            fn(4096)
        best = min(best, (clock_ns() - start) / calls)
    return best


def per_block_ns(make_block, calls: int, rounds: int, read: Optional[str]) -> float:
    """A block per call, and a read of the result's attribute ``read`` (None: no read)."""
    best = float("inf")
    for _ in range(rounds):
        start = clock_ns()
        for _ in range(calls):
            with make_block() as r:
                pass
            if read is not None:
                getattr(r, read)
        best = min(best, (clock_ns() - start) / calls)
    return best


def compare(other: str, pairs: int, calls: int, rounds: int) -> None:
    """Interleaved child runs of this script on `other`'s build and on ours."""
    trees = {"before": str(Path(other).resolve()), "after": str(ROOT)}
    runs: dict = {"before": [], "after": []}
    for i in range(pairs):
        order = ["before", "after"] if i % 2 == 0 else ["after", "before"]
        for name in order:
            env = dict(os.environ, PYTHONPATH=trees[name])
            out = subprocess.run([sys.executable, __file__, "--json", "--calls", str(calls),
                                  "--rounds", str(rounds)],
                                 env=env, check=True, capture_output=True, text=True).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
    print(f"{pairs} interleaved pairs of child runs ({calls} calls, best of {rounds} "
          f"rounds each); median thread CPU ns per call; the spread: the lowest and "
          f"highest after/before ratio of one pair")
    print(f"  before: {trees['before']}\n  after:  {trees['after']}")
    print(f"{'row':45s} {'before':>9s} {'after':>9s} {'after/before':>13s} {'pair spread':>15s}")
    for row in runs["after"][0]:
        if row.startswith("_") or row not in runs["before"][0]:
            continue
        before = statistics.median(r[row] for r in runs["before"])
        after = statistics.median(r[row] for r in runs["after"])
        ratios = [a[row] / b[row] for a, b in zip(runs["after"], runs["before"])]
        print(f"{row:45s} {before:9.1f} {after:9.1f} {after / before:12.3f}x "
              f"{min(ratios):6.3f}-{max(ratios):.3f}x")
    syncs = [r["_cuda_syncs"] for r in runs["before"] + runs["after"]]
    print(f"synchronizing driver calls during the cuda-clock steps, every run: {sorted(set(syncs))}")


def measure_steps(fake, spec, n: int, rounds: int) -> dict:
    """step() on both clocks and the Python shape; the cuda tracker's counters
    and sync calls; metrics() on the cuda tracker."""
    from mfu_tracker import Tracker

    cpu_tracker = Tracker(1e6, spec=spec, clock="cpu", param_bytes=1e9)
    cuda_tracker = Tracker(1e6, spec=spec, clock="cuda", stream=0, param_bytes=1e9)
    assert cuda_tracker.clock == "cuda"
    py_tracker = PyStepTracker(1e6)
    steps = {
        "Tracker.step(), cpu clock": per_call_ns(cpu_tracker.step, n, rounds),
        "Tracker.step(), cuda clock (fake driver)": per_call_ns(cuda_tracker.step, n, rounds),
        "Python perf_counter + deque step()": per_call_ns(py_tracker.step, n, rounds),
    }
    return dict(steps=steps, counters=cuda_tracker.counters(), syncs=fake.fake_sync_calls(),
                metrics_ns=per_call_ns(lambda _: cuda_tracker.metrics(), n // 10, rounds),
                cpu_tracker=cpu_tracker, cuda_tracker=cuda_tracker)


def measure_marks(fake, cpu_tracker, cuda_tracker, n: int, rounds: int) -> tuple:
    """Phase marks: a step is open on each tracker (step() above), so every
    call takes a mark. Per mark = per pair (or block) / 2."""
    def pair(tracker):
        begin, end = tracker.begin_phase, tracker.end_phase

        def call(_):
            begin("forward")
            end()
        return call

    def block(tracker):
        phase = tracker.phase

        def call(_):
            with phase("forward"):
                pass
        return call

    fake.fake_reset()
    before = fake.fake_sync_calls()
    marks = {} if not hasattr(cpu_tracker, "begin_phase") else {  # --compare: an older build
        "phase mark (begin/end_phase), cpu clock": per_call_ns(pair(cpu_tracker), n, rounds) / 2,
        "phase mark (with phase()), cpu clock": per_call_ns(block(cpu_tracker), n, rounds) / 2,
        "phase mark (begin/end_phase), cuda clock (fake)":
            per_call_ns(pair(cuda_tracker), n // 10, rounds) / 2,
    }
    return marks, fake.fake_sync_calls() - before


def measure_metrics(spec, cpu_tracker, n: int, rounds: int) -> tuple:
    """metrics() without phases and with the waterfall (every phase marked in
    a 100-step window); the number of waterfall keys."""
    from mfu_tracker import Tracker

    has_phases = hasattr(cpu_tracker, "begin_phase")
    waterfall_tracker = Tracker(1e6, spec=spec, clock="cpu", param_bytes=1e9)
    waterfall_tracker.step()
    for _ in range(101):
        for name in ("data", "forward", "backward", "optimizer") if has_phases else ():
            waterfall_tracker.switch_phase(name)
        if has_phases:
            waterfall_tracker.end_phase()
        waterfall_tracker.step()
    return (per_call_ns(lambda _: cpu_tracker.metrics(), n // 10, rounds),
            per_call_ns(lambda _: waterfall_tracker.metrics(), n // 10, rounds),
            len(waterfall_tracker.metrics()))


def measure_mixed(n: int, rounds: int) -> dict:
    """step() and track() with flops_by_dtype beside the same calls without."""
    from mfu_tracker import Tracker, lookup_gpu_spec, track

    if "flops_by_dtype" not in inspect.signature(Tracker).parameters:
        return {}  # --compare against an older build
    h100 = lookup_gpu_spec("NVIDIA H100 80GB HBM3", num_sms=132)  # fp8 and bf16 peaks
    by_dtype = {"fp8": 6e5, "bf16": 4e5}
    mixed_tracker = Tracker(1e6, spec=h100, clock="cpu", dtype="bf16")
    mixed_tracker.step()
    return {
        "Tracker.step(), cpu clock, H100 spec": per_call_ns(mixed_tracker.step, n, rounds),
        "Tracker.step(flops_by_dtype=2 dtypes), cpu clock":
            per_call_ns(lambda t: mixed_tracker.step(t, flops_by_dtype=by_dtype), n, rounds),
        "track() + mfu_mixed, 2 dtypes, cpu clock": per_block_ns(
            lambda: track(1e6, 1e9, dtype="bf16", spec=h100, clock="cpu",
                          flops_by_dtype=by_dtype), n, rounds, read="mfu_mixed"),
        "track() + mfu, same spec, cpu clock": per_block_ns(
            lambda: track(1e6, 1e9, dtype="bf16", spec=h100, clock="cpu"), n, rounds,
            read="mfu"),
    }


def measure_blocks(n: int, rounds: int) -> dict:
    """track() blocks on both clocks beside nullcontext() and the Python shape."""
    from mfu_tracker import track

    return {
        "nullcontext()": per_block_ns(contextlib.nullcontext, n, rounds, read=None),
        "Python perf_counter block": per_block_ns(PyBlock, n, rounds, read="elapsed_sec"),
        # peak_tflops + device: the cached peak (an explicit spec= is resolved every call)
        "track(), cpu clock": per_block_ns(
            lambda: track(1e6, 1e9, dtype="bf16", peak_tflops=989.4, device="cpu", clock="cpu"),
            n, rounds, read="elapsed_sec"),
        "track(), cuda clock (fake driver)": per_block_ns(
            lambda: track(1e6, 1e9, dtype="bf16", peak_tflops=989.4, device="cpu", clock="cuda",
                          stream=0),
            n, rounds, read="elapsed_sec"),
    }


def print_figures(n: int, rounds: int, baseline: float, run: dict, blocks: dict, marks: dict,
                  phase_syncs: int, metrics: tuple, mixed: dict) -> None:
    """The human-readable table."""
    steps = run["steps"]
    plain_metrics_ns, waterfall_ns, waterfall_keys = metrics
    print(f"{n} calls per round, best of {rounds} rounds; Python {sys.version.split()[0]}")
    print(f"loop + call of builtin id(): {baseline:6.1f} ns (subtracted as 'net')")
    py_step = steps["Python perf_counter + deque step()"]
    for name, ns in steps.items():
        print(f"{name:45s} {ns:7.1f} ns/call  net {ns - baseline:6.1f} ns  "
              f"({ns / py_step:.2f}x the Python shape)")
    counters = run["counters"]
    print(f"  cuda steps: {counters['marks']} marks, {counters['waits']} waits, "
          f"{run['syncs']} synchronizing driver calls, {counters['events']} events")
    print(f"Tracker.metrics() (dict of 9 floats, window 100) {run['metrics_ns']:7.1f} ns/call")
    null = blocks["nullcontext()"]
    for name, ns in blocks.items():
        print(f"{name:45s} {ns:7.1f} ns/block ({ns / null:.2f}x nullcontext, "
              f"+{ns - null:.0f} ns)")
    for name, ns in marks.items():
        print(f"{name:50s} {ns:7.1f} ns/mark")
    print(f"  synchronizing driver calls during the cuda-clock phase marks: {phase_syncs}")
    print(f"Tracker.metrics(), cpu clock, no phases        {plain_metrics_ns:7.1f} ns/call")
    print(f"Tracker.metrics(), cpu clock, waterfall ({waterfall_keys} keys) {waterfall_ns:7.1f} ns/call")
    for name, ns in mixed.items():
        print(f"{name:50s} {ns:7.1f} ns/call")
    print("torch.cuda.Event equivalent: not measurable without a GPU "
          "(torch.cuda.Event(enable_timing=True) raises on a CPU build)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true",
                        help="print the figures as one JSON line (for --compare)")
    parser.add_argument("--compare", metavar="OTHER_CHECKOUT",
                        help="interleave child runs against another checkout's build")
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    n, rounds = args.calls, args.rounds
    if args.compare:
        compare(args.compare, args.pairs, n, rounds)
        return

    import ctypes

    from mfu_tracker import user_gpu_spec

    fake = ctypes.CDLL(os.environ["MFU_TRACKER_CUDA_LIBRARY"])
    fake.fake_reset()  # no lag, no work: every event is done when recorded
    spec = user_gpu_spec(989.4, name="fixed", memory_bandwidth_tbs=3.35)
    baseline = per_call_ns(id, n, rounds)
    run = measure_steps(fake, spec, n, rounds)
    marks, phase_syncs = measure_marks(fake, run["cpu_tracker"], run["cuda_tracker"], n, rounds)
    metrics = measure_metrics(spec, run["cpu_tracker"], n, rounds)
    mixed = measure_mixed(n, rounds)
    blocks = measure_blocks(n, rounds)
    if args.json:
        figures = {**run["steps"], "Tracker.metrics()": run["metrics_ns"], **blocks, **marks,
                   **mixed, "Tracker.metrics(), cpu clock, no phases": metrics[0],
                   "Tracker.metrics(), cpu clock, waterfall": metrics[1],
                   "_cuda_syncs": run["syncs"] + phase_syncs, "_baseline": baseline}
        print(json.dumps(figures))
        return
    print_figures(n, rounds, baseline, run, blocks, marks, phase_syncs, metrics, mixed)


if __name__ == "__main__":
    main()
