"""The skewed-router MoE step on a GPU (docs/moe.md): transformers' Mixtral,
tiny, bf16, a router fixed to send 3/4 of the tokens to expert 0, under the
eager loop and the grouped-GEMM path (``torch._grouped_mm`` where torch
takes it on this device); every figure against hand arithmetic, and the
sampled step's cost against an unsampled one.

    python benchmarks/gpu/moe_check.py OUTDIR DEVICE

Writes OUTDIR/moe.json; exits 1 when a figure differs from its hand value.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from _moe_layers import fix_router  # noqa: E402

from mfu_tracker.timing._moe_observer import MoEObserver  # noqa: E402

TOKENS, EXPERTS = 4096, 8
# 3/4 of the tokens to expert 0, the rest spread evenly over the other 7
SKEWED = [0] * (TOKENS * 3 // 4) + [1 + i % (EXPERTS - 1) for i in range(TOKENS // 4)]


def _model(implementation: str, device: str):
    cfg = transformers.MixtralConfig(vocab_size=1024, hidden_size=512, intermediate_size=1024,
                                     num_hidden_layers=2, num_attention_heads=8,
                                     num_key_value_heads=2, num_local_experts=EXPERTS,
                                     num_experts_per_tok=1)
    model = transformers.AutoModelForCausalLM.from_config(
        cfg, experts_implementation=implementation, dtype=torch.bfloat16).to(device)
    fix_router(model, torch.tensor(SKEWED, device=device))
    return model


def _step_s(model, ids, observer=None, step=0):
    torch.cuda.synchronize()
    start = time.perf_counter()
    if observer is not None:
        observer.boundary(step)
    model(ids).logits.float().sum().backward()
    if observer is not None:
        observer.boundary(step + 1)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def check(implementation: str, device: str) -> dict:
    model = _model(implementation, device)
    ids = torch.randint(0, 1024, (4, TOKENS // 4), device=device)
    for _ in range(3):
        _step_s(model, ids)
    plain = min(_step_s(model, ids) for _ in range(5))
    observer = MoEObserver(model, 1)
    sampled = min(_step_s(model, ids, observer, 2 * i) for i in range(5))
    f = observer.figures()
    counts = sorted(observer.last.layers[0].routed, reverse=True)
    hand = {"imbalance": (TOKENS * 3 / 4) / (TOKENS / EXPERTS), "straggler_expert": 0,
            "padded_flops_share": 0.0, "routed": [3072] + [147] * 2 + [146] * 5}
    got = {"imbalance": f["moe_imbalance"], "straggler_expert": f["moe_straggler_expert"],
           "padded_flops_share": f["moe_padded_flops_share"], "routed": counts}
    return {"implementation": implementation, "hand": hand, "got": got, "ok": hand == got,
            "step_s": plain, "sampled_step_s": sampled,
            "sampled_extra_per_100_steps": (sampled - plain) / plain / 100}


def main() -> int:
    outdir, device = Path(sys.argv[1]), f"cuda:{sys.argv[2]}" if len(sys.argv) > 2 else "cuda"
    results = [check(impl, device) for impl in ("eager", "grouped_mm")]
    (outdir / "moe.json").write_text(json.dumps(results, indent=1))
    for r in results:
        print(json.dumps(r))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
