"""mfu_tracker/cli/report/panels/waterfall.py: one stacked bar per logged
step, MFU then each loss share; each bar as high as its printed sum; the
diagnosis from the last bar."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report.panels.waterfall import PANEL, Bars

from cli.report._logs import line, run_record

LINES = [run_record(),
         line(10, mfu=0.25, mfu_lost__data=0.5, mfu_lost__other=0.25),
         line(20, mfu=0.5, mfu_lost__compute=0.125, mfu_lost__data=0.125),
         line(30, mfu_lost__data=0.9)]          # no MFU: no bar


def test_bars_stack_mfu_then_causes_in_first_seen_order(report_of):
    report = report_of(LINES)
    bars = report.panel("waterfall")
    assert isinstance(bars, Bars)
    assert bars.causes == ["throughput/mfu_lost/data", "throughput/mfu_lost/other",
                           "throughput/mfu_lost/compute"]
    assert PANEL.steps(bars) == [10, 20]
    layers = bars.stacked()
    assert [key for key, _, _ in layers] == ["throughput/mfu", *bars.causes]
    # step 10: mfu 0.25, data on 0.25, other on 0.75, compute (absent: 0) on 1.0
    assert [bottoms[0] for _, _, bottoms in layers] == [0.0, 0.25, 0.75, 1.0]
    # step 20: 0.5 + 0.125 (data) + 0 (other) + 0.125 (compute) = 0.75
    assert bars.bar_tops() == [1.0, 0.75]
    assert bars.impossible() == [False, False]


def test_text_prints_each_share_and_the_sum(report_of):
    report = report_of(LINES)
    text = PANEL.text(report, report.panel("waterfall"))
    assert text[2] == ("  step=20 throughput/mfu=0.5 throughput/mfu_lost/compute=0.125 "
                       "throughput/mfu_lost/data=0.125 sum=0.75")
    assert PANEL.summary(report, report.panel("waterfall")) == \
        ["where step 20's time went (window): mfu 0.500, compute 0.125, data 0.125 (sum 0.750)"]


def test_the_diagnosis_names_the_largest_loss_of_the_last_bar_and_its_rank(report_of):
    lines = [run_record(), line(10, mfu=0.4, mfu_lost__data=0.1, mfu_lost__communication=0.3,
                                mfu_lost_rank__communication=3)]
    report = report_of(lines)
    assert report.diagnosis == "largest loss: exposed communication, 30.0% of step time, rank 3"


def test_a_negative_share_flags_its_bar(report_of):
    report = report_of([run_record(), line(1, mfu=0.5, mfu_lost__other=-0.25)])
    assert report.panel("waterfall").impossible() == [True]
    assert report.impossible[0][0] == "other below 0 (-0.250 at step 1)"


def test_without_loss_keys_it_says_what_it_needs(report_of):
    report = report_of([run_record(), line(1, mfu=0.5)])
    assert report.panel("waterfall") is None
    assert PANEL.absent(report) in report.missing
    assert PANEL.placeholder(report)          # drawn empty, saying so


def test_the_drawn_bars_are_as_high_as_the_printed_sums(report_of):
    pytest.importorskip("matplotlib")
    from mfu_tracker.cli.report._render import pyplot

    report = report_of(LINES)
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        PANEL.draw(ax, report, report.panel("waterfall"))
        tops = {}
        for patch in ax.patches:
            x = round(patch.get_x() + patch.get_width() / 2)
            tops[x] = max(tops.get(x, 0.0), patch.get_y() + patch.get_height())
        assert tops == {0: 1.0, 1: 0.75}
    finally:
        plt.close(fig)
