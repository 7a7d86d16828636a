"""One torchrun worker for tests/distributed/test_moe_expert_parallel.py:
``moe_worker.py OUTDIR``; every rank writes ``OUTDIR/rank{r}.json``.

A small expert-parallel MoE layer (gloo, CPU, 2 ranks): 4 experts, rank r
holds experts 2r and 2r + 1. Each rank routes its 16 tokens by a fixed
assignment that sends 3/4 of them to expert 0 (on rank 0); an all-to-all
sends each token to its expert's rank, the experts run, and an all-to-all
brings the outputs back. Each expert sleeps ROW_SLEEP_S per row it computes
(an injected slow expert GEMM), so rank 0's experts take longest and rank 1
waits for them in the returning all-to-all.

Tracker(moe=, moe_every=3): step 3 and step 6 are sampled; the figures of
the window of steps 4-6 carry the wait read on step 3.
"""
from __future__ import annotations

import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

from mfu_tracker import user_gpu_spec
from mfu_tracker.step import Tracker

H = 8
EXPERTS = 4
ROW_SLEEP_S = 0.0005
# per rank, 16 tokens: 12 to expert 0, then experts 1, 2, 3 (3/4 to expert 0)
ASSIGNMENT = [0] * 12 + [1, 2, 3, 1]
SPEC = user_gpu_spec(0.05, name="test cpu", memory_bandwidth_tbs=0.01)


class LocalExperts(nn.Module):
    """This rank's experts, in transformers' experts interface (local indices)."""

    def __init__(self, experts: int) -> None:
        super().__init__()
        self.num_experts = experts
        self.up = nn.Parameter(torch.randn(experts, H, 2 * H) / H ** 0.5)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        out = torch.zeros(hidden_states.shape[0], 2 * H)
        for expert in range(self.num_experts):
            rows = (top_k_index.view(-1) == expert).nonzero().view(-1)
            if rows.numel():
                time.sleep(ROW_SLEEP_S * rows.numel())
                out[rows] = hidden_states[rows] @ self.up[expert]
        return out * top_k_weights.view(-1, 1)


class ExpertParallelMoE(nn.Module):
    """Dispatch by all-to-all, the local experts, combine by all-to-all."""

    def __init__(self, rank: int, world: int) -> None:
        super().__init__()
        self.rank, self.world = rank, world
        self.local = EXPERTS // world
        self.experts = LocalExperts(self.local)
        self.assignment = torch.tensor(ASSIGNMENT)

    def forward(self, x):
        owner = self.assignment // self.local
        order = torch.argsort(owner, stable=True)
        send_counts = torch.bincount(owner, minlength=self.world)
        recv_counts = torch.empty_like(send_counts)
        dist.all_to_all_single(recv_counts, send_counts)
        sends, recvs = send_counts.tolist(), recv_counts.tolist()
        tokens = torch.empty(sum(recvs), H)
        dist.all_to_all_single(tokens, x[order].contiguous(), recvs, sends)
        experts = torch.empty(sum(recvs), dtype=torch.long)
        dist.all_to_all_single(experts, (self.assignment[order] % self.local).contiguous(),
                               recvs, sends)
        out = self.experts(tokens, experts.view(-1, 1), torch.ones(len(experts), 1))
        back = torch.empty(len(x), 2 * H)
        dist.all_to_all_single(back, out, sends, recvs)   # waits for the slowest rank
        result = torch.empty_like(back)
        result[order] = back
        return result


def main() -> None:
    outdir = sys.argv[1]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    layer = ExpertParallelMoE(rank, world)
    tracker = Tracker(1e6, spec=SPEC, dtype="fp32", warmup=0, window=3, moe=layer, moe_every=3)
    x = torch.randn(len(ASSIGNMENT), H)
    records = []
    tracker.step()
    for step in range(1, 7):
        with tracker.phase("forward"):
            layer(x)
        tracker.step()
        if step % 3 == 0:
            load = tracker.last_moe_load
            records.append({"step": step, "metrics": tracker.metrics(),
                            "wait_s": load.wait_s, "straggler_rank": load.ranks.straggler_rank,
                            "layer_s": [list(s) for s in load.ranks.layer_s],
                            "routed": list(load.layers[0].routed)})
    tracker.close()
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump({"records": records}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
