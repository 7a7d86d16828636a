"""mfu_tracker/cli/report/_command.py: ``mfu-tracker report``'s flags, what
it prints and the file it writes."""
from __future__ import annotations

import argparse

import pytest

pytest.importorskip("matplotlib")

from mfu_tracker.cli.report._command import add_parser, run  # noqa: E402
from mfu_tracker.cli.report._model import ReportError  # noqa: E402

from _cli import run_cli  # noqa: E402
from cli.report._logs import line, run_record  # noqa: E402

LINES = [run_record(), line(10, mfu=0.25, mfu_lost__data=0.75),
         line(20, mfu=0.5, mfu_lost__data=0.25, mfu_lost__other=0.25)]


def test_the_parser_and_its_defaults():
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["report", "m.jsonl", "--out", "r.png"])
    assert (args.paths, args.out, args.prefix, args.run, args.numbers, args.strict) == \
        (["m.jsonl"], "r.png", None, "last", False, False)
    with pytest.raises(SystemExit):
        parser.parse_args(["report", "m.jsonl"])   # --out is required


def test_run_prints_every_number_or_the_summary(write_log, tmp_path):
    path = str(write_log(LINES))
    numbers = run(path, str(tmp_path / "r.png"))
    assert "  step=20 throughput/mfu=0.5 throughput/mfu_lost/data=0.25 " \
           "throughput/mfu_lost/other=0.25 sum=1.0" in numbers
    summary = run(path, str(tmp_path / "r.png"), numbers=False)
    assert "where step 20's time went (window): mfu 0.500, data 0.250, other 0.250 (sum 1.000)" \
        in summary
    # the largest loss of the last bar: data and other tie at 0.25, the first wins
    assert "largest loss: data loading, 25.0% of step time" in summary
    assert (tmp_path / "r.png").stat().st_size > 0


def test_a_bad_output_is_refused_before_reading(tmp_path):
    with pytest.raises(ReportError, match="unknown extension '.pdf'"):
        run(str(tmp_path / "absent.jsonl"), str(tmp_path / "r.pdf"))


def test_the_command_line(write_log, tmp_path, capsys):
    path = str(write_log(LINES))
    status, out, err = run_cli(capsys, "report", path, "--out", str(tmp_path / "r.html"))
    assert status == 0, err
    assert out.rstrip().endswith(f"wrote {tmp_path / 'r.html'} (every number drawn: --numbers)")
    status, out, err = run_cli(capsys, "report", path, path, path, "--out", str(tmp_path / "r.png"))
    assert status != 0 and "give one log, or two to compare (A B); got 3" in err
