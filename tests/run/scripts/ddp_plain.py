"""A torchrun script that knows nothing of mfu_tracker: tiny_loop.py's model
under DistributedDataParallel on gloo (CPU), each rank its own batches.

    torchrun --nproc_per_node=2 ddp_plain.py [--steps 6] [--batch 4] [--seq 16] [--no-destroy]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tiny_loop import VOCAB, TinyLM  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--no-destroy", action="store_true")
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(TinyLM())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    for _ in range(args.steps):
        ids = torch.randint(0, VOCAB, (args.batch, args.seq), generator=g)
        model(input_ids=ids, labels=ids).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    print(f"rank {rank} trained {args.steps} steps", flush=True)
    if not args.no_destroy:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
