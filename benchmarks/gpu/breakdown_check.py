"""The kernel breakdown on a real GPU: a bf16 GEMM-heavy step and an
elementwise-heavy step, each profiled by ``Tracker(profile_steps=)``.

Run by benchmarks/gpu/run.sh (written for a CUDA or ROCm GPU; not run where
this was written, which had none). Expectations, each printed with its
figures and written to OUTDIR/breakdown.json:

1. GEMM-heavy (a chain of 4096^3 bf16 matmuls): the GEMM class holds most
   of the step (share >= GEMM_HIGH), its kernels named by the class table
   (cuBLAS / cuBLASLt / CUTLASS / nvjet on NVIDIA, hipBLASLt / Tensile on
   AMD), its counted FLOPs equal to the loop's 2*n^3 per matmul;
2. elementwise-heavy (adds and multiplies on a 256 Mi-element tensor): the
   elementwise class holds most of the step (share >= ELEMENTWISE_HIGH) and
   sits on the memory side of the roofline (bound == "memory");
3. in both, the rows add up to the profiled step's wall-clock time.

Exit status 1 when an expectation fails; the figures are printed either way.
"""
from __future__ import annotations

import json
import math
import sys

import torch

from mfu_tracker import Tracker
from mfu_tracker.breakdown._record import ROWS

GEMM_HIGH = 0.6
ELEMENTWISE_HIGH = 0.6
N = 4096
MATMULS = 16
STEPS = 4      # step 1 warms up; step 2 is profiled (warmup=1, profile_steps=[2])


def _profiled(device: torch.device, step_fn) -> dict:
    tracker = Tracker(None, dtype="bf16", device=device, warmup=1, profile_steps=[2])
    tracker.step()
    for _ in range(STEPS):
        step_fn()
        tracker.step()
    tracker.close()
    b = tracker.last_breakdown
    if b is None:
        return {"error": "no breakdown (see the warnings above)"}
    return {"step_s": b.step_s, "shares": b.shares(), "timeline": b.timeline,
            "gemm_flops": b.classes["gemm"].flops, "gemm_tflops": b.tflops("gemm"),
            "elementwise_bound": b.bound("elementwise"),
            "rows_sum_s": math.fsum(b.time_of(r) for r in ROWS),
            "top": [(k.name, k.kclass, k.time_s, k.count) for k in b.top[:8]]}


def main(outdir: str, device_index: int) -> int:
    device = torch.device("cuda", device_index)
    a = torch.randn(N, N, device=device, dtype=torch.bfloat16)
    big = torch.randn(256 * 2**20, device=device, dtype=torch.bfloat16)

    def gemm_step() -> None:
        x = a
        for _ in range(MATMULS):
            x = x @ a

    def elementwise_step() -> None:
        x = big
        for _ in range(MATMULS):
            x = x * 1.0001 + 0.5

    result = {"device": torch.cuda.get_device_name(device),
              "gemm": _profiled(device, gemm_step),
              "elementwise": _profiled(device, elementwise_step)}
    failures = []
    g, e = result["gemm"], result["elementwise"]
    for name, r in (("gemm", g), ("elementwise", e)):
        if "error" in r:
            failures.append(f"{name}: {r['error']}")
        elif not math.isclose(r["rows_sum_s"], r["step_s"], rel_tol=1e-9):
            failures.append(f"{name}: rows add to {r['rows_sum_s']} s, step {r['step_s']} s")
    if "error" not in g:
        if g["shares"]["gemm"] < GEMM_HIGH:
            failures.append(f"GEMM-heavy step: GEMM share {g['shares']['gemm']:.3f} < {GEMM_HIGH}")
        if g["gemm_flops"] != 2 * N**3 * MATMULS:
            failures.append(f"GEMM FLOPs {g['gemm_flops']} != 2*{N}^3*{MATMULS}")
    if "error" not in e:
        if e["shares"]["elementwise"] < ELEMENTWISE_HIGH:
            failures.append(f"elementwise-heavy step: elementwise share "
                            f"{e['shares']['elementwise']:.3f} < {ELEMENTWISE_HIGH}")
        if e["elementwise_bound"] != "memory":
            failures.append(f"elementwise bound {e['elementwise_bound']!r} != 'memory'")
    result["failures"] = failures
    with open(f"{outdir}/breakdown.json", "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0))
