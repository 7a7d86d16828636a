"""mfu_tracker/cli/view/_command.py: ``mfu-tracker view``'s flags and ``--json``."""
from __future__ import annotations

import argparse
import json

import pytest

from mfu_tracker.cli.view._command import add_budget_flags, add_parser

from _cli import run_cli
from cli.report._logs import line, run_record
from cli.view._pages import write


def test_the_flags():
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["view", "m.jsonl"])
    assert (args.log, args.host, args.port, args.json, args.budget_tokens, args.budget_steps) == \
        ("m.jsonl", "127.0.0.1", 0, False, None, None)
    for bad in (["--port", "-1"], ["--budget-steps", "0"], ["--budget-tokens", "-5"],
                ["--budget-steps", "5", "--budget-tokens", "5"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["view", "m.jsonl", *bad])


def test_budget_flags_alone():
    parser = argparse.ArgumentParser()
    add_budget_flags(parser)
    assert parser.parse_args(["--budget-tokens", "1e9"]).budget_tokens == 1e9
    assert parser.parse_args(["--budget-steps", "7"]).budget_steps == 7


def test_json_prints_the_document_once(tmp_path, capsys):
    path = write(tmp_path / "m.jsonl", [run_record(), line(10, mfu=0.25, step_time_s=0.5)])
    status, out, err = run_cli(capsys, "view", str(path), "--json", "--budget-steps", "20")
    assert status == 0, err
    document = json.loads(out)
    assert document["series"]["mfu"] == [[10, 0.25]]
    assert {f["id"]: f["value"] for f in document["progress"]["figures"]}["fraction_done"] == 0.5
