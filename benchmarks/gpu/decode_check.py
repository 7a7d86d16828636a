"""Decode MBU on a real GPU: the bytes generation_flops says a generate() moves
per second, beside the DRAM bandwidth the GPU's own counters (NVML GPM)
measured over the same window.

Run by benchmarks/gpu/run.sh (limit DECODE_TIMEOUT). A Llama-shaped model of
1.6e9 parameters is built from its config on the GPU in bf16 (random weights,
no download: 3.2 GB read per decode step, far beyond L2) and generates
NEW_TOKENS greedy tokens (min_new_tokens = max) after a PROMPT-token prompt,
batch 1, over and over for WINDOW_S seconds between two ``metrics()`` calls of
a :class:`~mfu_tracker.Tracker` (one step per generate()).

Checks (exit 1 when one fails):

1. the exact count of one generate() (GenerationCounter, the CUDA SDPA
   kernels with a KV cache) equals generation_flops, prefill and decode;
2. where GPM is read (Hopper or later): our bytes per second over the window
   (weights once per forward, the KV cache read and written) against
   ``hw/dram_bw_util`` x the table's bandwidth, within [RATIO_LOW, RATIO_HIGH]
   (the hardware also moves activations and logits, which the count leaves
   out: decode at batch 1 is dominated by the weights).

Everything goes to OUTDIR/decode.json and is printed.
"""
from __future__ import annotations

import json
import sys
import time
import warnings

import torch

from mfu_tracker import (GenerationCounter, Tracker, generation_flops, generation_utilization,
                         get_gpu_spec)

WINDOW_S = 10.0
PROMPT, NEW_TOKENS = 16, 64
RATIO_LOW, RATIO_HIGH = 0.5, 1.5
DIMS = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=8,
            num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
            pad_token_id=0, eos_token_id=1, bos_token_id=2)


def _model():
    import transformers

    cfg = transformers.LlamaConfig(**DIMS)
    with torch.device("cuda"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        except TypeError:  # transformers 4 names it torch_dtype
            model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    return model.eval()


def _generate(model, ids):
    return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS,
                          min_new_tokens=NEW_TOKENS, do_sample=False)


def _window(model, ids, flops: float) -> tuple[dict, int, float]:
    """generate() in a loop for WINDOW_S between two metrics() calls:
    (the window's figures, generations, their seconds)."""
    tracker = Tracker(None, dtype="bf16", warmup=0, window=10_000)
    tracker.step()
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < WINDOW_S:
        _generate(model, ids)
        runs += 1
        tracker.step(model_flops=flops)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    tracker.flush()
    return tracker.metrics(prefix=""), runs, elapsed


def main(out_dir: str, device: int = 0) -> int:
    if not torch.cuda.is_available():
        print("decode_check: no CUDA device: nothing to check")
        return 0
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("decode_check: transformers is not installed: skipped")
        return 0
    torch.cuda.set_device(device)
    model = _model()
    ids = torch.randint(3, DIMS["vocab_size"], (1, PROMPT), device="cuda")
    _generate(model, ids)  # warm up the kernels and the allocator
    with GenerationCounter(model) as gen:
        _generate(model, ids)
    analytic = generation_flops(model.config, [PROMPT], NEW_TOKENS, dtype="bf16")
    spec = get_gpu_spec(device)
    results = {"device": torch.cuda.get_device_name(), "dims": DIMS, "prompt": PROMPT,
               "new_tokens": NEW_TOKENS,
               "exact": {"prefill_flops": gen.prefill_flops, "decode_flops": gen.decode_flops},
               "analytic": {"prefill_flops": analytic.prefill_flops,
                            "decode_flops": analytic.decode_flops,
                            "decode_bytes": analytic.decode_bytes,
                            "prefill_bytes": analytic.prefill_bytes},
               "one_generate": str(generation_utilization(gen.count, spec=spec)),
               "one_generate_with_bytes": str(generation_utilization(
                   analytic, prefill_s=gen.prefill_s, decode_s=gen.decode_s, spec=spec))}
    problems = []
    if (gen.prefill_flops, gen.decode_flops) != (analytic.prefill_flops, analytic.decode_flops):
        problems.append(f"exact {gen.prefill_flops}, {gen.decode_flops} != analytic "
                        f"{analytic.prefill_flops}, {analytic.decode_flops} (prefill, decode)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figures, runs, elapsed = _window(model, ids, analytic.model_flops)
    computed = runs * (analytic.prefill_bytes + analytic.decode_bytes) / elapsed
    results.update(window_s=elapsed, generations=runs, computed_bytes_per_sec=computed,
                   computed_mbu=computed / spec.memory_bandwidth_bytes_per_sec
                   if spec.memory_bandwidth_bytes_per_sec else None,
                   hw={k: v for k, v in figures.items() if k.startswith("hw/")},
                   warnings=[str(w.message) for w in caught])
    util = figures.get("hw/dram_bw_util")
    if util is None or not spec.memory_bandwidth_bytes_per_sec:
        results["note"] = "no hw/dram_bw_util (GPM needs Hopper or later) or no bandwidth"
    else:
        measured = util * spec.memory_bandwidth_bytes_per_sec
        results.update(measured_bytes_per_sec=measured, ratio=computed / measured)
        if not RATIO_LOW <= computed / measured <= RATIO_HIGH:
            problems.append(f"computed {computed:.4g} B/s vs measured {measured:.4g} B/s: "
                            f"ratio {computed / measured:.3f} outside "
                            f"[{RATIO_LOW}, {RATIO_HIGH}]")
    results["problems"] = problems
    with open(f"{out_dir}/decode.json", "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(json.dumps(results, indent=1, default=str))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".",
                  int(sys.argv[2]) if len(sys.argv) > 2 else 0))
