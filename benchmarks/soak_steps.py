"""A tracker over 10^7 steps: memory, the log and ``metrics()`` stay flat.

A month-long job takes millions of steps. This runs one ``Tracker`` (public
API only: ``step()``, ``phase()``, ``metrics()``, ``log_path=``, ``close()``)
on the CPU clock, with no model, for ``--steps`` steps (default 10^7): every
step closes with its tokens and FLOPs, its data and compute phases marked,
and ``metrics()`` logs a window line every ``--every`` steps (default 1,000:
10^4 lines). At 1, 2 and 5 x 10^k steps (10^4 ... 10^7) it prints:

* the process's resident memory (``/proc/self/statm``), against 10^6's;
* the log's size and the mean bytes per line of the last decade's lines
  (a line grows only with the digits of its step numbers);
* ``metrics()``' cost: the thread CPU time of the last 200 calls
  (``time.thread_time_ns``: other processes' time is not counted), their
  lowest (what the call itself costs: a busy machine only adds) and their
  median, against 10^6's.

It checks the flatness the project holds a tracker to: RSS at 10^7 within
10 MB of 10^6, ``metrics()`` at 10^7 within 1.1x of 10^6, bytes per line
within the digits the step numbers gained. Exit status 1 when one fails.

    .venv/bin/python benchmarks/soak_steps.py                 # 10^7 steps, ~2 min
    .venv/bin/python benchmarks/soak_steps.py --steps 1000000
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from collections import deque
from typing import Deque, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mfu_tracker import Tracker  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
CALLS = 200                        # metrics() calls timed per decade


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


def line_bytes(path: Path, lines: int) -> float:
    """The mean length of the log's last ``lines`` lines, bytes."""
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 4096 * lines))
        tail = f.read().splitlines()[-lines:]
    return statistics.mean(len(x) + 1 for x in tail)


def soak(steps: int, every: int, log: Path) -> List[Dict[str, float]]:
    tracker = Tracker(1.0, dtype="bf16", peak_tflops=1.0, clock="cpu", window=100, warmup=0,
                      log_path=str(log))
    step, phase, metrics = tracker.step, tracker.phase, tracker.metrics
    marks = {m * 10 ** k for k in range(4, 12) for m in (1, 2, 5)} | {steps}
    costs: Deque[int] = deque(maxlen=CALLS)
    rows = []
    started = time.perf_counter()
    step()
    for i in range(1, steps + 1):
        with phase("data"):
            pass
        with phase("forward"):
            pass
        step(1024, model_flops=1.0)   # MFU ~1e-6: no "MFU > 1" warning
        if i % every == 0:
            before = time.thread_time_ns()
            metrics()
            costs.append(time.thread_time_ns() - before)
        if i in marks:
            rows.append({"steps": i, "rss_mb": rss_mb(), "log_mb": log.stat().st_size / 1e6,
                         "line_bytes": line_bytes(log, min(CALLS, i // every)),
                         "metrics_us": min(costs) / 1e3,
                         "metrics_median_us": statistics.median(costs) / 1e3,
                         "elapsed_s": time.perf_counter() - started})
            row = rows[-1]
            print(f"{i:>12,} steps  RSS {row['rss_mb']:7.1f} MB  log {row['log_mb']:8.1f} MB"
                  f"  {row['line_bytes']:7.1f} B/line  metrics() {row['metrics_us']:6.1f} us"
                  f" (median {row['metrics_median_us']:6.1f})  ({row['elapsed_s']:.0f} s)",
                  flush=True)
    tracker.close()
    return rows


def check(rows: List[Dict[str, float]]) -> int:
    """The flatness checks (module docstring); 0 when they hold."""
    by = {int(r["steps"]): r for r in rows}
    if 10 ** 6 not in by or max(by) <= 10 ** 6:
        return 0
    base, last = by[10 ** 6], by[max(by)]
    digits = len(str(max(by))) - len(str(10 ** 6))
    failed = 0
    for what, ok in (
            (f"RSS {last['rss_mb'] - base['rss_mb']:+.1f} MB from 10^6 steps (<= 10 MB)",
             last["rss_mb"] - base["rss_mb"] <= 10),
            (f"metrics() {last['metrics_us'] / base['metrics_us']:.3f}x its cost at 10^6 steps "
             f"(lowest of {CALLS} calls; <= 1.1)", last["metrics_us"] <= 1.1 * base["metrics_us"]),
            (f"bytes per line {last['line_bytes'] - base['line_bytes']:+.1f} from 10^6 steps "
             f"(<= 4 per digit the step numbers gained: {digits})",
             last["line_bytes"] - base["line_bytes"] <= 4 * digits)):
        print(("ok     " if ok else "FAILED ") + what)
        failed += not ok
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10 ** 7)
    parser.add_argument("--every", type=int, default=1000, help="steps per metrics() line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as where:
        rows = soak(args.steps, args.every, Path(where) / "soak.jsonl")
    return check(rows)


if __name__ == "__main__":
    sys.exit(main())
