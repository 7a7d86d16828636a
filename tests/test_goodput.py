"""The job ledger (docs/goodput.md): run records, ledger intervals, badput phases and
``mfu-tracker goodput``.

References: the log's own lines read back as plain JSON (never through the
package's reader) and recomputed by hand beside each expected number; the
process start time against psutil's; the step periods on the fake driver's
GPU timeline, exact. The two-run job runs as two real processes appending to
one log.
"""
from __future__ import annotations

import json
import math
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mfu_tracker import Tracker, user_gpu_spec
from mfu_tracker.cli import main
from mfu_tracker.job import read_log
from mfu_tracker.job._records import process_start_time

ROOT = Path(__file__).resolve().parent.parent
MS = 1_000_000
FLOPS = 1e9                # model FLOPs per step
PEAK_TFLOPS = 1.0
BUCKETS = ("startup", "compile", "checkpoint", "eval", "data", "lost_progress", "restart_gap",
           "other")


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def runs_of(path):
    """The file's lines grouped at each run record (by hand)."""
    runs = []
    for line in records(path):
        if line.get("record") == "run":
            runs.append([])
        runs[-1].append(line)
    return runs


def goodput(capsys, *argv):
    status = main(["goodput", *map(str, argv)])
    out, err = capsys.readouterr()
    return status, out, err


# ---- two real processes against one log ---------------------------------------------

