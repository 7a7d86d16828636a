"""mfu_tracker/cli/report/panels/_impossible.py: MFU above 1 and negative
shares are named (never clamped), with the likely cause by the peak's source."""
from __future__ import annotations

from mfu_tracker.cli.report.panels._impossible import mfu_above_one, negative_shares, peak_cause
from mfu_tracker.peaks._table import PEAK_ENV_VAR

from cli.report._logs import line, run_record


def test_peak_cause_by_source(report_of):
    measured = report_of([run_record(source="measured"), line(1, mfu=0.5)])
    assert peak_cause(measured).startswith("the peak was measured (a GEMM benchmark)")
    assert PEAK_ENV_VAR in peak_cause(report_of([run_record(source="user"), line(1, mfu=0.5)]))
    unknown = report_of([run_record(source="someone"), line(1, mfu=0.5)])
    assert peak_cause(unknown).startswith("the peak is too low for the device")


def test_mfu_above_one_names_the_highest_and_counts(report_of):
    report = report_of([run_record(source="datasheet"), line(1, mfu=0.5)])
    report.impossible.clear()
    mfu_above_one(report, [(1, 0.5), (2, 1.25), (3, 1.5), (4, 1.0)])   # 1.0 is possible
    (label, why), = report.impossible
    assert label == "MFU above 1 (1.500 at step 3)"
    assert why.startswith("MFU above 1 cannot be (it is drawn as logged, never clamped): 1.500 "
                          "at step 3, above 1 at 2 of 4 logged steps; likely cause: the model "
                          "FLOPs are more than the step did")
    mfu_above_one(report, [(1, 0.5)])
    assert len(report.impossible) == 1   # nothing above 1: nothing added


def test_negative_shares_one_caveat_per_cause(report_of):
    report = report_of([run_record(source="measured"), line(1, mfu=0.5)])
    base = "throughput/mfu_lost/"
    rows = [(1, {"throughput/mfu": 0.5, base + "compute": -0.1, base + "other": 0.2}),
            (2, {"throughput/mfu": 0.6, base + "compute": -0.3, base + "other": -0.05}),
            (3, {"throughput/mfu": 0.6, base + "weird": -0.01})]
    negative_shares(report, rows, base)
    labels = [label for label, _ in report.impossible]
    assert labels == ["compute below 0 (-0.300 at step 2)", "other below 0 (-0.050 at step 2)",
                      "weird below 0 (-0.010 at step 3)"]
    compute, other, weird = (why for _, why in report.impossible)
    assert "(below 0 at 2 of 3 bars)" in compute and "likely cause: the peak was measured" in compute
    assert "phases that overlap" in other and "likely cause" not in other
    assert weird.endswith("a time cannot be negative: the figures it is made from disagree")
