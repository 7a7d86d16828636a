"""Cost of one cross-rank aggregation (Tracker.metrics() under torch.distributed),
and a count of the collectives a training loop runs, at 2 and 4 processes.

    .venv/bin/python benchmarks/dist_aggregation.py [--calls 2000] [--rounds 5] [--nproc 2 4]

re-launches itself under ``torchrun --nproc_per_node=N`` (gloo, CPU) for each
N of ``--nproc`` and measures, in one run on every rank:

* a local ``metrics()`` (``Tracker(distributed=False)``) and the C summary
  it formats (``_C.StepTracker.summary``), the same window of 100 steps;
* one aggregation: ``metrics()`` of a distributed tracker (summary, row, one
  gloo all-gather on the tracker's side group, combine, dict), the ranks
  calling it in lockstep (each call waits for the other rank, so this is the
  latency of a round, not CPU time);
* the Python around the collective alone (this rank's row, parsing two rows,
  combine, the dict) and the bare all-gather of a row of the same size on
  the same kind of group, to separate the collective from our code;
* ``step()`` of the distributed tracker vs a local one (the same C method);
* the all-gathers started (counted by wrapping torch.distributed's
  all-gather functions) over 10,000 steps: with no metrics() call, and with
  metrics() every 100 steps.

* per logging step, on every rank: the CPU time of the process (every
  thread: gloo's included) and the bytes it read and wrote on its sockets
  (``/proc/self/io`` rchar / wchar, which count gloo's TCP reads and
  writes), over ``--calls`` aggregations in lockstep.

Rank 0 prints the table; figures are the best round's mean per call. Then,
in this process, the model of :mod:`benchmarks._rank_model` (the Python of a
logging step against the number of rows, measured up to 1,024 simulated
ranks; the wire bytes of a ring all-gather) is checked against the 2- and
4-process measurements and projected to 1,024 ranks.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _relaunch(argv: list[str], nproc: int, out: str) -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torchrun = Path(sys.executable).with_name("torchrun")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [str(torchrun), f"--nproc_per_node={nproc}", f"--master_port={port}", __file__,
           *argv, "--out", out]
    return subprocess.run(cmd, env=env, timeout=1800).returncode


def _io_bytes() -> tuple[int, int]:
    """(rchar, wchar) of this process: bytes through read/write calls, sockets included."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["rchar"]), int(fields["wchar"])


def per_logging_step(dist, call, calls: int, rounds: int) -> dict:
    """This rank's CPU seconds and socket bytes per ``call()`` (best round by CPU)."""
    best: dict = {}
    for _ in range(rounds):
        dist.barrier()
        read0, written0 = _io_bytes()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            call()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        read, written = (b - a for a, b in zip((read0, written0), _io_bytes()))
        if not best or cpu / calls < best["cpu_s"]:
            best = dict(cpu_s=cpu / calls, wall_s=wall / calls, read_bytes=read / calls,
                        written_bytes=written / calls)
    return best


def _best(fn, calls: int, rounds: int, barrier=None) -> float:
    """Best round's mean seconds per call."""
    best = float("inf")
    for _ in range(rounds):
        if barrier is not None:
            barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def count_gathers(dist) -> list:
    """Wrap torch.distributed's all-gather functions; the returned one-item
    list counts the all-gathers started."""
    gathers = [0]
    for name in ("all_gather_single", "all_gather_into_tensor", "all_gather"):
        original = getattr(dist, name, None)
        if original is None:
            continue

        def counted(*a, __original=original, **k):
            gathers[0] += 1
            return __original(*a, **k)

        setattr(dist, name, counted)
    return gathers


def measure(args, torch, dist, Tracker, common: dict) -> dict:
    """Seconds per call of each row of the table."""
    from mfu_tracker import _C
    from mfu_tracker.distributed import ROW_FIELDS, RankFigures, combine

    def filled(tracker):
        tracker.step()
        for _ in range(100):
            tracker.step(4096)
        return tracker

    local = filled(Tracker(1e9, distributed=False, **common))
    shared = filled(Tracker(1e9, **common))
    assert shared.distributed and not local.distributed
    barrier = dist.barrier
    world = dist.get_world_size()
    out = {"c": _best(lambda: _C.StepTracker.summary(local), args.local_calls, args.rounds),
           "local": _best(local.metrics, args.local_calls, args.rounds),
           "agg": _best(shared.metrics, args.calls, args.rounds, barrier)}
    n = len(ROW_FIELDS)
    group = dist.new_group(backend="gloo")
    send = torch.zeros(n, dtype=torch.float64)
    recv = torch.empty(world * n, dtype=torch.float64)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    out["raw"] = _best(lambda: gather(recv, send, group=group), args.calls, args.rounds, barrier)

    def python_only() -> None:  # what an aggregation does around the collective
        row = shared.rank_figures().to_row()
        rows = [RankFigures.from_row(row) for _ in range(world)]
        combine(rows).metrics()

    out["py"] = _best(python_only, args.calls * 10, args.rounds)
    out["step_local"] = _best(lambda: local.step(4096), args.local_calls, args.rounds)
    out["step_shared"] = _best(lambda: shared.step(4096), args.local_calls, args.rounds)
    out["row_floats"] = n
    return out


