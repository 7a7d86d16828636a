"""A bare PyTorch training loop that knows nothing of mfu_tracker (but for
``--end-step``, the one line a loop without an optimizer adds), run by the
``mfu-tracker run`` tests. The model's FLOPs are hand arithmetic
(:func:`model_flops_per_step`).

    python tiny_loop.py [--steps 6] [--batch 4] [--seq 16] [--accumulate 1]
        [--optimizers 1|2] [--update optimizer|manual] [--end-step] [--mask]
        [--crash-at N] [--kill-at N] [--exit-code C] [--wait-for-sigterm]
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import torch

VOCAB, HIDDEN, INNER = 64, 16, 32


class TinyLM(torch.nn.Module):
    """Embedding -> Linear(16, 32) -> ReLU -> Linear(32, 64) -> cross entropy."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.up = torch.nn.Linear(HIDDEN, INNER)
        self.out = torch.nn.Linear(INNER, VOCAB)

    def forward(self, input_ids, attention_mask=None, labels=None):
        logits = self.out(torch.relu(self.up(self.embed(input_ids))))
        if labels is None:
            return logits
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def model_flops_per_step(tokens: int) -> int:
    """Model FLOPs of one micro-batch of ``tokens`` positions, by hand: each
    Linear is 2 x tokens x in x out forward, the same for its weight's
    gradient and for its input's (the embedding's output requires grad):
    6 x tokens x (16 x 32 + 32 x 64). Embedding, ReLU, cross entropy: 0."""
    return 6 * tokens * (HIDDEN * INNER + INNER * VOCAB)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--optimizers", type=int, default=1, choices=(1, 2))
    p.add_argument("--update", default="optimizer", choices=("optimizer", "manual"))
    p.add_argument("--end-step", action="store_true")
    p.add_argument("--mask", action="store_true", help="pad the last 4 positions of each row")
    p.add_argument("--crash-at", type=int, default=None)
    p.add_argument("--kill-at", type=int, default=None)
    p.add_argument("--exit-code", type=int, default=0)
    p.add_argument("--wait-for-sigterm", action="store_true")
    return p.parse_args()


def batch(args: argparse.Namespace, step: int) -> dict:
    g = torch.Generator().manual_seed(step)
    ids = torch.randint(0, VOCAB, (args.batch, args.seq), generator=g)
    out = {"input_ids": ids, "labels": ids}
    if args.mask:
        mask = torch.ones_like(ids)
        mask[:, -4:] = 0
        out["attention_mask"] = mask
    return out


def update(args: argparse.Namespace, model: torch.nn.Module, optimizers: list) -> None:
    if args.update == "manual":
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
                p.grad = None
    else:
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)


def main() -> None:
    args = parse_args()
    if args.wait_for_sigterm:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(7))
    torch.manual_seed(0)
    model = TinyLM()
    params = list(model.parameters())
    optimizers = [torch.optim.SGD(params, lr=0.01)] if args.optimizers == 1 else \
        [torch.optim.SGD(params[:2], lr=0.01), torch.optim.AdamW(params[2:], lr=0.01)]
    for step in range(args.steps):
        if args.crash_at is not None and step == args.crash_at:
            raise RuntimeError(f"the script fails at step {step}")
        if args.kill_at is not None and step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        for micro in range(args.accumulate):
            loss = model(**batch(args, step * args.accumulate + micro))
            loss.backward()
        update(args, model, optimizers)
        if args.end_step:
            import mfu_tracker

            mfu_tracker.end_step()
    print(f"trained {args.steps} steps, last loss {loss.item():.4f}", flush=True)
    if args.wait_for_sigterm:
        print("waiting", flush=True)
        while True:
            time.sleep(0.1)
    sys.exit(args.exit_code)


if __name__ == "__main__":
    main()
