"""``mfu-tracker goodput``: the job ledger of a log as printed and as JSON
(the ledger's arithmetic: tests/test_goodput.py, tests/job/)."""
from __future__ import annotations

import json

import pytest

from mfu_tracker.cli import main
from mfu_tracker.cli._goodput import figures_json, read_goodput, text
from mfu_tracker.job import job_ledger


def _log(path):
    """One run of one device at 100 TFLOP/s: process start 0, first step
    boundary 2, 10 steps in 8 s of which 1 s data, 1e12 FLOPs each, last record at 10."""
    lines = [
        {"record": "run", "time": 1.0, "run_id": "a", "ranks": 1, "devices": 1,
         "process_start": 0.0, "start_step": 0, "peak_tflops": 100.0},
        {"step": 10, "time": 10.0, "ledger": {
            "from_step": 0, "to_step": 10, "step_s": 8.0, "phase_s": {"data": 1.0}, "own_s": 0.0,
            "dropped": 0, "model_flops": 1e13, "flops_steps": 10, "flops_ranks": 1,
            "compile_calls": 0, "first_boundary": 2.0}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_figures_by_hand(tmp_path):
    log = read_goodput(str(_log(tmp_path / "m.jsonl")))
    data = figures_json(log, job_ledger(log))
    assert data["job_wall_s"] == 10.0                      # 10 - 0
    assert data["goodput_s"] == 7.0                        # 8 s of steps less 1 s data
    assert data["goodput"] == pytest.approx(0.7, rel=1e-12)
    assert data["badput_s/startup"] == 2.0                 # process start -> first boundary
    assert data["badput_s/data"] == 1.0
    # 1e13 FLOPs / (1 device x 10 s x 1e14 FLOP/s) = 0.01
    assert data["job_mfu"] == pytest.approx(0.01, rel=1e-12)
    assert data["runs"][0]["run"] == 1 and data["runs"][0]["start_step"] == 0
    assert data["diagnosis"].startswith("largest loss: startup, 20.0% of the job's wall time")


def test_the_text_rounds_each_figure_by_its_unit(tmp_path):
    log = read_goodput(str(_log(tmp_path / "m.jsonl")))
    lines = text(log, job_ledger(log)).splitlines()
    assert lines[0].endswith("m.jsonl: 1 run(s)")
    assert "goodput=0.700" in lines and "badput/startup=0.200" in lines
    assert "job_mfu=0.010" in lines and "job_wall_s=10" in lines
    assert any(line.startswith("  run=1 start_step=0 wall_s=10 goodput=7 ") for line in lines)


def test_the_command_writes_the_json(tmp_path, capsys):
    out_path = tmp_path / "sub" / "g.json"
    assert main(["goodput", str(_log(tmp_path / "m.jsonl")), "--json", str(out_path)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {out_path}" in out
    assert json.loads(out_path.read_text())["goodput"] == pytest.approx(0.7, rel=1e-12)


def test_bad_paths_are_named(tmp_path, capsys):
    assert main(["goodput", str(tmp_path)]) == 2
    assert "is a directory; give the JSONL log of log_path=" in capsys.readouterr().err
    assert main(["goodput", str(_log(tmp_path / "m.jsonl")), "--json", str(tmp_path)]) == 2
    assert "--json" in capsys.readouterr().err
    assert main(["goodput", str(tmp_path / "m.jsonl"), "--job", "0"]) == 2
    assert "argument --job: must be an integer >= 1" in capsys.readouterr().err
