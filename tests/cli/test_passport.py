"""``mfu-tracker passport``: every figure of the model card's compute section
recomputed by hand from the log's raw lines (json per line, no reader of the
package), for a real CPU training run, a job of two runs, and a run whose
power the fake NVML measured."""
from __future__ import annotations

import json
import math
import re
import statistics

import pytest
from _fake_nvml import fake_nvml
from _view_train import PEAK_TFLOPS, gpm_log, train

from mfu_tracker.cli import main, passport


def _records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def cpu_log(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("passport") / "metrics.jsonl")
    train(path, steps=12, log_every=4)
    return path


def test_every_figure_by_hand_for_a_cpu_run(cpu_log):
    text, data = passport(cpu_log)
    records = _records(cpu_log)
    run, end = records[0], records[-1]
    assert run["record"] == "run" and end["record"] == "run_end"
    lines = [r for r in records if "record" not in r]
    ledgers = [r["ledger"] for r in lines] + [end["ledger"]]
    # hardware: the run record's fields
    hw = data["hardware"]
    assert hw["device"]["value"] == [run["device"]] and hw["devices"]["value"] == [1]
    assert hw["dtype"]["value"] == ["fp32"] and hw["hosts"]["value"] == [run["host"]]
    # device-hours: devices x (the last record's time - the process start) / 3600
    wall = end["time"] - run["process_start"]
    assert data["job_wall_s"]["value"] == pytest.approx(wall, rel=1e-12)
    assert data["device_hours"]["value"] == pytest.approx(1 * wall / 3600, rel=1e-12)
    # model FLOPs: every interval's (one run, nothing re-done), the untimed steps' too
    flops = math.fsum(iv["model_flops"] + (iv["untimed_flops"] or 0.0) for iv in ledgers)
    assert data["model_flops"]["value"] == pytest.approx(flops, rel=1e-12)
    assert flops == pytest.approx(12 * (lines[-1]["throughput/achieved_tflops"] * 1e12
                                        * lines[-1]["throughput/step_time_s"]), rel=1e-9)
    # goodput: the steps' seconds less their data phase and less the first step's
    # excess over the median step (each interval's mean step, the first step left
    # out of its own: startup, docs/goodput.md), over the wall time
    assert all(iv["compile_calls"] == 0 and iv["dropped"] == 0 for iv in ledgers)
    first_s = ledgers[0]["first_step_s"]
    means = []
    for iv in ledgers:
        n = iv["to_step"] - iv["from_step"] - iv["untimed_steps"]
        if iv["from_step"] == 0:
            means.append((iv["step_s"] - first_s) / (n - 1))
        elif n:
            means.append(iv["step_s"] / n)
    excess = max(0.0, first_s - statistics.median(means))
    productive = math.fsum(iv["step_s"] - iv["phase_s"].get("data", 0.0)
                           for iv in ledgers) - excess
    assert data["goodput"]["value"] == pytest.approx(productive / wall, rel=1e-9)
    # job MFU: those FLOPs over the device-seconds x the peak
    mfu = data["mfu"]
    assert mfu["job_mfu"]["value"] == pytest.approx(flops / (wall * PEAK_TFLOPS * 1e12),
                                                    rel=1e-9)
    assert mfu["last_window_mfu"]["value"] == lines[-1]["throughput/mfu"]
    assert mfu["last_window_mfu"]["from"] == f"line {len(records) - 1} (step 12): throughput/mfu"
    assert mfu["peak_per_device"]["value"] == run["peak_tflops"]
    assert (mfu["peak_source"]["value"], mfu["flops_obtained"]["value"]) == ("user", "counted")
    assert mfu["convention"]["value"] == "mfu_tracker (ours)"
    assert data["energy"]["energy_j"]["value"] is None        # a CPU: no power readings
    # the Markdown says the same, rounded
    assert "| Hardware | 1 x " in text and f"{data['device_hours']['value']:.4g} device-hours" in text
    assert f"{mfu['job_mfu']['value'] * 100:.2f}% over the job" in text
    assert f"{data['goodput']['value'] * 100:.2f}% of the job's wall time" in text
    assert "| Energy | not measured" in text


def _line(step, time, flops, step_s, data_s, **keys):
    return {"step": step, "time": time, "throughput/mfu": 0.4, **keys,
            "ledger": {"from_step": step - 10, "to_step": step, "step_s": step_s,
                       "phase_s": {"data": data_s}, "own_s": 0.0, "dropped": 0,
                       "model_flops": flops, "flops_steps": 10, "flops_ranks": 8,
                       "compile_calls": 0, "first_boundary": 0.0, "first_step_s": None,
                       "untimed_steps": 0, "untimed_flops": 0.0}}


def _run(time, start_step, process_start):
    return {"record": "run", "time": time, "run_id": f"r{start_step}", "job": "j", "host": "n7",
            "pid": 1, "ranks": 8, "devices": 8, "process_start": process_start,
            "start_step": start_step, "peak_tflops": 989.4, "peak_source": "datasheet",
            "dtype": "bf16", "device": "H100 SXM", "version": "0.1.0"}


