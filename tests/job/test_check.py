"""mfu_tracker/job/_check.py: a metrics line's values and its ledger interval
checked on the way in -- every bad value named ``file:line: key=value: why``
and left out, a set of keys compiled once, a block checked as columns."""
from __future__ import annotations

import pytest

from mfu_tracker.job import LogError
from mfu_tracker.job._check import Layouts, check_ledger, clean_metrics, getter, \
    ledger_columns, valid_block


def ledger(**fields):
    base = {"from_step": 0, "to_step": 10, "step_s": 5.0, "own_s": 0.1,
            "phase_s": {"data": 1.0}, "dropped": 0, "compile_calls": 0}
    base.update(fields)
    return base


def test_bad_values_are_named_and_removed():
    record = {"step": 3, "time": 1.0, "throughput/mfu": -0.1, "throughput/step_time_s": 0.5,
              "throughput/tokens_per_sec": float("nan"), "custom/anything": -7}
    invalid = []
    layout = clean_metrics(record, Layouts(), "m.jsonl", 12, invalid)
    assert invalid == ["m.jsonl:12: throughput/mfu=-0.1: negative ratio; not drawn",
                       "m.jsonl:12: throughput/tokens_per_sec=NaN: not a finite number; not drawn"]
    # what is left: the good metric, the plain keys, and a key outside the table (not judged)
    assert record == {"step": 3, "time": 1.0, "throughput/step_time_s": 0.5, "custom/anything": -7}
    assert layout.keys == tuple(record)


def test_a_bool_is_not_a_number():
    invalid = []
    clean_metrics({"throughput/mfu": True}, Layouts(), "f", 1, invalid)
    assert invalid == ["f:1: throughput/mfu=true: not a finite number; not drawn"]


def test_one_layout_per_set_of_keys():
    layouts = Layouts()
    a = layouts.of({"step": 1, "throughput/mfu": 0.4})
    b = layouts.of({"step": 2, "throughput/mfu": 0.5})
    c = layouts.of({"throughput/mfu": 0.5, "step": 2})  # another order: another layout
    assert a is b and c is not a
    assert a.judged == frozenset({"throughput/mfu"})


def test_valid_block_agrees_with_the_line_check():
    layout = Layouts().of({"throughput/mfu": 0.1, "throughput/step_time_s": 0.2})
    good = [{"throughput/mfu": 0.1, "throughput/step_time_s": 0.2}] * 3
    assert valid_block(good, layout)
    assert not valid_block(good + [{"throughput/mfu": float("inf"),
                                    "throughput/step_time_s": 0.2}], layout)
    assert not valid_block(good + [{"throughput/mfu": -1.0, "throughput/step_time_s": 0.2}],
                           layout)


@pytest.mark.parametrize("fields, words", [
    ({"from_step": 1.5}, "from_step' is not an integer"),
    ({"to_step": -1}, "ends (to_step -1) before it starts (from_step 0)"),
    ({"step_s": -1.0}, "step_s' is not a finite number >= 0"),
    ({"own_s": float("inf")}, "own_s' is not a finite number >= 0"),
    ({"phase_s": {"data": float("nan")}}, "phase_s' is not an object of finite numbers"),
    ({"dropped": -2}, "dropped' is not a number >= 0"),
    ({"untimed_steps": 11}, "untimed_steps' is not an integer from 0"),
])
def test_check_ledger_names_the_field(fields, words):
    with pytest.raises(LogError, match="^m.jsonl:7: 'ledger.*" + words.replace("(", r"\(")
                       .replace(")", r"\)")):
        check_ledger(ledger(**fields), "m.jsonl:7")


def test_check_ledger_passes_a_good_interval_through():
    good = ledger()
    assert check_ledger(good, "x") is good
    with pytest.raises(LogError, match="not a JSON object"):
        check_ledger([1, 2], "x")


def test_ledger_columns_transposes_a_uniform_block_and_refuses_doubt():
    columns = ledger_columns([ledger(), ledger(from_step=10, to_step=20, step_s=6.0)])
    assert columns["from_step"] == (0, 10) and columns["step_s"] == (5.0, 6.0)
    assert ledger_columns([ledger(), ledger(step_s=6)]) is None        # an int second: per line
    assert ledger_columns([ledger(), ledger(to_step=-5)]) is None      # ends before it starts
    assert ledger_columns([ledger(), {"from_step": 0}]) is None        # other fields


def test_getter_returns_a_tuple_for_one_key_too():
    assert getter(["a"])({"a": 1, "b": 2}) == (1,)
    assert getter(["b", "a"])({"a": 1, "b": 2}) == (2, 1)
    assert getter([]) is None
