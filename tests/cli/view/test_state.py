"""mfu_tracker/cli/view/_state.py: the page's document, followed as the log grows."""
from __future__ import annotations

import json

import pytest

from mfu_tracker.cli.view import _state
from mfu_tracker.cli.view._state import PageState, page_keys
from mfu_tracker.job._check import Layout

from cli.report._logs import line, run_record
from cli.view._pages import document, write


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="log_path must be a str or os.PathLike, not int"):
        PageState(3)
    with pytest.raises(ValueError, match="give one budget, not both"):
        PageState("m.jsonl", budget_tokens=10.0, budget_steps=10)
    with pytest.raises(ValueError, match="budget_steps"):
        PageState("m.jsonl", budget_steps=0)
    with pytest.raises(ValueError, match="budget_tokens"):
        PageState("m.jsonl", budget_tokens=0.5)


def test_page_keys_add_tokens_per_sec_beside_mfu():
    layout = Layout({"p/mfu": 0.5, "p/tokens_per_sec": 9.0, "p/tflops": 1.0}, {}, None)
    assert page_keys(layout) == ("p/mfu", "p/tokens_per_sec")


def test_waiting_for_records_then_for_metrics(tmp_path):
    empty = document(tmp_path, [])
    assert empty["waiting"] == "the log holds no record yet" and empty["log"]["runs"] == 0
    started = document(tmp_path, [run_record()])
    assert started["waiting"].startswith("no metrics line to show yet")
    assert started["status"]["state"].startswith("running") and started["run"]["number"] == 1


def test_the_document_of_a_log_and_its_growth(tmp_path, monkeypatch):
    monkeypatch.setattr(_state, "MIN_READ_INTERVAL_S", 0.0)     # re-read on every snapshot
    path = write(tmp_path / "m.jsonl", [run_record(), line(10, mfu=0.25, step_time_s=0.5)])
    state = PageState(str(path), budget_steps=40)
    first = state.snapshot()
    assert first["series"]["mfu"] == [[10, 0.25]] and first["budget"]["steps"] == 40
    assert first["log"]["lines"] == 1 and first["prefix"] == "throughput"
    json.dumps(first, allow_nan=False, default=str)            # what /api/state serves
    with open(path, "a") as f:                                 # the run goes on
        f.write(json.dumps(line(20, mfu=0.5, step_time_s=0.25)) + "\n")
        f.write(json.dumps(run_record(200.0)) + "\n")          # a new run, no metrics yet
    second = state.snapshot()
    assert second["series"]["mfu"] == [[10, 0.25], [20, 0.5]]
    assert second["note"] == ("run 2 has started and logged no metrics yet; showing run 1")
    done = {f["id"]: f["value"] for f in second["progress"]["figures"]}
    assert done["fraction_done"] == 0.5                        # step 20 of 40
