"""What a log-reading command says of the lines it could not read."""
from __future__ import annotations

import json

from mfu_tracker.cli._log_notes import STRICT_HELP, skipped_lines, warn_cut
from mfu_tracker.job import read_log


def _log(tmp_path, tail: str):
    path = tmp_path / "m.jsonl"
    run = {"record": "run", "time": 1.0, "run_id": "a", "ranks": 1, "devices": 1,
           "process_start": 0.5, "start_step": 0}
    path.write_text(json.dumps(run) + "\n" + "{not json}\n"
                    + json.dumps({"step": 1, "time": 2.0, "throughput/mfu": 0.5}) + "\n" + tail)
    return read_log(str(path))


def test_a_clean_log_says_nothing(tmp_path, capsys):
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps({"record": "run", "time": 1.0, "run_id": "a"}) + "\n")
    log = read_log(str(path))
    assert skipped_lines(log) == []
    warn_cut(log, "goodput")
    assert capsys.readouterr().err == ""


def test_corrupt_lines_are_counted_and_each_named(tmp_path):
    log = _log(tmp_path, "")
    lines = skipped_lines(log)
    assert lines[0] == "skipped: 1 line(s) that could not be read (--strict refuses them):"
    assert len(lines) == 2 and lines[1].startswith("  ") and ":2:" in lines[1]


def test_a_cut_last_line_is_one_warning_naming_the_command(tmp_path, capsys):
    log = _log(tmp_path, '{"step": 2, "ti')
    assert log.cut is not None
    warn_cut(log, "passport")
    err = capsys.readouterr().err
    assert err.startswith("mfu-tracker passport: warning: ") and err.count("\n") == 1
    assert "m.jsonl" in err
    assert "--strict" not in STRICT_HELP and "refuse" in STRICT_HELP
