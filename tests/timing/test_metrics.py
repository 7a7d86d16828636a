"""mfu_tracker/timing/_metrics.py: the one table of logged keys and its
formatter (figures -> keys, scaled, unavailable left out)."""
from __future__ import annotations

import math

from mfu_tracker.timing import _metrics
from mfu_tracker.timing._metrics import KEYS, ROLE_KEYS, format_metrics, metric_key


def test_every_key_is_named_once_with_a_unit_and_a_meaning():
    names = [key.name for key in KEYS]
    assert len(names) == len(set(names))
    assert all(key.unit and key.meaning and isinstance(key.scale, float) for key in KEYS)
    assert {"mfu", "hfu", "mbu", "tokens_per_sec", "step_time_s"} <= set(names)


def test_metric_key_joins_the_prefix():
    assert metric_key("throughput", "mfu") == "throughput/mfu"
    assert metric_key("", "mfu") == "mfu"


def test_format_scales_and_leaves_the_unavailable_out():
    key = next(k for k in KEYS if k.scale != 1.0)   # a key logged in another unit
    out = format_metrics({"mfu": 0.25, "hfu": None, "mbu": math.nan, key.field: 2.0}, "t")
    assert out["t/mfu"] == 0.25
    assert "t/hfu" not in out and "t/mbu" not in out          # None and NaN: left out
    assert out[f"t/{key.name}"] == 2.0 * key.scale


def test_role_keys_are_formed_under_their_role():
    field = ROLE_KEYS[0]
    out = format_metrics({"roles": {"learner": {field.field: 0.5}}}, "p")
    assert out == {f"p/role/learner/{field.name}": 0.5 * field.scale}


def test_a_prefix_plan_is_built_once():
    first = _metrics._plan("plan-probe")
    assert _metrics._plan("plan-probe") is first
