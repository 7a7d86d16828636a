"""mfu_tracker/cli/report/panels/ledger.py: the job ledger when every run
has its run record: goodput and badput add up to each bar's wall time."""
from __future__ import annotations

import math

import pytest

from mfu_tracker.cli.report.panels.ledger import PANEL
from mfu_tracker.job._ledger import BUCKETS

from cli.report._logs import line, run_record


def interval(first, end, step_s, **phases):
    return {"from_step": first, "to_step": end, "step_s": step_s, "phase_s": phases,
            "own_s": 0.0, "dropped": 0, "model_flops": None, "flops_steps": 0, "flops_ranks": 1,
            "compile_calls": 0, "first_boundary": 102.0}


def test_one_run_ledger_by_hand(report_of):
    # process start 99, first step boundary 102 (startup 3 s), run end at 120: wall 21 s
    lines = [run_record(100.0),
             {**line(10, time=112.0, mfu=0.5), "ledger": interval(0, 10, 10.0, data=2.0)},
             {"record": "run_end", "time": 120.0, "step": 15,
              "ledger": interval(10, 15, 5.0, checkpoint=1.0)}]
    report = report_of(lines)
    data = report.panel("ledger")
    assert data.job_wall_s == 21.0                          # 120 - 99
    assert data.badput_s["startup"] == 3.0                  # 102 - 99
    assert data.badput_s["data"] == 2.0 and data.badput_s["checkpoint"] == 1.0
    assert data.goodput_s == pytest.approx(15.0 - 2.0)      # step time less data
    assert math.fsum([data.goodput_s, *data.badput_s.values()]) == pytest.approx(21.0)
    text = PANEL.text(report, data)
    assert text[1].startswith("  run=1 start_step=0 wall_s=21.0 ")
    # the largest bucket: startup, 3 of 21 s = 14.3%
    assert max(BUCKETS, key=lambda k: data.badput_s[k]) == "startup"
    assert text[-1] == "  job: largest loss: startup, 14.3% of the job wall time"
    assert PANEL.summary(report, data)[0].startswith(
        f"job: goodput {data.goodput:.3f} of 21 s over 1 run(s)")


def test_no_ledger_without_run_records(report_of):
    report = report_of([line(1, mfu=0.5)])
    assert report.panel("ledger") is None