RUN = r'''
import sys, time
from mfu_tracker import Tracker

start, end, checkpoint_after, log = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t = Tracker(%(flops)r, dtype="fp32", peak_tflops=%(peak)r, clock="cpu", window=10, warmup=0,
            log_path=log, start_step=start)
t.step()                                    # starts the clock: step `start` opens
for step in range(start, end):
    with t.phase("data"):
        time.sleep(0.001)
    time.sleep(0.004 if step > start else 0.1)  # the step's work; the first step is slow
    t.step()                                # step `step` closes
    if step == checkpoint_after:
        with t.phase("checkpoint"):
            time.sleep(0.2)
    if (step + 1) %% 10 == 0:
        t.metrics()                         # one line per 10 steps
t.close()                                   # the run-end record
''' % {"flops": FLOPS, "peak": PEAK_TFLOPS}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run 1 trains steps 0-29 (a 0.2 s checkpoint after step 19) and exits;
    run 2 resumes at 20 and trains to 39 (a 0.2 s checkpoint after step 29)."""
    tmp = tmp_path_factory.mktemp("job")
    script, log = tmp / "run.py", tmp / "metrics.jsonl"
    script.write_text(RUN)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    for start, end, checkpoint in ((0, 30, 19), (20, 40, 29)):
        done = subprocess.run([sys.executable, str(script), str(start), str(end), str(checkpoint),
                               str(log)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return log


def test_two_runs_goodput_by_hand(two_runs, tmp_path, capsys):
    status, out, err = goodput(capsys, two_runs, "--json", tmp_path / "g.json")
    assert status == 0, err
    got = json.loads((tmp_path / "g.json").read_text())
    run1, run2 = runs_of(two_runs)
    assert run1[0]["start_step"] == 0 and run2[0]["start_step"] == 20
    assert run1[-1]["record"] == "run_end" and run2[-1]["record"] == "run_end"
    intervals = [[line["ledger"] for line in run if "ledger" in line] for run in (run1, run2)]
    # the step ranges: run 1 logged [0,10) [10,20) [20,30) and an empty end; run 2 [20,30) [30,40)
    assert [(i["from_step"], i["to_step"]) for i in intervals[0]] == [(0, 10), (10, 20), (20, 30),
                                                                       (30, 30)]
    assert [(i["from_step"], i["to_step"]) for i in intervals[1]] == [(20, 30), (30, 40), (40, 40)]

    # lost progress: run 1's steps 20..29, re-done by run 2 -- their whole periods
    lost = sum(i["step_s"] for i in intervals[0] if i["from_step"] >= 20)
    assert got["badput_s/lost_progress"] == lost and lost > 10 * 0.005
    # checkpoint: the two checkpoint phases, each at least its 0.2 s sleep
    phases = [i["phase_s"].get("checkpoint", 0.0) for run in intervals for i in run]
    assert len([p for p in phases if p]) == 2 and all(p >= 0.2 for p in phases if p)
    assert got["badput_s/checkpoint"] == pytest.approx(math.fsum(phases), rel=1e-12)
    # startup: each process start to its first boundary, plus its first step's excess
    # over the run's median step (the median of the intervals' mean step, the first
    # step left out of its interval); the first step itself, and its FLOPs, are kept
    excess = []
    for run in intervals:
        first = run[0]["first_step_s"]
        n0 = run[0]["to_step"] - run[0]["from_step"]
        means = [(run[0]["step_s"] - first) / (n0 - 1)] + \
            [i["step_s"] / (i["to_step"] - i["from_step"]) for i in run[1:] if i["to_step"] > i["from_step"]]
        assert first >= 0.1                           # the slow first step slept 0.1 s
        # its excess over the median step (none when the machine made the others slower)
        excess.append(max(0.0, first - statistics.median(means)))
    # data: the kept steps' data phase; goodput: the kept steps' time less it
    # and the first steps' excess
    kept = [i for i in intervals[0] if i["to_step"] <= 20] + intervals[1]
    data = math.fsum(i["phase_s"].get("data", 0.0) for i in kept)
    productive = math.fsum(i["step_s"] for i in kept) - data - sum(excess)
    assert got["badput_s/data"] == pytest.approx(data, rel=1e-12) and data >= 40 * 0.001
    assert got["goodput_s"] == pytest.approx(productive, rel=1e-12)
    # the wall: first process start to the last record; the gap between the runs
    start1, start2 = run1[0]["process_start"], run2[0]["process_start"]
    end1, end2 = run1[-1]["time"], run2[-1]["time"]
    assert got["job_wall_s"] == pytest.approx(end2 - start1, rel=1e-12)
    assert got["badput_s/restart_gap"] == pytest.approx(start2 - end1, rel=1e-12)
    startup1 = intervals[0][0]["first_boundary"] - start1 + excess[0]
    startup2 = intervals[1][0]["first_boundary"] - start2 + excess[1]
    assert got["badput_s/startup"] == pytest.approx(startup1 + startup2, rel=1e-12)
    # shares: goodput and badput add up to exactly 1
    shares = [got["goodput"], *(got[f"badput/{k}"] for k in BUCKETS)]
    assert math.fsum(shares) == 1.0
    assert got["goodput"] == pytest.approx(productive / (end2 - start1), rel=1e-12)
    # job MFU: kept FLOPs (steps 0..19 of run 1, 20..39 of run 2) over the device-seconds
    # (1 device from run 1's start to its last record, then to run 2's last) x the peak
    assert got["job_mfu"] == pytest.approx(40 * FLOPS / ((end1 - start1) + (end2 - end1))
                                           / (PEAK_TFLOPS * 1e12), rel=1e-12)
    assert "job_mfu=" in out and re.search(r"^largest loss: \w", out, re.M)


def test_two_runs_report_draws_one_bar_per_run_and_the_job(two_runs, tmp_path, capsys):
    status = main(["report", str(two_runs), "--out", str(tmp_path / "r.png"), "--run", "all",
                   "--numbers"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "runs: the file holds 2; drawn: all runs" in out
    ledger = [line for line in out.splitlines() if line.startswith("  run=")
              or line.startswith("  job wall_s=")]
    assert len(ledger) == 3                           # run 1, run 2, the job
    for line in ledger[:2]:                          # each bar adds up to its wall time
        cells = dict(cell.split("=") for cell in line.split())
        parts = [float(cells[k]) for k in ("goodput", *BUCKETS)]
        assert math.fsum(parts) == pytest.approx(float(cells["wall_s"]), rel=1e-9, abs=1e-9)


# ---- every kept step of every run: a loop whose first call is step() ----------------------

WRAPPED = r'''
import os, sys, time
import torch
from mfu_tracker import MFUOptimizerWrapper

start, end, log, phases = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
x = torch.randn(8, 64)
opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.01), model, dtype="fp32",
                          peak_tflops=1.0, warmup=0, window=10, start_step=start, log_path=log,
                          sample_batch=x, phases=phases)
for step in range(start, end):                 # the plain loop: nothing before the forward
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
    time.sleep(0.001)
    if (step + 1) % 10 == 0:
        opt.metrics()
if end == 30:
    os._exit(1)                                # run 1 dies after step 29: no run end
'''
#: The model FLOPs of one step of WRAPPED: forward 2 x 8 x 64 x 64 = 65,536; the
#: weight's gradient 65,536 more (the input needs none; bias ignored): 131,072.
WRAPPED_STEP_FLOPS = 131_072


@pytest.mark.parametrize("phases", [True, False], ids=["hooks", "no-hooks"])
def test_job_mfu_counts_every_kept_step_when_the_loop_starts_with_its_forward(
        phases, tmp_path, capsys):
    """Run 1 trains steps 0-29 and dies after step 29; run 2 resumes at 20 and
    trains through 39, both through MFUOptimizerWrapper in the plain loop
    (forward, backward, step(), zero_grad()): 40 kept steps, 0-19 and 20-39.
    Each run's first step ran before anything started its clock: with the
    model's hooks the clock starts at its forward; without them (phases=False)
    it is numbered, untimed, its FLOPs kept and the JSON says so."""
    script, log = tmp_path / "run.py", tmp_path / "m.jsonl"
    script.write_text(WRAPPED)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    for start, end in ((0, 30), (20, 40)):
        done = subprocess.run([sys.executable, str(script), str(start), str(end), str(log),
                               str(int(phases))], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == (1 if end == 30 else 0), done.stderr
    run1, run2 = runs_of(log)
    intervals = [[line["ledger"] for line in run if "ledger" in line] for run in (run1, run2)]
    # every optimizer step numbered as the loop numbers it: run 1 logged after steps
    # 9, 19, 29 (global steps 10, 20, 30), run 2 after 29 and 39, then its run end
    assert [line["step"] for line in run1[1:]] == [10, 20, 30]
    assert [(i["from_step"], i["to_step"]) for i in intervals[0]] == [(0, 10), (10, 20), (20, 30)]
    assert [(i["from_step"], i["to_step"]) for i in intervals[1]] == [(20, 30), (30, 40), (40, 40)]
    # each run's first interval: all 10 steps timed (hooks), or its first untimed
    untimed = [run[0]["untimed_steps"] for run in intervals]
    assert untimed == ([0, 0] if phases else [1, 1])
    for run in intervals:
        first = run[0]
        timed = 10 - first["untimed_steps"]
        assert first["flops_steps"] == timed and first["model_flops"] == timed * WRAPPED_STEP_FLOPS
        assert first["untimed_flops"] == first["untimed_steps"] * WRAPPED_STEP_FLOPS
    status, out, err = goodput(capsys, log, "--json", tmp_path / "g.json")
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    # kept: run 1's steps 0..19 (steps 20..29 were re-done by run 2) and run 2's 20..39:
    # 40 steps x 131,072 FLOPs, over 1 device x (run 1: its process start to its last
    # record; run 2: from there to its run end) x 1e12 FLOP/s
    start1, end1, end2 = run1[0]["process_start"], run1[-1]["time"], run2[-1]["time"]
    assert g["job_mfu"] == pytest.approx(40 * WRAPPED_STEP_FLOPS / ((end2 - start1) * 1e12),
                                         rel=1e-12)
    notes = [n for n in g["notes"] if "before the run's clock started" in n]
    if phases:
        assert notes == []
    else:                                      # which steps, why, and where they went
        assert [n.split(": ", 1)[1] for n in notes] == [
            f"step {s} ran before the run's clock started (the first step() came after the "
            f"forward and backward): not timed, its time is in startup; its model FLOPs count "
            f"in job_mfu" for s in (0, 20)]


# ---- run records, run ends, crashes --------------------------------------------------

def test_the_run_record_and_the_run_end(tmp_path, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "MFU_TRACKER_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    from mfu_tracker.job import _run

    started = process_start_time()
    monkeypatch.setattr(_run, "process_start_time", lambda: started)
    log = tmp_path / "m.jsonl"
    t = Tracker(100.0, dtype="fp32", peak_tflops=2.0, clock="cpu", num_gpus=2, log_path=log,
                start_step=7, warmup=0)
    (run,) = records(log)
    assert run["record"] == "run" and re.fullmatch(r"[0-9a-f]{32}", run["run_id"])
    assert run["run_id"] == t.run_id and run["job"] == t.run_id      # no job variable set
    assert run["host"] == socket.gethostname() and run["pid"] == os.getpid()
    assert (run["ranks"], run["devices"], run["start_step"]) == (1, 2, 7)
    assert (run["peak_tflops"], run["peak_source"], run["dtype"]) == (2.0, "user", "fp32")
    # from the OS: this process's start as process_start_time() gave it (which
    # test_process_start_time_brackets_a_child_start checks), long before the tracker
    assert run["process_start"] == started and started < run["time"]
    t.step()
    t.step()
    assert t.global_step == 8                         # start_step + 1 step completed
    m = t.metrics()
    t.close()
    lines = records(log)
    assert [line.get("record") for line in lines] == ["run", None, "run_end"]
    assert lines[1]["step"] == 8 and lines[1]["ledger"]["from_step"] == 7
    assert lines[1]["ledger"]["to_step"] == 8 and lines[1]["ledger"]["model_flops"] == 100.0
    assert {k: v for k, v in lines[1].items() if k not in ("step", "time", "ledger")} == m
    assert lines[2]["step"] == 8 and lines[2]["ledger"]["from_step"] == 8
    t.close()                                         # twice: one run end
    assert len(records(log)) == 3


EXIT = r'''
import os, sys
from mfu_tracker import Tracker
t = Tracker(1e9, dtype="fp32", peak_tflops=1.0, clock="cpu", window=2, warmup=0,
            log_path=sys.argv[1])
for _ in range(4):
    t.step()
t.metrics()
t.step()
if sys.argv[2] == "crash":
    os._exit(3)            # killed: no run end
'''


@pytest.mark.parametrize("how", ["clean", "crash"])
def test_a_clean_exit_ends_the_run_and_a_crash_leaves_its_last_record(tmp_path, how):
    script, log = tmp_path / "exit.py", tmp_path / "m.jsonl"
    script.write_text(EXIT)
    done = subprocess.run([sys.executable, str(script), str(log), how],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == (0 if how == "clean" else 3), done.stderr
    lines = records(log)
    if how == "clean":
        # no close(): the interpreter's exit wrote the run end, with the last step
        assert [line.get("record") for line in lines] == ["run", None, "run_end"]
        assert (lines[2]["ledger"]["from_step"], lines[2]["ledger"]["to_step"]) == (3, 4)
    else:
        assert [line.get("record") for line in lines] == ["run", None]
    log_read = read_log(str(log))
    assert log_read.runs[0].last_time == lines[-1]["time"]     # the last record ends the run


def test_process_start_time_brackets_a_child_start(monkeypatch):
    """The OS's start time of a child, on the boot clock /proc counts, lies
    between the parent's reading of that clock just before it started it and
    the child's own first reading (to the kernel's 1/100 s tick below: the
    start is whole ticks). Its wall time is that plus the wall clock less the
    boot clock, which lies between the test's own readings around it.
    (psutil's create_time is no reference: it adds the whole-second boot time
    of /proc/stat, up to 1 s off.)"""
    from mfu_tracker.job import _records

    boot = time.CLOCK_BOOTTIME
    tick = 1 / os.sysconf("SC_CLK_TCK")
    for _ in range(3):
        before = time.clock_gettime(boot)
        child = subprocess.Popen([sys.executable, "-S", "-c",
                                  "import time, sys; print(time.clock_gettime(time.CLOCK_BOOTTIME), "
                                  "flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
        try:
            first = float(child.stdout.readline())
            started = _records.process_start_boot_s(child.pid)
            assert before - tick <= started <= first
            # on the wall clock: the offset as the module reads it, plus the boot start
            with monkeypatch.context() as patched:
                patched.setattr(_records, "wall_minus_boot_s", lambda: 1e9)
                assert process_start_time(child.pid) == 1e9 + started
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
    # the offset: the module's wall and boot readings lie between the test's
    wall_before, boot_before = time.time(), time.clock_gettime(boot)
    offset = _records.wall_minus_boot_s()
    wall_after, boot_after = time.time(), time.clock_gettime(boot)
    assert wall_before - boot_after <= offset <= wall_after - boot_before
    assert process_start_time(2 ** 22 + 12345) is None          # no such process


# ---- badput phases leave the step (the fake GPU timeline, exact) ----------------------

SPEC = user_gpu_spec(1000.0, name="fake GPU")  # 1e15 FLOP/s


def test_badput_phases_leave_the_step_and_go_to_the_ledger(fake, tmp_path):
    log = tmp_path / "m.jsonl"
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, log_path=log)
    # each record completes at max(previous + work, host now)
    t.step()                                      # GPU 0
    with t.phase("forward"):                      # GPU 0
        fake.set_work_ns(3 * MS)
    fake.set_work_ns(0)                           # forward ends at GPU 3
    with t.phase("checkpoint"):                   # GPU 3
        fake.advance(50 * MS)                     # host writes; the GPU sits idle until 50
    with t.phase("eval"):                         # GPU 50: checkpoint 47 ms
        fake.set_work_ns(20 * MS)                 # 20 ms of eval kernels: ends at GPU 70
    fake.set_work_ns(2 * MS)
    t.step()                                      # GPU 72: period 72 - 47 - 20 = 5 ms
    fake.advance(100 * MS)
    m = t.metrics()
    assert m["throughput/step_time_s"] == pytest.approx(5e-3, rel=1e-9)
    assert m["throughput/mfu"] == pytest.approx(5e11 / 1e15 / 5e-3, rel=1e-9)
    assert "throughput/phase_s/checkpoint" not in m   # no share of the step: the ledger's
    assert math.fsum([m["throughput/mfu"], *(v for k, v in m.items() if "/mfu_lost/" in k)]) == 1.0
    ledger = records(log)[1]["ledger"]
    assert ledger["step_s"] == pytest.approx(5e-3, rel=1e-9)
    assert ledger["phase_s"]["checkpoint"] == pytest.approx(47e-3, rel=1e-9)
    assert ledger["phase_s"]["eval"] == pytest.approx(20e-3, rel=1e-9)
    assert ledger["phase_s"]["forward"] == pytest.approx(3e-3, rel=1e-9)
    assert fake.sync_calls() == 0


@pytest.mark.parametrize("name", ["checkpoint", "eval", "compile"])
def test_badput_phase_names_are_accepted(fake, tmp_path, name):
    """Each badput name, through ``phase()`` and through ``begin_phase()`` /
    ``end_phase()``: both blocks land in the ledger under that name and leave
    the step period (fake GPU timeline, as above)."""
    log = tmp_path / "m.jsonl"
    t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, log_path=log)
    t.step()                                      # GPU 0
    with t.phase(name):                           # GPU 0
        fake.advance(10 * MS)                     # the GPU idles until host 10
    t.begin_phase(name)                           # GPU 10
    fake.advance(5 * MS)
    t.end_phase()                                 # GPU 15: 10 + 5 ms of the phase
    fake.set_work_ns(2 * MS)
    t.step()                                      # GPU 17: period 17 - 15 = 2 ms
    fake.advance(100 * MS)
    m = t.metrics()
    assert m["throughput/step_time_s"] == pytest.approx(2e-3, rel=1e-9)
    assert f"throughput/phase_s/{name}" not in m
    ledger = records(log)[1]["ledger"]
    assert ledger["phase_s"][name] == pytest.approx(15e-3, rel=1e-9)


# ---- the ledger's arithmetic on a hand-written log -------------------------------------

def _interval(first, end, step_s, data=0.0, **extra):
    return {"from_step": first, "to_step": end, "step_s": step_s, "phase_s": {"data": data, **extra},
            "own_s": 0.0, "dropped": 0, "model_flops": 1e12 * (end - first),
            "flops_steps": end - first, "flops_ranks": 2, "compile_calls": 0,
            "first_boundary": None}


def hand_log(path):
    """Two runs, 2 devices of 100 TFLOP/s each; run 2 resumes at step 15,
    inside run 1's second interval [10, 20)."""
    lines = [
        {"record": "run", "time": 1000.0, "run_id": "a", "ranks": 2, "devices": 2,
         "process_start": 990.0, "start_step": 0, "peak_tflops": 100.0},
        {"step": 10, "time": 1012.0, "throughput/mfu": 0.5,
         "ledger": {**_interval(0, 10, 10.0, data=1.0, forward=3.0, backward=5.0, compile=4.0),
                    "compile_calls": 1, "first_boundary": 1001.0}},
        {"step": 20, "time": 1023.0, "throughput/mfu": 0.5, "throughput/mfu_lost/data": 0.3,
         "throughput/mfu_lost_rank/data": 1.0,
         "ledger": {**_interval(10, 20, 10.0, data=2.0, checkpoint=0.5), "first_boundary": 1001.0}},
        {"record": "run", "time": 1030.0, "run_id": "b", "ranks": 2, "devices": 2,
         "process_start": 1028.0, "start_step": 15, "peak_tflops": 100.0},
        {"record": "run_end", "time": 1042.0, "step": 25,
         "ledger": {**_interval(15, 25, 10.0, data=1.0, eval=1.0), "first_boundary": 1031.0}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_ledger_by_hand(tmp_path, capsys):
    log = hand_log(tmp_path / "m.jsonl")
    status, out, err = goodput(capsys, log, "--json", tmp_path / "g.json")
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    # run 1: span 990 .. 1023 = 33 s; run 2: gap 1023 .. 1028 = 5, span 1028 .. 1042 = 14
    assert g["job_wall_s"] == 52.0                                  # 1042 - 990
    assert g["badput_s/restart_gap"] == 5.0
    assert g["badput_s/startup"] == (1001.0 - 990.0) + (1031.0 - 1028.0)   # 11 + 3
    # run 2 resumed at 15: half of run 1's [10, 20) is lost (split by steps)
    assert g["badput_s/lost_progress"] == 0.5 * 10.0
    assert any("straddle the resume point 15" in note for note in g["notes"])
    # compile: 4 s less one normal step's forward + backward: (3 + 5) / (10 - 1 compiled step)
    normal = (3.0 + 5.0) / 9
    assert g["badput_s/compile"] == pytest.approx(4.0 - normal, rel=1e-12)
    assert g["badput_s/checkpoint"] == 0.5 and g["badput_s/eval"] == 1.0
    # data: run 1's [0,10) whole, [10,20) half; run 2 whole: 1 + 1 + 1
    assert g["badput_s/data"] == 3.0
    # goodput: kept step time less data (9 + 4 + 9) and the compiled call's normal work
    assert g["goodput_s"] == pytest.approx(9.0 + 0.5 * 8.0 + 9.0 + normal, rel=1e-12)
    seconds = [g["goodput_s"], *(g[f"badput_s/{k}"] for k in BUCKETS)]
    assert math.fsum(seconds) == pytest.approx(52.0, rel=1e-12)
    assert math.fsum([g["goodput"], *(g[f"badput/{k}"] for k in BUCKETS)]) == 1.0
    # job MFU: kept FLOPs (10 + 5 + 10 steps x 1e12) over 2 devices x (33 + 19 s) x 1e14
    assert g["job_mfu"] == pytest.approx(25e12 / (2 * 33.0 * 1e14 + 2 * 19.0 * 1e14), rel=1e-12)
    # the diagnosis: the largest bucket, its share; the rank where data loading concentrates
    name = max(BUCKETS, key=lambda k: g[f"badput/{k}"])
    assert name == "startup" and g["diagnosis"] == \
        f"largest loss: startup, {g['badput/startup'] * 100:.1f}% of the job's wall time"
    assert g["diagnosis"] in out


def _first_step_log(path, *, compile_calls=0, resume_at=None, first_step_s=7.0):
    """One run of 12 steps in three intervals whose first step took 7 s; the
    other steps: (10 - 7) / 3 = 1 s, 4 / 4 = 1 s, 6 / 4 = 1.5 s -> median 1 s.
    ``resume_at``: a second run resuming there (run 1's first step lost or not)."""
    lines = [{"record": "run", "time": 100.0, "run_id": "a", "job": "j", "ranks": 1, "devices": 1,
              "process_start": 90.0, "start_step": 0, "peak_tflops": 1.0}]
    for first, step_s in ((0, 10.0), (4, 4.0), (8, 6.0)):
        iv = {**_interval(first, first + 4, step_s), "flops_ranks": 1, "first_boundary": 95.0,
              "first_step_s": first_step_s, "compile_calls": compile_calls if first == 0 else 0}
        lines.append({"step": first + 4, "time": 100.0 + 2 * first + 10, "ledger": iv})
    if resume_at is not None:
        lines.append({"record": "run", "time": 200.0, "run_id": "b", "job": "j", "ranks": 1, "devices": 1,
                      "process_start": 199.0, "start_step": resume_at, "peak_tflops": 1.0})
        lines.append({"record": "run_end", "time": 210.0, "step": resume_at + 1, "ledger": {
            **_interval(resume_at, resume_at + 1, 1.0), "flops_ranks": 1, "first_boundary": 200.0,
            "first_step_s": 1.0}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_only_the_first_steps_excess_over_the_median_is_startup(tmp_path, capsys):
    from mfu_tracker.job import job_ledger

    (run,) = job_ledger(read_log(str(_first_step_log(tmp_path / "m.jsonl")))).runs
    # startup: process start 90 -> first boundary 95 = 5 s, + the first step's excess 7 - 1 = 6
    assert run.seconds["startup"] == 5.0 + 6.0
    assert run.seconds["goodput"] == (10.0 + 4.0 + 6.0) - 6.0      # every step's time, less it
    ledger = job_ledger(read_log(str(_first_step_log(tmp_path / "c.jsonl", compile_calls=1))))
    # a compiled first call marked: the excess is compile's (no forward/backward marked: no
    # normal work to give back)
    assert ledger.runs[0].seconds["startup"] == 5.0 and ledger.runs[0].seconds["compile"] == 6.0
    # every kept step's FLOPs count: 12 steps x 1e12 over 1 device x (last record - start) x 1e12
    assert ledger.job_mfu == pytest.approx(12e12 / ((100.0 + 16 + 10 - 90.0) * 1e12), rel=1e-12)


def test_a_first_step_faster_than_the_median_moves_nothing(tmp_path):
    from mfu_tracker.job import job_ledger

    # a compiled first call marked compile left a 0.5 s period: below the median, no excess
    # (the other steps of the first interval: (10 - 0.5) / 3 = 3.17 s; median of 3.17, 1, 1.5)
    log = _first_step_log(tmp_path / "m.jsonl", first_step_s=0.5)
    (run,) = job_ledger(read_log(str(log))).runs
    assert run.seconds["startup"] == 5.0 and run.seconds["goodput"] == 10.0 + 4.0 + 6.0


def test_a_first_step_redone_after_a_restart_is_lost_progress_whole(tmp_path):
    from mfu_tracker.job import job_ledger

    ledger = job_ledger(read_log(str(_first_step_log(tmp_path / "m.jsonl", resume_at=0))))
    run1 = ledger.runs[0]
    assert run1.seconds["startup"] == 5.0 and run1.seconds["lost_progress"] == 20.0
    ledger = job_ledger(read_log(str(_first_step_log(tmp_path / "k.jsonl", resume_at=4))))
    run1 = ledger.runs[0]                  # steps 0..3 kept: the first step's excess split off
    assert run1.seconds["startup"] == 5.0 + 6.0 and run1.seconds["lost_progress"] == 10.0


def test_the_first_steps_cut_on_the_fake_gpu_timeline(fake, tmp_path, capsys):
    """The first-step cut end to end, deterministic: a Tracker on the fake GPU
    timeline (every period exact: each boundary's record completes
    ``work_ns`` after the one before), its log, ``mfu-tracker goodput``. The
    wall-clock fields (process start, first boundary, record times) are read
    from the log: the ledger is checked on what it was given."""
    log = tmp_path / "m.jsonl"
    t = Tracker(5e9, spec=SPEC, clock="cuda", stream=0, warmup=0, window=16, log_path=log)
    t.step()                                          # the clock starts: GPU 0
    periods_ms = [(40, 5, 5, 5), (4, 6, 4, 6), (8, 8, 8, 8)]   # three logged intervals
    gpu_ns = 0
    for interval in periods_ms:
        for ms in interval:
            fake.set_work_ns(ms * MS)
            t.step()
            gpu_ns += ms * MS
        fake.advance(gpu_ns - fake.now_ns())   # the host catches up: every record resolved
        t.metrics()
    t.close()
    lines = records(log)
    ledgers = [line["ledger"] for line in lines if "ledger" in line]
    # the engine kept the first pushed step's period: 40 ms (float ms from the driver)
    assert ledgers[0]["first_step_s"] == pytest.approx(40e-3, rel=1e-9)
    assert [iv["step_s"] for iv in ledgers[:3]] == pytest.approx([55e-3, 20e-3, 32e-3], rel=1e-9)
    status, out, err = goodput(capsys, log, "--json", tmp_path / "g.json")
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    # the median step: the intervals' mean periods, the first step left out of its own:
    # (55 - 40) / 3 = 5 ms, 20 / 4 = 5 ms, 32 / 4 = 8 ms -> median 5 ms; the first
    # step's excess 40 - 5 = 35 ms goes to startup, a median step's 5 ms stays goodput
    run, end = lines[0], lines[-1]
    before_first = ledgers[0]["first_boundary"] - run["process_start"]
    assert g["badput_s/startup"] == pytest.approx(before_first + 35e-3, rel=1e-9)
    # goodput: every step's period (55 + 20 + 32 = 107 ms) less the excess = 72 ms
    assert g["goodput_s"] == pytest.approx(72e-3, rel=1e-9)
    # the step itself and its FLOPs are kept: 12 steps x 5e9 over 1 device x the run's
    # wall time (process start to the run-end record) x 1e15 FLOP/s
    assert g["job_mfu"] == pytest.approx(12 * 5e9 / ((end["time"] - run["process_start"]) * 1e15),
                                         rel=1e-12)
    assert fake.sync_calls() == 0


def _untimed_log(path, *, ranks=1, untimed_flops=1e12, resume_at=None):
    """One run of 8 steps, 1 s each, in two intervals; its first step (0) ran
    before the clock started (untimed); ``resume_at``: a second run resuming there."""
    lines = [{"record": "run", "time": 100.0, "job": "j", "ranks": ranks, "devices": ranks,
              "process_start": 90.0, "start_step": 0, "peak_tflops": 1.0}]
    for first, end in ((0, 4), (4, 8)):
        iv = {**_interval(first, end, float(end - first - (first == 0))), "flops_ranks": ranks,
              "first_boundary": 95.0, "first_step_s": 1.0,
              "untimed_steps": int(first == 0), "untimed_flops": untimed_flops if first == 0
              else 0.0}
        iv["flops_steps"] = end - first - iv["untimed_steps"]
        iv["model_flops"] = 1e12 * iv["flops_steps"]
        lines.append({"step": end, "time": 100.0 + end, "ledger": iv})
    if resume_at is not None:
        lines.append({"record": "run", "time": 200.0, "job": "j", "ranks": ranks,
                      "devices": ranks, "process_start": 199.0, "start_step": resume_at,
                      "peak_tflops": 1.0})
        lines.append({"record": "run_end", "time": 210.0, "step": resume_at + 1, "ledger": {
            **_interval(resume_at, resume_at + 1, 1.0), "flops_ranks": ranks,
            "first_boundary": 200.0}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_an_untimed_first_step_is_counted_or_named(tmp_path):
    from mfu_tracker.job import job_ledger

    ledger = job_ledger(read_log(str(_untimed_log(tmp_path / "a.jsonl"))))
    # 7 timed steps + the untimed step 0: 8 x 1e12 over 1 device x (108 - 90 s) x 1e12
    assert ledger.job_mfu == pytest.approx(8e12 / (18.0 * 1e12), rel=1e-12)
    # its time is in startup, unmeasured: goodput is the 7 timed seconds
    assert ledger.runs[0].seconds["goodput"] == 7.0
    assert any("step 0 ran before the run's clock started" in n and
               n.endswith("its model FLOPs count in job_mfu") for n in ledger.notes)
    # re-done by a later run (resumed at 0): lost, not counted; the timed steps too
    ledger = job_ledger(read_log(str(_untimed_log(tmp_path / "b.jsonl", resume_at=0))))
    assert ledger.job_mfu == pytest.approx(1e12 / ((210.0 - 90.0) * 1e12), rel=1e-12)
    assert any(n.endswith("re-done by a later run: lost progress, not counted")
               for n in ledger.notes)
    # resumed at 1: step 0 is kept, steps 1..7 lost
    ledger = job_ledger(read_log(str(_untimed_log(tmp_path / "c.jsonl", resume_at=1))))
    assert ledger.job_mfu == pytest.approx(2e12 / ((210.0 - 90.0) * 1e12), rel=1e-12)
    # two ranks: the logging rank's FLOPs alone are not the job's: left out, said so
    # (the timed steps' FLOPs are the ranks' sum: 7 x 1e12 over 2 devices x 18 s x 1e12)
    ledger = job_ledger(read_log(str(_untimed_log(tmp_path / "d.jsonl", ranks=2))))
    assert ledger.job_mfu == pytest.approx(7e12 / (2 * 18.0 * 1e12), rel=1e-12)
    assert any(n.endswith("left out of job_mfu: its model FLOPs are the logging rank's only")
               for n in ledger.notes)
    # FLOPs unknown: job_mfu is left out, with the reason
    ledger = job_ledger(read_log(str(_untimed_log(tmp_path / "e.jsonl", untimed_flops=None))))
    assert ledger.job_mfu is None
    assert any(n.endswith("its model FLOPs are unknown") for n in ledger.notes)
    assert any(n.startswith("job_mfu: the log lacks some steps' model FLOPs") for n in ledger.notes)


def test_the_diagnosis_names_the_rank_of_data_loading(tmp_path, capsys):
    lines = [
        {"record": "run", "time": 100.0, "ranks": 4, "devices": 4, "process_start": 99.0,
         "start_step": 0, "peak_tflops": 1.0},
        {"step": 10, "time": 200.0, "p/mfu": 0.3, "p/mfu_lost_rank/data": 3.0,
         "ledger": {**_interval(0, 10, 95.0, data=80.0), "first_boundary": 100.0}},
    ]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    status, out, err = goodput(capsys, tmp_path / "m.jsonl")
    assert status == 0, err
    # data 80 s of the wall 101 s: 79.2%; rank 3 from the logged per-rank key
    assert "largest loss: data loading, 79.2% of the job's wall time, rank 3" in out


def test_incomplete_flops_or_no_peak_leave_job_mfu_out(tmp_path, capsys):
    log = hand_log(tmp_path / "m.jsonl")
    lines = records(log)
    lines[2]["ledger"]["flops_ranks"] = 1           # rank 0's FLOPs only (a run end)
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    status, out, err = goodput(capsys, log, "--json", tmp_path / "g.json")
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    assert "job_mfu" not in g and any("FLOPs" in n for n in g["notes"])
    assert "job_mfu: the log lacks some steps' model FLOPs" in out


# ---- bad input --------------------------------------------------------------------------

def test_goodput_errors_name_the_file(tmp_path, capsys):
    status, _, err = goodput(capsys, tmp_path / "nope.jsonl")
    assert status == 2 and "nope.jsonl: no such file" in err
    (tmp_path / "old.jsonl").write_text('{"step": 1, "throughput/mfu": 0.1}\n')
    status, _, err = goodput(capsys, tmp_path / "old.jsonl")
    assert status == 2 and "no run records" in err
    # a line that cannot be read is skipped and counted; --strict refuses it, naming it
    log = hand_log(tmp_path / "m.jsonl")
    log.write_text(log.read_text() + "{not json\n")
    status, out, err = goodput(capsys, log)
    assert status == 0 and err == "", err
    assert "skipped: 1 line(s) that could not be read" in out and "m.jsonl:6: not a JSON line" in out
    status, _, err = goodput(capsys, log, "--strict")
    assert status == 2 and "m.jsonl:6: not a JSON line" in err and "--strict" in err
    log = hand_log(tmp_path / "m2.jsonl")
    lines = records(log)
    lines[1]["ledger"]["to_step"] = -1
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    status, _, err = goodput(capsys, log, "--strict")
    assert status == 2 and "m2.jsonl:2: 'ledger' ends" in err


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("3", TypeError)])
def test_bad_start_step_names_it(bad, error):
    with pytest.raises(error, match="start_step"):
        Tracker(1.0, dtype="fp32", peak_tflops=1.0, start_step=bad)


def test_peak_check_logs_and_says_when_the_machine_was_busy(tmp_path):
    log = tmp_path / "m.jsonl"
    t = Tracker(1.0, dtype="fp32", peak_tflops=1.0, clock="cpu", log_path=log)
    assert t.peak_check(0.9e12) is False           # within 25%
    assert t.peak_check(0.7e12) is True            # 1 / 0.7 = 1.43 > 1.25
    checks = [line for line in records(log) if line.get("record") == "peak_check"]
    assert [(c["peak_tflops"], c["remeasured_tflops"], c["busy"]) for c in checks] == \
        [(1.0, 0.9, False), (1.0, 0.7, True)]
    with pytest.raises(ValueError, match="measured_flops_per_sec"):
        t.peak_check(-1.0)
