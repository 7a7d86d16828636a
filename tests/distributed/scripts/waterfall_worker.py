"""One torchrun worker for tests/distributed/test_distributed_waterfall.py:
``waterfall_worker.py CASE OUTDIR``; every rank writes ``OUTDIR/rank{r}.json``
with the metrics of each aggregation, its local phase seconds and the row it
contributed to each aggregation (``rows``: what combine() received).

Cases (gloo, CPU, 2 ranks):
  comm_delay   DDP with the marking communication hook wrapping an all-reduce
               delayed by DELAY_S on every rank: exposed communication >= it.
  straggler    DDP, rank 1 sleeps STRAGGLE_S in every forward: the periods
               are equal, straggler_rank names rank 1.
  spread       a bare loop, rank 0 steps in 1 ms and rank 1 in 4 ms, metrics()
               every 10 steps: its wait leaves the step, the MFU spread ~4x.
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

from mfu_tracker import user_gpu_spec
from mfu_tracker.step import Tracker

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from _rows import record_rows  # noqa: E402 -- tests/_rows.py

H = 32
SPEC = user_gpu_spec(0.05, name="test cpu", memory_bandwidth_tbs=0.01)
DELAY_S = 0.03
STRAGGLE_S = 0.03


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(H, 4 * H, bias=False), nn.GELU(), nn.Linear(4 * H, H, bias=False))


def ddp_loop(rank: int, out: dict, *, hook=None, forward_sleep: float = 0.0) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(mlp())
    tracker = Tracker(1e6, spec=SPEC, dtype="fp32", warmup=1, window=8)
    tracker.attach_ddp(model, hook=hook)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4, 16, H)
    records = []
    tracker.step()
    for step in range(1, 19):
        with tracker.phase("data"):
            batch = x.clone()
        with tracker.phase("forward"):
            if forward_sleep:
                time.sleep(forward_sleep)
            loss = model(batch).pow(2).mean()
        with tracker.phase("backward"):
            loss.backward()
        with tracker.phase("optimizer"):
            opt.step()
            opt.zero_grad()
        tracker.step()
        if step % 6 == 0:
            metrics = tracker.metrics()
            records.append({"step": step, "metrics": metrics,
                            "phase_s": tracker.phases()["phase_s"],
                            "summary": {k: v for k, v in tracker.summary().items()
                                        if isinstance(v, (int, float, str)) or v is None}})
    out["records"] = records


def delayed_allreduce(state, bucket):
    """DDP's all-reduce, its result handed back DELAY_S after it completes (an
    injected slow network). A timer thread sets the result, so the delay never
    runs inline in the hook, whenever the all-reduce completes."""
    import threading

    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    inner = default_hooks.allreduce_hook(state, bucket)
    out = torch.futures.Future()

    def done(fut):
        value = fut.value()
        value = value[0] if isinstance(value, list) else value
        threading.Timer(DELAY_S, out.set_result, args=(value,)).start()

    inner.add_done_callback(done)
    return out


def case_comm_delay(rank: int, out: dict) -> None:
    ddp_loop(rank, out, hook=delayed_allreduce)


def case_straggler(rank: int, out: dict) -> None:
    ddp_loop(rank, out, forward_sleep=STRAGGLE_S if rank == 1 else 0.0)


def case_spread(rank: int, out: dict) -> None:
    sleep_s = 0.001 if rank == 0 else 0.004
    tracker = Tracker(1e6, spec=SPEC, dtype="fp32", warmup=0, window=10)
    records = []
    tracker.step()
    for step in range(1, 41):
        time.sleep(sleep_s)
        tracker.step()
        if step % 10 == 0:
            records.append({"step": step, "metrics": tracker.metrics(),
                            "excluded_s": tracker.phases()["excluded_s"]})
    out["records"] = records


def main() -> None:
    case, outdir = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out: dict = {"rank": rank}
    record_rows(out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        globals()[f"case_{case}"](rank, out)
    out["warnings"] = [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
