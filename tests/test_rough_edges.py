"""The rough edges a new user met, each fixed and held here.

References: the process's own streams and exit status (a pipe closed by its
reader), the peak table's display names, `git check-ignore`, the training
table `examples/train_gpt2.py` prints beside the report of its own log, and
hand-made measurement sequences for the examples' second look at the peak.
"""
from __future__ import annotations

import os
import re
import subprocess
import json
import sys
from pathlib import Path

import pytest

import mfu_tracker
from mfu_tracker import Tracker, lookup_gpu_spec, track
from mfu_tracker._dtypes import DTYPE_NAMES
from mfu_tracker.cli._gpus import TABLE_DTYPES

from _cli import run_cli as cli
from _examples import run_example

ROOT = Path(mfu_tracker.__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
ESTIMATE = ("estimate", "--params", "7e9", "--tokens-per-sec", "1000")


# ---- the command line -------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["gpus"], ["gpus", "--detect"]])
def test_output_piped_into_head_exits_quietly(argv):
    """`mfu-tracker gpus | head -1`: the reader leaves after one line."""
    proc = subprocess.Popen([sys.executable, "-m", "mfu_tracker", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=ENV)
    first = proc.stdout.readline()
    proc.stdout.close()                                  # what head does after its line
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0
    assert first and "Traceback" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize("flag, value, message", [
    ("--params", "-7e9", "argument --params: must be a finite number > 0, got -7e9"),
    ("--params", "-1.5", "argument --params: must be a finite number > 0, got -1.5"),
    ("--tokens-per-sec", "-3", "argument --tokens-per-sec: must be a finite number > 0, got -3"),
])
def test_a_negative_value_is_named(capsys, flag, value, message):
    argv = [a for a in ESTIMATE if a not in (flag,)]
    if flag == "--tokens-per-sec":
        argv = ["estimate", "--params", "7e9"]
    status, _, err = cli(capsys, *argv, flag, value, "--gpu", "B200")
    assert status == 2 and message in err, err
    assert "expected one argument" not in err


@pytest.mark.parametrize("gpu, wrong, suggestion", [
    ("h100sxm", "'h100sxm'", "'H100 SXM'"),
    ("H100 SMX", "'smx'", "'H100 SXM'"),          # was silently read as "H100"
    ("A100 SXM4 80BG", "'80bg'", "'A100 SXM4 80GB'"),
    ("B20O", "'b20o'", "'B200'"),
])
def test_a_misspelt_gpu_gets_did_you_mean(capsys, gpu, wrong, suggestion):
    status, out, err = cli(capsys, *ESTIMATE, "--gpu", gpu)
    assert status == 2 and out == ""
    assert f"--gpu {gpu!r}: {wrong} is in no row's name; did you mean {suggestion}" in err


def test_names_the_table_knows_are_not_flagged(capsys):
    for gpu in ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-32GB", "AMD Instinct MI300X", "A100"):
        status, _, err = cli(capsys, *ESTIMATE, "--gpu", gpu, "--dtype", "fp16")
        assert status == 0, (gpu, err)
    status, _, err = cli(capsys, *ESTIMATE, "--gpu", "H100")   # two rows: the listing, no typo
    assert status == 2 and "fits 2 rows" in err and "did you mean" not in err
    # "super" is a word the lookup reads (another product: rejected), not a misspelling
    status, _, err = cli(capsys, *ESTIMATE, "--gpu", "GeForce RTX 4080 SUPER")
    assert status == 2 and "not in the peak table" in err and "in no row's name" not in err


def test_the_library_says_did_you_mean_too():
    with pytest.warns(UserWarning, match=r"no datasheet peak for device 'H100SXM'.*did you mean "
                                         r"'H100 SXM'"):
        assert lookup_gpu_spec("H100SXM") is None


def test_every_dtype_estimate_lists_is_a_gpus_column(capsys):
    status, _, err = cli(capsys, *ESTIMATE, "--gpu", "A100", "--dtype", "fp8")
    listed = re.search(r"they have: ([\w, ]+)\)", err).group(1).split(", ")
    assert "int4" in listed and set(listed) <= set(TABLE_DTYPES)
    assert TABLE_DTYPES == DTYPE_NAMES
    status, out, _ = cli(capsys, "gpus")
    header = next(line for line in out.splitlines() if line.startswith("device"))
    assert header.split()[1:-2] == list(DTYPE_NAMES)


# ---- the library ------------------------------------------------------------------------------

@pytest.mark.parametrize("call, name, bad", [
    (lambda v: track(v), "flop_count", -5e9),
    (lambda v: track(v), "flop_count", 0),
    (lambda v: track(1e9, v), "param_bytes", -1),
    (lambda v: track(1e9, v), "param_bytes", 0),
    (lambda v: Tracker(v), "flops_per_step", -5e9),
    (lambda v: Tracker(v), "flops_per_step", 0),
])
def test_zero_and_negative_work_get_one_rule(call, name, bad):
    """track(-5e9) said ">= 0" while track(0) said "> 0": one rule, "> 0"."""
    with pytest.raises(ValueError, match=rf"{name}:? must be a finite number > 0"):
        call(bad)


def test_importing_a_source_tree_without_a_build_says_how_to_build(tmp_path):
    tree = tmp_path / "checkout"
    for path in (ROOT / "mfu_tracker").rglob("*.py"):
        target = tree / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    proc = subprocess.run([sys.executable, "-S", "-c", "import mfu_tracker"], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: mfu_tracker: the extension is not built")
    assert "pip install --no-build-isolation -e ." in last and f"pip install {tree}" in last
    assert "circular import" not in proc.stderr


def test_dist_is_ignored_by_git():
    done = subprocess.run(["git", "check-ignore", "-q", "dist/torch_mfu-0.1.0.tar.gz"], cwd=ROOT)
    assert done.returncode == 0


# ---- rank-window keys cover the window's steps -----------------------------------------------
#
# The step periods run on the fake GPU timeline (exact), and the aggregation's
# host seconds on a host clock of the test's (the aggregator's perf_counter):
# each step takes 10 ms of GPU work while the host clock moves 12 ms, so a
# figure says which clock it came from, whatever the machine's load.

MS = 1_000_000  # ns


class _HostClock:
    """The aggregator's host clock (``time.perf_counter``), moved by the test."""

    def __init__(self) -> None:
        self.s = 1000.0

    def perf_counter(self) -> float:
        return self.s


def _warm_up_then_steps(fake, monkeypatch, metrics_at: int, steps: int = 3):
    """A one-rank gloo job on the fake GPU: the clock starts (boundary 1), a
    300 ms warm-up step (a first-use build; boundary 2), then ``steps`` steps
    of 10 ms of GPU work, 12 ms of host time; metrics() also right after
    boundary ``metrics_at`` (0: not before the end). Returns the last
    metrics() dict."""
    import torch.distributed as dist

    from mfu_tracker.distributed import _collective

    host = _HostClock()
    monkeypatch.setattr(_collective, "time", host)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        t = Tracker(1e6, dtype="fp32", peak_tflops=1.0, clock="cuda", stream=0, warmup=1,
                    window=10, comm=False)
        for boundary, gpu_ms in enumerate([None, 300] + [10] * steps, start=1):
            if gpu_ms is not None:
                fake.set_work_ns(gpu_ms * MS)     # the step's GPU work, resolved at once
                fake.advance(gpu_ms * MS)
                host.s += (gpu_ms + 2) * 1e-3     # the host's own clock: 2 ms more
            t.step()
            fake.set_work_ns(0)
            if boundary == metrics_at:
                t.metrics()                       # an aggregation at this boundary
        last = t.metrics()
        t.close()
        return last
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("metrics_at", [0, 1])
def test_rank_step_times_leave_the_warm_up_out_like_the_window(fake, monkeypatch, metrics_at):
    """A 300 ms first step is warm-up: the window leaves it out, and so must
    step_time_rank_max / _min when the interval since the last aggregation
    (construction, or boundary 1) holds it: the window's own mean period."""
    m = _warm_up_then_steps(fake, monkeypatch, metrics_at)
    # the window: 3 steps of 10 ms on the GPU (the 300 ms warm-up left out), not the
    # host's 12 ms, nor (300 + 30) / 4 = 82.5 ms with the warm-up
    assert m["throughput/step_time_s"] == pytest.approx(10e-3, rel=1e-6)
    assert m["throughput/step_time_rank_max"] == m["throughput/step_time_s"]
    assert m["throughput/step_time_rank_min"] == m["throughput/step_time_s"]


def test_an_interval_after_the_warm_up_is_host_time(fake, monkeypatch):
    """metrics() right after the warm-up step closed (boundary 2): the next
    interval holds window steps only, timed on the host."""
    m = _warm_up_then_steps(fake, monkeypatch, 2)
    # host seconds per step since boundary 2: 3 x 12 ms / 3 steps, not the window's
    # 10 ms mean period (the GPU's)
    assert m["throughput/step_time_rank_max"] == pytest.approx(12e-3, rel=1e-9)
    assert m["throughput/step_time_s"] == pytest.approx(10e-3, rel=1e-6)


def test_later_intervals_are_host_time(fake, monkeypatch):
    import torch.distributed as dist

    from mfu_tracker.distributed import _collective

    host = _HostClock()
    monkeypatch.setattr(_collective, "time", host)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        t = Tracker(1e6, dtype="fp32", peak_tflops=1.0, clock="cuda", stream=0, warmup=1,
                    window=10, comm=False)
        t.step()
        for gpu_ms in [300] + [10] * 4:           # the warm-up, then 4 steps
            fake.set_work_ns(gpu_ms * MS)
            fake.advance(gpu_ms * MS)
            host.s += gpu_ms * 1e-3
            t.step()
        fake.set_work_ns(0)
        t.metrics()
        for _ in range(4):                        # 4 steps: 10 ms on the GPU, 15 on the host
            fake.set_work_ns(10 * MS)
            fake.advance(10 * MS)
            host.s += 15e-3
            t.step()
        fake.set_work_ns(0)
        later = t.metrics()                       # host seconds per step since then
        assert later["throughput/step_time_rank_max"] == pytest.approx(15e-3, rel=1e-9)
        assert later["throughput/step_time_s"] == pytest.approx(10e-3, rel=1e-6)
        t.close()
    finally:
        dist.destroy_process_group()


# ---- make run: the report a person reads --------------------------------------------------------

def test_make_runs_report_is_short_and_numbers_steps_like_the_training_table(tmp_path):
    log = tmp_path / "metrics.jsonl"
    train = run_example("train_gpt2.py", "--steps", "5", "--batch-size", "2", "--seq-len", "16",
                        "--hidden", "32", "--layers", "1", "--heads", "2", "--vocab-size", "64",
                        "--log-path", log, env=ENV)
    assert train.returncode == 0, train.stderr
    rows = [int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+\d+\.\d{3}\s", train.stdout, re.M)]
    assert rows == [1, 2, 3, 4, 5]                       # steps completed, as the log numbers them
    report = subprocess.run([sys.executable, "-m", "mfu_tracker", "report", str(log), "--out",
                             str(tmp_path / "r.png")], capture_output=True, text=True,
                            timeout=300, env=ENV)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    # The example measured its CPU peak before training and again after: on a busy
    # machine the two differ by more than 25% and the report says so in a caveat
    # line -- what the log records (its peak_check), not how busy this machine is.
    # (No peak_check when a measurement was refused: the machine was too busy.)
    checks = [r for r in map(json.loads, log.read_text().splitlines())
              if r.get("record") == "peak_check"]
    busy = any(check["busy"] for check in checks)
    assert len(checks) <= 1 and any(line.startswith("caveat: the peak was measured on a busy "
                                                    "machine") for line in lines) == busy
    assert len([line for line in lines if not line.startswith("caveat: ")]) <= 12, report.stdout
    body = report.stdout.replace(str(tmp_path), "")
    digits = [len(n.replace(".", "").lstrip("0")) for n in re.findall(r"\d+\.\d+", body)]
    assert digits and max(digits) <= 4, body              # rounded figures, no raw floats
    named = {int(s) for s in re.findall(r"\bsteps? (\d+)", report.stdout)}
    assert named and named <= set(rows), (named, rows)   # every step it names is a table row
    assert lines[-1].endswith("(every number drawn: --numbers)")


def test_the_examples_measure_their_peak_again_after_training(monkeypatch):
    """As `make run` does: a peak the examples measured is measured again and
    compared (examples/_common.py, printed at the end of each example)."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import _common

    for name in ("MFU_TRACKER_PEAK_TFLOPS", _common.MEASURED_ON):
        monkeypatch.setenv(name, "")        # so the values ensure_peak sets are undone after
        monkeypatch.delenv(name)
    assert _common.recheck_peak() is None                         # nothing measured
    rates = iter([0.002e12, 0.17e12])                              # busy, then quiet
    monkeypatch.setattr(mfu_tracker, "measure_peak_flops", lambda *a, **k: next(rates))
    assert "MEASURED cpu fp32 GEMM peak 0.002 TFLOP/s" in _common.ensure_peak(
        __import__("torch").device("cpu"))
    line = _common.recheck_peak()
    # the MFU above is against 0.002; against 0.17 it is 0.002 / 0.17 as large: 85x too high
    assert line == ("note: the peak measured 0.002 TFLOP/s before training and 0.17 after: the "
                    "machine was busy during the first; against 0.17 the MFU above reads 85× "
                    "too high")


def test_an_example_on_a_machine_too_busy_to_measure_has_no_peak(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import _common

    for name in ("MFU_TRACKER_PEAK_TFLOPS", _common.MEASURED_ON):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)

    def refuse(*args, **kwargs):
        raise mfu_tracker.PeakMeasurementError("mfu_tracker: the fp32 cpu GEMM peak was not measured")

    monkeypatch.setattr(mfu_tracker, "measure_peak_flops", refuse)
    label = _common.ensure_peak(__import__("torch").device("cpu"))
    assert label == "no peak: the machine was too busy to measure one (MFU n/a)"
    assert "was not measured" in capsys.readouterr().err
    assert "MFU_TRACKER_PEAK_TFLOPS" not in os.environ and _common.recheck_peak() is None
