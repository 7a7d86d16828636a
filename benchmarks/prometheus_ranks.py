"""Prometheus at many ranks: the series count, the scrape's size and the time
to update and render them, for W simulated ranks, by default (quantiles over
ranks) and with one series per rank (``MFU_TRACKER_METRICS_PER_RANK=1``).

    .venv/bin/python benchmarks/prometheus_ranks.py [--worlds 2 64 1024] [--repeats 5]

Each rank's row is a real tracker's row (a window of 100 steps, every phase
marked, a power reading) with its rank set; the exposition is built the way
the endpoint builds it (``mfu_tracker.job._prometheus.Gauges.update`` at the
logging step, then prometheus_client's ``generate_latest`` over it on a
scrape), without the HTTP server. Times are the best of ``--repeats``:
``update`` runs on the training thread at each logging step, the render on
the scrape thread of the same process (it holds the GIL while it runs).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

from _rank_model import sample_tracker


def sample_row() -> list:
    """A tracker's row with every per-rank gauge present (phases, power)."""
    from mfu_tracker.timing._waterfall import PHASES

    phases = {f"phase_{name}_s": 1e-3 for name in PHASES}   # every phase marked
    return replace(sample_tracker().rank_figures(), power_w=400.0, interval_s=1.0,
                   interval_steps=100, **phases).to_row()


def measure(world: int, per_rank: bool, row: list, repeats: int) -> dict:
    from prometheus_client import generate_latest
    from prometheus_client.registry import CollectorRegistry

    from mfu_tracker.distributed import RankFigures, combine
    from mfu_tracker.job._prometheus import Gauges

    rows = [RankFigures.from_row([row[0], float(r), *row[2:]]) for r in range(world)]
    metrics = combine(rows).metrics("throughput")
    gauges = Gauges(per_rank=per_rank)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(gauges)
    update = render = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        gauges.update(metrics, prefix="throughput", step=100, job="job-1", rank=0, ranks=rows)
        t1 = time.perf_counter()
        text = generate_latest(registry)
        t2 = time.perf_counter()
        update, render = min(update, t1 - t0), min(render, t2 - t1)
    series = sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))
    return dict(series=series, bytes=len(text), update_s=update, render_s=render)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 64, 1024])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    row = sample_row()
    print("| ranks | series | scrape bytes | update ms (logging step) | render ms (scrape) |")
    print("|---:|---:|---:|---:|---:|")
    for per_rank in (False, True):
        print(f"| **{'one series per rank' if per_rank else 'default: quantiles over ranks'}** ||||")
        for world in args.worlds:
            m = measure(world, per_rank, row, args.repeats)
            print(f"| {world} | {m['series']} | {m['bytes']} | {m['update_s'] * 1e3:.2f} "
                  f"| {m['render_s'] * 1e3:.2f} |")


if __name__ == "__main__":
    main()
