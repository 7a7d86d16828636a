"""What ``mfu-tracker run`` does beside its command (cli/_beside.py): the
settings' defaults, where the passport goes, the passport of a small log
written by hand, the live page served (or, its port taken, one line saying
so and nothing served)."""
from __future__ import annotations

import json
import os
import socket
import urllib.request

import pytest

from mfu_tracker.cli._beside import Beside, Page, passport_paths, write_passport

# one run of 8 devices at 989.4 TFLOP/s each, from t=1000; 10 steps of 1e18 FLOPs
# (100 s of steps, 5 s of them waiting for data) by t=1150; the run ends at t=1200
RUN = {"record": "run", "time": 1010, "run_id": "r0", "job": "j", "host": "n7", "pid": 1,
       "ranks": 8, "devices": 8, "process_start": 1000, "start_step": 0, "peak_tflops": 989.4,
       "peak_source": "datasheet", "dtype": "bf16", "device": "H100 SXM", "version": "0.1.0"}
LEDGER = {"from_step": 0, "to_step": 10, "step_s": 100.0, "phase_s": {"data": 5.0},
          "own_s": 0.0, "dropped": 0, "model_flops": 1e18, "flops_steps": 10, "flops_ranks": 8,
          "compile_calls": 0, "first_boundary": 0.0, "first_step_s": None, "untimed_steps": 0,
          "untimed_flops": 0.0}
METRICS = {"step": 10, "time": 1150, "throughput/mfu": 0.4, "ledger": LEDGER}
END = {"record": "run_end", "time": 1200, "step": 10,
       "ledger": {**LEDGER, "from_step": 10, "step_s": 0.0, "phase_s": {"data": 0.0},
                  "model_flops": 0.0}}


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in (RUN, METRICS, END)))
    return str(path)


def test_the_defaults_serve_the_page_here_and_write_the_passport():
    beside = Beside()
    assert (beside.view, beside.host, beside.port, beside.passport) == (True, "127.0.0.1", 0, True)
    assert beside.budget_tokens is None and beside.budget_steps is None


def test_the_passport_goes_beside_the_log(tmp_path):
    assert passport_paths(str(tmp_path / "logs" / "m.jsonl")) == (
        str(tmp_path / "logs" / "passport.md"), str(tmp_path / "logs" / "passport.json"))
    here = os.path.abspath(".")
    assert passport_paths("m.jsonl") == (os.path.join(here, "passport.md"),
                                         os.path.join(here, "passport.json"))


def test_the_passport_of_a_small_log(log, tmp_path, capsys):
    data = write_passport(log)
    md, js = passport_paths(log)
    assert json.loads(open(js).read()) == json.loads(json.dumps(data))
    # wall: from the process start (1000) to the run end (1200) = 200 s; goodput (100 - 5) s of it
    assert data["job_wall_s"]["value"] == 200.0
    assert data["model_flops"]["value"] == 1e18
    assert data["goodput"]["value"] == pytest.approx(95 / 200, rel=1e-12)
    assert data["mfu"]["job_mfu"]["value"] == pytest.approx(1e18 / (8 * 200 * 989.4e12), rel=1e-12)
    assert "| Hardware | 8 x H100 SXM (bf16)" in open(md).read()
    assert f"passport for the model card: {md} (and passport.json)" in capsys.readouterr().err


def test_no_passport_for_a_log_without_a_run_says_why(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert write_passport(str(empty)) is None
    assert capsys.readouterr().err.startswith("mfu-tracker run: no passport: ")
    assert not os.path.exists(passport_paths(str(empty))[0])


def test_a_page_switched_off_serves_nothing(log, capsys):
    page = Page(Beside(view=False), log)
    assert page.server is None
    page.close()
    assert capsys.readouterr().err == ""


def test_the_page_serves_the_log_and_closes(log, capsys):
    page = Page(Beside(port=0), log)
    try:
        url = page.server.url
        assert f"mfu-tracker run: live page: {url}" in capsys.readouterr().err
        with urllib.request.urlopen(url + "api/state", timeout=30) as response:
            assert response.status == 200 and json.loads(response.read())
    finally:
        page.close()
    assert page.server is None
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


def test_a_page_whose_port_is_taken_says_so_and_serves_nothing(log, capsys):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        page = Page(Beside(port=port), log)
        assert page.server is None
        err = capsys.readouterr().err
        assert err.startswith("mfu-tracker run: the live page was not served (")
        assert f"`mfu-tracker view {log}` serves it from another shell" in err
        page.close()
    finally:
        taken.close()
