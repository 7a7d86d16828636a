"""Counting on the stack people run (docs/flops.md): custom autograd Functions,
activation checkpointing (both modes), FakeTensorMode, causal attention
halved on every path, over-compute in the waterfall (CUDA graph replay:
test_graphs.py).

Every expected number is hand arithmetic written beside it (csrc/core/ops/ops.h
"Sites" says what each place an op runs adds). The C++ observer and the
TorchDispatchMode fallback share the site rules in C, so the file passes on
both (``MFU_TRACKER_DISABLE_TORCH_EXT=1``), except the math SDPA path under
"half", which the fallback sees as its bmms (csrc/core/ops/op_table.c).
"""
from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.utils.checkpoint as checkpoint
from torch.nn.attention import SDPBackend, sdpa_kernel

from mfu_tracker import FlopCounter, Tracker, profile_flops
from mfu_tracker.counter import counter_backend

# ---- custom autograd Functions --------------------------------------------------

# a [64, 96] @ b [96, 80]: 2 * 64 * 96 * 80 = 983,040 per matmul
MM = 2 * 64 * 96 * 80
assert MM == 983_040


class MatMul(torch.autograd.Function):
    """How Liger / Unsloth / flash-attn's Python API wrap kernels: the forward
    runs with grad mode off, the backward is the Function's own code."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad @ b.T, a.T @ grad


def test_a_custom_functions_backward_counts_as_model_flops():
    a = torch.randn(64, 96, requires_grad=True)
    b = torch.randn(96, 80, requires_grad=True)
    with FlopCounter() as fc:
        MatMul.apply(a, b).sum().backward()
    # forward 983,040; backward grad @ b^T and a^T @ grad: 2 x 983,040
    assert fc.model_flops == fc.executed_flops == 3 * MM == 2_949_120
    assert (fc.forward_flops, fc.backward_flops, fc.recompute_flops) == (MM, 2 * MM, 0)
    # the same as the matmul done by autograd itself
    with FlopCounter() as ref:
        (a @ b).sum().backward()
    assert ref.model_flops == fc.model_flops
    # inference: the forward only
    with torch.no_grad(), FlopCounter() as fc:
        MatMul.apply(a, b)
    assert fc.model_flops == MM


# ---- activation checkpointing ------------------------------------------------------

# x [64, 128] (requires grad) -> Linear(128, 128, no bias) -> ReLU -> MatMul
# (a custom Function) with w2 [128, 128]; each matmul 2 * 64 * 128 * 128.
F = 2 * 64 * 128 * 128
assert F == 2_097_152


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(128, 128, bias=False)
        self.w2 = torch.nn.Parameter(torch.randn(128, 128) / 12)

    def forward(self, x):
        return MatMul.apply(torch.relu(self.lin(x)), self.w2)


def _count(mode):
    block, x = Block(), torch.randn(64, 128, requires_grad=True)
    with FlopCounter() as fc:
        y = block(x) if mode is None else checkpoint.checkpoint(block, x, use_reentrant=mode)
        y.sum().backward()
    return fc


def test_checkpointing_keeps_model_flops_and_adds_the_recompute_to_executed():
    plain = _count(None)
    # Linear: forward F + input and weight grads 2F; MatMul: forward F +
    # its backward's two matmuls 2F
    assert plain.model_flops == plain.executed_flops == 6 * F
    reentrant = _count(True)
    # reentrant: the forward (no grad) 2F; the backward recomputes both
    # matmuls (2F, recompute), then the nested backward runs 4F
    assert reentrant.model_flops == 6 * F
    assert reentrant.recompute_flops == 2 * F
    assert reentrant.executed_flops == 6 * F + 2 * F == 16_777_216
    non_reentrant = _count(False)
    # non-reentrant: recomputes until the last saved tensor is back; a custom
    # Function's saved tensors are packed after its forward ran, so both
    # matmuls are recomputed (2F; the MatMul's with grad mode off, inside the
    # checkpoint's saved-tensor hooks: still recompute)
    assert non_reentrant.model_flops == 6 * F
    assert non_reentrant.recompute_flops == 2 * F
    assert non_reentrant.executed_flops == 8 * F == 16_777_216
    # with a plain Linear last, the recompute stops before it (early stop):
    # a 1-matmul block is test_a_single_linear_under_reentrant_checkpointing


def test_a_single_linear_under_reentrant_checkpointing():
    """One Linear(128, 128) under reentrant checkpointing: model FLOPs are
    3 x 2,097,152 (a count of the forward alone would give 2,097,152)."""
    lin, x = torch.nn.Linear(128, 128), torch.randn(64, 128, requires_grad=True)
    with FlopCounter() as fc:
        checkpoint.checkpoint(lin, x, use_reentrant=True).sum().backward()
    assert fc.model_flops == 3 * F == 6_291_456
    assert fc.executed_flops == 4 * F and fc.recompute_flops == F


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="no torch.compile")
def test_recompute_inside_a_compiled_graph_stays_hfu_only():
    """Checkpointing inside a compiled region (aot_eager: the same AOTAutograd
    partition as inductor): the recomputed matmul runs in the compiled
    backward; it stays out of model FLOPs."""
    torch._dynamo.reset()
    lin = torch.nn.Linear(128, 128, bias=False)
    x = torch.randn(64, 128, requires_grad=True)

    def fn(x):
        return checkpoint.checkpoint(lambda t: torch.relu(lin(t)) * 2, x, use_reentrant=False)

    compiled = torch.compile(fn, backend="aot_eager")
    with FlopCounter(modules=False):  # the tool before the first compiled call
        pass
    compiled(x).sum().backward()
    with FlopCounter(modules=False) as fc:
        compiled(x).sum().backward()
    # model 3F (forward, input and weight grads); the compiled backward
    # recomputes the matmul (F) for relu's mask
    assert fc.model_flops == 3 * F
    assert fc.executed_flops == 4 * F and fc.recompute_flops == F


# ---- FakeTensorMode ------------------------------------------------------------------

def test_fake_tensors_count_as_real_ones():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.randn(64, 96)
        b = torch.randn(96, 80, requires_grad=True)
        with FlopCounter() as fc:
            a @ b
    # forward 983,040; b needs a gradient: + 983,040
    assert (fc.forward_flops, fc.model_flops) == (MM, 2 * MM)

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                   torch.nn.Linear(64, 8))

    real = profile_flops(model(), torch.randn(16, 32))
    with FakeTensorMode():
        fake = profile_flops(model(), torch.randn(16, 32))
    # Linear(32, 64): forward 2 * 16 * 32 * 64 = 65,536, weight grad 65,536
    # (x does not require grad); Linear(64, 8): 16,384, weight and input
    # grads 2 x 16,384
    assert real == fake == 2 * 65_536 + 3 * 16_384 == 180_224


# ---- causal attention: half on every path ---------------------------------------------
#
# q, k, v [b 1, h 2, s 16, d 8], all requiring grad; the full-square forward
# F = 2 * 1 * 2 * 16 * 16 * (8 + 8) = 16,384. Model FLOPs: forward + 2x it
# (PaLM); "half" halves both. Executed: what the kernel computes -- the math
# path (matmuls, then the mask) the full square in the forward and in its
# bmms' backward (4 bmms = 2F); the CPU flash kernel skips the masked half,
# its backward 2.5x its forward (the score recompute).
#
#   path   convention  model       executed           over-compute  executed / model
#   math   full        3F          F + 2F = 3F         0            1.000
#   math   half        1.5F        3F                  1.5F         2.000
#   flash  full        3F          F + 2.5F = 3.5F     0            1.167
#   flash  half        1.5F        0.5F + 1.25F        0            1.167
A = 2 * 1 * 2 * 16 * 16 * (8 + 8)
assert A == 16_384
CAUSAL_TABLE = [
    # (backend, convention, model, executed, over-compute, executed / model)
    (SDPBackend.MATH, "full", 3 * A, 3 * A, 0, 1.0),
    (SDPBackend.MATH, "half", 3 * A // 2, 3 * A, 3 * A // 2, 2.0),
    (SDPBackend.FLASH_ATTENTION, "full", 3 * A, 7 * A // 2, 0, 7 / 6),
    (SDPBackend.FLASH_ATTENTION, "half", 3 * A // 2, 7 * A // 4, 0, 7 / 6),
]


@pytest.mark.parametrize("backend, convention, model, executed, over, ratio", CAUSAL_TABLE,
                         ids=[f"{b.name.lower()}-{c}" for b, c, *_ in CAUSAL_TABLE])
def test_causal_half_on_every_attention_path(backend, convention, model, executed, over, ratio):
    if counter_backend() != "torch-ext" and backend == SDPBackend.MATH and convention == "half":
        pytest.skip("the fallback sees the composite math path as its bmms (op_table.c)")
    q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))
    with sdpa_kernel(backend), FlopCounter(causal_attention=convention) as fc:
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    assert (fc.model_flops, fc.executed_flops, fc.overcompute_flops) == (model, executed, over)
    assert fc.executed_flops / fc.model_flops == pytest.approx(ratio)
    assert fc.recompute_flops == 0


# ---- over-compute is compute, not recompute, in the waterfall ---------------------------

@pytest.mark.skipif(counter_backend() != "torch-ext",
                    reason="the fallback sees the composite math path as its bmms (op_table.c)")
def test_the_waterfall_books_over_compute_to_compute():
    """The math path under "half": hfu - mfu is all over-compute, so
    mfu_lost/recompute is 0 and compute holds it; without the over-compute
    figure the same run books it to recompute."""
    q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))
    results = {}
    for give in (True, False):
        tracker = Tracker(dtype="fp32", peak_tflops=1.0, clock="cpu", warmup=0)
        for _ in range(3):
            with sdpa_kernel(SDPBackend.MATH), FlopCounter(causal_attention="half") as fc:
                with tracker.phase("forward"):
                    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                with tracker.phase("backward"):
                    out.sum().backward()
            extra = {"overcompute_flops": fc.overcompute_flops} if give else {}
            tracker.step(model_flops=fc.model_flops, executed_flops=fc.executed_flops, **extra)
        results[give] = tracker.metrics()
    m = results[True]
    lost = {k.split("/")[-1]: v for k, v in m.items() if "/mfu_lost/" in k}
    # hfu / mfu = executed / model = 2.0 (the table above): hfu - mfu = mfu
    assert m["throughput/hfu"] == pytest.approx(2 * m["throughput/mfu"])
    assert lost["recompute"] == pytest.approx(0.0, abs=1e-12)
    assert math.fsum([m["throughput/mfu"], *lost.values()]) == 1.0
    plain = results[False]
    assert plain["throughput/mfu_lost/recompute"] == pytest.approx(
        plain["throughput/hfu"] - plain["throughput/mfu"])


def test_a_bad_overcompute_value_is_one_warning_and_counts_0():
    tracker = Tracker(1e12, executed_flops_per_step=2e12, dtype="fp32", peak_tflops=1e6,
                      clock="cpu", warmup=0)
    tracker.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.step(overcompute_flops=-5.0)
        tracker.step(overcompute_flops=float("nan"))
    ours = [w for w in caught if "overcompute_flops" in str(w.message)]
    assert len(ours) == 1
    summary = tracker.summary()
    assert summary["overcompute_flops"] == 0.0 and summary["overcompute"] == 0.0
    tracker.step(overcompute_flops=1e12)
    # three steps in the window: 1e12 over-compute over their time at 1e18 FLOP/s
    s = tracker.summary()
    assert s["overcompute"] == pytest.approx(1e12 / s["window_s"] / 1e18)


def test_over_compute_as_a_window_total_and_through_the_wrapper():
    """The one metric path: over-compute given at logging time
    (``metrics(overcompute_flops=)``, what the integrations do) is booked to
    compute as ``step(overcompute_flops=)`` is; MFUOptimizerWrapper carries
    the counter's over-compute of each step there."""
    if counter_backend() != "torch-ext":
        pytest.skip("the fallback sees the composite math path as its bmms (op_table.c)")
    from mfu_tracker.optim import MFUOptimizerWrapper

    class Attention(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 8, bias=False)

        def forward(self, x):
            q = self.proj(x)
            return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    torch.manual_seed(0)
    model = Attention()
    wrapped = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.0), model,
                                  peak_tflops=1.0, clock="cpu", count_every=1, warmup=0,
                                  causal_attention="half")
    x = torch.randn(1, 2, 16, 8)
    for _ in range(3):
        with sdpa_kernel(SDPBackend.MATH), wrapped.track_step(num_tokens=16):
            model(x).sum().backward()
        wrapped.step()
    # x [1, 2, 16, 8], q = k = v requiring grad: the table's math/half row,
    # over-compute 1.5 x A = 24,576 per step, all of executed - model (the
    # projection's matmuls count alike in both)
    model_flops, executed_flops = wrapped.last_step_flops
    assert executed_flops - model_flops == 3 * A // 2 == 24_576
    m = wrapped.metrics()
    # no checkpointing: hfu - mfu is all over-compute, booked to compute
    assert m["throughput/hfu"] > m["throughput/mfu"]
    assert m["throughput/mfu_lost/recompute"] == pytest.approx(0.0, abs=1e-12)

    tracker = Tracker(dtype="fp32", peak_tflops=1.0, clock="cpu", warmup=0)
    for _ in range(3):
        with tracker.phase("forward"):
            sum(range(20_000))
        tracker.step()
    # hfu - mfu = (3e6 - 1e6) / window / peak; over-compute 1.5e6 of it, so
    # recompute holds the other 0.5e6: a quarter of hfu - mfu
    m = tracker.metrics(model_flops=1e6, executed_flops=3e6, overcompute_flops=1.5e6)
    lost = m["throughput/mfu_lost/recompute"]
    assert lost == pytest.approx((m["throughput/hfu"] - m["throughput/mfu"]) / 4)
    assert math.fsum([m["throughput/mfu"]] + [v for k, v in m.items()
                                              if "/mfu_lost/" in k]) == pytest.approx(1.0)


def test_a_call_outside_a_backward_is_a_forward_site():
    from mfu_tracker.flops.counter import _sites

    sites = _sites.NodeSites()
    site = sites.site(torch, "aten::mm", (), {}, torch.ops.aten.mm.default, True)
    assert site == _sites.Site(backward_phase=False, grad_enabled=True)
