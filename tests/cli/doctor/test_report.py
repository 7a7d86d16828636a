"""The doctor's report: rows, counts, the table and its JSON."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.doctor._report import SECTIONS, STATUSES, Report


def test_rows_are_counted_and_a_fail_fails():
    report = Report()
    report.add("device", "table_row", "PASS", "H100 SXM")
    report.add("timing", "sync", "WARN", "2 syncs", "expected 0")
    assert report.counts() == {"PASS": 1, "SKIP": 0, "WARN": 1, "FAIL": 0}
    assert not report.failed()
    report.add("peak", "gemm", "FAIL", "10 TFLOP/s", "below half the peak", measured=1e13)
    assert report.failed() and report.checks[-1].data == {"measured": 1e13}
    assert SECTIONS[0] == "environment" and STATUSES[-1] == "FAIL"


def test_the_table_lists_rows_then_details_then_counts():
    report = Report()
    report.add("device", "table_row", "PASS", "H100 SXM", "not shown: it passed")
    report.add("timing", "sync", "WARN", "2 syncs", "expected 0")
    lines = report.table().splitlines()
    assert lines[0].split() == ["check", "status", "figure"]
    assert lines[1].split() == ["device/table_row", "PASS", "H100", "SXM"]
    assert "WARN timing/sync: expected 0" in lines and "not shown" not in report.table()
    assert lines[-1] == "1 PASS, 0 SKIP, 1 WARN, 0 FAIL"
    data = report.to_json({"quick": True})
    assert data["quick"] is True and data["summary"]["WARN"] == 1
    assert data["checks"][1] == {"section": "timing", "name": "sync", "status": "WARN",
                                 "figure": "2 syncs", "detail": "expected 0", "data": {}}


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status must be one of"):
        Report().add("device", "x", "OK", "")
