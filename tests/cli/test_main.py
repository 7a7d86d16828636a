"""The parser: each command registered, negative values joined to their flag,
usage errors as exit status 2, a closed pipe not an error."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mfu_tracker.cli._main import _join_negative_values, main

COMMANDS = ("gpus", "estimate", "profile", "explain", "report", "advise", "goodput", "engine",
            "view", "passport", "doctor", "build-ext", "run")


def test_a_negative_value_is_joined_to_its_flag():
    assert _join_negative_values(["estimate", "--params", "-7e9"]) == ["estimate", "--params=-7e9"]
    assert _join_negative_values(["--x", "-1.5", "--y", "-.5", "--z", "-3"]) == \
        ["--x=-1.5", "--y=-.5", "--z=-3"]
    # not a number, a value already joined, a short flag: left as they are
    assert _join_negative_values(["--x", "-v"]) == ["--x", "-v"]
    assert _join_negative_values(["--x=1", "-2"]) == ["--x=1", "-2"]
    # after --, the command's words are its own
    assert _join_negative_values(["run", "--", "prog", "--n", "-1"]) == \
        ["run", "--", "prog", "--n", "-1"]


def test_a_negative_value_reaches_the_flags_check(capsys):
    assert main(["estimate", "--params", "-7e9", "--gpu", "B200", "--tokens-per-sec", "1"]) == 2
    err = capsys.readouterr().err
    assert "argument --params: must be a finite number > 0, got -7e9" in err


def test_every_command_is_registered(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command in out, command


def test_usage_errors_and_value_errors_are_status_two(capsys):
    assert main([]) == 2                      # no command
    assert "the following arguments are required: command" in capsys.readouterr().err
    assert main(["nosuch"]) == 2
    capsys.readouterr()
    # a ValueError from a command: one line naming the command
    assert main(["goodput", "/nonexistent/m.jsonl"]) == 2
    assert capsys.readouterr().err == "mfu-tracker goodput: error: /nonexistent/m.jsonl: no such file\n"


def test_a_closed_pipe_is_not_an_error():
    # `mfu-tracker gpus | head -1`: the reader leaves after one line
    code = ("import os, sys; r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
            "from mfu_tracker.cli._main import main; sys.exit(main(['gpus']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONUNBUFFERED": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
