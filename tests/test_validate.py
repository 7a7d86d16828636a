"""The validation vocabulary (mfu_tracker/_validate.py): each check returns
the value it accepts (normalized) and raises the documented error, naming the
argument and the value, on what it refuses."""
from __future__ import annotations

import math

import pytest

from mfu_tracker import _validate as v


@pytest.mark.parametrize("call, error, message", [
    (lambda: v.check_int(0, "n", 1), ValueError, r"^n must be >= 1, got 0$"),
    (lambda: v.check_int(True, "n", 0), TypeError, r"^n must be an int, not bool$"),
    (lambda: v.check_int(2.0, "n", 0), TypeError, r"n must be an int, not float"),
    (lambda: v.check_positive_number(0, "x"), ValueError, r"x must be a finite number > 0, got 0"),
    (lambda: v.check_positive_number(math.inf, "x"), ValueError, r"x must be a finite number > 0"),
    (lambda: v.check_choice("c", "mode", ("a", "b")), ValueError, r"mode must be one of 'a', 'b', got 'c'"),
    (lambda: v.check_non_decreasing([1, 3, 2], "steps"), ValueError, r"steps must be non-decreasing"),
    (lambda: v.check_clock("gpu"), ValueError, r"clock must be one of 'auto', 'cuda', 'hip', 'cpu'"),
    (lambda: v.check_peak_tflops(-1), ValueError, r"peak_tflops must be a finite number > 0 \(TFLOP/s\)"),
    (lambda: v.check_exactly_one([("a", 1), ("b", 2)], ""), TypeError, r"give exactly one of a, b"),
])
def test_each_refusal_names_the_argument_and_the_value(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_accepted_values_come_back_normalized():
    assert v.check_int(3, "n", 1) == 3
    assert v.check_positive_number(2, "x") == 2.0 and isinstance(v.check_positive_number(2, "x"), float)
    assert v.check_choice("A", "mode", ("a", "b"), ignore_case=True) == "a"
    assert v.check_int_list([1, 2], "l") == [1, 2]
    assert v.check_clock("cpu") == "cpu"
    v.check_non_decreasing([1, 1, 2], "steps")  # equal neighbours are non-decreasing


def test_the_listed_vocabularies():
    assert v.CLOCKS == ("auto", "cuda", "hip", "cpu")
    assert v.CAUSAL_ATTENTION == ("full", "half")
