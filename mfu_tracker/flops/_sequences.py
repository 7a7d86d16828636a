"""Sequence lengths of a batch for the analytic count: from ``seq_len`` x
``batch_size`` (uniform), ``seq_lens``, ``cu_seqlens`` (varlen offsets),
``position_ids`` (packed rows: a sequence starts where the position is 0) or
a 2-D ``attention_mask`` (padded rows: each row's real tokens).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# ---------------------------------------------------------------------------
# Sequences
# ---------------------------------------------------------------------------

def _to_list(value: Any, name: str) -> Any:
    """A tensor / array / nested sequence as nested Python lists."""
    if hasattr(value, "tolist") and callable(value.tolist):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", None) == "meta":
            raise ValueError(f"{name} is on the meta device: its values are unknown")
        return value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a tensor or a sequence, not "
                        f"{type(value).__name__}")
    return [(_to_list(v, name) if not isinstance(v, (int, float, bool)) else v)
            for v in value]


def _int_items(row: Iterable[Any], name: str) -> list[int]:
    out = []
    for item in row:
        if isinstance(item, bool):
            item = int(item)
        elif isinstance(item, float) and item.is_integer():
            item = int(item)
        if not isinstance(item, int):
            raise TypeError(f"{name} must hold ints, got {item!r}")
        out.append(item)
    return out


def _rows(value: Any, name: str) -> list[list[int]]:
    """A 1-D or 2-D int sequence as a list of rows."""
    data = _to_list(value, name)
    if not isinstance(data, list):
        raise TypeError(f"{name} must be 1-D or 2-D, got a scalar")
    if data and isinstance(data[0], list):
        if any(not isinstance(r, list) or (r and isinstance(r[0], list))
               for r in data):
            raise ValueError(f"{name} must be 1-D or 2-D")
        return [_int_items(r, name) for r in data]
    return [_int_items(data, name)]


def _lengths_from_cu_seqlens(cu_seqlens: Any) -> list[int]:
    (offsets,) = _rows(cu_seqlens, "cu_seqlens") if cu_seqlens is not None else ([],)
    if len(offsets) < 2:
        raise ValueError("cu_seqlens needs at least 2 offsets (one sequence)")
    lengths = []
    for a, b in zip(offsets, offsets[1:]):
        if a < 0 or b < a:
            raise ValueError(
                f"cu_seqlens must be non-negative and non-decreasing, got {offsets}"
            )
        lengths.append(b - a)
    return lengths


def _lengths_from_position_ids(position_ids: Any) -> list[int]:
    """Packed rows: a new sequence starts wherever the position is 0."""
    lengths = []
    for row in _rows(position_ids, "position_ids"):
        start = 0
        for i, pos in enumerate(row):
            if pos < 0:
                raise ValueError(f"position_ids must be >= 0, got {pos}")
            if i > 0 and pos == 0:
                lengths.append(i - start)
                start = i
        if row:
            lengths.append(len(row) - start)
    return lengths


def _lengths_from_attention_mask(attention_mask: Any) -> list[int]:
    """Padded rows: each row is one sequence of its real (mask 1) tokens."""
    lengths = []
    for row in _rows(attention_mask, "attention_mask"):
        if any(v not in (0, 1) for v in row):
            raise ValueError("attention_mask must hold only 0 and 1 (a 2-D padding "
                             "mask; 4-D masks are not supported)")
        lengths.append(sum(row))
    return lengths


def sequence_lengths(
    seq_len: int | None,
    batch_size: int,
    seq_lens: Any,
    cu_seqlens: Any,
    position_ids: Any,
    attention_mask: Any,
) -> tuple[list[int] | None, str]:
    """(lengths or None for uniform, source name)."""
    given = [name for name, value in (
        ("seq_len", seq_len), ("seq_lens", seq_lens), ("cu_seqlens", cu_seqlens),
        ("position_ids", position_ids), ("attention_mask", attention_mask),
    ) if value is not None]
    if len(given) != 1:
        raise TypeError(
            "give exactly one of seq_len (with batch_size), seq_lens, cu_seqlens, "
            f"position_ids or attention_mask; got {given or 'none'}"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size must be an int, not {type(batch_size).__name__}")
    if given[0] != "seq_len" and batch_size != 1:
        raise TypeError(f"batch_size applies to seq_len only, not to {given[0]}")
    source = given[0]
    if source == "seq_len":
        if isinstance(seq_len, bool) or not isinstance(seq_len, int):
            raise TypeError(f"seq_len must be an int, not {type(seq_len).__name__}")
        if seq_len < 1:
            raise ValueError(f"seq_len must be >= 1, got {seq_len}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        return None, source
    if source == "seq_lens":
        lengths = [length for row in _rows(seq_lens, "seq_lens") for length in row]
        if any(length < 0 for length in lengths):
            raise ValueError(f"seq_lens must be >= 0, got {lengths}")
    elif source == "cu_seqlens":
        lengths = _lengths_from_cu_seqlens(cu_seqlens)
    elif source == "position_ids":
        lengths = _lengths_from_position_ids(position_ids)
    else:
        lengths = _lengths_from_attention_mask(attention_mask)
    if sum(lengths) <= 0:
        raise ValueError(f"{source}: the batch has no tokens")
    return lengths, source
