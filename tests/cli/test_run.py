"""``mfu-tracker run``'s flags: the job id, the default log, the config they
make (the launch itself: tests/cli/test_launch.py, tests/run/)."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import pytest

from mfu_tracker.agent._config import RunConfig
from mfu_tracker.cli import main
from mfu_tracker.cli._run import DEFAULT_LOG_DIR, _dtype, config_of, default_log, job_id, main_from_args

JOB_VARS = ("MFU_TRACKER_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID")


@pytest.fixture
def no_job_env(monkeypatch):
    for name in JOB_VARS:
        monkeypatch.delenv(name, raising=False)


def _args(**over):
    values = dict(log=None, job=None, dtype=None, flops_per_step=None, tokens_per_step=None,
                  peak_tflops=None, measure_peak=False, log_every=10, warmup=1, count_every=1,
                  view=False, port=0, budget_tokens=None, budget_steps=None, passport=True,
                  argv=[])
    values.update(over)
    return argparse.Namespace(**values)


def test_the_job_is_given_or_the_schedulers_or_new(no_job_env, monkeypatch):
    assert job_id("mine") == "mine"
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", job_id(None))
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert job_id(None) == "4242"
    monkeypatch.setenv("MFU_TRACKER_JOB", "first")       # before SLURM's in the order
    assert job_id(None) == "first"


def test_the_default_log_is_one_folder_per_job():
    assert default_log("20250101-120000-ab12") == os.path.join(
        ".", DEFAULT_LOG_DIR, "20250101-120000-ab12", "metrics.jsonl")
    assert default_log("a/b c:d") == os.path.join(".", "mfu-run", "a_b_c_d", "metrics.jsonl")
    assert default_log("..") == os.path.join(".", "mfu-run", "job", "metrics.jsonl")


def test_the_flags_become_the_config(no_job_env, tmp_path):
    config = config_of(_args(log=str(tmp_path / "m.jsonl"), job="j", dtype="bf16",
                             peak_tflops=312.0, log_every=5, warmup=0, count_every=2))
    assert config == RunConfig(log_path=str(tmp_path / "m.jsonl"), job="j", dtype="bf16",
                               peak_tflops=312.0, log_every=5, warmup=0, count_every=2)
    assert config_of(_args(job="k")).log_path == default_log("k")


def test_the_dtype_flag_is_checked_when_parsed(capsys):
    assert _dtype("bfloat16") == "bf16"
    with pytest.raises(argparse.ArgumentTypeError, match="--dtype"):
        _dtype("int3")
    assert main(["run", "--dtype", "int3", "--", "true"]) == 2
    assert "argument --dtype:" in capsys.readouterr().err


def test_the_childs_exit_status_is_the_launchers(no_job_env, tmp_path, capsys):
    args = _args(log=str(tmp_path / "m.jsonl"), job="j",
                 argv=["--", sys.executable, "-c", "import sys; sys.exit(3)"])
    assert main_from_args(args, die=False) == 3
    err = capsys.readouterr().err
    assert f"mfu-tracker run: job j, log {tmp_path / 'm.jsonl'}" in err
    assert "no log was written" in err          # no torch training in the command


def test_no_command_names_run_in_its_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mfu_tracker", "run"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("mfu-tracker run: error: no command: give it after --")
