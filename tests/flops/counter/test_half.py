"""What causal_attention="half" could not halve
(mfu_tracker/flops/counter/_half.py), from a count's totals."""
from __future__ import annotations

import pytest

from mfu_tracker.flops.counter._half import half_note


def _totals(**over):
    totals = dict(mask_tensor_calls=0, mask_tensor_flops=0, mask_read_calls=0)
    totals.update(over)
    return totals


def _no_table():
    raise AssertionError("the op table is read only when no call had a mask it reads")


def test_mask_tensor_calls_are_named_with_their_flops():
    note = half_note(_totals(mask_tensor_calls=3, mask_tensor_flops=2.5e9), _no_table)
    assert note.startswith('causal_attention="half" could not halve 3 attention call(s)')
    assert "2.500 GFLOP forward" in note  # 2.5e9 as format_flops writes it


def test_a_halved_count_has_no_note():
    assert half_note(_totals(mask_read_calls=2), _no_table) is None
    assert half_note(_totals(), lambda: {"aten::mm": (4, 100)}) is None


def test_attention_written_as_matmuls_is_said_to_be_counted_whole():
    note = half_note(_totals(), lambda: {"aten::bmm": (2, 10), "aten::baddbmm": (1, 5)})
    assert 'halved nothing' in note and "aten::bmm and aten::baddbmm ran" in note


def test_the_counter_warns_with_this_note_on_eager_attention():
    torch = pytest.importorskip("torch")
    from mfu_tracker.flops.counter import FlopCounter

    q = torch.randn(1, 2, 8, 4)
    with pytest.warns(RuntimeWarning) as caught:
        with FlopCounter(causal_attention="half"):
            torch.softmax(q @ q.transpose(-1, -2), -1) @ q  # eager attention: two bmm
    expected = half_note(_totals(), lambda: {"aten::bmm": (2, 0)})
    assert [str(w.message) for w in caught] == [f"mfu_tracker.FlopCounter: {expected}"]
