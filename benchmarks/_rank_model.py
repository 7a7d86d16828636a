"""The cost of a logging step against the number of ranks: a model, checked
against ``dist_aggregation.py``'s 2- and 4-process measurements and
projected to 1,024 ranks.

Per rank and logging step (``metrics()`` of a distributed tracker):

* bytes: the all-gather of one float64 row per rank (``ROW_FIELDS``; 8
  bytes each) on gloo, a ring (pytorch/gloo ``gloo/allgather.cc``, commit
  19f1d3ac: 2 (W - 1) sends to the next rank, each half a row): each rank
  passes on the W - 1 other rows, so it writes and reads
  ``(W - 1) x (row bytes + h)`` on its sockets, ``h`` gloo's framing of the
  row's two messages (fitted at the smallest W, checked at the others);
* CPU: a fixed cost (this rank's summary, its row, the tensors, the
  ledger; fitted at the smallest W), the Python that parses the W rows and
  combines them (``from_row`` x W + ``combine`` + the dict: measured here
  for W simulated rows, up to 1,024 -- every rank runs it), and gloo's own
  CPU for the all-gather (the bare all-gather of the same row, measured in
  each run, every thread of the process; linear in W - 1, fitted on the
  runs -- the only projected term).

The model ``cpu(W) = fixed + python(W) + gloo(W)``, its fixed term fitted at
the smallest W, is checked against the measured CPU time of a whole
aggregation at the other W. gloo's reads (``recv``) are not counted by
``/proc/self/io``; a ring reads what it writes.
"""
from __future__ import annotations

import time
import warnings
from typing import Dict, List, Sequence, Tuple

#: The rank counts the Python of a logging step is measured at (simulated rows).
WORLDS = (2, 4, 16, 64, 256, 1024)


def sample_tracker():
    """A local tracker with a window of 100 steps."""
    from mfu_tracker import user_gpu_spec
    from mfu_tracker.step import Tracker

    warnings.simplefilter("ignore")
    tracker = Tracker(1e9, distributed=False, window=100, warmup=0, dtype="bf16",
                      spec=user_gpu_spec(1000.0, name="bench", memory_bandwidth_tbs=1.0),
                      param_bytes=1e9, executed_flops_per_step=1.2e9)
    tracker.step()
    for _ in range(100):
        tracker.step(4096)
    return tracker


def sample_row() -> List[float]:
    """A real rank row: a local tracker's window of 100 steps."""
    return sample_tracker().rank_figures().to_row()


def python_s(world: int, row: Sequence[float], repeats: int = 3) -> float:
    """CPU seconds of parsing ``world`` rows, combining them and forming the dict (best of repeats)."""
    from mfu_tracker.distributed import RankFigures, combine

    rows = [[row[0], float(rank), *row[2:]] for rank in range(world)]
    calls = max(1, 4000 // world)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            combine([RankFigures.from_row(r) for r in rows]).metrics()
        best = min(best, (time.process_time() - start) / calls)
    return best


def fit_line(points: Sequence[Tuple[float, float]]) -> Tuple[float, float]:
    """Least-squares (intercept, slope) of y against x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def _mean(ranks: Sequence[Dict[str, float]], key: str) -> float:
    return sum(r[key] for r in ranks) / len(ranks)


def report(measured: Sequence[Dict]) -> None:
    """Print the Python against W, the model against the measurements, and 1,024 ranks."""
    from mfu_tracker.distributed import ROW_FIELDS

    row = sample_row()
    row_bytes = 8 * len(ROW_FIELDS)
    py = {w: python_s(w, row) for w in sorted({*WORLDS, *(m["world"] for m in measured)})}
    py0, py1 = fit_line(list(py.items()))
    print(f"rank row: {len(ROW_FIELDS)} float64 = {row_bytes} bytes")
    print("Python of a logging step (parse W rows, combine, dict), W simulated rows, CPU:")
    print("| W | us | model a + b*W |")
    print("|---:|---:|---:|")
    for w, s in py.items():
        print(f"| {w} | {s * 1e6:.1f} | {(py0 + py1 * w) * 1e6:.1f} |")
    print(f"fit: a = {py0 * 1e6:.1f} us, b = {py1 * 1e6:.2f} us per rank")
    runs = sorted(measured, key=lambda m: m["world"])
    w0 = runs[0]["world"]
    frame = _mean(runs[0]["ranks"], "written_bytes") / (w0 - 1) - row_bytes
    gloo = [(m["world"] - 1, _mean(m["ranks"], "bare_cpu_s")) for m in runs]
    g0, g1 = fit_line(gloo) if len(gloo) > 1 else (gloo[0][1], 0.0)
    fixed = _mean(runs[0]["ranks"], "cpu_s") - py[w0] - gloo[0][1]
    print(f"\ngloo framing per hop (a row's two messages) h = {frame:.1f} bytes (fitted at W={w0}); gloo CPU per "
          f"all-gather = {g0 * 1e6:.1f} + {g1 * 1e6:.1f} us x (W-1); fixed {fixed * 1e6:.1f} us "
          f"(fitted at W={w0})")
    print("Per rank and logging step, measured (mean over ranks) against the model:")
    print("| W | bytes written | model | CPU us | model us | of it gloo (measured) | Python | wall us |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in runs:
        w, ranks = m["world"], m["ranks"]
        bare = _mean(ranks, "bare_cpu_s")
        print(f"| {w} | {_mean(ranks, 'written_bytes'):.0f} | {(w - 1) * (row_bytes + frame):.0f} "
              f"| {_mean(ranks, 'cpu_s') * 1e6:.1f} | {(fixed + py[w] + bare) * 1e6:.1f} "
              f"| {bare * 1e6:.1f} | {py[w] * 1e6:.1f} | {_mean(ranks, 'wall_s') * 1e6:.1f} |")
    w = 1024
    cpu = fixed + py[w] + g0 + g1 * (w - 1)
    print(f"\nprojected at W={w}: {(w - 1) * (row_bytes + frame) / 1e3:.0f} kB written and read per "
          f"rank; CPU {cpu * 1e3:.1f} ms per rank (Python {py[w] * 1e3:.1f} ms measured, gloo "
          f"{(g0 + g1 * (w - 1)) * 1e3:.1f} ms projected); the ring's {w - 1} hops in sequence")
