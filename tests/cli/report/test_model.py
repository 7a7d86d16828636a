"""mfu_tracker/cli/report/_model.py: the keys the report reads, finite numbers,
one line per run, the Report's key helpers."""
from __future__ import annotations

import math

import pytest

from mfu_tracker.cli.report._model import (LOST, MFU, PHASES, RANK_SPREAD, SLOWEST, STEP_TIME,
                                           TOKENS, ReportError, _family_name, _key_name, by_run,
                                           number)
from mfu_tracker.timing._metrics import metric_key

from cli.report._logs import line, run_record


def test_the_key_names_are_the_metric_tables():
    assert (MFU, STEP_TIME, TOKENS, SLOWEST) == ("mfu", "step_time_s", "tokens_per_sec",
                                                 "slowest_rank")
    assert RANK_SPREAD == ("mfu_rank_min", "mfu_rank_mean", "mfu_rank_max")
    assert (LOST, PHASES) == ("mfu_lost", "phase_s")


def test_a_name_the_table_lacks_is_refused_by_name():
    with pytest.raises(LookupError, match="no 'mfu_typo' key"):
        _key_name("mfu_typo")
    with pytest.raises(LookupError, match="no 'lost' family"):
        _family_name("lost")


@pytest.mark.parametrize("value, expected", [
    (0.5, 0.5), (3, 3.0), (True, None), ("0.5", None), (None, None),
    (math.nan, None), (math.inf, None), (-math.inf, None), (-2.0, -2.0)])
def test_number_keeps_finite_numbers_only(value, expected):
    assert number(value) == expected


def test_by_run_gives_one_line_per_run_in_first_seen_order():
    points = [(1, 0.1), (2, 0.2), (1, 0.3), (5, 0.4)]
    runs = [2, 2, 1, 1]
    assert by_run(points, runs) == [(2, [(1, 0.1), (2, 0.2)]), (1, [(1, 0.3), (5, 0.4)])]


def test_report_error_is_a_value_error():
    assert issubclass(ReportError, ValueError)


def test_report_keys_and_records(report_of):
    report = report_of([run_record(), line(10, mfu=0.25), line(20, mfu=0.5)])
    assert report.key(STEP_TIME) == metric_key("throughput", STEP_TIME) == "throughput/step_time_s"
    assert report.mfu_key == "throughput/mfu"
    assert [r["step"] for r in report.records] == [10, 20]
    assert report.runs_total == 1 and report.runs_drawn == [1]
    assert report.panel("no such panel") is None
