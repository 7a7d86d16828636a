"""The doctor's runner: its flags checked before any check runs, a section's
crash one FAIL row, the exit status."""
from __future__ import annotations

import io
import json

import pytest

from mfu_tracker.cli.doctor._report import Report
from mfu_tracker.cli.doctor._run import _run_section, check_json_path, parse_only, run, statuses


def test_only_is_split_and_normalized():
    assert parse_only(None) is None
    assert parse_only("end-to-end, peak,,") == ["end_to_end", "peak"]


def test_bad_arguments_are_refused_before_any_check(tmp_path):
    with pytest.raises(ValueError, match="--only: unknown section\\(s\\) gpu"):
        run(only=["gpu"], out=io.StringIO())
    with pytest.raises(ValueError, match="is a directory"):
        check_json_path(str(tmp_path))
    with pytest.raises(ValueError, match="does not exist"):
        check_json_path(str(tmp_path / "no" / "r.json"))
    check_json_path(str(tmp_path / "r.json"))      # a new file in a writable folder


def test_a_crashing_section_is_one_fail_row():
    report = Report()

    def boom():
        raise RuntimeError("driver gone")

    _run_section(report, "device", boom)
    (row,) = report.checks
    assert (row.section, row.name, row.status) == ("device", "error", "FAIL")
    assert row.figure == "RuntimeError: driver gone" and "unexpected error at" in row.detail
    assert statuses(report.checks) == {"device/error": "FAIL"}


def test_the_environment_section_writes_its_json(tmp_path):
    out, path = io.StringIO(), tmp_path / "r.json"
    status = run(only=["environment"], json_path=str(path), quick=True, out=out)
    data = json.loads(path.read_text())
    assert data["sections"] == ["environment"] and data["quick"] is True
    assert {c["section"] for c in data["checks"]} == {"environment"}
    assert status == (1 if data["summary"]["FAIL"] else 0)
    assert out.getvalue().startswith("mfu-tracker doctor ")
