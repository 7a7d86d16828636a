"""mfu_tracker/cli/report/panels/moe.py: the mixture-of-experts panel over
hand-written ``moe/*`` lines -- its series, the summary's cells at the newest
step with an imbalance, no panel (and no "missing" line) for a dense model,
and the drawn axes' ranges."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report.panels.moe import PANEL, SERIES

from cli.report._logs import line, run_record


def moe_log():
    return [run_record(),
            line(1, mfu=0.3),                                       # before the first sample
            line(2, mfu=0.3, moe__imbalance=2.5, moe__padded_flops_share=0.25,
                 moe__sampled_step=2),
            line(4, mfu=0.3, moe__imbalance=3.0, moe__padded_flops_share=0.6,
                 moe__dropped_share=0.125, moe__straggler_layer=1, moe__straggler_expert=7,
                 moe__sampled_step=4)]


def test_the_series_and_their_printed_keys(report_of):
    report = report_of(moe_log())
    data = report.panel("moe")
    assert data.series["imbalance"] == [(2, 2.5), (4, 3.0)]
    assert data.series["padded"] == [(2, 0.25), (4, 0.6)] and data.series["dropped"] == [(4, 0.125)]
    assert PANEL.steps(data) == [2, 4]
    assert PANEL.table(report, data)[2] == {"throughput/moe/imbalance": 2.5,
                                            "throughput/moe/padded_flops_share": 0.25,
                                            "throughput/moe/sampled_step": 2.0}
    assert PANEL.text(report, data)[0] == PANEL.heading
    assert [key for _, key in SERIES][:3] == ["moe/imbalance", "moe/padded_flops_share",
                                             "moe/dropped_share"]


def test_the_summary_names_every_cell_the_step_has(report_of):
    report = report_of(moe_log())
    assert PANEL.summary(report, report.panel("moe")) == [
        "expert load at step 4 (sampled step 4): imbalance 3.000, straggler expert 7 of MoE "
        "layer 1, padded 0.600 of the expert FLOPs, dropped 0.125 of the assignments"]
    # only the imbalance: no straggler, padded, dropped or sampled cell
    bare = report_of([run_record(), line(3, mfu=0.3, moe__imbalance=1.25)])
    assert PANEL.summary(bare, bare.panel("moe")) == ["expert load at step 3: imbalance 1.250"]


def test_a_newer_line_without_an_imbalance_is_no_crash(report_of):
    """The summary is of the newest step with an imbalance: a later line with
    other moe/* keys only (a hand-edited log) is no step to summarise, and
    its None is never formatted."""
    report = report_of([run_record(), line(1, mfu=0.3, moe__imbalance=2.0),
                        line(2, mfu=0.3, moe__dropped_share=0.1)])
    data = report.panel("moe")
    assert PANEL.steps(data) == [1, 2]
    assert PANEL.summary(report, data) == ["expert load at step 1: imbalance 2.000"]


def test_a_dense_model_has_no_panel_and_no_missing_line(report_of):
    # shares without an imbalance, or an imbalance that is no finite number: no panel
    report = report_of([run_record(), line(1, mfu=0.3, moe__dropped_share=0.1),
                        line(2, mfu=0.3, moe__imbalance="3")])
    assert report.panel("moe") is None
    assert PANEL.absent(report) is None
    assert not [m for m in report.missing if "expert" in m or "moe" in m]


def test_the_drawn_ranges(report_of):
    pytest.importorskip("matplotlib")
    from mfu_tracker.cli.report._render import pyplot

    report = report_of(moe_log())
    plt = pyplot()
    fig, ax = plt.subplots()
    try:
        PANEL.draw(ax, report, report.panel("moe"))
        assert ax.get_ylim() == pytest.approx((0.0, 3.3))      # the largest imbalance 3.0 x 1.1
        (imbalance,) = ax.get_lines()[:1]
        assert list(imbalance.get_xdata()) == [2, 4] and list(imbalance.get_ydata()) == [2.5, 3.0]
        shares = [other for other in fig.axes if other is not ax][0]
        assert shares.get_ylim() == (0.0, 1.0)
        assert [ln.get_label() for ln in shares.get_lines()] == [
            "moe/padded_flops_share (right)", "moe/dropped_share (right)"]
    finally:
        plt.close(fig)
    balanced = report_of([run_record(), line(1, mfu=0.3, moe__imbalance=1.0)])
    fig, ax = plt.subplots()
    try:
        PANEL.draw(ax, balanced, balanced.panel("moe"))
        assert ax.get_ylim() == pytest.approx((0.0, 2.0))      # at least 0..2 around 1.0
    finally:
        plt.close(fig)
