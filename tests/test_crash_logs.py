"""Logs a crash leaves behind are read: cut and corrupt lines, killed writers,
re-runs into one file.

References: the log files' bytes read back with ``json`` by hand (never
through the package's reader) and the system calls the writer makes; goodput
and the badput buckets add up to exactly 1 (``math.fsum``) on every log.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mfu_tracker import Tracker
from mfu_tracker.cli import main
from mfu_tracker.job import job_ledger, read_log
from mfu_tracker.job import _log
from mfu_tracker.job._records import LogError

ROOT = Path(__file__).resolve().parent.parent
BUCKETS = ("startup", "compile", "checkpoint", "eval", "data", "lost_progress", "restart_gap",
           "other")


def cli(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def adds_up(ledger) -> bool:
    return math.fsum([ledger.goodput, *(ledger.badput[k] for k in BUCKETS)]) == 1.0


def small_log(path, runs=1, start_steps=(0,), job=None, steps=6):
    """Real trackers, one per run, appending to ``path`` (metrics at every step)."""
    for start in start_steps[:runs]:
        t = Tracker(1e6, dtype="fp32", peak_tflops=1.0, clock="cpu", window=4, warmup=0,
                    log_path=path, start_step=start, job=job)
        t.step()
        for _ in range(steps):
            with t.phase("data"):
                pass
            t.step(num_tokens=8)
            t.metrics()
        t.close()
    return path


# ---- the writer: one write of a whole line per record --------------------------------

def test_each_record_is_one_write_of_a_whole_line(tmp_path, monkeypatch):
    calls = []
    real = os.write

    def spy(fd, data):
        calls.append(bytes(data))
        return real(fd, data)

    monkeypatch.setattr(_log.os, "write", spy)
    path = tmp_path / "m.jsonl"
    # 600 keys: a metrics line of ~10 KB, past Python's 8 KiB file buffer
    big = {f"p/k{i:03d}": float(i) for i in range(600)}
    log = _log.MetricsLog(path)
    log.write_record("run", {"run_id": "r", "start_step": 0})
    log.write(big, step=1)
    log.write({"p/mfu": 0.5}, step=2)
    log.close()
    monkeypatch.undo()
    assert len(calls) == 3                                   # one os.write per record
    assert all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in calls)
    assert len(calls[1]) > 8192
    assert b"".join(calls) == path.read_bytes()              # nothing else written


def test_a_new_run_ends_a_cut_line_before_its_first_record(tmp_path):
    path = small_log(tmp_path / "m.jsonl", job="j")
    whole = path.read_bytes()
    path.write_bytes(whole[:-25])                            # the run-end record, cut
    small_log(path, start_steps=(3,), job="j")
    lines = path.read_bytes().split(b"\n")
    cut = next(i for i, line in enumerate(lines) if line == whole[:-25].split(b"\n")[-1])
    assert json.loads(lines[cut + 1])["record"] == "run"     # its own line, readable
    log = read_log(str(path))
    assert len(log.runs) == 2 and log.cut is None
    assert len(log.skipped) == 1 and log.skipped[0].startswith(f"{path}:{cut + 1}: not a JSON line")
    assert adds_up(job_ledger(log))
    with pytest.raises(LogError, match=rf"m\.jsonl:{cut + 1}: not a JSON line.*--strict"):
        read_log(str(path), strict=True)


# ---- the readers: a cut last line, a corrupt line ---------------------------------------

def test_a_last_line_cut_anywhere_is_skipped_with_one_warning(tmp_path, capsys):
    path = small_log(tmp_path / "m.jsonl")
    whole = path.read_bytes()
    last_start = whole.rstrip(b"\n").rfind(b"\n") + 1
    number = whole.count(b"\n")                              # the last line's number
    for cut in range(last_start + 1, len(whole) - 1, 7):     # every 7th byte of the last line
        path.write_bytes(whole[:cut])
        status, out, err = cli(capsys, "goodput", path, "--json", tmp_path / "g.json")
        assert status == 0, err
        assert err.count("warning") == 1, err                # one warning, naming file and line
        assert f"m.jsonl:{number}: the last line is cut short" in err
        g = json.loads((tmp_path / "g.json").read_text())
        assert math.fsum([g["goodput"], *(g[f"badput/{k}"] for k in BUCKETS)]) == 1.0
        assert "skipped:" not in out                         # the cut line is not a corrupt one
        status, _, err = cli(capsys, "goodput", path, "--strict")
        assert status == 2 and f"m.jsonl:{number}" in err


def test_the_report_reads_a_cut_log_and_warns(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = small_log(tmp_path / "m.jsonl")
    whole = path.read_bytes()
    path.write_bytes(whole[:-10])
    status, out, err = cli(capsys, "report", path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert "warning:" in err and "the last line is cut short" in err
    status, _, err = cli(capsys, "report", path, "--out", tmp_path / "r.png", "--strict")
    assert status == 2 and "--strict" in err


def test_corrupt_lines_are_skipped_counted_and_named(tmp_path, capsys):
    path = small_log(tmp_path / "m.jsonl")
    lines = path.read_text().splitlines()
    # garbage, NUL bytes (a power loss), an unknown record, a metrics line without a step
    lines[2:2] = ["garbage", "\0" * 40, '{"record": "mystery"}', '{"p/mfu": 0.1}']
    path.write_text("\n".join(lines) + "\n")
    status, out, err = cli(capsys, "goodput", path)
    assert status == 0 and err == "", err
    assert "skipped: 4 line(s) that could not be read" in out
    for number, why in ((3, "not a JSON line"), (4, "not a JSON line"),
                        (5, "unknown record 'mystery'"), (6, "no numeric 'step'")):
        assert f"m.jsonl:{number}: {why}" in out
    log = read_log(str(path))
    assert len(log.skipped) == 4 and adds_up(job_ledger(log))
    status, _, err = cli(capsys, "goodput", path, "--strict")
    assert status == 2 and "m.jsonl:3: not a JSON line" in err


def test_a_file_with_no_readable_line_is_refused(tmp_path, capsys):
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00\x81\n" * 3)
    status, _, err = cli(capsys, "goodput", tmp_path / "b.bin")
    assert status == 2 and "no line of it can be read" in err and "b.bin:1: not a UTF-8" in err


# ---- writers killed with SIGKILL at random moments ---------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_writers_killed_at_random_moments_leave_logs_that_read(tmp_path, capsys):
    logs, runs = 10, 3
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "_crash_writer.py"), str(tmp_path),
                           str(logs), str(runs), "20261124"],
                          env=dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    forked = json.loads(done.stdout.splitlines()[-1])
    assert len(forked) == logs
    read = 0
    for path, started in forked.items():
        if not os.path.exists(path):          # every writer killed before its run record
            continue
        raw = Path(path).read_bytes().split(b"\n")
        parsed = []
        for number, line in enumerate(raw, 1):
            try:
                parsed.append((number, json.loads(line)))
            except ValueError:                 # a cut line: the last of its run
                nxt = raw[number] if number < len(raw) else b""
                assert nxt == b"" or json.loads(nxt)["record"] == "run", (path, number)
        log = read_log(path)
        assert len(log.runs) <= started
        assert [r.record["record"] for r in log.runs] == ["run"] * len(log.runs)
        assert all(run.end is None for run in log.runs)   # killed: no run-end record
        for run in log.runs:                               # no record lost inside a run
            spans = [(iv["from_step"], iv["to_step"]) for iv in run.intervals]
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])), (path, spans)
        ledger = job_ledger(log)
        assert adds_up(ledger), path
        assert ledger.notes == [] or all("straddle" in n for n in ledger.notes)   # one job
        status, out, err = cli(capsys, "goodput", path)
        assert status == 0, err
        read += 1
    assert read >= logs - 2


# ---- re-running into an existing log: a restart only when it resumes ------------------------

@pytest.fixture
def no_job_env(monkeypatch):
    for name in ("MFU_TRACKER_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)


def test_running_a_script_again_starts_a_new_job_with_a_note(tmp_path, capsys, no_job_env):
    path = small_log(tmp_path / "m.jsonl", runs=2, start_steps=(0, 0))
    status, out, err = cli(capsys, "goodput", path, "--json", tmp_path / "g.json")
    assert status == 0, err
    g = json.loads((tmp_path / "g.json").read_text())
    assert g["job"] == 2 and [r["run"] for r in g["runs"]] == [2]   # the last job: run 2 alone
    assert "note: the file holds 2 jobs (job 1: run 1; job 2: run 2)" in out
    assert "note: job 2: run 2 has start_step 0 and no job id: it starts a new job" in out
    assert g["badput_s/lost_progress"] == 0.0 and g["badput_s/restart_gap"] == 0.0
    status, out, err = cli(capsys, "goodput", path, "--job", "1", "--json", tmp_path / "g1.json")
    assert status == 0 and [r["run"] for r in json.loads((tmp_path / "g1.json").read_text())["runs"]] == [1]
    status, _, err = cli(capsys, "goodput", path, "--job", "3")
    assert status == 2 and "--job 3: give a job number 1..2" in err


@pytest.mark.parametrize("start_steps, job, env, jobs", [
    ((0, 3), None, None, 1),            # resumes: start_step > 0
    ((0, 0), "pretrain-7", None, 1),    # the same job id (job=)
    ((0, 0), None, "slurm-42", 1),      # the same job id (a launcher's, from the environment)
])
def test_a_run_that_resumes_continues_the_job(tmp_path, capsys, no_job_env, monkeypatch,
                                              start_steps, job, env, jobs):
    if env:
        monkeypatch.setenv("SLURM_JOB_ID", env)
    path = small_log(tmp_path / "m.jsonl", runs=2, start_steps=start_steps, job=job)
    log = read_log(str(path))
    ledger = job_ledger(log)
    assert [r.number for r in ledger.runs] == [1, 2] and ledger.number == 1
    assert not any("jobs" in note for note in ledger.notes)
    if start_steps[1] == 0:             # restarted from scratch: run 1's steps were all re-done
        assert ledger.badput_s["lost_progress"] > 0


def test_different_job_ids_are_different_jobs_even_when_resuming(tmp_path, no_job_env):
    path = tmp_path / "m.jsonl"
    small_log(path, start_steps=(0,), job="a")
    small_log(path, start_steps=(3,), job="b")
    ledger = job_ledger(read_log(str(path)))
    assert [r.number for r in ledger.runs] == [2]
    assert any("run 2's job id 'b' differs from run 1's 'a'" in note for note in ledger.notes)


@pytest.mark.parametrize("bad, error", [(7, TypeError), ("", ValueError), ("a\nb", ValueError)])
def test_a_bad_job_id_names_it(bad, error):
    with pytest.raises(error, match="job"):
        Tracker(1.0, dtype="fp32", peak_tflops=1.0, job=bad)
