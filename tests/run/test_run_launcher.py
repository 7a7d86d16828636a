"""``mfu-tracker run`` as a launcher: its flags, the command it runs, the
environment it gives it, the exit status and signals it passes on, and what
it prints. Each test launches a real process, as a person would."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _runner import SCRIPTS, env, lines, metrics, mfu_run, tokens_per_step  # noqa: E402

from mfu_tracker.cli import main

TINY = str(SCRIPTS / "tiny_loop.py")
PY = sys.executable


# ---- the command line ---------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["run", "--peak-tflops", "-1", "--", PY], "argument --peak-tflops: must be a finite number > 0, got -1"),
    (["run", "--dtype", "fp7", "--", PY], "argument --dtype"),
    (["run", "--log-every", "0", "--", PY], "argument --log-every: must be an integer >= 1"),
    (["run", "--tokens-per-step", "nan", "--", PY], "argument --tokens-per-step"),
    (["run"], "no command: give it after --"),
    (["run", "--"], "no command: give it after --"),
])
def test_a_bad_flag_is_named(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_command_s_words_are_its_own(tmp_path):
    # a negative value after -- is not joined to its flag (as mfu-tracker's own flags are)
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, "-c",
                   "import sys; print(sys.argv[1:])", "--shift", "-1", "--log", "x")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['--shift', '-1', '--log', 'x']"


def test_a_python_file_runs_under_this_interpreter(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("import sys; print(sys.executable)\n")
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", str(script), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == sys.executable


@pytest.mark.parametrize("code", [0, 3, 1])
def test_the_exit_status_is_the_command_s(tmp_path, code):
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, "-c", f"raise SystemExit({code})")
    assert done.returncode == code


def test_a_missing_command_is_127_as_in_a_shell(tmp_path):
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", "no-such-command-here")
    assert done.returncode == 127 and "no-such-command-here: command not found" in done.stderr


def test_the_default_log_is_under_mfu_run_and_printed_at_start(tmp_path):
    done = mfu_run("--job", "my job/1", "--", PY, TINY, "--steps", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = tmp_path / "mfu-run" / "my_job_1" / "metrics.jsonl"
    first = done.stderr.splitlines()[0]
    assert first == "mfu-tracker run: job my job/1, log ./mfu-run/my_job_1/metrics.jsonl"
    assert lines(log)[0]["record"] == "run" and lines(log)[0]["job"] == "my job/1"


# ---- the environment: the agent only where torch is, the user's sitecustomize kept ------

def test_an_interpreter_without_torch_pays_nothing(tmp_path):
    code = ("import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'mfu_tracker')))")
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, "-c", code)
    assert done.returncode == 0 and done.stdout.strip() == "[]"
    assert "no log was written" in done.stderr       # and the launcher says why there is none


def test_the_user_s_sitecustomize_still_runs_and_the_agent_arms(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = 'yes'\n")
    code = ("import os, torch, mfu_tracker.agent._step as s, sitecustomize as c; "
            "print(os.environ.get('USER_SITE_RAN'), len(s.ACTIVE), c.__file__)")
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, "-c", code,
                   extra_env={"PYTHONPATH": f"{own}{os.pathsep}{env()['PYTHONPATH']}"})
    assert done.returncode == 0, done.stderr
    ran, armed, path = done.stdout.split()
    assert (ran, armed, path) == ("yes", "1", str(own / "sitecustomize.py"))


def test_python_minus_e_skips_the_agent_and_the_launcher_says_so(tmp_path):
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, "-E", TINY, "--steps", "2")
    assert done.returncode == 0
    assert "no log was written" in done.stderr and "-E, -I or -S" in done.stderr


# ---- signals --------------------------------------------------------------------------

def _started(tmp_path: Path, *words: str) -> subprocess.Popen:
    out = tmp_path / "out.txt"
    proc = subprocess.Popen([PY, "-m", "mfu_tracker", "run", "--log", str(tmp_path / "m.jsonl"),
                             "--", PY, TINY, "--wait-for-sigterm", *words],
                            env=env(), stdout=out.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while "waiting" not in out.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, out.read_text()
        time.sleep(0.2)
    return proc


def test_sigterm_is_passed_to_the_command(tmp_path):
    proc = _started(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 7           # the script's SIGTERM handler exits with 7


def test_sigint_ends_the_command_and_the_launcher_as_it_would_the_bare_command(tmp_path):
    proc = _started(tmp_path)
    proc.send_signal(signal.SIGINT)              # no terminal: passed on
    assert proc.wait(timeout=120) == -signal.SIGINT   # the child died of it: so does run
    assert "KeyboardInterrupt" in (tmp_path / "out.txt").read_text()
    assert lines(tmp_path / "m.jsonl")[-1]["record"] == "run_end"


# ---- crashes --------------------------------------------------------------------------

def test_a_crash_keeps_the_script_s_status_and_a_log_that_reads(tmp_path, capsys):
    log = tmp_path / "m.jsonl"
    done = mfu_run("--log", str(log), "--log-every", "2", "--", PY, TINY, "--steps", "8",
                   "--crash-at", "5")
    assert done.returncode == 1
    assert "RuntimeError: the script fails at step 5" in done.stderr
    assert [m["step"] for m in metrics(log)] == [2, 4, 5]   # 5 steps ran: the last one logged
    assert main(["report", str(log), "--out", str(tmp_path / "r.png"), "--numbers"]) == 0
    assert main(["goodput", str(log)]) == 0
    assert "goodput=" in capsys.readouterr().out


def test_a_killed_run_dies_the_same_and_its_log_still_reads(tmp_path, capsys):
    log = tmp_path / "m.jsonl"
    done = mfu_run("--log", str(log), "--log-every", "2", "--", PY, TINY, "--steps", "8",
                   "--kill-at", "5")
    assert done.returncode == -signal.SIGKILL
    records = lines(log)
    assert records[0]["record"] == "run" and all(r.get("record") != "run_end" for r in records)
    assert [m["step"] for m in metrics(log)] == [2, 4]      # no line after the last log step
    assert main(["goodput", str(log)]) == 0
    assert main(["report", str(log), "--out", str(tmp_path / "r.png")]) == 0
    capsys.readouterr()


# ---- what was given replaces what is detected --------------------------------------------

def test_given_figures_replace_the_detected_ones(tmp_path):
    log = tmp_path / "m.jsonl"
    done = mfu_run("--log", str(log), "--log-every", "2", "--flops-per-step", "1e6",
                   "--tokens-per-step", "100", "--dtype", "bf16", "--peak-tflops", "2",
                   "--", PY, TINY, "--steps", "4")
    assert done.returncode == 0, done.stderr
    assert ("detected: tokens/step 100 (given: --tokens-per-step), dtype bf16 (--dtype), "
            "FLOPs/step 1,000,000 (given: --flops-per-step), peak 2 TFLOP/s bf16 per device "
            "(given: --peak-tflops)") in done.stderr
    run = lines(log)[0]
    assert (run["dtype"], run["peak_tflops"], run["peak_source"]) == ("bf16", 2.0, "user")
    assert [m["ledger"]["model_flops"] for m in metrics(log)] == [2e6, 2e6]   # 2 steps x 1e6
    assert tokens_per_step(log) == pytest.approx([100.0, 100.0], rel=1e-12)
    # MFU = 1e6 FLOPs / step time / 2e12 FLOP/s
    for m in metrics(log):
        assert m["throughput/mfu"] == pytest.approx(1e6 / m["throughput/step_time_s"] / 2e12,
                                                    rel=1e-9)


def test_a_loop_without_an_optimizer_is_told_what_it_needs(tmp_path):
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, TINY, "--update", "manual")
    assert done.returncode == 0
    assert ("steps cannot be found: 6 training forwards of TinyLM ran and no optimizer stepped"
            in done.stderr)
    assert "`mfu_tracker.end_step()` after each training step" in done.stderr
    with_line = mfu_run("--log", str(tmp_path / "e.jsonl"), "--log-every", "3", "--", PY, TINY,
                        "--update", "manual", "--end-step")
    assert "6 steps measured (boundaries at mfu_tracker.end_step())" in with_line.stderr
    assert len(metrics(tmp_path / "e.jsonl")) == 2
