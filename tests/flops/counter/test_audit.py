"""Kernels outside aten (docs/flops.md): flex_attention, flash-attn 2 and 3, and
what a count does not cover (the audit).

flash-attn's ops are STAND-INS here (tests/_kernel_standins.py): torch.library
ops with the real names and schemas (flash-attn v2.8.3, FlashAttention-3's
hopper/) whose bodies return empty outputs, so only the op table's formula
counts them; they are called on meta tensors (cumulative lengths on the
CPU), where the real packages' fake kernels run too, so with flash-attn
installed the same tests run on the real ops, and test_real_flash_attn runs
its Python API on a GPU.
flex_attention's forward runs for real on the CPU; torch refuses its backward
on the CPU, so both directions run on meta through the higher-order ops. The
fallback backend (chosen at import) runs the same checks in a subprocess.
Every expected number has its hand arithmetic beside it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import _kernel_standins  # noqa: E402
from torch.nn.attention.flex_attention import (  # noqa: E402
    _identity,
    create_block_mask,
    flex_attention,
)

from mfu_tracker.counter import FlopCounter, register_flop_formula  # noqa: E402

_kernel_standins.register()  # STAND-INS: no GPU here
FA, FA3, HOP = torch.ops.flash_attn, torch.ops.flash_attn_3, torch.ops.higher_order
TESTS = Path(__file__).resolve().parents[2]


def count(fn, causal="full", **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # flex: "called without torch.compile"
        with FlopCounter(causal_attention=causal, modules=False, **kwargs) as fc:
            fn()
    return fc


def causal_mask(b, h, q, kv):
    return q >= kv


def window_mask(b, h, q, kv):  # a causal window of 128 keys
    return (q >= kv) & (q - kv < 128)


# ---------------------------------------------------------------------------
# flex_attention
# ---------------------------------------------------------------------------

Q = (2, 4, 512, 16)  # [b, h, s, d]; flex's default blocks: 128 x 128, a 4 x 4 grid
PAIR = 2 * 2 * 4 * (16 + 16)  # FLOPs of one query-key pair forward, all b and h: 512


def test_flex_forward_without_mask_is_the_sdpa_formula():
    q, k, v = (torch.randn(*Q) for _ in range(3))
    for causal in ("full", "half"):
        fc = count(lambda: flex_attention(q, k, v), causal)
        # 512 * 512 pairs: 2 * 2 * 4 * 512 * 512 * (16 + 16) = 134,217,728
        assert fc.executed_flops == fc.model_flops == 512 * 512 * PAIR == 134_217_728
        assert fc.by_op == {"higher_order::flex_attention": (1, 134_217_728)} and not fc.errors
        # the same call through SDPA: the same count (the SDPA formula)
        sdpa = count(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v), causal)
        assert sdpa.executed_flops == fc.executed_flops


def test_flex_forward_with_block_masks_counts_the_computed_blocks():
    q, k, v = (torch.randn(*Q) for _ in range(3))
    causal = create_block_mask(causal_mask, None, None, 512, 512, device="cpu")
    window = create_block_mask(window_mask, None, None, 512, 512, device="cpu")
    # causal: query block i computes key blocks 0..i, 1 + 2 + 3 + 4 = 10 of
    # the 16 blocks (the 4 on the diagonal in full, masked inside):
    # 10 * 128 * 128 = 163,840 pairs; SDPA's causal counts 16 blocks ("full")
    # or 8 ("half"): the kernel computes what the mask keeps
    assert int(causal.kv_num_blocks.sum() + causal.full_kv_num_blocks.sum()) == 10
    for convention in ("full", "half"):
        fc = count(lambda: flex_attention(q, k, v, block_mask=causal), convention)
        assert fc.executed_flops == 10 * 128 * 128 * PAIR == 83_886_080
    sdpa = count(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                 "half")
    assert sdpa.executed_flops == 8 * 128 * 128 * PAIR
    # a causal window of 128 keys: block i computes blocks i - 1 and i
    # (block 0 only itself): 1 + 2 + 2 + 2 = 7 blocks
    fc = count(lambda: flex_attention(q, k, v, block_mask=window))
    assert fc.executed_flops == 7 * 128 * 128 * PAIR == 58_720_256
    # a mask per batch and head is read row by row: the causal grid for
    # head 0, nothing masked for the others (16 blocks)
    per_head = create_block_mask(lambda b, h, q_, kv: (q_ >= kv) | (h > 0), 2, 4, 512, 512,
                                 device="cpu")
    fc = count(lambda: flex_attention(q, k, v, block_mask=per_head))
    # per (b, h) pair: 2 x (10 + 3 x 16) = 116 blocks, at 2 * 128 * 128 * 32 each
    assert fc.executed_flops == 116 * 128 * 128 * 2 * 32


def test_flex_both_directions_on_meta():
    """On meta, through the higher-order ops (flex_attention refuses meta and
    the CPU backward): forward, backward (2.5x, executed) and model (3x)."""
    q = torch.empty(*Q, device="meta", requires_grad=True)
    mask = create_block_mask(causal_mask, None, None, 512, 512, device="cpu").as_tuple()

    def run(block_mask):
        out, _, _ = HOP.flex_attention(q, q, q, _identity, block_mask, 0.25,
                                       {"OUTPUT_LOGSUMEXP": True})
        out.sum().backward()

    fc = count(lambda: run(mask))
    forward = 10 * 128 * 128 * PAIR                       # 83,886,080
    backward = 10 * 128 * 128 * 2 * 2 * 4 * (3 * 16 + 2 * 16)  # 209,715,200 (2.5x)
    assert fc.by_op == {"higher_order::flex_attention": (1, forward),
                        "higher_order::flex_attention_backward": (1, backward)}
    assert fc.model_flops == 3 * forward and fc.backward_flops == backward
    assert not fc.approximate
    # a mask on meta cannot be read: every block (the rectangle), flagged
    meta_mask = tuple(x.to("meta") if isinstance(x, torch.Tensor) else x for x in mask)
    fc = count(lambda: run(meta_mask))
    assert fc.forward_flops == 16 * 128 * 128 * PAIR and fc.approximate


def test_flex_compiled_never_crashes():
    q, k, v = (torch.randn(1, 2, 128, 16) for _ in range(3))
    mask = create_block_mask(causal_mask, None, None, 128, 128, device="cpu", BLOCK_SIZE=64)
    eager = count(lambda: flex_attention(q, k, v, block_mask=mask))
    # aot_eager runs the higher-order op: counted as in eager (3 of 4 blocks:
    # 3 * 64 * 64 * 2 * 1 * 2 * 32 = 1,572,864)
    compiled = torch.compile(flex_attention, backend="aot_eager")
    fc = count(lambda: compiled(q, k, v, block_mask=mask))
    assert fc.executed_flops == eager.executed_flops == 1_572_864
    # inductor generates a kernel the counter cannot see: it runs, uncounted
    out = count(lambda: torch.compile(flex_attention)(q, k, v))
    assert out.errors == 0


# ---------------------------------------------------------------------------
# flash-attn 2 and FlashAttention-3 (STAND-INS)
# ---------------------------------------------------------------------------

B, S, H, D = 2, 64, 4, 32
FA_PAIR = 2 * B * H * (D + D)        # a pair forward, all b and h: 1,024
FA_PAIR_BWD = 2 * B * H * (3 * D + 2 * D)  # backward (executed): 2,560
# causal window of 16 keys (window_size_left 15) over 64: full 64 * 16 =
# 1,024 pairs; half 1 + 2 + ... + 16 + 48 * 16 = 136 + 768 = 904
DENSE, HALF_CAUSAL, WINDOW_FULL, WINDOW_HALF = 64 * 64, 64 * 64 // 2, 64 * 16, 904


def t(*shape, grad=False):
    """A meta tensor: the stand-ins' and the real ops' fake kernels run on it."""
    return torch.empty(*shape, device="meta").requires_grad_(grad)


# FlashAttention-3's fwd / bwd (TORCH_LIBRARY ops) have no meta kernel in the
# real package: with it installed, those cases need a GPU (test_real_flash_attn)
needs_fa3_standin = pytest.mark.skipif(_kernel_standins.real_flash_attn_3(),
                                       reason="FlashAttention-3 is installed: no meta kernel")


def fa2_forward(causal, left=-1, grad=True):
    q = t(B, S, H, D, grad=grad)
    return lambda: FA._flash_attn_forward(q, q, q, 0.0, 0.18, causal, left, -1, 0.0, None, False)


def fa2_backward(causal, left=-1):
    q = t(B, S, H, D)
    return lambda: FA._flash_attn_backward(q, q, q, q, q, t(B, H, S), None, None, None, 0.0,
                                           0.18, causal, left, -1, 0.0, None, False)


@pytest.mark.parametrize("case, call, full, half", [
    ("dense", fa2_forward(False), DENSE, DENSE),
    ("causal", fa2_forward(True), DENSE, HALF_CAUSAL),
    ("window", fa2_forward(True, 15), WINDOW_FULL, WINDOW_HALF),
    # a window wider than the sequence keeps every earlier key: the square,
    # half the kept pairs 64 * 65 / 2 = 2,080 (a call that carries a window
    # counts by the window rule, as the analytic count does)
    ("window wider than s", fa2_forward(True, 100), DENSE, 64 * 65 // 2),
    ("fa3 causal", lambda: FA3._flash_attn_forward(t(B, S, H, D, grad=True), t(B, S, H, D),
                                                   t(B, S, H, D), causal=True), DENSE, HALF_CAUSAL),
    pytest.param("fa3 fwd window", lambda: FA3.fwd(t(B, S, H, D, grad=True), t(B, S, H, D), t(B, S, H, D),
                                       is_causal=True, window_size_left=15),
                 WINDOW_FULL, WINDOW_HALF, marks=needs_fa3_standin),
    # chunks of 16, causal: full 4 chunks of 16 * 16; half 4 x (1 + ... + 16)
    pytest.param("fa3 chunk", lambda: FA3.fwd(t(B, S, H, D, grad=True), t(B, S, H, D),
                                              t(B, S, H, D), is_causal=True, attention_chunk=16),
                 4 * 256, 4 * 136, marks=needs_fa3_standin),
])
def test_flash_attn_forward(case, call, full, half):
    for convention, pairs in (("full", full), ("half", half)):
        fc = count(call, convention)
        assert fc.executed_flops == pairs * FA_PAIR, (case, convention)
        assert fc.model_flops == 3 * pairs * FA_PAIR, case  # q requires grad: 2x backward (PaLM)
        assert fc.errors == 0


@pytest.mark.parametrize("case, call, full, half", [
    ("causal", fa2_backward(True), DENSE, HALF_CAUSAL),
    ("window", fa2_backward(True, 15), WINDOW_FULL, WINDOW_HALF),
    ("fa3", lambda: FA3._flash_attn_backward(t(B, S, H, D), t(B, S, H, D), t(B, S, H, D),
                                             t(B, S, H, D), t(B, S, H, D), t(B, H, S),
                                             is_causal=True, window_size_left=15),
     WINDOW_FULL, WINDOW_HALF),
    pytest.param("fa3 bwd", lambda: FA3.bwd(t(B, S, H, D), t(B, S, H, D), t(B, S, H, D),
                                            t(B, S, H, D), t(B, S, H, D), t(B, H, S)),
                 DENSE, DENSE, marks=needs_fa3_standin),
])
def test_flash_attn_backward(case, call, full, half):
    for convention, pairs in (("full", full), ("half", half)):
        fc = count(call, convention)
        # a backward kernel: executed 2.5x its forward, model 2x (PaLM: the
        # score recompute is not model work; csrc/core/ops/ops.h), no model
        # backward of its own
        assert fc.executed_flops == pairs * FA_PAIR_BWD, (case, convention)
        assert fc.model_flops == pairs * 2 * FA_PAIR, (case, convention)


# Packed sequences of 10, 30 and 24 tokens (cu_seqlens 0, 10, 40, 64), 4
# heads of 32: 2 * 4 * 64 = 512 FLOPs a pair forward. A causal window of 16:
# the 10 counts 10 * 10 = 100 (half 10 * 11 / 2 = 55); the 30 counts
# 30 * 16 = 480 (half 136 + 14 * 16 = 360), the 24 24 * 16 = 384 (half
# 136 + 8 * 16 = 264)
CU = [0, 10, 40, 64]
VARLEN_DENSE = 100 + 900 + 576
VARLEN_WINDOW_FULL, VARLEN_WINDOW_HALF = 100 + 480 + 384, 55 + 360 + 264


def packed(grad=False):
    return t(64, H, D, grad=grad)


def lengths():
    return torch.tensor(CU, dtype=torch.int32)


@pytest.mark.parametrize("case, call, full, half, per_pair", [
    ("fa2 varlen", lambda: FA._flash_attn_varlen_forward(
        packed(True), packed(), packed(), lengths(), lengths(), 30, 30, 0.0, 0.18, False),
     VARLEN_DENSE, VARLEN_DENSE, 512),
    ("fa2 varlen causal window", lambda: FA._flash_attn_varlen_forward(
        packed(True), packed(), packed(), lengths(), lengths(), 30, 30, 0.0, 0.18, True, 15, 0),
     VARLEN_WINDOW_FULL, VARLEN_WINDOW_HALF, 512),
    ("fa2 varlen backward", lambda: FA._flash_attn_varlen_backward(
        packed(), packed(), packed(), packed(), packed(), t(H, 64), None, None, None, lengths(),
        lengths(), 30, 30, 0.0, 0.18, True, 15, 0, 0.0, None, False),
     VARLEN_WINDOW_FULL, VARLEN_WINDOW_HALF, 2 * 4 * (3 * 32 + 2 * 32)),
    ("fa3 varlen causal", lambda: FA3._flash_attn_forward(
        packed(True), packed(), packed(), cu_seqlens_q=lengths(), cu_seqlens_k=lengths(),
        max_seqlen_q=30, max_seqlen_k=30, causal=True, window_size_left=15),
     VARLEN_WINDOW_FULL, VARLEN_WINDOW_HALF, 512),
    pytest.param("fa3 bwd varlen", lambda: FA3.bwd(
        packed(), packed(), packed(), packed(), packed(), t(H, 64), cu_seqlens_q=lengths(),
        cu_seqlens_k=lengths(), max_seqlen_q=30, max_seqlen_k=30),
        VARLEN_DENSE, VARLEN_DENSE, 2 * 4 * (3 * 32 + 2 * 32), marks=needs_fa3_standin),
])
def test_flash_attn_varlen(case, call, full, half, per_pair):
    for convention, pairs in (("full", full), ("half", half)):
        fc = count(call, convention)
        assert fc.executed_flops == pairs * per_pair, (case, convention)
        assert not fc.approximate and fc.errors == 0


def test_flash_attn_call_that_cannot_be_counted_runs_and_is_reported():
    """Paged KV (block_table: k is [blocks, page, h, d]) is not counted: the
    op runs, the call is an error with a reason, nothing is guessed."""
    q, kv = packed(), t(4, 16, H, D)
    with pytest.warns(RuntimeWarning, match="could not be counted"):
        fc = count(lambda: FA._flash_attn_varlen_forward(
            q, kv, kv, lengths(), lengths(), 30, 30, 0.0, 0.18, True,
            block_table=torch.zeros(3, 4, dtype=torch.int32)))
    assert fc.errors == 1 and fc.executed_flops == 0


@pytest.mark.skipif(not (torch.cuda.is_available() and _kernel_standins.real_flash_attn()),
                    reason="needs a GPU and the real flash-attn")
def test_real_flash_attn():
    """The real package on a GPU, through its Python API (bf16): the same
    hand arithmetic as the stand-ins, forward (no grad) and backward."""
    from flash_attn import flash_attn_func, flash_attn_varlen_func

    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with torch.no_grad():
        fc = count(lambda: flash_attn_func(q, k, v, causal=True, window_size=(15, 0)))
    assert fc.executed_flops == WINDOW_FULL * FA_PAIR and fc.errors == 0
    qg = q.clone().requires_grad_(True)
    fc = count(lambda: flash_attn_func(qg, k, v, causal=True).sum().backward())
    assert fc.forward_flops == DENSE * FA_PAIR
    assert fc.backward_flops == DENSE * FA_PAIR_BWD
    qp, kp, vp = (torch.randn(64, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    cu = lengths().cuda()
    with torch.no_grad():
        fc = count(lambda: flash_attn_varlen_func(qp, kp, vp, cu, cu, 30, 30, causal=True,
                                                  window_size=(15, 0)), "half")
    assert fc.executed_flops == VARLEN_WINDOW_HALF * 512


# ---------------------------------------------------------------------------
# The audit: what a count does not cover
# ---------------------------------------------------------------------------

@torch.library.custom_op("mfu_test::fused_gemm", mutates_args=())
def fused_gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.new_empty(a.shape[0], b.shape[1])  # a kernel the counter cannot see


fused_gemm.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))


class _ScaleHop(torch._ops.HigherOrderOperator):
    """An unknown higher-order op: doubles its input."""

    def __init__(self):
        super().__init__("mfu_test_scale")

    def __call__(self, x):
        return super().__call__(x)


scale_hop = _ScaleHop()
scale_hop.py_impl(torch._C.DispatchKey.CompositeExplicitAutograd)(lambda x: x * 2)


@scale_hop.py_impl(torch._C.DispatchKey.Autograd)
def _scale_autograd(x):
    with torch._C._AutoDispatchBelowAutograd():
        return scale_hop(x)


def step(a, b):
    """One block: a counted matmul, a linear (a composite of a counted op),
    an unknown custom op and an unknown higher-order op."""
    torch.nn.functional.linear(torch.mm(a, b), b.t())
    fused_gemm(a, b)
    scale_hop(a)


def test_audit_lists_uncounted_ops_and_warns_once_for_heavy_ones():
    a, b = torch.randn(16, 32), torch.randn(32, 32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fc = FlopCounter(audit=True, modules=False)
        for _ in range(2):  # one counter, two blocks: one warning
            with fc:
                step(a, b)
    mine = [str(w.message) for w in caught if "FLOP-heavy" in str(w.message)]
    # the first block warns, naming what it saw
    assert len(mine) == 1 and "mfu_test::fused_gemm (1 call, largest input [32, 32])" in mine[0]
    assert "higher_order::mfu_test_scale (1 call, largest input [16, 32])" in mine[0]
    rows = {r.name: r for r in fc.uncounted()}
    assert rows["mfu_test::fused_gemm"].heavy and rows["mfu_test::fused_gemm"].calls == 2
    assert rows["higher_order::mfu_test_scale"].heavy
    assert rows["higher_order::mfu_test_scale"].largest_input == (16, 32)
    # counted ops, and composites of them, are not listed
    assert not {"aten::mm", "aten::linear", "aten::addmm", "aten::matmul"} & set(rows)
    assert [r.heavy for r in fc.uncounted()] == sorted((r.heavy for r in fc.uncounted()),
                                                       reverse=True)  # heavy first
    # 2 x (2 * 16 * 32 * 32 (mm) + 2 * 16 * 32 * 32 (linear)) = 131,072
    assert fc.executed_flops == 131_072
    fc.reset()
    assert fc.uncounted() == []


def test_convert_element_type_is_not_heavy():
    """A word with "conv" marks an op FLOP-heavy (a convolution the table
    missed), except a dtype conversion: ``prims::convert_element_type``
    (compiled graphs run it uncounted every step) must not warn."""
    from mfu_tracker.flops.counter._audit import heavy_message, looks_heavy, uncounted_ops

    assert not looks_heavy("prims::convert_element_type")
    assert looks_heavy("aten::conv2d") and looks_heavy("aten::convolution_backward")
    assert looks_heavy("mkldnn::_convolution_pointwise")
    rows = uncounted_ops({"prims::convert_element_type": (7, (4, 4)),
                          "aten::slow_conv3d_forward": (1, (2, 3))})
    assert [(r.name, r.heavy) for r in rows] == [("aten::slow_conv3d_forward", True),
                                                 ("prims::convert_element_type", False)]
    message = heavy_message(rows)
    assert "slow_conv3d_forward" in message and "convert_element_type" not in message


def test_without_audit_only_higher_order_ops_are_noted_and_nothing_warned():
    """Ops stay free without an audit; a higher-order op the counter passed
    on with nothing counted inside is noted all the same (it is rare and
    already runs a Python kernel), but only an audit warns."""
    a, b = torch.randn(16, 32), torch.randn(32, 32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fc = count(lambda: step(a, b))
    assert [(r.name, r.calls) for r in fc.uncounted()] == [("higher_order::mfu_test_scale", 1)]
    assert not [w for w in caught if "FLOP-heavy" in str(w.message)]


def test_a_formula_takes_an_op_out_of_the_audit():
    a, b = torch.randn(16, 32), torch.randn(32, 32)
    register_flop_formula("mfu_test::fused_gemm", lambda a, b: 2 * a[0] * a[1] * b[1])
    try:
        fc = count(lambda: fused_gemm(a, b), audit=True)
    finally:
        from mfu_tracker.counter import unregister_flop_formula

        unregister_flop_formula("mfu_test::fused_gemm")
    assert "mfu_test::fused_gemm" not in {r.name for r in fc.uncounted()}
    assert fc.executed_flops == 2 * 16 * 32 * 32


def test_optimizer_wrapper_audits_its_first_counted_step():
    from mfu_tracker import user_gpu_spec
    from mfu_tracker.optim import MFUOptimizerWrapper

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(32, 32, bias=False)

        def forward(self, x):
            fused_gemm(x, self.lin.weight)
            return self.lin(x)

    model = Model()
    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model,
                              spec=user_gpu_spec(1000.0, name="fake"), clock="cpu", warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with opt.track_step(num_tokens=16):
                model(torch.randn(16, 32)).sum().backward()
            opt.step()
    mine = [str(w.message) for w in caught if "FLOP-heavy" in str(w.message)]
    assert len(mine) == 1 and "first counted step" in mine[0] and "mfu_test::fused_gemm" in mine[0]


# ---------------------------------------------------------------------------
# The fallback backend: the same numbers, never a crash
# ---------------------------------------------------------------------------

_FALLBACK = r"""
import json, sys, warnings
sys.path.insert(0, %(tests)r)
warnings.simplefilter("ignore")
import torch
import flops.counter.test_audit as m
from mfu_tracker.counter import counter_backend
q, k, v = (torch.randn(*m.Q) for _ in range(3))
mask = m.create_block_mask(m.causal_mask, None, None, 512, 512, device="cpu")
out = {"backend": counter_backend()}
out["flex"] = m.count(lambda: m.flex_attention(q, k, v)).executed_flops
out["flex_causal"] = m.count(lambda: m.flex_attention(q, k, v, block_mask=mask)).executed_flops
qm = torch.empty(*m.Q, device="meta", requires_grad=True)
def meta():
    o, _, _ = m.HOP.flex_attention(qm, qm, qm, m._identity, mask.as_tuple(), 0.25,
                                   {"OUTPUT_LOGSUMEXP": True})
    o.sum().backward()
