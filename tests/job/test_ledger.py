"""mfu_tracker/job/_ledger.py: goodput, the badput buckets and one job MFU
over a job's runs (the arithmetic of the module docstring and
docs/ on the job ledger), checked against hand arithmetic on hand-written logs."""
from __future__ import annotations

import pytest

from mfu_tracker.job import BUCKETS, LogError, job_ledger, read_log
from mfu_tracker.job._ledger import diagnosis, rank_of

from ._log_lines import metrics_line, run_record, write


def one_run(path, **run):
    # process starts at 100, first boundary at 110, ten 1 s steps (0.2 s data each) to 120
    return write(path, [run_record(105, process_start=100, **run),
                        metrics_line(10, 120, steps=10, step_s=1.0, data_s=0.2,
                                     first_boundary=110)])


def test_one_run_by_hand(tmp_path):
    ledger = job_ledger(read_log(str(one_run(tmp_path / "m.jsonl"))))
    assert ledger.job_wall_s == 20.0            # 120 - 100
    assert ledger.badput_s["startup"] == 10.0   # 100 -> first boundary 110
    assert ledger.badput_s["data"] == 2.0       # 10 x 0.2
    assert ledger.goodput_s == 8.0              # 10 s of steps - 2 s data
    assert ledger.goodput == pytest.approx(0.4)
    # 10 steps x 1e12 FLOPs / (1 device x 20 s x 100e12 FLOP/s)
    assert ledger.job_mfu == pytest.approx(10e12 / (20 * 100e12))
    assert ledger.largest_loss() == ("startup", pytest.approx(0.5))
    assert list(ledger.badput) == list(BUCKETS)


def test_a_restart_charges_its_gap_and_the_steps_done_twice(tmp_path):
    path = write(tmp_path / "m.jsonl", [
        run_record(105, process_start=100),
        metrics_line(10, 120, steps=10, step_s=1.0, data_s=0.2, first_boundary=110),
        # resumes at step 5 (steps 5..9 are redone), its process starts 10 s after 120
        run_record(135, process_start=130, start_step=5, run_id="r2"),
        metrics_line(15, 150, steps=10, step_s=1.0, data_s=0.2, first_boundary=140),
    ])
    ledger = job_ledger(read_log(str(path)))
    assert len(ledger.runs) == 2
    assert ledger.job_wall_s == 50.0                  # 20 + (10 gap + 20)
    assert ledger.badput_s["restart_gap"] == 10.0     # 130 - 120
    assert ledger.badput_s["lost_progress"] == 5.0    # steps 5..9 of run 1, 1 s each
    assert ledger.badput_s["startup"] == 20.0         # 10 s in each run
    assert ledger.badput_s["data"] == pytest.approx(3.0)  # run 1's 5 kept steps + run 2's 10
    assert ledger.goodput_s == pytest.approx(12.0)    # 4 + 8
    assert sum(ledger.badput.values()) + ledger.goodput == pytest.approx(1.0)
    # kept FLOPs 15e12 / (20 s + 30 s charged) x 100e12: restart gaps are charged
    assert ledger.job_mfu == pytest.approx(15e12 / (50 * 100e12))
    assert ledger.model_flops == pytest.approx(15e12)


def test_no_peak_leaves_job_mfu_out_and_says_why(tmp_path):
    ledger = job_ledger(read_log(str(one_run(tmp_path / "m.jsonl", peak_tflops=None))))
    assert ledger.job_mfu is None
    assert any("job_mfu" in note and "peak" in note for note in ledger.notes)
    assert ledger.goodput_s == 8.0  # the time figures stand without a peak


def test_a_log_without_run_records_is_refused(tmp_path):
    path = write(tmp_path / "m.jsonl", [metrics_line(10, 120, steps=10, step_s=1.0, data_s=0.2,
                                                     first_boundary=110)])
    with pytest.raises(LogError, match="no run records"):
        job_ledger(read_log(str(path)))


def test_diagnosis_names_the_largest_share_in_words():
    assert diagnosis({"data": 0.18, "compute": 0.05}, "step time", rank=3) == \
        "largest loss: data loading, 18.0% of step time, rank 3"
    assert diagnosis({"restart_gap": 0.25}, "job wall time") == \
        "largest loss: the gap between runs, 25.0% of job wall time"
    assert diagnosis({}, "step time") is None


def test_rank_of_reads_the_newest_record_with_the_key():
    records = [{"throughput/mfu_lost_rank/data": 1}, {"throughput/mfu_lost_rank/data": 4.0},
               {"throughput/mfu": 0.3}]
    assert rank_of(records, "data") == 4
    assert rank_of(records, "compute") is None
