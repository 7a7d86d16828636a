"""Llama-3.1-405B at seq 8,192 counted on the meta device: wall time and peak
RSS of the whole process (import, model build on meta, forward + backward
under FlopCounter), in a fresh child process so the RSS is its own.
Targets: < 60 s and < 4 GiB.

    .venv/bin/python benchmarks/profile_405b.py [--seq-len 8192] [--batch-size 1]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import torch, transformers
from mfu_tracker.counter import FlopCounter, counter_backend
from mfu_tracker.flops import transformer_flops
from mfu_tracker.presets import load_preset
t_import = time.perf_counter()
config = load_preset("llama-3.1-405b")
fields = dict(config); fields.pop("model_type")
cfg = transformers.LlamaConfig(**fields)
with torch.device("meta"):
    model = transformers.LlamaForCausalLM(cfg)
t_build = time.perf_counter()
b, s = int(sys.argv[1]), int(sys.argv[2])
ids = torch.zeros(b, s, dtype=torch.long, device="meta")
with FlopCounter() as fc:
    model(input_ids=ids).logits.sum().backward()
t_count = time.perf_counter()
analytic = transformer_flops(config, seq_len=s, batch_size=b, formula="matmul")
print(json.dumps({
    "backend": counter_backend(),
    "model_flops": fc.model_flops, "executed_flops": fc.executed_flops,
    "analytic_matmul": analytic.model_flops,
    "import_s": t_import - t0, "build_s": t_build - t_import, "count_s": t_count - t_build,
    "total_s": t_count - t0,
    "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, default=8192)
    parser.add_argument("--batch-size", type=int, default=1)
    args = parser.parse_args()
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(args.batch_size), str(args.seq_len)],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    tokens = args.batch_size * args.seq_len
    print(f"Llama-3.1-405B, batch {args.batch_size} x seq {args.seq_len}, meta, backend {r['backend']}")
    print(f"  model FLOPs {r['model_flops']:,} ({r['model_flops'] / tokens / 1e12:.4f} TFLOP/token); "
          f"analytic matmul {r['analytic_matmul']:,.0f}; equal: "
          f"{r['model_flops'] == int(r['analytic_matmul'])}")
    print(f"  time: import {r['import_s']:.1f} s, build on meta {r['build_s']:.1f} s, "
          f"count fwd+bwd {r['count_s']:.1f} s; child total {r['total_s']:.1f} s, "
          f"wall with process start {wall:.1f} s")
    print(f"  peak RSS {r['peak_rss_gib']:.2f} GiB")


if __name__ == "__main__":
    main()
