"""Sequence lengths of a batch (mfu_tracker/flops/_sequences.py), from each
of its five sources, and the errors that name the source."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker.flops._sequences import grid_rows, sequence_lengths  # noqa: E402


def _lengths(**given):
    args = dict(seq_len=None, batch_size=1, seq_lens=None, cu_seqlens=None, position_ids=None,
                attention_mask=None)
    args.update(given)
    return sequence_lengths(*args.values())


def test_uniform_batches_give_no_lengths():
    assert _lengths(seq_len=128, batch_size=4) == (None, "seq_len")


def test_each_source_gives_each_sequences_tokens():
    assert _lengths(seq_lens=[3, 0, 5]) == ([3, 0, 5], "seq_lens")
    # varlen offsets 0, 3, 7, 12: lengths 3, 4, 5
    assert _lengths(cu_seqlens=torch.tensor([0, 3, 7, 12])) == ([3, 4, 5], "cu_seqlens")
    # packed rows: a sequence starts where the position is 0 -> 3, 2 | 4
    ids = torch.tensor([[0, 1, 2, 0, 1], [0, 1, 2, 3, 0]])
    assert _lengths(position_ids=ids[:1]) == ([3, 2], "position_ids")
    assert _lengths(position_ids=ids) == ([3, 2, 4, 1], "position_ids")
    # padded rows: each row's ones
    mask = [[1, 1, 0, 0], [1, 1, 1, 0]]
    assert _lengths(attention_mask=mask) == ([2, 3], "attention_mask")


def test_bad_sources_are_named():
    with pytest.raises((TypeError, ValueError), match="seq_len"):
        _lengths(seq_len=8, seq_lens=[8])
    with pytest.raises(ValueError, match="batch_size"):
        _lengths(seq_lens=[8], batch_size=2)
    with pytest.raises(ValueError, match="cu_seqlens"):
        _lengths(cu_seqlens=[0, 5, 3])  # decreasing offsets
    with pytest.raises(ValueError, match="attention_mask"):
        _lengths(attention_mask=[[1, 2]])  # not a 0/1 mask
    with pytest.raises(ValueError, match="seq_lens: the batch's tokens"):
        _lengths(seq_lens=[0, 0])


def test_grid_rows_are_t_h_w_rows_of_positive_ints():
    assert grid_rows(torch.tensor([[1, 4, 6], [2, 2, 2]]), "image_grid_thw") == \
        [[1, 4, 6], [2, 2, 2]]
    with pytest.raises(ValueError, match=r"image_grid_thw \(a row \[t, h, w\]\)"):
        grid_rows([[1, 4]], "image_grid_thw")
    with pytest.raises(ValueError, match="video_grid_thw"):
        grid_rows([[1, 0, 4]], "video_grid_thw")