def test_a_job_of_two_runs_by_hand(tmp_path):
    # run 1 starts at t=1000, trains 20 steps (2 lines), dies at t=1300 (no run end);
    # run 2 starts at t=1400, resumes at step 20, trains 10 steps, ends at t=1700
    lines = [_run(1010, 0, 1000), _line(10, 1150, 1e18, 100.0, 5.0, **{"throughput/power_w": 5600.0}),
             _line(20, 1300, 1e18, 100.0, 5.0, **{"throughput/power_w": 5800.0}),
             _run(1420, 20, 1400), _line(30, 1650, 2e18, 200.0, 10.0),
             {"record": "run_end", "time": 1700, "step": 30,
              "ledger": _line(30, 0, 0.0, 0.0, 0.0)["ledger"] | {"from_step": 30}}]
    path = tmp_path / "job.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    text, data = passport(str(path))
    assert data["runs"] == [1, 2] and data["job_id"] == "j"
    # wall: 1700 - 1000 = 700 s; devices x time charged: 8 x (1300 - 1000) + 8 x (1700 - 1300)
    assert data["job_wall_s"]["value"] == 700.0
    assert data["device_hours"]["value"] == pytest.approx(8 * 700 / 3600, rel=1e-12)
    assert data["model_flops"]["value"] == 4e18
    # goodput: (100 - 5 + 100 - 5 + 200 - 10) s / 700 s
    assert data["goodput"]["value"] == pytest.approx(380 / 700, rel=1e-12)
    assert data["mfu"]["job_mfu"]["value"] == pytest.approx(4e18 / (8 * 700 * 989.4e12),
                                                            rel=1e-12)
    assert data["mfu"]["denominator"]["value"] == pytest.approx(989.4 * 8, rel=1e-12)
    assert data["mfu"]["last_window_mfu"]["from"] == "line 5 (step 30): throughput/mfu"
    # energy: 5600 W x (1150 - 1010) s + 5800 W x (1300 - 1150) s; run 2 has no power
    assert data["energy"]["energy_j"]["value"] == 5600 * 140 + 5800 * 150
    assert data["energy"]["lines_with_power"]["value"] == 2
    assert "2 of 3 metrics lines hold power_w" in data["energy"]["lines_with_power"]["from"]
    assert "| Hardware | 8 x H100 SXM (bf16); 8 process(es); host n7 |" in text
    assert f"{(5600 * 140 + 5800 * 150) / 3.6e6:.4g} kWh" in text


@pytest.fixture
def nvml(monkeypatch):
    fake = fake_nvml(monkeypatch)
    yield fake
    fake.lib.fake_nvml_reset()


def test_energy_measured_by_nvml_by_hand(fake, nvml, tmp_path, monkeypatch):
    nvml.script_gpm(62.5, 31.0)
    path = tmp_path / "gpm.jsonl"
    gpm_log(fake, path, monkeypatch)
    records = _records(path)
    before = records[0]["time"]
    joules = 0.0
    for record in records:
        if "record" not in record:
            joules += record["throughput/power_w"] * (record["time"] - before)
            before = record["time"]
    _, data = passport(str(path))
    assert data["energy"]["energy_j"]["value"] == pytest.approx(joules, rel=1e-12)
    # the mean power over the interval from the fake's energy counter, which runs at
    # its 250 W (to the clocks' reading apart)
    assert records[1]["throughput/power_w"] == pytest.approx(250.0, rel=1e-3)


def test_the_command_writes_markdown_and_json(cpu_log, tmp_path, capsys):
    card, doc = tmp_path / "card" / "compute.md", tmp_path / "passport.json"
    assert main(["passport", cpu_log, "--out", str(card), "--json", str(doc)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## Compute") and card.read_text().startswith("## Compute")
    assert json.loads(doc.read_text())["model_flops"] == passport(cpu_log)[1]["model_flops"]
    assert main(["passport", str(tmp_path / "missing.jsonl")]) == 2
    bare = tmp_path / "bare.jsonl"                      # metrics lines, no run record
    bare.write_text(json.dumps({"step": 1, "throughput/mfu": 0.1}) + "\n")
    assert main(["passport", str(bare)]) == 2
    assert "no run records" in capsys.readouterr().err


@pytest.mark.parametrize("args, error, match", [
    ((3,), TypeError, "path must be a str or os.PathLike, not int"),   # never a descriptor
    (("LOG", 0), ValueError, "job must be >= 1, got 0"),
    (("LOG", True), TypeError, "job must be an int, not bool"),
    (("LOG", 9), ValueError, "--job 9: give a job number 1..1"),
    (("LOG", None, "yes"), TypeError, "strict must be a bool, not str"),
])
def test_bad_arguments_are_named(cpu_log, args, error, match):
    args = tuple(cpu_log if a == "LOG" else a for a in args)
    with pytest.raises(error, match=re.escape(match)):
        passport(*args)
