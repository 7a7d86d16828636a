"""mfu_tracker/job (the package): its documented names, and the two ways of
reading a log -- whole (read_log) and streamed (stream_log, the intervals
booked as they come) -- giving the same job ledger to the last bit."""
from __future__ import annotations

import pytest

import mfu_tracker.job as job
from mfu_tracker.job import LogError, job_ledger, jobs, read_log, stream_log
from mfu_tracker.job._intervals import BookIntervals

from ._log_lines import metrics_line, run_record, write


def test_every_documented_name_is_there():
    assert set(job.__all__) == {
        "BUCKETS", "Job", "JobLedger", "RunLedger", "Log", "LogError", "LogReader", "Run", "Sink",
        "diagnosis", "job_ledger", "jobs", "process_start_time", "read_log", "stream_log"}
    assert all(hasattr(job, name) for name in job.__all__)


def test_read_and_streamed_give_the_same_ledger(tmp_path):
    lines = [run_record(105, process_start=100)]
    t = 110.0
    for k in range(1, 41):
        t += 3.7
        lines.append(metrics_line(10 * k, t, steps=10, step_s=0.37, data_s=0.05,
                                  first_boundary=110.0))
    lines += [run_record(t + 20, process_start=t + 15, start_step=250, run_id="r2"),
              metrics_line(260, t + 30, steps=10, step_s=0.37, data_s=0.05,
                           first_boundary=t + 25)]
    path = str(write(tmp_path / "m.jsonl", lines))
    whole, streamed = read_log(path), stream_log(path, [BookIntervals()])
    assert len(jobs(whole)) == 1  # the second run resumes: one job
    a, b = job_ledger(whole), job_ledger(streamed)
    assert a.figures() == b.figures()
    # steps 250..399 of run 1 were redone: 150 steps x 0.37 s of lost progress
    assert a.badput_s["lost_progress"] == sum([0.37 * 10] * 15)


def test_a_stream_that_kept_no_intervals_is_refused_not_read_as_no_steps(tmp_path):
    path = str(write(tmp_path / "m.jsonl", [
        run_record(105, process_start=100),
        metrics_line(10, 120, steps=10, step_s=1.0, data_s=0.2, first_boundary=110)]))
    # without BookIntervals the run's steps were not kept: its ledger would read
    # 20 s of startup and no goodput -- refused instead
    with pytest.raises(LogError, match="ledger intervals were not kept"):
        job_ledger(stream_log(path))
