"""FLOPs by compute dtype (docs/conventions.md, the counter half):
``FlopCounter.flops_by_dtype`` / ``executed_flops_by_dtype``, on both
backends, against hand arithmetic; the dtype rule itself (csrc/core/ops/ops.c)
through ``_C.op_count``."""
from __future__ import annotations

from pathlib import Path

import pytest
from _backends import run_script

from mfu_tracker import _C

TESTS = Path(__file__).parent

# Each scenario prints {name: [model, executed, flops_by_dtype, executed_by_dtype]}.
_SCENARIOS = r"""
import json, sys, warnings
import torch
from mfu_tracker.counter import FlopCounter, counter_backend

FP8 = torch.float8_e4m3fn
out = {"backend": counter_backend()}

def record(name, fc):
    out[name] = [fc.model_flops, fc.executed_flops, fc.flops_by_dtype,
                 fc.executed_flops_by_dtype]

# One fp8 _scaled_mm "linear" and one bf16 linear, on meta.
with torch.device("meta"):
    a8 = torch.empty(16, 32, dtype=FP8)
    w8 = torch.empty(64, 32, dtype=FP8)                      # used as [32, 64]
    x = torch.empty(16, 64, dtype=torch.bfloat16)
    lin = torch.nn.Linear(64, 48, dtype=torch.bfloat16)      # weight and bias train
    one = torch.ones((), dtype=torch.float32)
with FlopCounter() as fc:
    h = torch._scaled_mm(a8, w8.t(), one, one, out_dtype=torch.bfloat16)
    lin(x).sum().backward()
record("fp8_bf16_meta", fc)

# fp32 on CPU never counts as tf32; on meta it follows torch's setting.
saved = torch.backends.cuda.matmul.allow_tf32
try:
    for device in ("cpu", "meta"):
        for allow in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = allow
            a = torch.empty(8, 16, device=device)
            b = torch.empty(16, 4, device=device)
            with FlopCounter() as fc:
                torch.mm(a, b)
            record(f"fp32_{device}_tf32_{allow}", fc)
finally:
    torch.backends.cuda.matmul.allow_tf32 = saved

# CPU autocast: the matmul counts in the dtype it computes in.
lin32 = torch.nn.Linear(64, 32)
x32 = torch.randn(8, 64)
with FlopCounter() as fc:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lin32(x32).float().sum().backward()
record("autocast_cpu_bf16", fc)

# fp64 and fp16 convolution, forward only (no_grad).
with FlopCounter() as fc, torch.no_grad():
    conv = torch.nn.Conv2d(3, 8, 3, dtype=torch.float64)
    conv(torch.randn(2, 3, 10, 10, dtype=torch.float64))
    torch.nn.functional.conv2d(torch.empty(2, 3, 10, 10, dtype=torch.float16, device="meta"),
                               torch.empty(8, 3, 3, 3, dtype=torch.float16, device="meta"))
record("conv_fp64_fp16", fc)

# reset() and a counter entered twice (counts add up by dtype too)
fc = FlopCounter()
with fc:
    torch.mm(torch.empty(2, 3, dtype=torch.float16, device="meta"),
             torch.empty(3, 4, dtype=torch.float16, device="meta"))
fc.reset()
with fc:
    torch.mm(torch.empty(2, 3, dtype=torch.bfloat16, device="meta"),
             torch.empty(3, 4, dtype=torch.bfloat16, device="meta"))
with fc:
    torch.mm(torch.empty(2, 3, dtype=torch.float64, device="meta"),
             torch.empty(3, 4, dtype=torch.float64, device="meta"))
record("reentered", fc)
print(json.dumps(out))
"""


def _run(disable_ext: bool) -> dict:
    return run_script(_SCENARIOS, disable_ext)


@pytest.fixture(scope="module", params=[False, True], ids=["torch-ext", "dispatch"])
def counts(request) -> dict:
    out = _run(request.param)
    assert out.pop("backend") == ("dispatch" if request.param else "torch-ext")
    return out


