"""The launcher's child: its environment, its command line, its exit status."""
from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from mfu_tracker.agent._config import BOOT_DIR, ENV_VAR, RunConfig
from mfu_tracker.cli._errors import CliError
from mfu_tracker.cli._launch import FORWARDED, child_env, command_line, exit_status, run_child


def test_the_child_env_has_the_hook_first_and_the_config(tmp_path):
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), job="j", log_every=5)
    env = child_env(config, {"PYTHONPATH": "/a:/b", "HOME": "/h"})
    assert env["PYTHONPATH"] == BOOT_DIR + os.pathsep + "/a:/b"
    assert env["HOME"] == "/h"
    assert RunConfig.from_env({ENV_VAR: env[ENV_VAR]}) == config
    assert child_env(config, {})["PYTHONPATH"] == BOOT_DIR


def test_the_command_line(tmp_path):
    assert command_line(["--", "torchrun", "x.py"]) == ["torchrun", "x.py"]
    script = tmp_path / "train.py"
    script.write_text("")
    assert command_line([str(script), "--lr", "1"]) == [sys.executable, str(script), "--lr", "1"]
    assert command_line(["missing.py"]) == ["missing.py"]      # not a file: run as given
    with pytest.raises(CliError, match="no command"):
        command_line([])


def test_exit_status_is_the_code_or_128_plus_the_signal():
    assert exit_status(0, die=False) == 0
    assert exit_status(3, die=False) == 3
    assert exit_status(-signal.SIGTERM, die=False) == 128 + 15
    assert signal.SIGTERM in FORWARDED


def test_the_child_runs_with_the_config_and_its_status_comes_back(tmp_path, capsys):
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"), job="j")
    out = tmp_path / "env.json"
    code = (f"import json, os, sys; json.dump({{k: os.environ.get(k) for k in "
            f"({ENV_VAR!r}, 'PYTHONPATH')}}, open({str(out)!r}, 'w')); sys.exit(5)")
    assert run_child(config, [sys.executable, "-S", "-c", code]) == 5
    seen = json.loads(out.read_text())
    assert json.loads(seen[ENV_VAR])["job"] == "j"
    assert seen["PYTHONPATH"].split(os.pathsep)[0] == BOOT_DIR
    err = capsys.readouterr().err
    assert "mfu-tracker run: measuring pid " in err   # what follows the child: cli/_beside.py


def test_a_missing_command_is_127_as_a_shell_says(tmp_path, capsys):
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"))
    assert run_child(config, ["/nonexistent/prog"]) == 127
    assert "/nonexistent/prog: command not found" in capsys.readouterr().err
    plain = tmp_path / "plain"
    plain.write_text("")
    assert run_child(config, [str(plain)]) == 126
    assert "not executable" in capsys.readouterr().err


def test_a_child_killed_by_a_signal_reports_it(tmp_path):
    config = RunConfig.checked(log_path=str(tmp_path / "m.jsonl"))
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    returncode = run_child(config, [sys.executable, "-S", "-c", code])
    assert returncode == -signal.SIGTERM
    assert exit_status(returncode, die=False) == 143
