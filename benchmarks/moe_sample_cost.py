"""The sampled MoE step's cost (docs/moe.md): a tiny Mixtral training step
(forward + backward, CPU) with and without its MoE layers sampled, and that
cost amortized over ``moe_every`` steps; an unsampled step carries no hook.

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
    plain, sampled = [], []
    for n in range(args.repeats):             # interleaved: the machine's load hits both
        plain.append(step(False, n))
        sampled.append(step(True, n))
    p, s = statistics.median(plain), statistics.median(sampled)
    print(f"step (median of {args.repeats}): {p * 1e3:.2f} ms; sampled: {s * 1e3:.2f} ms "
          f"(+{(s - p) / p * 100:.1f}%); amortized over moe_every={args.every}: "
          f"+{(s - p) / p / args.every * 100:.3f}% of a step")


if __name__ == "__main__":
    main()
