"""mfu_tracker/cli/report/_axes.py: the x axis over the logged steps and the runs' starts."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from mfu_tracker.cli.report._axes import MAX_TICKS, axis_ticks, mark_runs, steps_axis  # noqa: E402
from mfu_tracker.cli.report._render import pyplot  # noqa: E402

from cli.report._logs import line, run_record  # noqa: E402


def test_ticks_are_every_kth_logged_step(report_of):
    report = report_of([run_record()] + [line(10 * i, mfu=0.3) for i in range(1, 31)])
    assert MAX_TICKS == 12
    # 30 steps over at most 12 ticks: every ceil(30 / 12) = 3rd step
    assert axis_ticks(report) == [10, 40, 70, 100, 130, 160, 190, 220, 250, 280]
    few = report_of([run_record(), line(5, mfu=0.3), line(6, mfu=0.3)])
    assert axis_ticks(few) == [5, 6]


def test_the_axis_is_padded_and_each_run_start_is_marked(report_of):
    lines = [run_record(100.0), line(0, mfu=0.3), line(50, mfu=0.3),
             run_record(300.0, start_step=50), line(60, time=310.0, mfu=0.3),
             line(100, time=350.0, mfu=0.3)]
    report = report_of(lines, which="all")
    assert report.run_starts == [(0, 1), (60, 2)]
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        steps_axis(ax, report)
        # pad = max(0.5, (100 - 0) * 0.02) = 2
        assert ax.get_xlim() == (-2.0, 102.0)
        assert [line.get_xdata()[0] for line in ax.lines] == [0, 60]   # one dashed line a run
        assert [t.get_text() for t in ax.texts] == [" run 1", " run 2"]
    finally:
        plt.close(fig)


def test_one_run_draws_no_start_line(report_of):
    report = report_of([run_record(), line(1, mfu=0.3), line(2, mfu=0.3)])
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        mark_runs(ax, report)
        assert len(ax.lines) == 0 and len(ax.texts) == 0
    finally:
        plt.close(fig)