def count_collectives(dist, Tracker, common: dict, gathers: list) -> dict:
    """All-gathers over a loop: none without metrics(), one per metrics() call."""
    dist.barrier()
    counting = Tracker(1e9, **common)
    before = gathers[0]
    for _ in range(10_000):
        counting.step(4096)
    no_logging = gathers[0] - before
    before = gathers[0]
    for i in range(1, 10_001):
        counting.step(4096)
        if i % 100 == 0:
            metrics = counting.metrics()
    every_100 = gathers[0] - before
    out = dict(no_logging=no_logging, every_100=every_100, metrics=metrics,
               counters=counting.distributed_counters())
    dist.barrier()
    return out


def print_table(args, torch, dist, t: dict, c: dict) -> None:
    us = lambda s: f"{s * 1e6:9.2f}"  # noqa: E731
    world = dist.get_world_size()
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, world size "
          f"{world}, gloo, CPU; best of {args.rounds} rounds")
    print("| call                                              |   us/call | vs local metrics() |")
    print("|---------------------------------------------------|----------:|-------------------:|")
    print(f"| `_C.StepTracker.summary()` (the C figures)        | {us(t['c'])} | {t['c'] / t['local']:17.2f}x |")
    print(f"| `Tracker.metrics()`, local (`distributed=False`)  | {us(t['local'])} | {1.0:17.2f}x |")
    print(f"| `Tracker.metrics()`, aggregation over {world} ranks     | {us(t['agg'])} | {t['agg'] / t['local']:17.1f}x |")
    print(f"| its Python: row, {world} rows parsed, combine, dict     | {us(t['py'])} | {t['py'] / t['local']:17.1f}x |")
    print(f"| bare gloo all-gather of the {t['row_floats']}-float64 row       | {us(t['raw'])} | {t['raw'] / t['local']:17.1f}x |")
    print(f"| `Tracker.step()`, local                           | {us(t['step_local'])} |                    |")
    print(f"| `Tracker.step()`, distributed tracker             | {us(t['step_shared'])} |                    |")
    print()
    print(f"all-gathers over 10,000 steps without metrics(): {c['no_logging']}")
    print(f"all-gathers over 10,000 steps with metrics() every 100 steps: {c['every_100']} "
          f"(tracker counters: {c['counters']})")
    metrics = c["metrics"]
    print(f"keys of an aggregation: {len(metrics)} ({', '.join(sorted(k.split('/')[1] for k in metrics))})")


def _worker(args) -> None:
    import json
    import warnings

    import torch
    import torch.distributed as dist

    from mfu_tracker import user_gpu_spec
    from mfu_tracker.step import Tracker

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    dist.init_process_group("gloo")
    gathers = count_gathers(dist)
    common = dict(spec=user_gpu_spec(1000.0, name="bench", memory_bandwidth_tbs=1.0),
                  dtype="bf16", window=100, warmup=0, param_bytes=1e9,
                  executed_flops_per_step=1.2e9)
    timings = measure(args, torch, dist, Tracker, common)
    counts = count_collectives(dist, Tracker, common, gathers)
    logging = Tracker(1e9, **common)
    for _ in range(101):
        logging.step(4096)
    mine = per_logging_step(dist, logging.metrics, args.calls, args.rounds)
    n, world = timings["row_floats"], dist.get_world_size()
    send, recv = torch.zeros(n, dtype=torch.float64), torch.empty(world * n, dtype=torch.float64)
    group = dist.new_group(backend="gloo")
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    bare = per_logging_step(dist, lambda: gather(recv, send, group=group), args.calls, args.rounds)
    mine.update({f"bare_{key}": value for key, value in bare.items()})
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)
    if dist.get_rank() == 0:
        print_table(args, torch, dist, timings, counts)
        Path(args.out).write_text(json.dumps(dict(
            world=dist.get_world_size(), ranks=every, local_s=timings["local"],
            agg_s=timings["agg"], py_s=timings["py"], raw_s=timings["raw"],
            row_floats=timings["row_floats"])))
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="aggregations per round")
    parser.add_argument("--local-calls", type=int, default=100_000, help="local calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--nproc", type=int, nargs="+", default=[2, 4],
                        help="process counts, one torchrun each (default: 2 4)")
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)  # rank 0's JSON
    args = parser.parse_args()
    if "LOCAL_RANK" in os.environ:
        _worker(args)
        return
    import json
    import tempfile

    from _rank_model import report

    measured = []
    with tempfile.TemporaryDirectory() as tmp:
        for nproc in args.nproc:
            out = os.path.join(tmp, f"{nproc}.json")
            argv = [a for a in sys.argv[1:]]
            if _relaunch(argv, nproc, out) != 0:
                sys.exit(f"torchrun --nproc_per_node={nproc} failed")
            measured.append(json.loads(Path(out).read_text()))
            print()
    report(measured)


if __name__ == "__main__":
    main()
