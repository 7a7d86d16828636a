"""Window totals given at logging time (mfu_tracker/timing/_totals.py)."""
from __future__ import annotations

import math

import pytest

from mfu_tracker.timing._totals import NO_TOTALS, WindowTotals


def test_nothing_given_is_the_shared_empty_totals():
    assert WindowTotals.given(model_flops=None, num_tokens=None) is NO_TOTALS
    assert not NO_TOTALS and NO_TOTALS.summary_kwargs() == {}


def test_given_totals_reach_the_engine_as_floats():
    totals = WindowTotals.given(model_flops=10, num_tokens=5.0)
    assert totals and totals.summary_kwargs() == {"model_flops": 10.0, "num_tokens": 5.0}


@pytest.mark.parametrize("bad", [-1.0, "many", math.inf])
def test_a_bad_total_is_one_warning_and_nan_never_a_raise(bad):
    with pytest.warns(RuntimeWarning, match="num_tokens") as caught:
        totals = WindowTotals.given(model_flops=1.0, num_tokens=bad)
    assert len(caught) == 1
    assert totals.model_flops == 1.0 and math.isnan(totals.num_tokens)
