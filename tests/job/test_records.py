"""mfu_tracker/job/_records.py: the log's records -- each metric's unit and
the rule that keeps a value out, the job's name, the run's accessors, and
when the OS started a process (a child started now, against the wall clock)."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from mfu_tracker.job import process_start_time
from mfu_tracker.job._records import (JOB_ENV, Run, invalid_reason, job_name, metric_unit,
                                      new_run_id)


def test_units_of_table_keys_and_families():
    assert metric_unit("throughput/mfu") == "ratio"
    assert metric_unit("throughput/step_time_s") == "s"
    assert metric_unit("a/b/throughput/tokens_per_sec") == "tokens/s"   # any prefix depth
    assert metric_unit("throughput/mfu_lost/data") == "fraction of step time"  # a family
    assert metric_unit("throughput/not_a_metric") is None


def test_invalid_reason_follows_the_unit():
    assert invalid_reason("throughput/mfu", 0.4) is None
    assert invalid_reason("throughput/mfu", -0.4) == "negative ratio"
    assert invalid_reason("throughput/step_time_s", float("inf")) == "not a finite number"
    assert invalid_reason("throughput/mfu", "0.4") == "not a finite number"
    assert invalid_reason("throughput/mfu", 10 ** 400) == "not a finite number"  # past a float
    assert invalid_reason("custom", -1) is None  # outside the table: not judged


def test_job_name_precedence(monkeypatch):
    for name in JOB_ENV:
        monkeypatch.delenv(name, raising=False)
    assert job_name("rid") == "rid"
    monkeypatch.setenv("SLURM_JOB_ID", "slurm")
    assert job_name("rid") == "slurm"
    monkeypatch.setenv("MFU_TRACKER_JOB", "mine")  # first of JOB_ENV wins
    assert job_name("rid") == "mine"
    assert job_name("rid", "given") == "given"


def test_run_ids_are_fresh_128_bit_hex():
    a, b = new_run_id(), new_run_id()
    assert a != b and len(a) == 32 and int(a, 16) >= 0


def test_run_accessors():
    run = Run(number=1, record={"job": "J"}, line=1, metrics=[{}, {}], metrics_lines=5)
    assert run.get("job") == "J" and run.get("missing", 3) == 3
    assert run.logged == 5  # the lines read, though only 2 were kept
    assert Run(number=2, record=None, line=1).get("job", "none") == "none"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_process_start_time_of_a_child_started_now():
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        started = process_start_time(child.pid)
    finally:
        child.kill()
        child.wait()
    after = time.time()
    # clock ticks are 1/100 s: the start lies within the Popen call, give or take a tick
    assert before - 0.02 <= started <= after + 0.02
