"""The TorchDispatchMode fallback: forced with MFU_TRACKER_DISABLE_TORCH_EXT=1
(read when mfu_tracker.counter is imported, so in a subprocess), one
warning, the same numbers as the C++ observer -- on zoo models and on every
row of the op table, CUDA-only attention kernels included, called on meta
(tests/_op_calls.py) -- and the op table checked against torch's schemas."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mfu_tracker import _C  # noqa: E402

TESTS = Path(__file__).resolve().parents[2]

# Counts a few zoo models and prints {name: [executed, forward, model]}.
_COUNT = r"""
import json, sys, warnings
sys.path.insert(0, %(tests)r)
import torch
from test_counter_zoo import ZOO, _decoder, _step, _ours
from mfu_tracker.counter import counter_backend
out = {"backend": counter_backend()}
models = {k: ZOO[k] for k in ("gpt2", "mixtral", "t5", "cnn")}
models["llama_sdpa"] = lambda: _decoder("llama", attn="sdpa")[::2]
models["mixtral_grouped"] = lambda: _decoder("mixtral", experts="grouped_mm")[::2]
for name, build in models.items():
    for causal in ("full", "half"):
        fc = _ours(_step(*build()), causal_attention=causal)
        out[f"{name}/{causal}"] = [fc.executed_flops, fc.forward_flops, fc.model_flops,
                                   sorted(fc.by_op.items())]
