"""One torchrun worker for tests/distributed/test_distributed_communication.py
(docs/communication.md): ``comm_worker.py OUTDIR [CASE ...]``; every rank runs the cases in order,
each with a Tracker of its own created with no attach call, and writes
``OUTDIR/rank{r}.json``: per case, the global metrics of each aggregation,
the rank's local window (``summary()``) and the mfu_tracker warnings.

Cases (gloo, CPU, 2 ranks):
  fsdp2     fully_shard on 4 Linear(256, 256) layers and the root; rank 1
            sleeps SLOW_S in every forward: bytes per kind, the other rank's
            exposed communication, straggler_rank.
  fsdp1     FullyShardedDataParallel over the same 4 layers, one flat
            parameter: the same slow rank 1.
  ddp       a bare DDP loop, phases marked, no attach_ddp: WINDOWS windows of
            STEPS_PER_WINDOW steps, rank (window % 2) sleeping DELAY_S in each
            forward of its window; metrics() after each window.
  tp        DTensor tensor parallelism: ColwiseParallel Linear(64, 128), then
            RowwiseParallel Linear(128, 64), batch 8 replicated.
  a2a       a Ulysses-style layer: all_to_all_single before and after a
            Linear, and in backward, on a (4, 8, 4, 16) fp32 activation.
  gpipe     a 2-stage ScheduleGPipe, M micro-batches, each stage's forward and
            backward a fixed sleep STAGE_S per micro-batch.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

from mfu_tracker import user_gpu_spec
from mfu_tracker.step import Tracker

SPEC = user_gpu_spec(0.05, name="test cpu", memory_bandwidth_tbs=0.01)
SLOW_S = 0.03
DELAY_S = 0.02
WINDOWS = 20
STEPS_PER_WINDOW = 3
M = 4
STAGE_S = 0.03
LINK_GBS = 10.0


def tracker(**kwargs) -> Tracker:
    kwargs.setdefault("warmup", 1)
    return Tracker(1e6, spec=SPEC, dtype="fp32", **kwargs)


def record(t: Tracker) -> dict:
    """The global metrics and this rank's own window (JSON-safe)."""
    local = t.summary()
    keep = ("comm_s", "comm_bytes", "comm_busbw_gbs", "phase_s", "mfu_lost", "net_utilization",
            "comm_overlap", "step_time_s", "mfu")
    return {"metrics": t.metrics(), "local": {k: local.get(k) for k in keep},
            "raw_phase_s": dict(t.phases()["phase_s"])}


def phased_step(t: Tracker, model: nn.Module, opt, x: torch.Tensor, sleep_s: float) -> None:
    with t.phase("data"):
        batch = x.clone()
    with t.phase("forward"):
        if sleep_s:
            time.sleep(sleep_s)
        loss = model(batch).pow(2).mean()
    with t.phase("backward"):
        loss.backward()
    with t.phase("optimizer"):
        opt.step()
        opt.zero_grad()
    t.step()


def four_linears() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Linear(256, 256) for _ in range(4)])


def case_fsdp2(rank: int) -> dict:
    from torch.distributed.fsdp import fully_shard

    model = four_linears()
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    return slow_forward(rank, model)


def case_fsdp1(rank: int) -> dict:
    from torch.distributed.fsdp import FullyShardedDataParallel

    return slow_forward(rank, FullyShardedDataParallel(four_linears(), device_id=torch.device("cpu")))


def slow_forward(rank: int, model: nn.Module) -> dict:
    """7 phased steps, rank 1 sleeping SLOW_S in every forward; window 6."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    t = tracker(window=6)
    x = torch.randn(8, 256)
    t.step()
    for _ in range(7):
        phased_step(t, model, opt, x, SLOW_S if rank == 1 else 0.0)
    out = record(t)
    t.close()
    return out


def case_ddp(rank: int) -> dict:
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    t = tracker(window=STEPS_PER_WINDOW, warmup=0, link_bandwidth_gbs=LINK_GBS)
    x = torch.randn(4, 32)
    windows = []
    t.step()
    for w in range(WINDOWS):
        for _ in range(STEPS_PER_WINDOW):
            phased_step(t, model, opt, x, DELAY_S if rank == w % 2 else 0.0)
        windows.append(record(t))
    t.close()
    return {"windows": windows}


def case_tp(rank: int) -> dict:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    mesh = init_device_mesh("cpu", (2,))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64))
    parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    t = tracker(window=4)
    x = torch.randn(8, 64)
    t.step()
    for _ in range(5):
        phased_step(t, model, opt, x, 0.0)
    out = record(t)
    t.close()
    return out


class AllToAll(torch.autograd.Function):
    """Ulysses' exchange: sequence shards <-> head shards (one all_to_all_single
    each way; its backward is the same exchange of the gradient)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x.contiguous())
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(grad)
        dist.all_to_all_single(out, grad.contiguous())
        return out


class Ulysses(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return AllToAll.apply(self.proj(AllToAll.apply(x)))


def case_a2a(rank: int) -> dict:
    torch.manual_seed(0)
    model = Ulysses()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    t = tracker(window=4)
    x = torch.randn(4, 8, 4, 16, requires_grad=True)
    t.step()
    for _ in range(5):
        phased_step(t, model, opt, x, 0.0)
    out = record(t)
    t.close()
    return out


class Sleep(torch.autograd.Function):
    """A stage's compute, made equal by construction: STAGE_S each way."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        time.sleep(STAGE_S)
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        time.sleep(STAGE_S)
        return grad


class Stage(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return Sleep.apply(self.lin(x))


def case_gpipe(rank: int) -> dict:
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    torch.manual_seed(rank)
    stage = PipelineStage(Stage(), stage_index=rank, num_stages=2, device=torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=M, loss_fn=lambda out, y: (out - y).pow(2).mean())
    x, y = torch.randn(M * 2, 16), torch.randn(M * 2, 16)
    t = tracker(window=4)
    t.step()
    for _ in range(5):
        if rank == 0:
            schedule.step(x)
        else:
            schedule.step(target=y)
        t.step()
    out = record(t)
    t.close()
    return out


def main() -> None:
    outdir, cases = sys.argv[1], sys.argv[2:]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out: dict = {"rank": rank}
    for case in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = globals()[f"case_{case}"](rank)
        result["warnings"] = [str(w.message) for w in caught if "mfu_tracker" in str(w.message)]
        out[case] = result
        dist.barrier()
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(out, f, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
