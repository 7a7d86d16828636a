"""The hardware counters against two loops of known character, on a real GPU.

Run by benchmarks/gpu/run.sh after the doctor (it needs an NVIDIA Hopper or
later GPU for the GPM counters; elsewhere it says why and exits 0 with the
keys it could read):

1. a bf16 GEMM loop (8192^3 per GEMM, the tensor pipes' work): its window must
   show ``hw/tensor_active`` high (>= TENSOR_HIGH) and MFU consistent with it
   (the tracker's own self-check: no verdict, i.e. MFU / tensor-active within
   [0.5, 1.1 + 0.2 / window]);
2. a memory-bound copy loop (a 4 GiB tensor copied, no FLOPs counted): its
   window must show ``hw/dram_bw_util`` high (>= DRAM_HIGH) and MFU near 0
   (exactly 0 here: the loop declares no FLOPs) with ``hw/tensor_active``
   near 0 (<= TENSOR_IDLE).

Each loop runs for WINDOW_S seconds between two ``metrics()`` calls of a
:class:`~mfu_tracker.Tracker` (one step = one batch of GEMMs / copies). The
device name and every figure go to OUTDIR/hardware.json and are printed.
Exit status 1 when an expectation fails.
"""
from __future__ import annotations

import json
import sys
import time
import warnings

import torch

from mfu_tracker import Tracker
from mfu_tracker.device._consistency import verdict

WINDOW_S = 3.0
TENSOR_HIGH = 0.5     # a GEMM loop keeps the pipes busy most of the window
DRAM_HIGH = 0.5       # a copy loop keeps DRAM busy most of the window
TENSOR_IDLE = 0.05


def _loop(tracker: Tracker, step, flops_per_step: float) -> dict:
    tracker.step()
    start = time.perf_counter()
    while time.perf_counter() - start < WINDOW_S:
        step()
        tracker.step(model_flops=flops_per_step)
    tracker.flush()
    return tracker.metrics(prefix="")


def main(out_dir: str, device: int = 0) -> int:
    if not torch.cuda.is_available():
        print("hardware_check: no CUDA device: nothing to check")
        return 0
    torch.cuda.set_device(device)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(2 ** 31, device="cuda", dtype=torch.bfloat16)   # 4 GiB
    dst = torch.empty_like(src)
    results = {"device": torch.cuda.get_device_name(), "window_s": WINDOW_S}
    problems = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gemm = Tracker(None, dtype="bf16", warmup=2, window=10_000)
        results["gemm"] = _loop(gemm, lambda: [torch.mm(a, b) for _ in range(10)],
                                10 * 2.0 * n ** 3)
        copy = Tracker(None, dtype="bf16", warmup=2, window=10_000)
        results["copy"] = _loop(copy, lambda: dst.copy_(src), 0.0)
    results["warnings"] = [str(w.message) for w in caught]
    g, c = results["gemm"], results["copy"]
    if "hw/tensor_active" not in g:
        print("hardware_check: no hw/* keys (see the warnings: GPM needs Hopper or later)")
    else:
        if g["hw/tensor_active"] < TENSOR_HIGH:
            problems.append(f"GEMM loop: hw/tensor_active {g['hw/tensor_active']:.3f} < {TENSOR_HIGH}")
        found = verdict({"mfu": g.get("mfu"), "hw_tensor_active": g["hw/tensor_active"],
                         "hw_window_s": WINDOW_S, "dtype": "bf16"})
        if found is not None:
            problems.append(f"GEMM loop: MFU {g.get('mfu')} vs tensor-active "
                            f"{g['hw/tensor_active']}: {found}")
        if c.get("hw/dram_bw_util", 0.0) < DRAM_HIGH:
            problems.append(f"copy loop: hw/dram_bw_util {c.get('hw/dram_bw_util')} < {DRAM_HIGH}")
        if c.get("mfu", 0.0) != 0.0 or c.get("hw/tensor_active", 0.0) > TENSOR_IDLE:
            problems.append(f"copy loop: MFU {c.get('mfu')}, tensor-active "
                            f"{c.get('hw/tensor_active')}: not near 0")
    results["problems"] = problems
    with open(f"{out_dir}/hardware.json", "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".",
                  int(sys.argv[2]) if len(sys.argv) > 2 else 0))
