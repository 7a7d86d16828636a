"""What ``mfu-tracker run`` does beside the command (cli/_beside.py): the
live page served from the launcher while the command runs, its figures the
log's; the passport written beside the log at the end, the figures
``mfu-tracker passport`` gives for the same log; both switched off by flag."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _runner import SCRIPTS, env, metrics, mfu_run

PY = sys.executable
TINY = str(SCRIPTS / "tiny_loop.py")

# 6 steps of 4 x 16 tokens, a metrics line every 2 steps (warm-up 1: steps 2..6)
WORDS = ("--peak-tflops", "0.05", "--log-every", "2")


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def _launched(tmp_path: Path, *flags: str):
    """``run`` on the tiny loop, kept alive after its steps (it waits for
    SIGTERM); the launcher's stderr lines so far."""
    err = tmp_path / "err.txt"
    proc = subprocess.Popen([PY, "-m", "mfu_tracker", "run", "--log", str(tmp_path / "m.jsonl"),
                             *WORDS, *flags, "--", PY, TINY, "--wait-for-sigterm"],
                            env=env(), stdout=subprocess.PIPE, stderr=err.open("w"), text=True)
    deadline = time.monotonic() + 300
    while proc.stdout.readline().strip() != "waiting":
        assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
    return proc, err


def test_the_page_shows_the_log_while_the_command_runs_and_the_passport_follows(tmp_path):
    proc, err = _launched(tmp_path, "--budget-steps", "12")
    try:
        found = re.search(r"live page: (http://127\.0\.0\.1:\d+/)", err.read_text())
        assert found, err.read_text()
        url = found.group(1)
        newest = metrics(tmp_path / "m.jsonl")[-1]
        state = _get(url + "api/state")
        head = {f["id"]: f for f in state["head"]["figures"]}
        assert head["mfu"]["value"] == newest["throughput/mfu"]   # the log's, not recomputed
        progress = {f["id"]: f for f in state["progress"]["figures"]}
        assert progress["steps_done"]["value"] == newest["step"] == 6
        assert progress["fraction_done"]["value"] == 6 / 12       # against --budget-steps
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    assert proc.returncode == 7                                  # the script's own status
    with pytest.raises(urllib.error.URLError):                   # the page went with the run
        urllib.request.urlopen(url, timeout=5)
    # the passport beside the log: the figures `mfu-tracker passport --json` gives
    card = (tmp_path / "passport.md").read_text()
    data = json.loads((tmp_path / "passport.json").read_text())
    shown = subprocess.run([PY, "-m", "mfu_tracker", "passport", str(tmp_path / "m.jsonl"),
                            "--json", str(tmp_path / "again.json")], env=env(),
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    again = json.loads((tmp_path / "again.json").read_text())
    assert data["model_flops"] == again["model_flops"] and data["mfu"] == again["mfu"]
    assert "## Compute" in card and "passport for the model card" in err.read_text()


def test_no_view_and_no_passport(tmp_path):
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--no-view", "--no-passport", *WORDS,
                   "--", PY, TINY)
    assert done.returncode == 0, done.stderr
    assert "live page:" not in done.stderr and "passport for" not in done.stderr
    assert not (tmp_path / "passport.md").exists() and metrics(tmp_path / "m.jsonl")


def test_a_run_with_no_log_gets_no_passport_and_says_why(tmp_path):
    done = mfu_run("--log", str(tmp_path / "m.jsonl"), "--", PY, "-c", "print('no torch')")
    assert done.returncode == 0
    assert "no log was written" in done.stderr and not (tmp_path / "passport.md").exists()


@pytest.mark.parametrize("port", ["70000", "-1", "x"])
def test_a_bad_port_is_refused_before_the_command_runs(tmp_path, port):
    done = mfu_run("--port", port, "--", PY, "-c", "open('ran', 'w')", cwd=tmp_path)
    assert done.returncode == 2 and "--port" in done.stderr, done.stderr
    assert not (tmp_path / "ran").exists()
