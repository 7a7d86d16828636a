"""mfu_tracker/cli/report/panels/phases.py: without MFU, the marked phases
in seconds and the unmarked rest of the step."""
from __future__ import annotations

from mfu_tracker.cli.report.panels.phases import PANEL, UNMARKED

from cli.report._logs import line, run_record


def no_peak():
    return [run_record(peak=None),
            line(1, step_time_s=0.5, phase_s__forward=0.125, phase_s__backward=0.25),
            line(2, step_time_s=0.25, phase_s__forward=0.0625, phase_s__data=0.03125),
            line(3, phase_s__forward=0.1)]


def test_the_unmarked_rest_is_step_time_less_the_phases(report_of):
    report = report_of(no_peak())
    data = report.panel("phases")
    assert data.names == ["throughput/phase_s/forward", "throughput/phase_s/backward",
                          "throughput/phase_s/data"]
    # 0.5 - (0.125 + 0.25) = 0.125; 0.25 - (0.0625 + 0.03125) = 0.15625; no step time: None
    assert data.unmarked == [0.125, 0.15625, None]
    text = PANEL.text(report, data)
    assert text[1] == ("  step=1 throughput/phase_s/forward=0.125 "
                       f"throughput/phase_s/backward=0.25 {UNMARKED}=0.125")
    assert text[3] == "  step=3 throughput/phase_s/forward=0.1"
    assert PANEL.summary(report, data) == \
        ["where step 3's time went (window, ms per step): forward 100"]


def test_not_drawn_beside_the_waterfall(report_of):
    report = report_of([run_record(), line(1, mfu=0.5, mfu_lost__data=0.5, phase_s__data=0.2,
                                           step_time_s=1.0)])
    assert report.panel("waterfall") is not None and report.panel("phases") is None
