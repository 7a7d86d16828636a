"""``mfu-tracker advise``: the advice of a run of a log, ranked, as text and
JSON (the rules themselves: tests/job/)."""
from __future__ import annotations

import json

from mfu_tracker.cli import main
from mfu_tracker.cli._advise import advice_data, advice_text, lines_for_report
from mfu_tracker.job import read_log


def _log(path, data_share):
    run = {"record": "run", "time": 1.0, "run_id": "a", "ranks": 1, "devices": 1,
           "process_start": 0.5, "start_step": 0}
    line = {"step": 10, "time": 2.0, "throughput/mfu": 0.4, "throughput/step_time_s": 0.1,
            "throughput/mfu_lost/data": data_share,
            "throughput/mfu_lost/other": 0.6 - data_share}
    path.write_text(json.dumps(run) + "\n" + json.dumps(line) + "\n")
    return str(path)


def test_data_loading_past_its_threshold_is_advised(tmp_path):
    log = read_log(_log(tmp_path / "m.jsonl", 0.23))
    data = advice_data(log)
    assert data["run"] == 1
    (item,) = [a for a in data["advice"] if a["rule"] == "data_loading"]
    assert item["bound"] == 0.23                      # the step's share lost to data
    text = advice_text(log).splitlines()
    assert text[0].endswith("m.jsonl, run 1):")
    assert any(line.startswith("  1. up to 23.0% of the step: more DataLoader workers")
               for line in text)
    needed = {n["rule"] for n in data["needs"]}
    assert {"compile", "selective_checkpointing"} <= needed   # no breakdown, no executed FLOPs
    assert "  - compile: a kernel breakdown: Tracker(profile_steps=N)" in "\n".join(text)


def test_below_the_threshold_nothing_is_advised_and_report_gets_one_line(tmp_path):
    log = read_log(_log(tmp_path / "m.jsonl", 0.01))   # 1% < the 5% threshold
    assert [a["rule"] for a in advice_data(log)["advice"]] == []
    lines = lines_for_report(log, "last", None)
    assert lines[1] == "  nothing measured crosses a rule's threshold"
    assert lines[2].startswith("not judged: ") and lines[2].endswith(
        "(mfu-tracker advise says what to turn on)")


def test_the_command_prints_json_and_names_a_bad_log(tmp_path, capsys):
    path = _log(tmp_path / "m.jsonl", 0.23)
    assert main(["advise", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["advice"][0]["rule"] == "data_loading"
    assert main(["advise", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err.startswith("mfu-tracker advise: error: ")
