"""mfu_tracker/cli/report (the package): load, plan, numbers_text and render,
through the names it exports."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from mfu_tracker.cli.report import ReportError, load, numbers_text, plan, render  # noqa: E402

from cli.report._logs import line, run_record  # noqa: E402


def test_the_package_draws_a_hand_written_log(write_log, tmp_path):
    log = load(str(write_log([run_record(), line(10, mfu=0.375, step_time_s=2.0),
                              line(20, mfu=0.5, step_time_s=1.5)])))
    report = plan(log)
    text = numbers_text(report)
    for cell in ("step=10 throughput/mfu=0.375", "step=20 throughput/mfu=0.5",
                 "step=10 throughput/step_time_s=2.0", "step=20 throughput/step_time_s=1.5"):
        assert f"  {cell}" in text.splitlines()
    out = tmp_path / "r.png"
    render(report, str(out))
    assert out.read_bytes().startswith(b"\x89PNG")


def test_its_error_is_a_value_error_naming_the_input(tmp_path):
    with pytest.raises(ValueError, match="absent.jsonl: no such file"):
        load(str(tmp_path / "absent.jsonl"))
    assert issubclass(ReportError, ValueError)
