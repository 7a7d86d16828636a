"""The report tests' fixtures: a hand-written log on disk, and the report's plan of it."""
from __future__ import annotations

import json

import pytest


@pytest.fixture
def write_log(tmp_path):
    """``write_log(lines, name=...)``: the JSONL file of ``lines``."""
    def write(lines, name="m.jsonl"):
        path = tmp_path / name
        path.write_text("".join(json.dumps(one) + "\n" for one in lines))
        return path
    return write


@pytest.fixture
def report_of(write_log):
    """``report_of(lines, which="last")``: the report's plan of those lines."""
    from mfu_tracker.cli.report import load, plan

    def build(lines, which="last", prefix=None):
        return plan(load(str(write_log(lines))), prefix, which)
    return build
