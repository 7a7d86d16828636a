"""mfu_tracker/cli/report/_text.py: the printed head, every number drawn
(``--numbers``) and the summary a person reads."""
from __future__ import annotations

from mfu_tracker.cli.report._text import head, numbers_text, summary_text

from cli.report._logs import line, run_record


def two_runs():
    return [run_record(100.0), line(10, mfu=0.25, step_time_s=0.5),
            run_record(200.0), line(20, time=220.0, mfu=0.125, step_time_s=0.25)]


def test_head_names_the_runs_the_peak_and_invalid_values(report_of):
    lines = two_runs() + [line(30, time=230.0, mfu=float("nan"))]
    report = report_of(lines, which="all")
    text = head(report)
    assert text[0] == "runs: the file holds 2; drawn: all runs (--run all|N to choose)"
    assert text[1] == "run starts (dashed lines): run 1 at step 10, run 2 at step 20"
    assert text[2] == "peak: 100 TFLOP/s per device, bf16 (datasheet)"
    assert text[3] == "invalid values (not drawn):"
    assert text[4].startswith("  ") and "throughput/mfu" in text[4] and ":5:" in text[4]
    one = head(report_of(two_runs(), which="1"))
    assert one[0] == "runs: the file holds 2; drawn: run 1 (--run all|N to choose)"


def test_numbers_print_each_value_exactly_and_the_axis(report_of):
    report = report_of(two_runs(), which="all")
    text = numbers_text(report).splitlines()
    assert "  step=10 throughput/mfu=0.25" in text and "  step=20 throughput/mfu=0.125" in text
    assert "  step=20 throughput/step_time_s=0.25" in text
    assert "x axis: steps 10..20 (the logged steps; ticks at 10, 20)" in text
    missing = [t for t in text if t.startswith("missing: ")]
    assert missing and all(m[len("missing: "):] in report.missing for m in missing)


def test_the_summary_rounds_and_joins_what_is_missing(report_of):
    report = report_of(two_runs())
    text = summary_text(report).splitlines()
    assert "MFU (throughput/mfu, window): 0.125 at step 20; 0.125..0.125 over steps 20..20" in text
    assert "step time (window mean): 250 ms at step 20" in text
    assert not any(t.startswith("x axis") for t in text)
    assert [t for t in text if t.startswith("missing:")] == ["missing: " + "; ".join(report.missing)]