print(json.dumps(out))
"""


def _run(env_value: str | None) -> tuple[dict, str]:
    env = dict(os.environ)
    env.pop("MFU_TRACKER_DISABLE_TORCH_EXT", None)
    if env_value is not None:
        env["MFU_TRACKER_DISABLE_TORCH_EXT"] = env_value
    proc = subprocess.run([sys.executable, "-W", "always::RuntimeWarning", "-c",
                           _COUNT % {"tests": str(TESTS)}],
                          capture_output=True, text=True, env=env, check=True, timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_both_backends_agree_and_the_fallback_warns_once():
    ext, ext_err = _run(None)
    fallback, fb_err = _run("1")
    assert ext.pop("backend") == "torch-ext"
    assert fallback.pop("backend") == "dispatch"
    assert ext == fallback
    assert fb_err.count("TorchDispatchMode fallback") == 1  # one warning for many counters
    assert "MFU_TRACKER_DISABLE_TORCH_EXT=1" in fb_err
    assert "fallback" not in ext_err


def test_behaviour_suite_passes_on_the_fallback():
    """The whole behaviour suite (nesting, threads, failures, profile_flops,
    hand arithmetic, fake tensors either way round) again, on the fallback."""
    env = dict(os.environ, MFU_TRACKER_DISABLE_TORCH_EXT="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "ignore::RuntimeWarning:mfu_tracker.counter",
         str(TESTS / "flops" / "counter" / "test_counter.py"), str(TESTS / "test_counter_fake.py"),
         "-k", "not torch_compile and not backtrace"],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout


# ---------------------------------------------------------------------------
# Every row of the op table, on both backends
# ---------------------------------------------------------------------------

OP_TABLE = _C.op_table()


def _count_rows(env_value: str | None) -> dict:
    env = dict(os.environ)
    env.pop("MFU_TRACKER_DISABLE_TORCH_EXT", None)
    if env_value is not None:
        env["MFU_TRACKER_DISABLE_TORCH_EXT"] = env_value
    code = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import json, _op_calls; " \
           "print(json.dumps(_op_calls.count_all()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True, timeout=600)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def rows_on_both_backends() -> tuple[dict, dict]:
    return _count_rows(None), _count_rows("1")


def test_every_row_has_a_meta_call():
    from _op_calls import CALLS

    assert set(CALLS) == {row["name"] for row in OP_TABLE}


def test_every_row_counts_the_same_on_both_backends(rows_on_both_backends):
    """Each row's op called through the dispatcher on meta tensors (see
    tests/_op_calls.py), under grad mode (full and half causal convention)
    and inference mode: executed and model FLOPs are identical on the C++
    observer and the fallback, and every call was counted."""
    ext, fallback = (dict(r) for r in rows_on_both_backends)
    assert ext.pop("backend") == "torch-ext"
    assert fallback.pop("backend") == "dispatch"
    assert ext.keys() == fallback.keys()
    # NB (csrc/core/ops/op_table.c): the fallback sees the composite math SDPA
    # only under inference mode; with grad on it counts the bmms it
    # decomposes into: the same executed FLOPs (the math path computes the
    # full square), model FLOPs never halved.
    skip = {"aten::_scaled_dot_product_attention_math grad/half"}
    for key, (executed, model, forward, backward, approximate, errors, ops) in ext.items():
        f_executed, f_model, f_forward, f_backward, f_approximate, f_errors, _ = fallback[key]
        assert errors == f_errors == 0, key
        assert executed > 0 or key.startswith("aten::_scaled_mm"), key
        assert forward + backward == executed, key
        if key in skip:
            assert (f_executed, f_model) == (executed, 2 * model), key  # half vs never halved
            continue
        assert (f_executed, f_model, f_forward, f_backward, f_approximate) == \
            (executed, model, forward, backward, approximate), key
        assert len(ops) == 1 and key.startswith(ops[0] + " "), key  # the row's op, once


def test_rows_hand_arithmetic(rows_on_both_backends):
    ext = rows_on_both_backends[0]

    def row(key: str) -> tuple[int, int, bool]:
        executed, model, _, _, approximate, _, _ = ext[key]
        return executed, model, approximate

    # mm [4, 5] @ [5, 6]: 2 * 4 * 6 * 5 = 240; both operands need a gradient: 3x
    assert row("aten::mm grad/full") == (240, 720, False)
    assert row("aten::mm inference/half") == (240, 240, False)
    # conv x [2, 3, 8, 8], w [4, 3, 3, 3], stride 2, padding 1: out 4 x 4,
    # 2 * 2 * 16 * 4 * 3 * 9 = 6,912
    assert row("aten::convolution strided grad/full") == (6_912, 3 * 6_912, False)
    # convolution_backward, input and weight grads: 2 x 15,552, backward work
    assert row("aten::convolution_backward grad/full") == (31_104, 31_104, False)
    # flash BSHD q [b 2, s 8, h 4, d 16]: 2 * 2 * 4 * 8 * 8 * (16 + 16) = 32,768;
    # model 3x (PaLM); is_causal halves it under "half"
    assert row("aten::_flash_attention_forward grad/full") == (32_768, 98_304, False)
    assert row("aten::_flash_attention_forward grad/half") == (16_384, 49_152, False)
    # packed, sequences 3 and 7, 4 heads of d 8: 2 * 4 * s * s * 16 = 128 s^2
    # -> 128 * (9 + 49) = 7,424; on meta both count max 7: 128 * 98 = 12,544
    assert row("aten::_flash_attention_forward packed grad/full") == (7_424, 22_272, False)
    assert row("aten::_flash_attention_forward packed meta grad/full") == (12_544, 37_632, True)
    assert row("torch_attn::_varlen_attn grad/half") == (3_712, 11_136, False)
    # the efficient kernel packed as [1, total, h, d], no mask: never halved
    assert row("aten::_efficient_attention_forward packed grad/half") == (7_424, 22_272, False)
    # an attention backward kernel: 2 * 2 * 4 * 8 * 8 * (3 * 16 + 2 * 16) = 81,920
    # (2.5x the forward); called outside a backward, its model FLOPs are the
    # model convention's: 2 x the forward 32,768 = 65,536 (the score
    # recompute is not model work)
    assert row("aten::_scaled_dot_product_efficient_attention_backward grad/full") == \
        (81_920, 65_536, False)

    # flash-attn (STAND-INS, tests/_kernel_standins.py), q [b 2, s 8, h 4, d 16]:
    # causal as _flash_attention_forward; a window of left 2 (3 keys):
    # full 8 * 3 = 24 pairs -> 2 * 2 * 4 * 24 * (16 + 16) = 12,288, half the
    # kept pairs 1 + 2 + 3 * 6 = 21 -> 10,752
    assert row("flash_attn::_flash_attn_forward grad/full") == (32_768, 98_304, False)
    assert row("flash_attn::_flash_attn_forward window grad/full") == (12_288, 36_864, False)
    assert row("flash_attn::_flash_attn_forward window grad/half") == (10_752, 32_256, False)
    # varlen, sequences 3 and 7, 4 heads of d 8 (2 * 4 * 16 = 128 FLOPs a pair),
    # causal window (2, 0) of 3 keys: the 3 counts 3 * 3 = 9 (half 1 + 2 + 3 = 6),
    # the 7 counts 7 * 3 = 21 (half 1 + 2 + 3 * 5 = 18): 128 * 30 = 3,840, 128 * 24 = 3,072
    assert row("flash_attn::_flash_attn_varlen_forward grad/full") == (3_840, 11_520, False)
    assert row("flash_attn::_flash_attn_varlen_forward grad/half") == (3_072, 9_216, False)
    # varlen backward, window (2, 2) not causal: 9 + 7 * 5 = 44 pairs (half:
    # 9 + 3 + 4 + 5 + 5 + 5 + 4 + 3 = 38), 2 * 4 * (3 * 8 + 2 * 8) = 320 a pair
    # executed; model 2 x the forward's 128 a pair (as the SDPA backward above):
    # 44 * 256 = 11,264, 38 * 256 = 9,728
    assert row("flash_attn::_flash_attn_varlen_backward grad/full") == (14_080, 11_264, False)
    assert row("flash_attn::_flash_attn_varlen_backward grad/half") == (12_160, 9_728, False)
    # FlashAttention-3, chunk 4, causal: the 3 is one chunk (9, half 6), the 7
    # counts chunks of 4 and 3 (4 * 4 + 3 * 3 = 25; half 10 + 6 = 16):
    # 128 * 34 = 4,352, 128 * 22 = 2,816
    assert row("flash_attn_3::_flash_attn_forward packed chunk grad/full") == (4_352, 13_056, False)
    assert row("flash_attn_3::_flash_attn_forward packed chunk grad/half") == (2_816, 8_448, False)
    # flex_attention [b 1, h 2, s 8, d 16], no mask: the SDPA formula
    # 2 * 1 * 2 * 8 * 8 * 32 = 8,192 under both conventions; blocks of 4 x 4,
    # row 0 computing block 0, row 1 blocks 0 and 1: 16 + 32 = 48 pairs ->
    # 2 * 2 * 48 * 32 = 6,144; on meta (counts unreadable): every block, 8,192,
    # approximate; the backward 2 * 2 * 48 * (3 * 16 + 2 * 16) = 15,360
    # executed, model 2 x 6,144 = 12,288
    assert row("higher_order::flex_attention grad/half") == (8_192, 24_576, False)
    assert row("higher_order::flex_attention blocks grad/full") == (6_144, 18_432, False)
    assert row("higher_order::flex_attention blocks grad/half") == (6_144, 18_432, False)
    assert row("higher_order::flex_attention blocks meta grad/full") == (8_192, 24_576, True)
    assert row("higher_order::flex_attention_backward grad/full") == (15_360, 12_288, False)


# ---------------------------------------------------------------------------
# The table against torch's schemas
# ---------------------------------------------------------------------------

def _hop_row(name: str) -> bool:
    return name.startswith("higher_order::")


def _schema(name: str):
    namespace, op = name.split("::")
    packet = getattr(getattr(torch.ops, namespace), op)
    return packet.default._schema if "default" in packet.overloads() else \
        getattr(packet, packet.overloads()[0])._schema


# role -> the schema argument names it may have (None: any tensor)
_ROLE_ARGUMENTS = {
    "a": None, "b": None,
    "input": ("input", "self"), "weight": ("weight",), "grad_output": ("grad_output",),
    "stride": ("stride",), "padding": ("padding",), "dilation": ("dilation",),
    "transposed": ("transposed",), "groups": ("groups",), "output_mask": ("output_mask",),
    "query": ("query", "q"), "key": ("key", "k"), "value": ("value", "v"),
    "cu_seqlens_q": ("cum_seq_q", "cu_seqlens_q", "cu_seq_q"),
    "cu_seqlens_k": ("cum_seq_k", "cu_seqlens_k", "cu_seq_k"),
    "max_seqlen_q": ("max_q", "max_seqlen_q"), "max_seqlen_k": ("max_k", "max_seqlen_k"),
    "is_causal": ("is_causal", "causal"), "custom_mask_type": ("custom_mask_type",),
    "window_size_left": ("window_size_left",), "window_size_right": ("window_size_right",),
    "attention_chunk": ("attention_chunk",),
    "attn_mask": ("attn_mask", "attn_bias", "bias"),
}
# need -> the schema types it reads
_NEED_TYPES = {
    "tensor": ("Tensor", "Optional[Tensor]"),
    "values": ("Tensor", "Optional[Tensor]"),
    "offsets": ("Tensor", "Optional[Tensor]"),
    "int": ("int", "bool", "Optional[int]", "SymInt", "Optional[SymInt]"),
    "int_list": ("List[int]", "List[bool]", "List[SymInt]"),
}


def test_higher_order_rows_read_the_flat_call():
    """The rows of higher-order ops (flex_attention and its backward) read
    the flat argument list _args.hop_args builds from the BlockMask
    tuple: each position holds the BlockMask field its role names."""
    from torch.nn.attention.flex_attention import create_block_mask

    from mfu_tracker.flops.counter._args import hop_args

    mask = create_block_mask(lambda b, h, q, kv: q >= kv, 1, 2, 256, 256, device="cpu",
                             BLOCK_SIZE=(64, 128))
    q, k, v = (torch.empty(1, 2, 256, 16) for _ in range(3))
    fields = {"query": q, "key": k, "value": v, "kv_num_blocks": mask.kv_num_blocks,
              "kv_indices": mask.kv_indices, "full_kv_num_blocks": mask.full_kv_num_blocks,
              "full_kv_indices": mask.full_kv_indices, "q_block_size": 64, "kv_block_size": 128}
    calls = {"higher_order::flex_attention": (q, k, v, None, mask.as_tuple(), 0.25, {}),
             "higher_order::flex_attention_backward": (q, k, v, q, None, q, None, None, None,
                                                       mask.as_tuple(), 0.25, {})}
    rows = [row for row in OP_TABLE if _hop_row(row["name"])]
    assert {row["name"] for row in rows} == set(calls)
    for row in rows:
        flat = hop_args(row["name"], calls[row["name"]], {})
        for position, role, _ in row["inputs"]:
            assert flat[position] is fields[role] or flat[position] == fields[role], (row, role)


@pytest.mark.parametrize("row", OP_TABLE, ids=[row["name"] for row in OP_TABLE])
def test_op_table_positions_match_torch_schemas(row):
    name, kind = row["name"], row["kind"]
    if _hop_row(name):
        pytest.skip("a higher-order op has no schema: see test_higher_order_rows_read_the_flat_call")
    if name.startswith("torch_attn::"):
        import torch.nn.attention.varlen  # noqa: F401 - registers the ops
    if name.startswith("flash_attn"):
        import _kernel_standins  # STAND-INS with the real schemas (no GPU here)

        _kernel_standins.register()
    arguments = _schema(name).arguments
    roles = {role: position for position, role, _ in row["inputs"]}
    for position, role, need in row["inputs"]:
        argument = arguments[position]
        assert str(argument.type) in _NEED_TYPES[need], (name, role, argument)
        expected = _ROLE_ARGUMENTS[role]
        if expected is not None:
            assert argument.name in expected, (name, role, argument.name)
    if kind in ("mm", "bmm", "grouped_mm"):
        assert set(roles) == {"a", "b"} and roles["a"] < roles["b"]
    elif kind.startswith("attention"):
        assert {"query", "key", "value"} <= set(roles)
        assert (name.endswith("backward") or name.endswith("::bwd")) == \
            (kind == "attention_backward")
        if kind == "attention_backward":  # grad_out first, then q, k, v
            assert arguments[0].name.startswith(("grad_out", "dout")) and roles["query"] == 1
        assert ("window_size_left" in roles) == ("window_size_right" in roles)
        assert ("cu_seqlens_q" in roles) == ("cu_seqlens_k" in roles) == ("max_seqlen_q" in roles)
        assert row["layout"] in ("bhsd", "bshd", "thd")
    else:
        assert {"input", "weight"} <= set(roles) and row["layout"] is None


# ---------------------------------------------------------------------------
# The autograd-site rule (csrc/core/ops/nodes.h), on both backends
# ---------------------------------------------------------------------------

# Each case: a Linear(128, 128) matmul F = 2 * 64 * 128 * 128 = 2,097,152 per
# call at 64 rows, x requiring grad: model 3F (forward, input and weight
# grads) wherever it runs; executed adds the recompute. Prints
# {case: [model, executed, recompute]} and the backend.
_SITES = r"""
import json, torch
from torch.utils import checkpoint
from mfu_tracker.counter import FlopCounter, counter_backend
torch.manual_seed(0)
lin = torch.nn.Linear(128, 128, bias=False)

