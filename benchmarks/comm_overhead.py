"""Per-collective cost of the communication observer (docs/communication.md), on the CPU.

    .venv/bin/python benchmarks/comm_overhead.py [--calls 1000] [--rounds 21]

One process, a gloo process group of one rank (HashStore): a collective then
runs its whole c10d path -- dispatcher, ProcessGroup, gloo's work and its
future, ``Work.wait`` -- with nothing on the wire, so the observer's share is
as large as it can be. Interleaved rounds, each timing the same loop

* *off*: no tracker observes (the reference: torch alone);
* *on*: a ``Tracker`` on the CPU clock observes, a step open -- every
  collective records its launch (bytes, bus bytes, link) and completion in
  the step engine and its wait as its kind's phase;

for a synchronous ``all_reduce`` of 4 floats (launch + wait in Python), an
async ``all_reduce`` waited later, and ``broadcast``; and, with the
observer's dispatch key included on the thread or not, an ``aten::add`` of
two 4-float tensors -- an unobserved op, which must cost nothing.

Each loop is timed on three clocks: the training thread's CPU time
(``time.thread_time``: what the loop pays; a busy machine's waits for a core
do not count), the process's CPU time (``time.process_time``: gloo's thread
too, where a completion callback runs) and the wall clock. Printed per
clock: the best round's ns per call off and on, their difference (best
rounds: the machine's interference only ever adds), and the median of the
per-round differences with its spread. The ``_torch`` extension must be
built (``make build``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


CLOCKS = (("thread CPU", time.thread_time), ("process CPU", time.process_time),
          ("wall", time.perf_counter))


def _per_call(fn, calls: int) -> tuple:
    """Seconds per call on each of CLOCKS."""
    start = [clock() for _, clock in CLOCKS]
    for _ in range(calls):
        fn()
    return tuple((clock() - t0) / calls for (_, clock), t0 in zip(CLOCKS, start))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    from mfu_tracker import Tracker, user_gpu_spec
    from mfu_tracker._native._observer import observer_module

    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    module = observer_module()
    assert module is not None, "build the C++ observer first (make build)"
    spec = user_gpu_spec(1.0, name="cpu")
    x, y = torch.ones(4), torch.ones(4)

    def sync_all_reduce() -> None:
        dist.all_reduce(x)

    def async_all_reduce() -> None:
        dist.all_reduce(x, async_op=True).wait()

    def broadcast() -> None:
        dist.broadcast(x, src=0)

    def add() -> None:
        torch.add(x, y)

    loops = {"all_reduce (sync)": sync_all_reduce, "all_reduce (async + wait)": async_all_reduce,
             "broadcast (sync)": broadcast}
    off = {name: [] for name in [*loops, "aten::add"]}
    on = {name: [] for name in off}
    for _ in range(args.rounds):
        for name, fn in loops.items():
            fn()
            off[name].append(_per_call(fn, args.calls))
        module.comm_stop()
        off["aten::add"].append(_per_call(add, args.calls * 10))
        tracker = Tracker(1e9, spec=spec, clock="cpu", warmup=0, window=10)
        assert tracker.observes_communication
        tracker.step()
        for name, fn in loops.items():
            fn()
            on[name].append(_per_call(fn, args.calls))
            tracker.step()
        on["aten::add"].append(_per_call(add, args.calls * 10))  # the key is included again
        tracker.close()
    print(f"per call, median of {args.rounds} interleaved rounds "
          f"({args.calls} collectives / {args.calls * 10} adds each):")
    for c, (clock, _) in enumerate(CLOCKS):
        print(f"\n[{clock}]")
        print(f"{'loop':28s} {'best off':>9s} {'best on':>9s} {'on - off':>9s}  "
              f"median of rounds' on - off (spread), ns")
        for name in off:
            a = [r[c] for r in off[name]]
            b = [r[c] for r in on[name]]
            deltas = [(y - x) * 1e9 for x, y in zip(a, b)]
            print(f"{name:28s} {min(a) * 1e9:9.0f} {min(b) * 1e9:9.0f} "
                  f"{(min(b) - min(a)) * 1e9:9.0f}  {statistics.median(deltas):.0f} "
                  f"({min(deltas):.0f} .. {max(deltas):.0f})")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
