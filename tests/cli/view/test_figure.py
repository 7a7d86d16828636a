"""mfu_tracker/cli/view/_figure.py: a number with how it was obtained, and
the newest line holding each key."""
from __future__ import annotations

from mfu_tracker.cli.view._figure import DERIVED, MEASURED, PEAK_HOW, Figure, Newest, key_meaning

RECORDS = [  # as the reader keeps them: each with its "_line"
    {"_line": 4, "step": 20, "p/mfu": 0.5, "p/step_time_s": 0.25},
    {"_line": 2, "step": 10, "p/mfu": 0.25, "p/step_time_s": 0.5, "p/tokens_per_sec": 800.0},
    {"_line": 6, "step": 30, "p/mfu": "n/a", "p/step_time_s": 0.125},
]


def test_newest_is_by_line_and_skips_non_numbers():
    newest = Newest(RECORDS, "p")
    assert newest.line("mfu")["_line"] == 4          # line 6's MFU is not a number
    assert newest.value("step_time_s") == 0.125
    assert newest.value("tokens_per_sec") == 800.0   # only line 2 has it
    assert newest.value("hfu") is None
    assert newest.same_line("mfu", "step_time_s") == 0.25   # MFU's line, not the newest
    assert newest.same_line("hfu", "step_time_s") is None


def test_figure_names_its_source_or_why_it_is_absent():
    newest = Newest(RECORDS, "p")
    mfu = newest.figure("mfu", "MFU", DERIVED)
    assert (mfu.value, mfu.unit, mfu.source) == (0.5, "ratio", "line 4 (step 20): p/mfu")
    hfu = newest.figure("hfu", "HFU", DERIVED)
    assert hfu.value is None and hfu.absent == "no p/hfu in the log"
    given = newest.figure("hfu", "HFU", DERIVED, absent="needs the executed FLOPs")
    assert given.absent == "needs the executed FLOPs"
    assert newest.input("tokens_per_sec", "mfu", "t", MEASURED).absent == \
        "no p/tokens_per_sec in the line"        # not in MFU's line 4
    assert newest.input("step_time_s", "mfu", "s", MEASURED).source == \
        "line 4 (step 20): p/step_time_s"


def test_to_json_leaves_out_what_is_empty_and_nests_inputs():
    inner = Figure("a", "A", 2.0, "s", MEASURED)
    outer = Figure("b", "B", 4.0, "s", DERIVED, formula="2 x a", inputs=[inner], check=4.0)
    assert inner.to_json() == {"id": "a", "label": "A", "value": 2.0, "unit": "s",
                               "how": "measured"}
    assert outer.to_json() == {"id": "b", "label": "B", "value": 4.0, "unit": "s",
                               "how": "derived", "formula": "2 x a", "check": 4.0,
                               "inputs": [inner.to_json()]}


def test_peak_how_and_key_meaning():
    assert PEAK_HOW == {"datasheet": "looked up", "measured": "measured", "user": "declared"}
    assert key_meaning("mfu") and key_meaning("no_such_key") == ""
