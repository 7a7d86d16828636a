"""STAND-INS for flash-attn's ops: the real names and schemas, no real kernels.

flash-attn 2 (``flash_attn::...``) and FlashAttention-3 (``flash_attn_3::...``)
need a GPU and a CUDA build. The counters only read an op's name and
arguments, so these stand-ins register, through ``torch.library``, ops with
the same names and the same schemas as the real packages':

* flash-attn 2, Dao-AILab/flash-attention v2.8.3,
  ``flash_attn/flash_attn_interface.py``: four ``torch.library.custom_op``
  ops, whose schemas torch infers from the annotations below, written as
  there (same names, types, defaults and ``mutates_args``);
* FlashAttention-3, the same repository's ``hopper/flash_attn_interface.py``
  (custom ops ``_flash_attn_forward`` / ``_flash_attn_backward``) and
  ``hopper/flash_api.cpp`` (``TORCH_LIBRARY(flash_attn_3)``: ``fwd`` and
  ``bwd``, whose schema strings are copied below argument by argument).

Their bodies do no counted work: they return empty outputs of the right
shapes (``new_empty``), so only the op's own formula can count a call.
tests/flops/counter/test_dispatch.py checks the table's positions against these
schemas. Where the real package is importable (a GPU machine),
:func:`register` registers nothing and the real ops are used.
"""
from __future__ import annotations

import importlib.util
from typing import Optional, Tuple

import torch

Tensor = torch.Tensor
_REGISTERED = False
_LIBRARIES: list = []


def real_flash_attn() -> bool:
    """flash-attn 2 is installed (its ops are registered on import)."""
    return importlib.util.find_spec("flash_attn") is not None


def real_flash_attn_3() -> bool:
    """FlashAttention-3 (the hopper build) is installed."""
    return importlib.util.find_spec("flash_attn_3") is not None


def _lse(q: Tensor, varlen: bool) -> Tensor:
    # [b, h, s] (or [h, total] packed), float32, as the real op
    return (q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32) if varlen
            else q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32))


def _rng(q: Tensor) -> Tensor:
    return q.new_empty((2,), dtype=torch.int64)


def _custom_op(name: str, fn, mutates_args: tuple) -> None:
    """``fn`` as the custom op ``name`` (its schema inferred from the
    annotations, as the real package's) and as its fake (meta) kernel."""
    op = torch.library.custom_op(name, fn, mutates_args=mutates_args)
    op.register_fake(fn)


