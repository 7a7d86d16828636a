"""Sequence lengths of a batch for the analytic count: from ``seq_len`` x
``batch_size`` (uniform), ``seq_lens``, ``cu_seqlens`` (varlen offsets),
``position_ids`` (packed rows: a sequence starts where the position is 0) or
a 2-D ``attention_mask`` (padded rows: each row's real tokens).
"""
from __future__ import annotations

from typing import Any

from .._validate import (
    check_exactly_one,
    check_int,
    check_int_list,
    check_int_rows,
    check_non_decreasing,
)

_rows = check_int_rows


def _lengths_from_cu_seqlens(cu_seqlens: Any) -> list[int]:
    """Varlen offsets [0, s0, s0+s1, ...] (at least one sequence)."""
    rows = _rows(cu_seqlens, "cu_seqlens")
    check_int(len(rows), "cu_seqlens (rows)", 1, 1)
    offsets = check_non_decreasing(check_int_list(rows[0], "cu_seqlens", 0), "cu_seqlens")
    check_int(len(offsets), "cu_seqlens (offsets, one sequence at least)", 2)
    return [b - a for a, b in zip(offsets, offsets[1:])]


def _lengths_from_position_ids(position_ids: Any) -> list[int]:
    """Packed rows: a new sequence starts wherever the position is 0."""
    lengths = []
    for row in _rows(position_ids, "position_ids"):
        start = 0
        for i, pos in enumerate(check_int_list(row, "position_ids", 0)):
            if i > 0 and pos == 0:
                lengths.append(i - start)
                start = i
        if row:
            lengths.append(len(row) - start)
    return lengths


def _lengths_from_attention_mask(attention_mask: Any) -> list[int]:
    """Padded rows: each row is one sequence of its real (mask 1) tokens."""
    return [sum(check_int_list(row, "attention_mask (a 2-D 0/1 padding mask)", 0, 1))
            for row in _rows(attention_mask, "attention_mask")]


_SOURCES = ("seq_len", "seq_lens", "cu_seqlens", "position_ids", "attention_mask")


def sequence_lengths(
    seq_len: int | None,
    batch_size: int,
    seq_lens: Any,
    cu_seqlens: Any,
    position_ids: Any,
    attention_mask: Any,
) -> tuple[list[int] | None, str]:
    """(lengths or None for uniform, source name)."""
    values = (seq_len, seq_lens, cu_seqlens, position_ids, attention_mask)
    source = check_exactly_one(tuple(zip(_SOURCES, values)),
                               " (seq_len with batch_size)")
    if source != "seq_len":  # the lengths give the batch: only the default 1 fits
        check_int(batch_size, f"batch_size (it applies to seq_len only, not to {source})", 1, 1)
    if source == "seq_len":
        check_int(seq_len, "seq_len", 1)
        check_int(batch_size, "batch_size", 1)
        return None, source
    if source == "seq_lens":
        lengths = [n for row in _rows(seq_lens, "seq_lens")
                   for n in check_int_list(row, "seq_lens", 0)]
    elif source == "cu_seqlens":
        lengths = _lengths_from_cu_seqlens(cu_seqlens)
    elif source == "position_ids":
        lengths = _lengths_from_position_ids(position_ids)
    else:
        lengths = _lengths_from_attention_mask(attention_mask)
    check_int(sum(lengths), f"{source}: the batch's tokens", 1)
    return lengths, source


def grid_rows(value: Any, name: str) -> list[list[int]]:
    """A VLM batch's ``image_grid_thw`` / ``video_grid_thw``: rows [t, h, w]
    (patches), each >= 1; a tensor or nested sequence."""
    rows = [] if _rows(value, name) == [[]] else _rows(value, name)
    for row in rows:
        check_int(len(row), f"{name} (a row [t, h, w])", 3, 3)
        check_int_list(row, f"{name} (t, h, w)", 1)
    return rows
