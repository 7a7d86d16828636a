"""A reference RL loop on the CPU, measured by role: a tiny policy generates
(rollout, counted exactly by GenerationCounter, its decode bytes from the
analytic count), a frozen reference scores the samples (reference), a rule
on the host rewards them (no role: the devices wait), the policy trains
(learner, counted by FlopCounter) and its weights are copied to the
generator (weight_sync). Prints each role's MFU / MBU / tokens/s and share of
the wall time, the wait and the end-to-end MFU (docs/post-training.md).

    python examples/rl_loop.py [--steps 6] [--peak-tflops 1.0 --bandwidth-tbs 0.05]

On a CPU the peaks are declared (no datasheet row): pass your machine's.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import build_model  # noqa: E402

from mfu_tracker import (FlopCounter, GenerationCounter, Roles, Tracker,  # noqa: E402
                         generation_flops, user_gpu_spec)

PROMPTS, PROMPT_LEN, NEW_TOKENS = 4, 16, 16


def rollout(generator, roles, prompts):
    """Generate, counted exactly; decode's bytes from the analytic count."""
    with roles.role("rollout") as run:
        with GenerationCounter(generator) as gen:
            out = generator.generate(prompts, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                     do_sample=True, pad_token_id=0)
        count = gen.count.with_bytes(generation_flops(
            generator.config, prompt_lens=[PROMPT_LEN] * PROMPTS, output_lens=NEW_TOKENS,
            dtype="fp32"))
        run.add(flops=count.model_flops, bytes=count.prefill_bytes + count.decode_bytes,
                tokens=count.generated_tokens)
    return out


def reference(ref, roles, samples):
    with roles.role("reference") as run, torch.no_grad(), FlopCounter() as counter:
        ref(samples)
        run.add(flops=counter.model_flops, tokens=samples.numel())


def learner(policy, optimizer, roles, samples, rewards):
    with roles.role("learner") as run, FlopCounter() as counter:
        logits = policy(samples).logits[:, PROMPT_LEN - 1:-1]
        logp = torch.log_softmax(logits, -1).gather(-1, samples[:, PROMPT_LEN:, None]).squeeze(-1)
        loss = -((rewards - rewards.mean())[:, None] * logp).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        run.add(flops=counter.model_flops, tokens=samples.numel())


def weight_sync(policy, generator, roles):
    with roles.role("weight_sync") as run:
        generator.load_state_dict(policy.state_dict())
        run.add(bytes=sum(p.numel() * p.element_size() for p in policy.parameters()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--peak-tflops", type=float, default=1.0, help="the CPU's declared peak")
    ap.add_argument("--bandwidth-tbs", type=float, default=0.05, help="its memory bandwidth")
    args = ap.parse_args()
    torch.manual_seed(0)
    policy = build_model("llama-tiny").float()
    generator, ref = copy.deepcopy(policy).eval(), copy.deepcopy(policy).eval()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-4)
    tracker = Tracker(spec=user_gpu_spec(args.peak_tflops, memory_bandwidth_tbs=args.bandwidth_tbs),
                      clock="cpu", warmup=1, window=args.steps, dtype="fp32")
    roles = Roles(tracker)
    roles.start()
    for _ in range(args.steps + 1):
        prompts = torch.randint(1, 1024, (PROMPTS, PROMPT_LEN))
        samples = rollout(generator, roles, prompts)
        reference(ref, roles, samples)
        rewards = (samples[:, PROMPT_LEN:] % 2 == 0).float().mean(-1)   # on the host: no role
        learner(policy, optimizer, roles, samples, rewards)
        weight_sync(policy, generator, roles)
        roles.step()
    report(roles.metrics(""))


def report(m) -> None:
    print(f"{'role':<12} {'MFU':>8} {'MBU':>8} {'tokens/s':>10} {'time share':>11}")
    for role in ("rollout", "reference", "reward", "learner", "weight_sync"):
        if f"role/{role}/time_share" not in m:
            continue
        cells = [m.get(f"role/{role}/{k}") for k in ("mfu", "mbu", "tokens_per_sec", "time_share")]
        print(f"{role:<12} " + " ".join(
            f"{'-' if v is None else format(v, fmt):>{w}}"
            for v, fmt, w in zip(cells, (".2%", ".2%", ".0f", ".1%"), (8, 8, 10, 11))))
    print(f"{'wait':<12} {'':>8} {'':>8} {'':>10} {m.get('wait_ratio', float('nan')):>11.1%}")
    print(f"end-to-end MFU {m.get('mfu_end_to_end', float('nan')):.2%} over "
          f"{m['step_time_s']:.3f} s per step; waterfall: "
          + ", ".join(f"{k.split('/')[-1]} {v:.1%}" for k, v in m.items() if k.startswith("mfu_lost/")))


if __name__ == "__main__":
    main()
