"""mfu_tracker/cli/report/panels/kernels.py: one bar per profiled step from
the kernel-share keys, its printed shares and the summary's top classes."""
from __future__ import annotations

from mfu_tracker.cli.report.panels.kernels import MISSING, PANEL

from cli.report._logs import line, run_record


def test_the_shares_of_each_profiled_step(report_of):
    report = report_of([run_record(), line(4, mfu=0.3),
                        line(5, mfu=0.3, kernel_share__gemm=0.5, kernel_share__attention=0.125,
                             kernel_share__elementwise=0.25, kernel_share__idle=0.125,
                             kernel_share__bogus=0.9)])
    data = report.panel("kernels")
    assert [step for step, _, _ in data.bars] == [5]
    shares = data.bars[0][1]
    assert shares == {"gemm": 0.5, "attention": 0.125, "elementwise": 0.25, "idle": 0.125}
    assert PANEL.table(report, data) == {5: {"kernel_share/gemm": 0.5,
                                             "kernel_share/attention": 0.125,
                                             "kernel_share/elementwise": 0.25,
                                             "kernel_share/idle": 0.125}}
    # the top four, largest first: 0.5, 0.25, then the two 0.125s in their order
    assert PANEL.summary(report, data) == ["kernel breakdown of the profiled step 5: gemm 0.500, "
                                           "elementwise 0.250, attention 0.125, idle 0.125"]
    assert PANEL.text(report, data)[1].endswith(" sum=1.0")


def test_without_a_profiled_step(report_of):
    report = report_of([run_record(), line(1, mfu=0.3)])
    assert report.panel("kernels") is None and MISSING in report.missing