def _register_fa2() -> None:
    def _flash_attn_forward(
        q: Tensor, k: Tensor, v: Tensor, dropout_p: float, softmax_scale: float, causal: bool,
        window_size_left: int, window_size_right: int, softcap: float,
        alibi_slopes: Optional[Tensor], return_softmax: bool,
    ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        return q.new_empty(q.shape), _lse(q, False), q.new_empty((0,)), _rng(q)

    def _flash_attn_varlen_forward(
        q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor,
        max_seqlen_q: int, max_seqlen_k: int, dropout_p: float, softmax_scale: float,
        causal: bool, window_size_left: int = -1, window_size_right: int = -1,
        softcap: float = 0.0, alibi_slopes: Optional[Tensor] = None,
        return_softmax: bool = False, block_table: Optional[Tensor] = None,
        leftpad_k: Optional[Tensor] = None, seqused_k: Optional[Tensor] = None,
        zero_tensors: bool = False,
    ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        return q.new_empty(q.shape), _lse(q, True), q.new_empty((0,)), _rng(q)

    def _flash_attn_backward(
        dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, softmax_lse: Tensor,
        dq: Optional[Tensor], dk: Optional[Tensor], dv: Optional[Tensor], dropout_p: float,
        softmax_scale: float, causal: bool, window_size_left: int, window_size_right: int,
        softcap: float, alibi_slopes: Optional[Tensor], deterministic: bool,
        rng_state: Optional[Tensor] = None,
    ) -> Tensor:
        return softmax_lse.new_empty(softmax_lse.shape)

    def _flash_attn_varlen_backward(
        dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, softmax_lse: Tensor,
        dq: Optional[Tensor], dk: Optional[Tensor], dv: Optional[Tensor],
        cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int, max_seqlen_k: int,
        dropout_p: float, softmax_scale: float, causal: bool, window_size_left: int,
        window_size_right: int, softcap: float, alibi_slopes: Optional[Tensor],
        deterministic: bool, rng_state: Optional[Tensor] = None, zero_tensors: bool = False,
    ) -> Tensor:
        return softmax_lse.new_empty(softmax_lse.shape)

    _custom_op("flash_attn::_flash_attn_forward", _flash_attn_forward, ())
    _custom_op("flash_attn::_flash_attn_varlen_forward", _flash_attn_varlen_forward, ())
    _custom_op("flash_attn::_flash_attn_backward", _flash_attn_backward, ("dq", "dk", "dv"))
    _custom_op("flash_attn::_flash_attn_varlen_backward", _flash_attn_varlen_backward, ("dq", "dk", "dv"))


def _register_fa3_custom_ops() -> None:
    def _flash_attn_forward(
        q: Tensor, k: Tensor, v: Tensor, k_new: Optional[Tensor] = None,
        v_new: Optional[Tensor] = None, qv: Optional[Tensor] = None,
        out_: Optional[Tensor] = None, cu_seqlens_q: Optional[Tensor] = None,
        cu_seqlens_k: Optional[Tensor] = None, cu_seqlens_k_new: Optional[Tensor] = None,
        seqused_q: Optional[Tensor] = None, seqused_k: Optional[Tensor] = None,
        max_seqlen_q: Optional[int] = None, max_seqlen_k: Optional[int] = None,
        page_table: Optional[Tensor] = None, kv_batch_idx: Optional[Tensor] = None,
        leftpad_k: Optional[Tensor] = None, rotary_cos: Optional[Tensor] = None,
        rotary_sin: Optional[Tensor] = None, seqlens_rotary: Optional[Tensor] = None,
        q_descale: Optional[Tensor] = None, k_descale: Optional[Tensor] = None,
        v_descale: Optional[Tensor] = None, softmax_scale: Optional[float] = None,
        causal: bool = False, window_size_left: int = -1, window_size_right: int = -1,
        attention_chunk: int = 0, softcap: float = 0.0, rotary_interleaved: bool = True,
        scheduler_metadata: Optional[Tensor] = None, num_splits: int = 1,
        pack_gqa: Optional[bool] = None, sm_margin: int = 0,
    ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        lse = _lse(q, cu_seqlens_q is not None)
        return q.new_empty(q.shape), lse, q.new_empty((0,)), q.new_empty((0,))

    def _flash_attn_backward(
        dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, softmax_lse: Tensor,
        cu_seqlens_q: Optional[Tensor] = None, cu_seqlens_k: Optional[Tensor] = None,
        sequed_q: Optional[Tensor] = None, sequed_k: Optional[Tensor] = None,
        max_seqlen_q: Optional[int] = None, max_seqlen_k: Optional[int] = None,
        dq: Optional[Tensor] = None, dk: Optional[Tensor] = None, dv: Optional[Tensor] = None,
        softmax_scale: Optional[float] = None, is_causal: bool = False,
        window_size_left: int = -1, window_size_right: int = -1, softcap: float = 0.0,
        deterministic: bool = False, sm_margin: int = 0,
    ) -> Tensor:
        return softmax_lse.new_empty(softmax_lse.shape)

    _custom_op("flash_attn_3::_flash_attn_forward", _flash_attn_forward, ())
    _custom_op("flash_attn_3::_flash_attn_backward", _flash_attn_backward, ("dq", "dk", "dv"))


# hopper/flash_api.cpp, TORCH_LIBRARY(flash_attn_3, m): m.def("fwd(...)") and
# m.def("bwd(...)"), argument by argument
_FA3_FWD = (
    "fwd(Tensor q, Tensor k, Tensor v, Tensor(k_new!)? k_new=None, Tensor(v_new!)? v_new=None, "
    "Tensor? q_v=None, Tensor(out!)? out=None, Tensor? cu_seqlens_q=None, "
    "Tensor? cu_seqlens_k=None, Tensor? cu_seqlens_k_new=None, Tensor? seqused_q=None, "
    "Tensor? seqused_k=None, int? max_seqlen_q=None, int? max_seqlen_k=None, "
    "Tensor? page_table=None, Tensor? kv_batch_idx=None, Tensor? leftpad_k=None, "
    "Tensor? rotary_cos=None, Tensor? rotary_sin=None, Tensor? seqlens_rotary=None, "
    "Tensor? q_descale=None, Tensor? k_descale=None, Tensor? v_descale=None, "
    "float? softmax_scale=None, bool is_causal=False, int window_size_left=-1, "
    "int window_size_right=-1, int attention_chunk=0, float softcap=0.0, "
    "bool is_rotary_interleaved=False, Tensor? scheduler_metadata=None, int num_splits=0, "
    "bool? pack_gqa=None, int sm_margin=0) -> (Tensor(out!), Tensor, Tensor, Tensor)")
_FA3_BWD = (
    "bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor softmax_lse, "
    "Tensor(dq!)? dq=None, Tensor(dk!)? dk=None, Tensor(dv!)? dv=None, "
    "Tensor? cu_seqlens_q=None, Tensor? cu_seqlens_k=None, Tensor? seqused_q=None, "
    "Tensor? seqused_k=None, int? max_seqlen_q=None, int? max_seqlen_k=None, "
    "float? softmax_scale=None, bool is_causal=False, int window_size_left=-1, "
    "int window_size_right=-1, float softcap=0.0, bool deterministic=False, "
    "int sm_margin=0) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")


def _register_fa3_library() -> None:
    lib = torch.library.Library("flash_attn_3", "DEF")
    _LIBRARIES.append(lib)
    lib.define(_FA3_FWD)
    lib.define(_FA3_BWD)

    def fwd(q, k, v, *args, **kwargs):
        lse = _lse(q, kwargs.get("cu_seqlens_q", args[4] if len(args) > 4 else None) is not None)
        return q.new_empty(q.shape), lse, q.new_empty((0,)), q.new_empty((0,))

    def bwd(dout, q, k, v, out, softmax_lse, *args, **kwargs):
        return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
                softmax_lse.new_empty(softmax_lse.shape), q.new_empty((0,)))

    for key in ("CompositeExplicitAutograd",):
        lib.impl("fwd", fwd, key)
        lib.impl("bwd", bwd, key)


def register() -> None:
    """Register the stand-ins once (nothing where flash-attn is installed)."""
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    if not real_flash_attn():
        _register_fa2()
    if not real_flash_attn_3():
        _register_fa3_custom_ops()
        _register_fa3_library()