class Custom(torch.autograd.Function):       # a custom Function: its backward counts as it runs
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w.t()
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.t() @ x

def block(t):
    return torch.relu(lin(t)) * 2

cases = {
    "plain": lambda x: block(x),
    "custom": lambda x: Custom.apply(x, lin.weight),
    "reentrant": lambda x: checkpoint.checkpoint(block, x, use_reentrant=True),
    "non_reentrant": lambda x: checkpoint.checkpoint(block, x, use_reentrant=False),
}
out = {"backend": counter_backend()}
with FlopCounter(modules=False):
    pass
for name, fn in cases.items():
    x = torch.randn(64, 128, requires_grad=True)
    with FlopCounter(modules=False) as fc:
        fn(x).sum().backward()
    out[name] = [fc.model_flops, fc.executed_flops, fc.recompute_flops]
# checkpointing inside a compiled region, dynamic shapes: the recomputed
# matmul's planned shape is (-1, 128) -- any rows
compiled = torch.compile(lambda x: checkpoint.checkpoint(block, x, use_reentrant=False),
                         backend="aot_eager", dynamic=True)
for rows in (64, 48):
    x = torch.randn(rows, 128, requires_grad=True)
    compiled(x).sum().backward()
    with FlopCounter(modules=False) as fc:
        compiled(x).sum().backward()
    out[f"compiled_dynamic_{rows}"] = [fc.model_flops, fc.executed_flops, fc.recompute_flops]
