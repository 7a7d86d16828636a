"""One call of every row of the op table (``_C.op_table()``), on ``meta``.

Each row's op is called through the dispatcher with meta tensors (and CPU
cumulative lengths where a varlen case reads them), so each counter backend
converts the real torch arguments of the real op: the C++ observer sees the
call at Dispatcher::call, the TorchDispatchMode fallback in its mode.

flash-attn's ops (``flash_attn::``, ``flash_attn_3::``) are STAND-INS with
the real names and schemas (tests/_kernel_standins.py); flex_attention is
called as the higher-order op itself, with a BlockMask tuple.

Three convolutions have no meta kernel in torch (convolution_overrideable,
cudnn_convolution, _slow_conv2d_forward): ``add_meta_kernels`` registers one
for each on the Meta key (torch.library), returning an empty output of the
right shape. The counters never read outputs, so they still convert the
op's own arguments, through the dispatcher, as they would on a GPU.

``python _op_calls.py`` prints, as JSON, {"<op> <case> <scenario>":
[executed, model, forward, backward, approximate, errors, ops]} for every
case under three scenarios: grad mode on (full and half causal convention)
and inference mode (half).
"""
from __future__ import annotations

import json
from typing import Any, Callable

import torch
import torch.nn.attention.varlen  # noqa: F401 - registers the torch_attn ops
from torch.nn.attention.flex_attention import BlockMask, _identity

import _kernel_standins

_kernel_standins.register()  # STAND-INS of flash-attn's ops (no GPU here)

aten = torch.ops.aten
META = torch.device("meta")
FP8, BF16 = torch.float8_e4m3fn, torch.bfloat16


