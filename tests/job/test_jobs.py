"""mfu_tracker/job/_jobs.py: which runs of a log make one job -- a run
continues the job before it only when it resumes (start_step > 0 or the same
job id); two different given job ids are two jobs."""
from __future__ import annotations

from mfu_tracker.job import Job, jobs, read_log
from mfu_tracker.job._jobs import given_job, new_job_reason

from ._log_lines import metrics_line, run_record, write


def log_of(tmp_path, records):
    lines = []
    for i, record in enumerate(records):
        lines += [record, metrics_line(record["start_step"] + 10, record["time"] + 10, steps=10,
                                       step_s=1.0, data_s=0.0, first_boundary=record["time"])]
    return read_log(str(write(tmp_path / "m.jsonl", lines)))


def test_restart_rule(tmp_path):
    log = log_of(tmp_path, [
        run_record(100, process_start=99, run_id="a"),
        run_record(200, process_start=199, run_id="b", start_step=10),       # resumes: same job
        run_record(300, process_start=299, run_id="c"),                      # start 0, no id: new
        run_record(400, process_start=399, run_id="d", job="J"),             # start 0, the one
                                                                             # before has no id: new
        run_record(500, process_start=499, run_id="e", job="J"),             # same id: same job
        run_record(600, process_start=599, run_id="f", job="K", start_step=5),  # ids differ: new
    ])
    found = jobs(log)
    assert [[r.number for r in job.runs] for job in found] == [[1, 2], [3], [4, 5], [6]]
    assert [job.number for job in found] == [1, 2, 3, 4]
    assert found[0].reason is None
    assert "run 3 has start_step 0 and no job id" in found[1].reason
    assert "run 4 has start_step 0" in found[2].reason
    assert found[3].reason == "run 6's job id 'K' differs from run 5's 'J'"
    assert found[0].describe() == "runs 1-2" and found[3].describe() == "run 6"
    assert isinstance(found[0], Job)


def test_given_job_tells_an_id_from_the_run_id(tmp_path):
    log = log_of(tmp_path, [run_record(100, process_start=99, run_id="a"),
                            run_record(200, process_start=199, run_id="b", job="J")])
    first, second = log.runs
    assert given_job(first) is None      # its job is its run id: no id was given
    assert given_job(second) == "J"
    # a run with a job id after one without, start_step 0: a new job
    assert new_job_reason(first, second) is not None
