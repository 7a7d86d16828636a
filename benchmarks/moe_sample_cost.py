"""The sampled MoE step's cost (docs/moe.md): a tiny Mixtral training step
(forward + backward, CPU) with and without its MoE layers sampled, and that
cost amortized over ``moe_every`` steps; an unsampled step carries no hook.
Three arms are interleaved -- a plain step, a plain step again (the A/A: the
machine's noise alone) and a sampled step -- and each arm's difference to the
plain step of its round is printed as a median with its quartiles.

    .venv/bin/python benchmarks/moe_sample_cost.py [--repeats N] [--every N]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import transformers

from mfu_tracker.timing._moe_observer import MOE_EVERY_DEFAULT, MoEObserver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--every", type=int, default=MOE_EVERY_DEFAULT)
    args = parser.parse_args()
    torch.manual_seed(0)
    cfg = transformers.MixtralConfig(vocab_size=512, hidden_size=128, intermediate_size=256,
                                     num_hidden_layers=4, num_attention_heads=4,
                                     num_key_value_heads=2, num_local_experts=8,
                                     num_experts_per_tok=2)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    ids = torch.randint(0, 512, (4, 128))
    observer = MoEObserver(model, 1)

    def step(sampled: bool, n: int) -> float:
        start = time.perf_counter()
        if sampled:
            observer.boundary(2 * n)        # arms the step
        model(ids).logits.sum().backward()
        if sampled:
            observer.boundary(2 * n + 1)    # reads it (the host copy)
        return time.perf_counter() - start

    for n in range(3):
        step(False, n), step(True, n)
    # three arms interleaved (the machine's load hits each alike): a plain
    # step, a plain step again (the A/A: what the machine's noise alone
    # gives), a sampled step; each difference is paired within a round
    plain, again, sampled = [], [], []
    for n in range(args.repeats):
        plain.append(step(False, n))
        again.append(step(False, n))
        sampled.append(step(True, n))
    p = statistics.median(plain)

    def paired(arm: list) -> str:
        diffs = sorted((b - a) / a * 100 for a, b in zip(plain, arm))
        q = statistics.quantiles(diffs, n=4)
        return f"{statistics.median(diffs):+.2f}% (quartiles {q[0]:+.2f}% .. {q[2]:+.2f}%)"

    cost = statistics.median((b - a) / a for a, b in zip(plain, sampled))
    print(f"step (median of {args.repeats}): {p * 1e3:.2f} ms "
          f"(min {min(plain) * 1e3:.2f}, max {max(plain) * 1e3:.2f})")
    print(f"plain again vs plain (A/A, the machine's noise): {paired(again)}")
    print(f"sampled vs plain: {paired(sampled)}")
    print(f"amortized over moe_every={args.every}: {cost / args.every * 100:+.3f}% of a step "
          f"(the bound is 0.5%)")

if __name__ == "__main__":
    main()