def t(*shape: int, grad: bool = True, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A meta tensor; floating ones require grad unless told not to."""
    x = torch.empty(*shape, dtype=dtype, device=META)
    return x.requires_grad_(grad) if dtype.is_floating_point and dtype not in (FP8,) else x


def ints(*shape: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.empty(*shape, dtype=dtype, device=META)


def lengths(*values: int, device: Any = "cpu") -> torch.Tensor:
    """Cumulative sequence lengths (int32); readable on the CPU, not on meta."""
    return torch.tensor(values, dtype=torch.int32, device=device)


CONV = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)  # stride, padding, dilation, transposed, output_padding, groups
Q = (2, 4, 8, 16)        # SDPA family: [b, h, s, d]
QS = (2, 8, 4, 16)       # kernel level: [b, s, h, d]
PACKED = (10, 4, 8)      # varlen: [total, h, d], sequences of 3 and 7
PACKED_KV = (10, 2, 8)   # GQA: 2 kv heads
LSE = (2, 4, 8)

# op name -> {case: call}
CALLS: dict[str, dict[str, Callable[[], Any]]] = {
    "aten::mm": {"": lambda: aten.mm(t(4, 5), t(5, 6))},
    "aten::_scaled_mm": {"": lambda: aten._scaled_mm(
        t(16, 32, dtype=FP8), t(16, 32, dtype=FP8).t(), t(()), t(()), out_dtype=BF16)},
    "aten::addmm": {"": lambda: aten.addmm(t(6), t(4, 5), t(5, 6))},
    "aten::bmm": {"": lambda: aten.bmm(t(3, 4, 5), t(3, 5, 6))},
    "aten::baddbmm": {"": lambda: aten.baddbmm(t(3, 4, 6), t(3, 4, 5), t(3, 5, 6))},
    "aten::_grouped_mm": {"": lambda: aten._grouped_mm(
        t(8, 16, dtype=BF16), t(4, 16, 8, dtype=BF16), ints(4, dtype=torch.int32))},
    "aten::_scaled_grouped_mm": {"": lambda: aten._scaled_grouped_mm(
        t(8, 16, dtype=FP8), t(4, 8, 16, dtype=FP8).transpose(-2, -1), t(8), t(4, 8),
        ints(4, dtype=torch.int32), out_dtype=BF16)},
    "aten::convolution": {
        "": lambda: aten.convolution(t(2, 3, 8, 8), t(4, 3, 3, 3), None, *CONV),
        "strided": lambda: aten.convolution(t(2, 3, 8, 8), t(4, 3, 3, 3), None, [2, 2], [1, 1],
                                            [1, 1], False, [0, 0], 1),
        "transposed": lambda: aten.convolution(t(2, 4, 6, 6), t(4, 3, 3, 3), None, [1, 1], [0, 0],
                                               [1, 1], True, [0, 0], 1),
    },
    "aten::_convolution": {"": lambda: aten._convolution(
        t(2, 3, 8, 8), t(4, 3, 3, 3), None, *CONV, False, False, True, True)},
    "aten::convolution_overrideable": {"": lambda: aten.convolution_overrideable(
        t(2, 3, 8, 8), t(4, 3, 3, 3), None, *CONV)},
    "aten::cudnn_convolution": {"": lambda: aten.cudnn_convolution(
        t(2, 3, 8, 8), t(4, 3, 3, 3), [1, 1], [2, 2], [1, 1], 1, False, False, True)},
    "aten::_slow_conv2d_forward": {"": lambda: aten._slow_conv2d_forward(
        t(2, 3, 8, 8), t(4, 3, 3, 3), [3, 3], None, [1, 1], [0, 0])},
    "aten::convolution_backward": {"": lambda: aten.convolution_backward(
        t(2, 4, 6, 6), t(2, 3, 8, 8), t(4, 3, 3, 3), None, *CONV, [True, True, False])},
    "aten::_scaled_dot_product_flash_attention": {
        "": lambda: aten._scaled_dot_product_flash_attention(t(*Q), t(*Q), t(*Q), 0.0, True)},
    "aten::_scaled_dot_product_flash_attention_for_cpu": {
        "": lambda: aten._scaled_dot_product_flash_attention_for_cpu(t(*Q), t(*Q), t(*Q), 0.0, True)},
    "aten::_scaled_dot_product_efficient_attention": {
        "": lambda: aten._scaled_dot_product_efficient_attention(t(*Q), t(*Q), t(*Q), None, True,
                                                                 0.0, True)},
    "aten::_scaled_dot_product_cudnn_attention": {  # GQA: 2 kv heads
        "": lambda: aten._scaled_dot_product_cudnn_attention(t(*Q), t(2, 2, 8, 16), t(2, 2, 8, 16),
                                                             None, True, 0.0, True)},
    "aten::_scaled_dot_product_fused_attention_overrideable": {
        "": lambda: aten._scaled_dot_product_fused_attention_overrideable(t(*Q), t(*Q), t(*Q), None,
                                                                          0.0, True)},
    "aten::_scaled_dot_product_attention_math": {
        "": lambda: aten._scaled_dot_product_attention_math(t(*Q), t(*Q), t(*Q), None, 0.0, True)},
    "aten::_scaled_dot_product_flash_attention_backward": {
        "": lambda: aten._scaled_dot_product_flash_attention_backward(
            t(*Q), t(*Q), t(*Q), t(*Q), t(*Q), t(*LSE), ints(0), ints(0), 8, 8, 0.0, True, ints(2),
            ints(()))},
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": {
        "": lambda: aten._scaled_dot_product_flash_attention_for_cpu_backward(
            t(*Q), t(*Q), t(*Q), t(*Q), t(*Q), t(*LSE), 0.0, True)},
    "aten::_scaled_dot_product_efficient_attention_backward": {
        "": lambda: aten._scaled_dot_product_efficient_attention_backward(
            t(*Q), t(*Q), t(*Q), t(*Q), t(0), t(*Q), t(*LSE), ints(2), ints(()), 0.0,
            [True, True, True, False], True)},
    "aten::_scaled_dot_product_cudnn_attention_backward": {
        "": lambda: aten._scaled_dot_product_cudnn_attention_backward(
            t(*Q), t(*Q), t(*Q), t(*Q), t(*Q), t(*LSE), ints(2), ints(()), t(0), ints(0), ints(0), 8, 8,
            0.0, True)},
    "aten::_scaled_dot_product_fused_attention_overrideable_backward": {
        "": lambda: aten._scaled_dot_product_fused_attention_overrideable_backward(
            t(*Q), t(*Q), t(*Q), t(*Q), t(0), [True, True, True, False], t(*Q), t(*LSE), ints(0),
            ints(0), 8, 8, 0.0, True, ints(2), ints(()))},
    "aten::_flash_attention_forward": {
        "": lambda: aten._flash_attention_forward(t(*QS), t(*QS), t(*QS), None, None, 8, 8, 0.0,
                                                  True, False),
        "packed": lambda: aten._flash_attention_forward(
            t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), lengths(0, 3, 10), lengths(0, 3, 10), 7, 7,
            0.0, True, False),
        "packed meta": lambda: aten._flash_attention_forward(
            t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), lengths(0, 3, 10, device=META),
            lengths(0, 3, 10, device=META), 7, 7, 0.0, True, False),
    },
    "aten::_flash_attention_backward": {
        "": lambda: aten._flash_attention_backward(
            t(*QS), t(*QS), t(*QS), t(*QS), t(*QS), t(*LSE), None, None, 8, 8, 0.0, True, ints(2),
            ints(0)),
        "packed": lambda: aten._flash_attention_backward(
            t(*PACKED), t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), t(*PACKED), t(4, 10),
            lengths(0, 3, 10), lengths(0, 3, 10), 7, 7, 0.0, True, ints(2), ints(0)),
    },
    "aten::_efficient_attention_forward": {
        "": lambda: aten._efficient_attention_forward(  # custom_mask_type 1: causal
            t(*QS), t(*QS), t(*QS), None, None, None, None, None, 0.0, 1, True),
        "packed": lambda: aten._efficient_attention_forward(  # q: [1, total, h, d], no mask
            t(1, *PACKED), t(1, *PACKED), t(1, *PACKED), None, lengths(0, 3, 10), lengths(0, 3, 10),
            7, 7, 0.0, 0, True),
    },
    "aten::_efficient_attention_backward": {
        "": lambda: aten._efficient_attention_backward(
            t(*QS), t(*QS), t(*QS), t(*QS), None, t(*QS), None, None, 8, 8, t(*LSE), 0.0, ints(()),
            ints(()), 1, False)},
    "torch_attn::_varlen_attn": {
        "": lambda: torch.ops.torch_attn._varlen_attn(
            t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), lengths(0, 3, 10), lengths(0, 3, 10), 7, 7,
            True),
        "meta": lambda: torch.ops.torch_attn._varlen_attn(
            t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), lengths(0, 3, 10, device=META),
            lengths(0, 3, 10, device=META), 7, 7, True),
    },
    "torch_attn::_varlen_attn_backward": {
        "": lambda: torch.ops.torch_attn._varlen_attn_backward(
            t(*PACKED), t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), t(*PACKED), t(4, 10),
            lengths(0, 3, 10), lengths(0, 3, 10), 7, 7, True, ints(2))},
}

FA = torch.ops.flash_attn
FA3 = torch.ops.flash_attn_3
HOP = torch.ops.higher_order
FLEX_Q = (1, 2, 8, 16)  # flex: [b, h, s, d]


def block_mask(*counts: int) -> tuple:
    """A BlockMask tuple over 8 x 8 tokens in 4 x 4 blocks, readable (CPU):
    row qb computes key blocks 0 .. counts[qb] - 1 (partial)."""
    num = torch.tensor([[list(counts)]], dtype=torch.int32)
    idx = torch.tensor([[[[0, 1]] * len(counts)]], dtype=torch.int32)
    return BlockMask.from_kv_blocks(num, idx, BLOCK_SIZE=4, seq_lengths=(8, 8)).as_tuple()


def flex(mask: tuple | None = None) -> Any:
    mask = mask or BlockMask.from_kv_blocks(  # flex's own no-mask mask: one block
        ints(1, 1, 1, dtype=torch.int32), ints(1, 1, 1, 1, dtype=torch.int32),
        BLOCK_SIZE=1 << 30, seq_lengths=(1, 1)).as_tuple()
    return HOP.flex_attention(t(*FLEX_Q), t(*FLEX_Q), t(*FLEX_Q), _identity, mask, 0.25, {})


def flex_backward() -> Any:
    q, lse = t(*FLEX_Q, grad=False), t(1, 2, 8, grad=False)
    return HOP.flex_attention_backward(q, q, q, q, lse, q, None, _identity, None,
                                       block_mask(1, 2), 0.25, {}, (), ())


CALLS.update({
    # flash-attn 2, q: [b, s, h, d]; causal, window_size (left, right)
    "flash_attn::_flash_attn_forward": {
        "": lambda: FA._flash_attn_forward(t(*QS), t(*QS), t(*QS), 0.0, 0.25, True, -1, -1, 0.0,
                                           None, False),
        "window": lambda: FA._flash_attn_forward(t(*QS), t(*QS), t(*QS), 0.0, 0.25, True, 2, -1,
                                                 0.0, None, False),
    },
    "flash_attn::_flash_attn_varlen_forward": {
        "": lambda: FA._flash_attn_varlen_forward(
            t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), lengths(0, 3, 10), lengths(0, 3, 10), 7, 7,
            0.0, 0.25, True, 2, 0),
    },
    "flash_attn::_flash_attn_backward": {
        "": lambda: FA._flash_attn_backward(t(*QS), t(*QS), t(*QS), t(*QS), t(*QS), t(*LSE), None,
                                            None, None, 0.0, 0.25, True, -1, -1, 0.0, None, False),
    },
    "flash_attn::_flash_attn_varlen_backward": {
        "": lambda: FA._flash_attn_varlen_backward(
            t(*PACKED), t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), t(*PACKED), t(4, 10), None, None,
            None, lengths(0, 3, 10), lengths(0, 3, 10), 7, 7, 0.0, 0.25, False, 2, 2, 0.0, None,
            False),
    },
    # FlashAttention-3: the same, packed with cu_seqlens, and attention_chunk
    "flash_attn_3::_flash_attn_forward": {
        "": lambda: FA3._flash_attn_forward(t(*QS), t(*QS), t(*QS), causal=True),
        "packed chunk": lambda: FA3._flash_attn_forward(
            t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), cu_seqlens_q=lengths(0, 3, 10),
            cu_seqlens_k=lengths(0, 3, 10), max_seqlen_q=7, max_seqlen_k=7, causal=True,
            attention_chunk=4),
    },
    "flash_attn_3::fwd": {
        "": lambda: FA3.fwd(t(*QS), t(*QS), t(*QS), is_causal=True, window_size_left=3),
    },
    "flash_attn_3::_flash_attn_backward": {
        "": lambda: FA3._flash_attn_backward(t(*QS), t(*QS), t(*QS), t(*QS), t(*QS), t(*LSE),
                                             is_causal=True),
    },
    "flash_attn_3::bwd": {
        "": lambda: FA3.bwd(t(*PACKED), t(*PACKED), t(*PACKED_KV), t(*PACKED_KV), t(*PACKED),
                            t(4, 10), cu_seqlens_q=lengths(0, 3, 10),
                            cu_seqlens_k=lengths(0, 3, 10), max_seqlen_q=7, max_seqlen_k=7),
    },
    # flex_attention, the higher-order op: no mask (one block), a readable
    # block mask (row 0: block 0, row 1: blocks 0 and 1), a meta one
    "higher_order::flex_attention": {
        "": lambda: flex(),
        "blocks": lambda: flex(block_mask(1, 2)),
        "blocks meta": lambda: flex(BlockMask.from_kv_blocks(
            ints(1, 1, 2, dtype=torch.int32), ints(1, 1, 2, 2, dtype=torch.int32), BLOCK_SIZE=4,
            seq_lengths=(8, 8)).as_tuple()),
    },
    "higher_order::flex_attention_backward": {"": flex_backward},
})

SCENARIOS = {
    "grad/full": (torch.enable_grad, "full"),
    "grad/half": (torch.enable_grad, "half"),
    "inference/half": (torch.inference_mode, "half"),
}

_LIBRARY: Any = None


def add_meta_kernels() -> None:
    """Meta kernels for the convolutions torch has none for (an empty output
    of the convolution's shape; the counters never read it)."""
    global _LIBRARY
    if _LIBRARY is not None:
        return
    _LIBRARY = torch.library.Library("aten", "IMPL")

    def out(x: torch.Tensor, w: torch.Tensor, stride: list, padding: list) -> torch.Tensor:
        n = x.dim() - 2
        stride = list(stride) * n if len(stride) == 1 else list(stride)
        padding = list(padding) * n if len(padding) == 1 else list(padding)
        spatial = [(x.shape[i + 2] + 2 * padding[i] - w.shape[i + 2]) // stride[i] + 1 for i in range(n)]
        return x.new_empty((x.shape[0], w.shape[0], *spatial))

    _LIBRARY.impl("convolution_overrideable",
                  lambda x, w, bias, stride, padding, *rest: out(x, w, stride, padding), "Meta")
    _LIBRARY.impl("cudnn_convolution", lambda x, w, padding, stride, *rest: out(x, w, stride, padding),
                  "Meta")
    _LIBRARY.impl("_slow_conv2d_forward",
                  lambda x, w, kernel, bias, stride, padding: out(x, w, stride, padding), "Meta")


def count_all() -> dict[str, Any]:
    from mfu_tracker.counter import FlopCounter, counter_backend

    add_meta_kernels()
    out: dict[str, Any] = {"backend": counter_backend()}
    for name, cases in CALLS.items():
        for case, call in cases.items():
            for scenario, (mode, causal) in SCENARIOS.items():
                with FlopCounter(causal_attention=causal, modules=False) as fc:
                    with mode():
                        call()
                out[f"{name} {case} {scenario}".replace("  ", " ")] = [
                    fc.executed_flops, fc.model_flops, fc.forward_flops, fc.backward_flops,
                    fc.approximate, fc.errors, sorted(fc.by_op)]
    return out


if __name__ == "__main__":
    print(json.dumps(count_all()))
