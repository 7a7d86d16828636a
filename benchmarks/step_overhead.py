"""CPU cost of the step tracker's ``step()`` and of a GPU-path ``track()`` block,
against Python equivalents of the same shape and ``nullcontext()``, in one run.

* ``Tracker.step()`` on the CPU clock and on the CUDA clock (the fake driver of
  tests/c/fake_driver, built here with ``cc``: no GPU needed). The fake is set
  to complete every event as soon as it is recorded, so each step makes the
  steady-state driver calls (record, query, elapsed) and never waits.
* ``track()`` blocks on the CPU clock and on the fake CUDA clock (two marks,
  results read every block).
* Python equivalents: a class doing ``time.perf_counter()`` marks and a
  ``collections.deque`` window (for ``step()``), and a context manager reading
  ``perf_counter()`` on enter and exit (for ``track()``). The natural GPU
  equivalent, ``torch.cuda.Event(enable_timing=True)`` record / elapsed_time,
  cannot be created without a GPU (torch raises on a CPU build), so it is not
  measured here; on a GPU it adds two event records and a query per step in
  Python on top of this shape -- and ``elapsed_time`` needs a synchronize.

"ns per call" is wall time of a tight loop (single thread: CPU time), best of
``--rounds``; "net" subtracts the same loop calling the builtin ``id(4096)``,
i.e. it is the cost of the call itself beyond calling any C function.

    .venv/bin/python benchmarks/step_overhead.py [--calls 1000000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
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


def per_call_ns(fn, calls: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn(4096)
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def per_block_ns(make_block, calls: int, rounds: int, read: bool) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            with make_block() as r:
                pass
            if read:
                r.elapsed_sec
        best = min(best, (time.perf_counter_ns() - start) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n, rounds = args.calls, args.rounds

    import ctypes

    from mfu_tracker import track, user_gpu_spec
    from mfu_tracker.step import Tracker

    fake = ctypes.CDLL(os.environ["MFU_TRACKER_CUDA_LIBRARY"])
    fake.fake_reset()  # no lag, no work: every event is done when recorded

    spec = user_gpu_spec(989.4, name="fixed", memory_bandwidth_tbs=3.35)
    baseline = per_call_ns(id, n, rounds)

    cpu_tracker = Tracker(1e6, spec=spec, clock="cpu", param_bytes=1e9)
    cuda_tracker = Tracker(1e6, spec=spec, clock="cuda", stream=0, param_bytes=1e9)
    assert cuda_tracker.clock == "cuda"
    py_tracker = PyStepTracker(1e6)
    steps = {
        "Tracker.step(), cpu clock": per_call_ns(cpu_tracker.step, n, rounds),
        "Tracker.step(), cuda clock (fake driver)": per_call_ns(cuda_tracker.step, n, rounds),
        "Python perf_counter + deque step()": per_call_ns(py_tracker.step, n, rounds),
    }
    counters = cuda_tracker.counters()
    syncs = fake.fake_sync_calls()
    metrics_ns = per_call_ns(lambda _: cuda_tracker.metrics(), n // 10, rounds)

    blocks = {
        "nullcontext()": per_block_ns(contextlib.nullcontext, n, rounds, read=False),
        "Python perf_counter block": per_block_ns(PyBlock, n, rounds, read=True),
        # peak_tflops + device: the cached peak (an explicit spec= is resolved every call)
        "track(), cpu clock": per_block_ns(
            lambda: track(1e6, 1e9, dtype="bf16", peak_tflops=989.4, device="cpu", clock="cpu"),
            n, rounds, read=True),
        "track(), cuda clock (fake driver)": per_block_ns(
            lambda: track(1e6, 1e9, dtype="bf16", peak_tflops=989.4, device="cpu", clock="cuda",
                          stream=0),
            n, rounds, read=True),
    }

    print(f"{n} calls per round, best of {rounds} rounds; Python {sys.version.split()[0]}")
    print(f"loop + call of builtin id(): {baseline:6.1f} ns (subtracted as 'net')")
    py_step = steps["Python perf_counter + deque step()"]
    for name, ns in steps.items():
        print(f"{name:45s} {ns:7.1f} ns/call  net {ns - baseline:6.1f} ns  "
              f"({ns / py_step:.2f}x the Python shape)")
    print(f"  cuda steps: {counters['marks']} marks, {counters['waits']} waits, "
          f"{syncs} synchronizing driver calls, {counters['events']} events")
    print(f"Tracker.metrics() (dict of 9 floats, window 100) {metrics_ns:7.1f} ns/call")
    null = blocks["nullcontext()"]
    for name, ns in blocks.items():
        print(f"{name:45s} {ns:7.1f} ns/block ({ns / null:.2f}x nullcontext, "
              f"+{ns - null:.0f} ns)")
    print("torch.cuda.Event equivalent: not measurable without a GPU "
          "(torch.cuda.Event(enable_timing=True) raises on a CPU build)")


if __name__ == "__main__":
    main()