def test_fp8_scaled_mm_and_bf16_linear_on_meta(counts):
    model, executed, by_dtype, executed_by_dtype = counts["fp8_bf16_meta"]
    fp8 = 2 * 16 * 32 * 64          # _scaled_mm [16, 32] @ [32, 64]; fp8 needs no grad
    bf16_fwd = 2 * 16 * 64 * 48     # addmm x [16, 64] @ W^T [64, 48]
    bf16_model = bf16_fwd * 2       # + the weight gradient (x does not require grad)
    bf16_bwd = bf16_fwd             # backward: mm for W's gradient only
    assert by_dtype == {"fp8": fp8, "bf16": bf16_model}
    assert executed_by_dtype == {"fp8": fp8, "bf16": bf16_fwd + bf16_bwd}
    assert model == fp8 + bf16_model == sum(by_dtype.values())
    assert executed == sum(executed_by_dtype.values())


def test_fp32_counts_as_tf32_where_torch_allows_it(counts):
    flops = 2 * 8 * 16 * 4
    for allow in (False, True):
        assert counts[f"fp32_cpu_tf32_{allow}"][2] == {"fp32": flops}  # no TF32 on CPU
    assert counts["fp32_meta_tf32_False"][2] == {"fp32": flops}
    assert counts["fp32_meta_tf32_True"][2] == {"tf32": flops}
    assert counts["fp32_meta_tf32_True"][3] == {"tf32": flops}


def test_autocast_counts_the_cast_dtype(counts):
    model, executed, by_dtype, executed_by_dtype = counts["autocast_cpu_bf16"]
    fwd = 2 * 8 * 64 * 32           # addmm under autocast: bf16
    assert by_dtype == {"bf16": model} and model == fwd * 2  # + weight grad
    assert executed_by_dtype == {"bf16": executed}


def test_convolutions_by_dtype(counts):
    model, executed, by_dtype, _ = counts["conv_fp64_fp16"]
    conv = 2 * 2 * 8 * 8 * 8 * 3 * 3 * 3  # n * c_out * 8x8 out * c_in * 3x3, x2
    assert by_dtype == {"fp64": conv, "fp16": conv}  # no_grad: forward only
    assert model == executed == 2 * conv


def test_reset_and_reentry_keep_the_split(counts):
    model, executed, by_dtype, executed_by_dtype = counts["reentered"]
    mm = 2 * 2 * 3 * 4
    assert by_dtype == executed_by_dtype == {"bf16": mm, "fp64": mm}  # fp16 was reset
    assert model == executed == 2 * mm


# ---- the rule, in the core (through _C.op_count) ---------------------------------

def _mm(dtype, tf32=0):
    return _C.op_count("aten::mm", [((4, 5), False, None, dtype), ((5, 6), False, None, dtype)],
                       tf32=tf32)


def test_op_count_returns_the_compute_dtype():
    assert _mm("bf16") == (240, 0, False, "bf16")
    assert _mm("fp8")[3] == "fp8"
    assert _mm(None)[3] == "fp32"              # an operand without a dtype: fp32
    assert _mm("fp32", tf32=1)[3] == "tf32"    # matmul TF32 allowed
    assert _mm("fp32", tf32=2)[3] == "fp32"    # only convolutions may use TF32
    assert _mm("bf16", tf32=3)[3] == "bf16"    # TF32 only replaces fp32
    conv = [((1, 2, 5, 5), False, None, "fp32"), ((3, 2, 3, 3), False, None, "fp32")]
    assert _C.op_count("aten::convolution", conv, tf32=2)[3] == "tf32"
    assert _C.op_count("aten::convolution", conv, tf32=1)[3] == "fp32"


def test_op_count_rejects_bad_dtypes():
    with pytest.raises(ValueError, match="a: unknown dtype 'float33'"):
        _mm("float33")
    with pytest.raises(TypeError):
        _mm(7)
    with pytest.raises(ValueError, match="tf32"):
        _mm("fp32", tf32=4)
