"""``python -m mfu_tracker`` (mfu_tracker/__main__.py) is the command line:
the same output and exit status as ``mfu-tracker``'s ``main()``."""
from __future__ import annotations

import runpy
import sys

import pytest

from mfu_tracker.cli import main


def _run_as_main(monkeypatch, capsys, *argv):
    monkeypatch.setattr(sys, "argv", ["mfu_tracker", *argv])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("mfu_tracker.__main__", run_name="__main__")
    return exit_.value.code, capsys.readouterr().out


def test_python_m_prints_what_main_prints(monkeypatch, capsys):
    code, out = _run_as_main(monkeypatch, capsys, "estimate", "--params", "7e9", "--tokens-per-sec", "1000",
                             "--peak-tflops", "100")
    assert code == 0
    assert main(["estimate", "--params", "7e9", "--tokens-per-sec", "1000", "--peak-tflops", "100"]) == 0
    assert capsys.readouterr().out == out
    # 6N x tokens/s over the peak: 6 x 7e9 x 1000 / 100e12 = 0.42 (42.0%)
    assert "42.0" in out


def test_python_m_exits_with_mains_status_on_a_bad_command(monkeypatch, capsys):
    code, _ = _run_as_main(monkeypatch, capsys, "no-such-command")
    assert code not in (0, None)