fc = m.count(meta)
out["flex_meta"] = [fc.forward_flops, fc.backward_flops, fc.model_flops]
out["fa"] = [m.count(m.fa2_forward(True, 15), c).executed_flops for c in ("full", "half")]
a, b = torch.randn(16, 32), torch.randn(32, 32)
fc = m.count(lambda: m.step(a, b), audit=True)
out["heavy"] = sorted(r.name for r in fc.uncounted() if r.heavy)
out["compiled"] = m.count(lambda: torch.compile(m.flex_attention, backend="aot_eager")(
    q, k, v, block_mask=mask)).executed_flops
small = torch.randn(1, 1, 64, 16)
out["inductor_errors"] = m.count(lambda: torch.compile(m.flex_attention)(small, small, small)).errors
print(json.dumps(out))
"""


def test_fallback_counts_the_same_and_never_crashes():
    env = dict(os.environ, MFU_TRACKER_DISABLE_TORCH_EXT="1")
    proc = subprocess.run([sys.executable, "-c", _FALLBACK % {"tests": str(TESTS)}],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    forward = 10 * 128 * 128 * PAIR
    assert out == {
        "backend": "dispatch",
        "flex": 512 * 512 * PAIR,
        "flex_causal": forward,
        "flex_meta": [forward, 10 * 128 * 128 * 2 * 2 * 4 * 80, 3 * forward],
        "fa": [WINDOW_FULL * FA_PAIR, WINDOW_HALF * FA_PAIR],
        # NB: on the fallback a higher-order op's kernel runs outside the
        # mode (its dense kernel refuses modes): listed, as the custom op
        "heavy": ["higher_order::mfu_test_scale", "mfu_test::fused_gemm"],
        "compiled": forward,
        "inductor_errors": 0,  # runs (a generated kernel: not seen)
    }
