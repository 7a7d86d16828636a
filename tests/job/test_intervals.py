"""mfu_tracker/job/_intervals.py: a run's ledger intervals booked as they
stream in -- the share of an interval past a resume point, the median
without sorting every value, and a run's steps split into productive, data
and lost seconds (hand arithmetic)."""
from __future__ import annotations

import random
import statistics
from array import array

import pytest

from mfu_tracker.job import read_log
from mfu_tracker.job import _intervals
from mfu_tracker.job._intervals import book_of, lost_share, median

from ._log_lines import metrics_line, run_record, write


def test_lost_share():
    assert lost_share(0, 10, None) == 0.0
    assert lost_share(0, 10, 5) == 0.5        # steps 5..9 of 0..9
    assert lost_share(0, 10, 0) == 1.0
    assert lost_share(0, 10, 12) == 0.0       # the resume is past the interval
    assert lost_share(4, 4, 0) == 0.0         # an empty interval


@pytest.mark.parametrize("count", [4999, 5000])
def test_median_past_the_sorting_bound_is_statistics_median(monkeypatch, count):
    monkeypatch.setattr(_intervals, "SORT_BELOW", 1000)  # take the selection path
    rng = random.Random(count)
    values = array("d", (rng.choice([0.1, 0.2, rng.random()]) for _ in range(count)))
    assert median(values) == statistics.median(values)


def test_a_run_s_steps_split_with_a_cut(tmp_path):
    path = write(tmp_path / "m.jsonl", [
        run_record(105, process_start=100),
        metrics_line(10, 120, steps=10, step_s=1.0, data_s=0.2, first_boundary=110),
        metrics_line(20, 130, steps=10, step_s=1.0, data_s=0.1, first_boundary=110,
                     phases={"checkpoint": 4.0}),
    ])
    run = read_log(str(path)).runs[0]
    book = book_of(run)
    notes = []
    whole = book.steps(None, 1, notes, str(path))
    assert whole.data == pytest.approx(2.0 + 1.0)
    assert whole.productive == pytest.approx(20.0 - 3.0)  # step seconds less data; the
    # checkpoint is outside step_s (booked in its phase)
    assert whole.phases["checkpoint"] == 4.0
    assert whole.flops == pytest.approx(20e12) and whole.flops_complete
    assert whole.first_boundary == 110
    # a later run resumed at step 15: steps 15..19 (5 s) are lost progress, their data too
    cut = book_of(run).steps(15, 1, notes, str(path))
    assert cut.lost == pytest.approx(5.0)
    assert cut.data == pytest.approx(2.0 + 0.5)
    assert cut.productive == pytest.approx(20.0 - 5.0 - 2.5)
    assert cut.flops == pytest.approx(15e12)


def test_an_interval_without_flops_marks_them_incomplete(tmp_path):
    path = write(tmp_path / "m.jsonl", [
        run_record(105, process_start=100),
        metrics_line(10, 120, steps=10, step_s=1.0, data_s=0.2, first_boundary=110,
                     flops_per_step=None),
    ])
    steps = book_of(read_log(str(path)).runs[0]).steps(None, 1, [], str(path))
    assert not steps.flops_complete
