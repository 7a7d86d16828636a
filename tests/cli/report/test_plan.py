"""mfu_tracker/cli/report/_plan.py: the prefix found, the runs' points in
order, the peak and the busy-machine caveat, why there is no MFU."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report._model import ReportError
from mfu_tracker.cli.report._plan import find_prefix, plan
from mfu_tracker.cli.report import load
from mfu_tracker.peaks._table import GIVE_A_PEAK

from cli.report._logs import line, run_record


def test_find_prefix_prefers_mfu_then_step_time_then_tokens():
    assert find_prefix([{"step": 1, "a/tokens_per_sec": 1.0, "b/mfu": 0.1}]) == "b"
    assert find_prefix([{"step": 1, "mfu": 0.1}]) == ""
    assert find_prefix([{"step": 1, "x/y/step_time_s": 0.1, "z/tokens_per_sec": 9.0}]) == "x/y"
    assert find_prefix([{"step": 1, "z/tokens_per_sec": 9.0}]) == "z"
    assert find_prefix([{"step": 1, "loss": 2.0}]) is None


def test_points_are_sorted_by_step_within_each_run(report_of):
    lines = [run_record(100.0), line(20, mfu=0.2), line(10, mfu=0.1),
             run_record(200.0), line(30, time=230.0, mfu=0.3)]
    report = report_of(lines, which="all")
    assert [(r["step"], n) for r, n in report.points] == [(10, 1), (20, 1), (30, 2)]
    assert report.run_starts == [(10, 1), (30, 2)]
    assert report.steps == [10, 20, 30]


def test_the_peak_line_names_its_value_dtype_and_source(report_of):
    report = report_of([run_record(peak=989.4, source="datasheet"), line(1, mfu=0.4)])
    assert report.peak == "989.4 TFLOP/s per device, bf16 (datasheet)"
    assert report.caveat is None and report.no_mfu is None


def test_a_peak_remeasured_higher_gives_the_caveat(report_of):
    check = {"record": "peak_check", "time": 150.0, "peak_tflops": 100.0,
             "remeasured_tflops": 150.0}
    report = report_of([run_record(source="measured"), line(1, mfu=0.4), check])
    assert report.caveat.startswith("the peak was measured on a busy machine: 100 TFLOP/s, "
                                    "then 150 re-measured after training")
    assert "against 150 the MFU here reads" in report.caveat
    # within 25%: no caveat
    close = dict(check, remeasured_tflops=110.0)
    assert report_of([run_record(source="measured"), line(1, mfu=0.4), close]).caveat is None


def test_without_a_peak_it_says_why_there_is_no_mfu(report_of):
    report = report_of([run_record(peak=None), line(1, step_time_s=0.5)])
    assert report.no_mfu == ("no MFU: the run record has no peak (a CPU, or a device the peak "
                             f"table does not know); {GIVE_A_PEAK}")
    assert report.peak is None
    report = report_of([run_record(peak=50.0), line(1, step_time_s=0.5)])
    assert report.no_mfu.startswith("no MFU: the log has no throughput/mfu values")


def test_nothing_to_draw_is_refused(write_log):
    log = load(str(write_log([run_record(), {"step": 1, "time": 1.0, "loss": 2.0}])))
    with pytest.raises(ReportError, match="no MFU, step time or tokens/s key"):
        plan(log)
    log = load(str(write_log([run_record(), line(1, mfu=0.4)])))
    with pytest.raises(ReportError, match=r"no other/mfu.*prefix 'other'; found: 'throughput'"):
        plan(log, prefix="other")
