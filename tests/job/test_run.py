"""mfu_tracker/job/_run.py: a tracker's run in the job -- its run record, one
ledger interval per logged ``metrics()`` (contiguous, each the difference of
the step engine's totals), the run end, the peak check. Driven through the
public Tracker (``log_path=``) on the CPU clock; the log read back as JSON."""
from __future__ import annotations

import json

import pytest

from mfu_tracker import Tracker
from mfu_tracker.job._run import RunBook

FLOPS = 100.0  # per step


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def single_rank(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MFU_TRACKER_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"):
        monkeypatch.delenv(name, raising=False)


def test_run_record_intervals_and_run_end(tmp_path, single_rank):
    path = tmp_path / "m.jsonl"
    tracker = Tracker(FLOPS, dtype="fp32", peak_tflops=2.0, clock="cpu", window=3, warmup=0,
                      log_path=path, start_step=40, job="J",
                      model_info={"seq_len": 16, "flops": "declared"})
    for _ in range(4):
        tracker.step()
    tracker.metrics()           # 3 steps closed (4 boundaries)
    for _ in range(2):
        tracker.step()
    tracker.metrics()           # 2 more
    tracker.step()
    tracker.close()             # the last one, in the run end
    run, first, second, end = records(path)
    assert run["record"] == "run" and run["job"] == "J" and run["run_id"] == tracker.run_id
    assert run["start_step"] == 40 and run["peak_tflops"] == 2.0 and run["devices"] == 1
    assert run["dtype"] == "fp32" and run["model"] == {"seq_len": 16, "flops": "declared"}
    intervals = [first["ledger"], second["ledger"], end["ledger"]]
    # contiguous global steps from start_step: 40..43, 43..45, 45..46
    assert [(i["from_step"], i["to_step"]) for i in intervals] == [(40, 43), (43, 45), (45, 46)]
    assert [i["model_flops"] for i in intervals] == [3 * FLOPS, 2 * FLOPS, 1 * FLOPS]
    assert all(i["step_s"] >= 0 and i["flops_ranks"] == 1 for i in intervals)
    assert first["step"] == 43 and second["step"] == 45
    assert end["record"] == "run_end" and end["step"] == 46
    # the first boundary is the same wall time in every interval
    assert len({i["first_boundary"] for i in intervals}) == 1


def test_peak_check_logs_both_figures(tmp_path, single_rank):
    path = tmp_path / "m.jsonl"
    with Tracker(FLOPS, dtype="fp32", peak_tflops=2.0, clock="cpu", log_path=path) as tracker:
        assert tracker.peak_check(2.0e12) is False     # the same peak: agrees
        assert tracker.peak_check(1.0e12) is True      # half of it: a busy machine
    checks = [r for r in records(path) if r.get("record") == "peak_check"]
    assert [(c["peak_tflops"], c["remeasured_tflops"], c["busy"]) for c in checks] == \
        [(2.0, 2.0, False), (2.0, 1.0, True)]


def test_closing_twice_writes_one_run_end(tmp_path, single_rank):
    path = tmp_path / "m.jsonl"
    tracker = Tracker(FLOPS, dtype="fp32", peak_tflops=2.0, clock="cpu", log_path=path)
    tracker.step()
    tracker.close()
    tracker.close()
    assert [r.get("record") for r in records(path)].count("run_end") == 1


def test_the_logged_interval_drops_the_working_fields():
    assert RunBook.record({"from_step": 0, "to_step": 2, "_now": {}, "_untimed": 0}) == \
        {"from_step": 0, "to_step": 2}
