"""CPU cost of one window edge of the hardware counters and memory headroom.

A window edge is one ``Tracker.metrics()``: with the device component on
(``telemetry`` with the GPM counters, ``memory=True``) it reads NVML's
power / clocks, takes one GPM sample and computes the window's metrics
(``nvmlGpmMetricsGet``), reads ``torch.cuda.memory_stats`` and runs the
self-check. Nothing of it happens per step.

Measured here on this machine's fakes (no GPU): the fake NVML of the tests
(tests/c/fake_nvml, compiled against the real nvml.h) and the fake
allocator statistics (tests/_fake_allocator.py), so the figure is *our*
side of the edge -- the core's calls, the Python around them -- not the
driver's own time inside NVML, which only a GPU can show
(benchmarks/gpu/hardware_check.py runs there).

Two trackers on the fake CUDA clock, one with the component and one without
(``telemetry=False, memory=False``), take their ``metrics()`` in interleaved
pairs, each after 10 steps and a 0.11 s pause (so every GPM window is long
enough to ask NVML for its metrics); the cost of an edge is the median over
pairs of (with - without), host ``perf_counter_ns``; the spread is printed.

    .venv/bin/python benchmarks/hardware_edge.py [--pairs 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=40)
    args = parser.parse_args()

    import conftest  # noqa: F401 -- builds the fake driver, names it for the core
    from _fake_allocator import GIB, FakeAllocator
    from _fake_nvml import UUID, FakeNvml, build

    os.environ["MFU_TRACKER_NVML_LIBRARY"] = build()
    nvml = FakeNvml(os.environ["MFU_TRACKER_NVML_LIBRARY"])
    nvml.script_gpm(25.0, 31.0, 88.0, 40.0, 1000.0, 1000.0)   # MFU ~ tensor-active: no warning
    import torch

    allocator = FakeAllocator()
    patch = types.SimpleNamespace(setattr=lambda obj, name, value: setattr(obj, name, value))
    allocator.install(patch, torch)
    allocator.malloc(GIB)
    driver = conftest.FakeDriver()

    from mfu_tracker import Tracker, user_gpu_spec

    spec = user_gpu_spec(1000.0, name="fake GPU")
    common = dict(spec=spec, clock="cuda", stream=0, warmup=0, dtype="bf16")
    with_hw = Tracker(5e11, telemetry=UUID, memory=True, **common)
    without = Tracker(5e11, telemetry=False, memory=False, **common)
    costs = {id(with_hw): [], id(without): []}

    def edge(tracker) -> None:
        tracker.step()
        for _ in range(10):
            driver.set_work_ns(1_000_000)
            driver.advance(1_000_000)
            tracker.step(num_tokens=1000)
        tracker.flush()
        time.sleep(0.11)
        start = time.perf_counter_ns()
        out = tracker.metrics()
        costs[id(tracker)].append(time.perf_counter_ns() - start)
        assert ("throughput/hw/tensor_active" in out) == (tracker is with_hw), out

    edge(with_hw)   # the first window of each (warm-up)
    edge(without)
    costs = {key: [] for key in costs}
    for pair in range(args.pairs):
        order = (with_hw, without) if pair % 2 == 0 else (without, with_hw)
        for tracker in order:
            edge(tracker)
    diffs = [a - b for a, b in zip(costs[id(with_hw)], costs[id(without)])]
    q = statistics.quantiles(diffs, n=4)
    print(f"metrics() with the device component: median {statistics.median(costs[id(with_hw)]) / 1e3:.1f} us")
    print(f"metrics() without it:                median {statistics.median(costs[id(without)]) / 1e3:.1f} us")
    print(f"one window edge (paired difference): median {statistics.median(diffs) / 1e3:.1f} us, "
          f"quartiles {q[0] / 1e3:.1f} .. {q[2] / 1e3:.1f} us over {args.pairs} pairs")
    print(f"NVML calls per edge: nvmlGpmSampleGet {nvml.calls('nvmlGpmSampleGet') / (args.pairs + 1):.0f}, "
          f"nvmlGpmMetricsGet {nvml.calls('nvmlGpmMetricsGet') / (args.pairs + 1):.0f}")


if __name__ == "__main__":
    main()
