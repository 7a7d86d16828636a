"""mfu_tracker/cli/report/panels/mfu.py: MFU and step time over steps, one
line per run; without MFU the step time and tokens/s."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report.panels.mfu import PANEL, Series

from cli.report._logs import line, run_record


def test_collect_keeps_finite_values_with_their_runs(report_of):
    lines = [run_record(100.0), line(1, mfu=0.25, step_time_s=0.5, tokens_per_sec=100.0),
             run_record(200.0), line(2, time=220.0, mfu=0.5, step_time_s=0.25),
             line(3, time=230.0, mfu="n/a", step_time_s=0.125)]
    report = report_of(lines, which="all")
    data = report.panel("mfu")
    assert isinstance(data, Series)
    assert (data.mfu, data.mfu_run) == ([(1, 0.25), (2, 0.5)], [1, 2])
    assert data.step_time == [(1, 0.5), (2, 0.25), (3, 0.125)]
    assert data.tokens == []          # drawn only without MFU
    text = PANEL.text(report, data)
    assert text[:5] == ["MFU over steps (throughput/mfu, the tracker's window MFU):",
                        "  run 1:", "  step=1 throughput/mfu=0.25",
                        "  run 2:", "  step=2 throughput/mfu=0.5"]
    assert PANEL.table(report, data)[3] == {"throughput/step_time_s": 0.125}


def test_without_mfu_step_time_and_tokens_are_drawn(report_of):
    report = report_of([run_record(peak=None), line(1, step_time_s=0.5, tokens_per_sec=2000.0),
                        line(2, step_time_s=0.25, tokens_per_sec=4000.0)])
    data = report.panel("mfu")
    assert data.mfu == [] and data.tokens == [(1, 2000.0), (2, 4000.0)]
    assert PANEL.steps(data) == [1, 2]
    assert "throughput/mfu: no values (the MFU panel is empty)" in report.missing
    assert PANEL.summary(report, data) == ["step time (window mean): 250 ms at step 2",
                                           "tokens/s: 4000 at step 2"]
    assert "tokens/s (throughput/tokens_per_sec, the window's, second axis):" in \
        PANEL.text(report, data)


def test_summary_gives_last_min_and_max(report_of):
    report = report_of([run_record(), line(1, mfu=0.3), line(2, mfu=0.6), line(3, mfu=0.45)])
    assert PANEL.summary(report, report.panel("mfu")) == \
        ["MFU (throughput/mfu, window): 0.450 at step 3; 0.300..0.600 over steps 1..3"]


def test_mfu_above_one_is_drawn_as_logged_and_marked(report_of):
    pytest.importorskip("matplotlib")
    from mfu_tracker.cli.report._render import pyplot

    report = report_of([run_record(), line(1, mfu=0.5), line(2, mfu=1.2)])
    assert report.panel("mfu").mfu[-1] == (2, 1.2)     # never clamped
    assert [label for label, _ in report.impossible] == ["MFU above 1 (1.200 at step 2)"]
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        PANEL.draw(ax, report, report.panel("mfu"))
        assert ax.get_ylim()[1] == pytest.approx(1.2 * 1.15)
        assert any(list(l.get_ydata()) == [1.0, 1.0] for l in ax.lines)   # the line at 1
        assert "peak 100 TFLOP/s per device" in ax.get_title()
    finally:
        plt.close(fig)