print(json.dumps(out))
"""


def _sites(env_value: str | None) -> dict:
    env = dict(os.environ)
    env.pop("MFU_TRACKER_DISABLE_TORCH_EXT", None)
    if env_value is not None:
        env["MFU_TRACKER_DISABLE_TORCH_EXT"] = env_value
    proc = subprocess.run([sys.executable, "-W", "ignore::RuntimeWarning", "-c", _SITES],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_site_rule_is_the_same_on_both_backends_under_compile_and_checkpoint():
    """Every kind of node a backward call runs in -- autograd's own, a
    custom Function's, a reentrant checkpoint's, a non-reentrant
    recompute, a compiled backward that recomputes a checkpointed matmul
    with dynamic shapes -- counts the same on the C++ observer and on the
    fallback, by hand."""
    ext, fallback = _sites(None), _sites("1")
    assert (ext.pop("backend"), fallback.pop("backend")) == ("torch-ext", "dispatch")
    F = 2 * 64 * 128 * 128  # 2,097,152
    assert fallback["plain"] == [3 * F, 3 * F, 0]
    assert fallback["custom"] == [3 * F, 3 * F, 0]           # backward counted as it runs
    assert fallback["reentrant"] == [3 * F, 4 * F, F]        # the recompute, HFU only
    assert fallback["non_reentrant"] == [3 * F, 4 * F, F]
    for rows in (64, 48):
        f = 2 * rows * 128 * 128
        # the compiled backward recomputes the matmul for relu's mask: matched
        # to the plan's (-1, 128) whatever the rows, it stays HFU only
        assert fallback[f"compiled_dynamic_{rows}"] == [3 * f, 4 * f, f], rows
    assert ext == fallback


def test_the_dispatch_backend_refuses_an_unknown_convention():
    from mfu_tracker.flops.counter import _dispatch

    backend = _dispatch.DispatchBackend()
    assert backend.name == "dispatch"
    with pytest.raises(ValueError, match="causal_attention"):
        backend.start("quarter")
