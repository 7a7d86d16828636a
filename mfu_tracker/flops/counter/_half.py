"""What ``causal_attention="half"`` could not halve, from a count's totals.

The core reads a causal flag, a window, a chunk and a block mask
(csrc/core/ops/ops.h ``mask_read``); an attention kernel given a mask tensor and
none of those counts whole (``mask_tensor``: its values are data the count
does not read), and attention written as plain matmuls is not an attention
call at all. :func:`half_note` says either, so a result labelled "half" is
never a full count in silence (docs/flops.md, "What half cannot halve").
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._totals import format_flops

__all__ = ["half_note"]

# ops that eager attention's matmuls run as (matmul of 3-D / 4-D operands)
_BATCHED = ("aten::bmm", "aten::baddbmm")


def half_note(totals: Mapping[str, Any], ops: Callable[[], Mapping[str, Any]]) -> str | None:
    """The note for a count under "half" with these ``totals`` (None: it
    halved what it saw); ``ops()`` gives the per-op table, read only when
    no attention call had a mask the count reads."""
    calls = totals["mask_tensor_calls"]
    if calls:
        return (f'causal_attention="half" could not halve {calls} attention call(s) given a '
                "mask tensor and no causal flag (the count does not read a mask's values: "
                "causal, padding and a window look alike): counted whole, "
                f"{format_flops(totals['mask_tensor_flops'])} forward "
                "(FlopCounter.mask_tensor_attention_flops); is_causal=True without a mask "
                "(no padding) or flash-attn's causal kernels are halved")
    if totals["mask_read_calls"]:
        return None
    batched = [name for name in _BATCHED if name in ops()]
    if not batched:
        return None
    return ('causal_attention="half" halved nothing: no attention call had a causal flag, a '
            f"window or a block mask, while {' and '.join(batched)} ran: attention written as "
            "plain matmuls (eager attention: matmul, mask, softmax, matmul) cannot be told "
            "causal and is counted whole; an attention kernel (attn_implementation='sdpa' "
            "or 'flash_attention_2') is halved")
