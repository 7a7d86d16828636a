"""mfu_tracker/cli/report/_load.py: the report's input read as runs, the runs
``--run`` chooses, and the keys whose extremes a downsampled run keeps."""
from __future__ import annotations

import pytest

from mfu_tracker.cli.report._load import _name, drawn_keys, load, load_streamed, select_runs
from mfu_tracker.cli.report._model import ReportError
from mfu_tracker.job._check import Layout

from cli.report._logs import line, run_record


def two_runs():
    return [run_record(100.0), line(10, mfu=0.2), line(20, mfu=0.3),
            run_record(200.0), line(30, time=230.0, mfu=0.4)]


def test_load_keeps_every_run_and_line(write_log):
    log = load(str(write_log(two_runs())))
    assert [run.number for run in log.runs] == [1, 2]
    assert [[m["step"] for m in run.metrics] for run in log.runs] == [[10, 20], [30]]
    assert log.runs[1].metrics[0]["throughput/mfu"] == 0.4


def test_missing_and_empty_inputs_are_named(tmp_path, write_log):
    with pytest.raises(ReportError, match="no such file or directory"):
        load(str(tmp_path / "absent.jsonl"))
    with pytest.raises(ReportError, match="no metrics in it"):
        load(str(write_log([run_record()])))
    with pytest.raises(ReportError, match=r"no TensorBoard event files \(\*tfevents\*\)"):
        load(str(tmp_path))   # a directory without event files


def test_a_log_whose_only_metrics_line_was_cut_says_so(tmp_path, write_log):
    """A writer killed in its first metrics line: no metrics, and the error
    names the cut line rather than calling the file empty."""
    path = write_log([run_record()])
    with open(path, "a") as f:
        f.write('{"step": 10, "time": 110.0, "throughput/mfu": 0.4')   # no end, no newline
    for read in (load, load_streamed):
        with pytest.raises(ReportError, match=r"no metrics in it but a cut line: .*:2: the last "
                                              r"line is cut short"):
            read(str(path))


def test_select_runs(write_log):
    log = load(str(write_log(two_runs())))
    assert [r.number for r in select_runs(log, "last")] == [2]
    assert [r.number for r in select_runs(log, "all")] == [1, 2]
    assert [r.number for r in select_runs(log, "1")] == [1]
    for bad in ("3", "first", "0"):
        with pytest.raises(ReportError, match=r"run number 1\.\.2 \(the file holds 2 run"):
            select_runs(log, bad)


def test_a_run_without_metrics_is_refused_by_number(write_log):
    log = load(str(write_log([run_record(100.0), run_record(200.0), line(5, mfu=0.1)])))
    with pytest.raises(ReportError, match="run 1 logged no metrics"):
        select_runs(log, "1")


def test_load_streamed_keeps_only_the_chosen_run(write_log):
    path = str(write_log(two_runs()))
    last = load_streamed(path, "last")
    assert [len(run.metrics) for run in last.runs] == [0, 1]
    assert last.runs[0].logged == 2        # counted, not kept
    everything = load_streamed(path, "all")
    assert [len(run.metrics) for run in everything.runs] == [2, 1]


def test_names_of_drawn_keys_under_any_prefix():
    assert _name("throughput/mfu") == "mfu"
    assert _name("a/b/step_time_s") == "step_time_s"
    assert _name("throughput/mfu_lost/data") == "mfu_lost"
    assert _name("throughput/hw/tensor_active") == "hw/tensor_active"
    assert _name("throughput/tflops") is None
    assert _name("throughput/mfu_lost_rank/data") is None   # not a drawn family


def layout(keys):
    """The layout of a metrics line holding ``keys``."""
    return Layout({key: 0.5 for key in keys}, {}, None)


def test_drawn_keys_skip_what_the_panels_leave_out():
    with_mfu = layout(("p/mfu", "p/tokens_per_sec", "p/mfu_lost/data", "p/phase_s/data",
                            "p/tflops"))
    # tokens/s and the phases are drawn only without MFU and the waterfall
    assert drawn_keys(with_mfu) == ("p/mfu", "p/mfu_lost/data")
    without = layout(("p/step_time_s", "p/tokens_per_sec", "p/mfu_lost/data",
                           "p/phase_s/data"))
    # no MFU: no waterfall bar, the phases and tokens/s instead
    assert drawn_keys(without) == ("p/step_time_s", "p/tokens_per_sec", "p/phase_s/data")
