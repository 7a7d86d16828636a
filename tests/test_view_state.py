"""The live page's document (``mfu-tracker view``): every number the page
shows is the log's own value, its formula applied to its inputs by hand gives
it back, and a number without its input is absent with the input named.

The logs come from a real Tracker training a tiny GPT-2 on the CPU
(tests/_view_train.py), read back independently (``read_log``: every record
kept); the ladder, OFU and the self-check from the fake NVML and the fake GPU
driver (exact: MFU = FLOPs / fake time / peak), as tests/test_hardware.py
drives them.
"""
from __future__ import annotations

import json

import pytest
from _fake_nvml import fake_nvml
from _view_train import PEAK_TFLOPS, SEQ, config, gpm_log, train

from mfu_tracker import transformer_flops
from mfu_tracker.cli.view import _state
from mfu_tracker.cli.view._state import PageState
from mfu_tracker.job import read_log
from mfu_tracker.job._ledger import job_ledger


@pytest.fixture(scope="module")
def cpu_log(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("view") / "metrics.jsonl")
    train(path, steps=12, log_every=4)
    return path


def _metrics(path):
    """The log's metrics lines, each with its line number (by hand: json per line)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            record = json.loads(line)
            if "record" not in record:
                out.append((number, record))
    return out


def _fig(section, fid):
    return next(f for f in section["figures"] if f["id"] == fid)


def test_head_figures_are_the_logs_values_and_their_formula_gives_them_back(cpu_log):
    doc = PageState(cpu_log).snapshot()
    number, last = _metrics(cpu_log)[-1]
    mfu = _fig(doc["head"], "mfu")
    assert mfu["value"] == last["throughput/mfu"]
    assert mfu["source"] == f"line {number} (step 12): throughput/mfu"
    # the formula by hand: FLOPs per step = achieved TFLOP/s x 1e12 x step time,
    # over the step time and the denominator (0.05 TFLOP/s x 1 device)
    flops = last["throughput/achieved_tflops"] * 1e12 * last["throughput/step_time_s"]
    assert mfu["check"] == pytest.approx(
        flops / last["throughput/step_time_s"] / (PEAK_TFLOPS * 1e12), rel=1e-12)
    assert mfu["check"] == pytest.approx(mfu["value"], rel=1e-9)
    per_step, step_time, denominator = mfu["inputs"]
    assert per_step["value"] == pytest.approx(flops, rel=1e-12)
    assert per_step["how"] == "counted"                     # the run record's model.flops
    assert step_time["how"] == "measured" and step_time["value"] == last["throughput/step_time_s"]
    # the key is peak x 1e12 FLOP/s x 1e-12 (its unit), the run record the TFLOP/s
    assert denominator["value"] == last["throughput/peak_tflops"] == pytest.approx(PEAK_TFLOPS)
    peak, devices = denominator["inputs"]
    assert (peak["value"], peak["how"], devices["value"]) == (
        pytest.approx(PEAK_TFLOPS, rel=1e-15), "declared", 1)
    assert "line 1 (run record)" in peak["source"]
    tokens = _fig(doc["head"], "tokens_per_sec")
    assert tokens["value"] == last["throughput/tokens_per_sec"] and tokens["how"] == "measured"
    assert doc["run"]["model_type"] == "gpt2" and doc["run"]["seq_len"] == SEQ


def test_a_figure_without_its_input_is_absent_and_names_the_input(cpu_log):
    doc = PageState(cpu_log).snapshot()
    hfu, mbu = _fig(doc["head"], "hfu"), _fig(doc["head"], "mbu")
    assert hfu["value"] is None and "executed FLOPs" in hfu["absent"]
    assert mbu["value"] is None and "param_bytes=" in mbu["absent"]
    assert doc["memory"]["absent"].startswith("no memory/* keys")
    assert "Hopper" in doc["ladder"]["absent"]
    assert "one process" in doc["ranks"]["absent"]
    assert "profile_steps" in doc["kernels"]["absent"]
    assert "--budget-tokens" in doc["progress"]["absent"]


def test_the_frameworks_range_by_hand(cpu_log):
    doc = PageState(cpu_log).snapshot()
    _, last = _metrics(cpu_log)[-1]
    conventions = doc["conventions"]
    assert conventions["ours"] and conventions["convention"] == "mfu_tracker"
    found = {f["id"]: f["value"] for f in conventions["frameworks"]}
    assert set(found) == {"mfu_megatron", "mfu_torchtitan", "mfu_nanogpt"}
    for name, value in found.items():
        theirs = transformer_flops(config(), seq_len=SEQ, batch_size=1,
                                   convention=name[len("mfu_"):]).flops_per_token
        # their FLOPs per token x our tokens/s over the same peak
        assert value == pytest.approx(theirs * last["throughput/tokens_per_sec"]
                                      / (last["throughput/peak_tflops"] * 1e12), rel=1e-12)
    # verl and VeOmni have no gpt2 formula: listed with what they log instead
    assert {r["name"] for r in conventions["refused"]} == {"verl", "veomni"}
    assert all("gpt2" in r["why"] for r in conventions["refused"])
    values = list(found.values()) + [last["throughput/mfu"]]
    assert conventions["range"] == [min(values), max(values)]


def test_no_range_without_the_model_says_which_input(tmp_path):
    path = str(tmp_path / "m.jsonl")
    train(path, steps=4, log_every=4, model_info={})
    doc = PageState(path).snapshot()
    assert "range" not in doc["conventions"]
    assert "model_info" in doc["conventions"]["absent"]
    # flops_per_step= given and nothing said: declared
    assert doc["run"]["flops"] == "declared"


def test_progress_and_eta_by_hand(cpu_log, tmp_path):
    number, last = _metrics(cpu_log)[-1]
    per_step = last["throughput/tokens_per_sec"] * last["throughput/step_time_s"]
    doc = PageState(cpu_log, budget_steps=40).snapshot()
    assert _fig(doc["progress"], "fraction_done")["value"] == 12 / 40
    assert _fig(doc["progress"], "steps_left")["value"] == 40 - 12
    assert _fig(doc["progress"], "eta_s")["absent"] == "the run has ended"
    doc = PageState(cpu_log, budget_tokens=10_000).snapshot()
    assert _fig(doc["progress"], "tokens_per_step")["value"] == pytest.approx(per_step, rel=1e-12)
    assert _fig(doc["progress"], "fraction_done")["value"] == pytest.approx(
        12 * per_step / 10_000, rel=1e-12)
    # a run still going (no run-end record): ETA = steps left x its pace so far
    live = tmp_path / "live.jsonl"
    lines = open(cpu_log, encoding="utf-8").read().splitlines(keepends=True)
    live.write_text("".join(line for line in lines if '"run_end"' not in line))
    doc = PageState(str(live), budget_steps=40).snapshot()
    pace = (last["time"] - last["ledger"]["first_boundary"]) / (12 - 0)
    assert _fig(doc["progress"], "eta_s")["value"] == pytest.approx(28 * pace, rel=1e-12)
    assert doc["status"]["ended"] is False


def test_waterfall_and_ledger_are_the_reports_and_the_ledgers(cpu_log):
    doc = PageState(cpu_log).snapshot()
    _, last = _metrics(cpu_log)[-1]
    shares = {f["id"]: f["value"] for f in doc["waterfall"]["shares"]}
    assert shares["mfu"] == last["throughput/mfu"]
    for cause in ("data", "optimizer", "compute", "other"):
        assert shares[cause] == last[f"throughput/mfu_lost/{cause}"]
    assert doc["waterfall"]["sum"] == pytest.approx(sum(shares.values()), rel=1e-12)
    ledger = job_ledger(read_log(cpu_log))
    assert _fig(doc["ledger"], "goodput")["value"] == ledger.goodput
    assert _fig(doc["ledger"], "job_mfu")["value"] == ledger.job_mfu


def test_a_growing_log_is_read_once_per_line(cpu_log, tmp_path, monkeypatch):
    monkeypatch.setattr(_state, "MIN_READ_INTERVAL_S", 0.0)
    lines = open(cpu_log, encoding="utf-8").read().splitlines(keepends=True)
    path = tmp_path / "growing.jsonl"
    path.write_text("")
    state = PageState(str(path))
    assert state.snapshot()["waiting"] == "the log holds no record yet"
    with open(path, "a", encoding="utf-8") as f:
        f.write(lines[0])                     # the run record: no metrics yet
        f.flush()
        assert "no metrics line" in state.snapshot()["waiting"]
        f.write(lines[1])
        f.write(lines[2][:40])                # a line being written
        f.flush()
        doc = state.snapshot()
        assert doc["log"]["lines"] == 1 and doc["log"]["cut"] is None
        assert _fig(doc["head"], "mfu")["value"] == json.loads(lines[1])["throughput/mfu"]
        f.write(lines[2][40:])
        f.flush()
        doc = state.snapshot()
    assert doc["log"]["lines"] == 2
    assert _fig(doc["head"], "mfu")["value"] == json.loads(lines[2])["throughput/mfu"]
    assert state._reader.offset == path.stat().st_size     # each byte read once


def test_a_long_log_keeps_a_bounded_sample_and_its_newest_line(cpu_log, tmp_path):
    lines = open(cpu_log, encoding="utf-8").read().splitlines()
    run, line = lines[0], json.loads(lines[1])
    del line["ledger"]
    path = tmp_path / "long.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        f.write(run + "\n")
        for step in range(1, 20_001):
            line["step"] = step
            line["throughput/mfu"] = 0.3 + (0.2 if step == 7_777 else 0.0)
            f.write(json.dumps(line) + "\n")
    doc = PageState(str(path)).snapshot()
    points = doc["series"]["mfu"]
    assert len(points) <= 4 * 256 + 4                  # buckets x (first, last, low, high)
    assert [7_777, 0.5] in points                      # the spike survives
    assert points[-1][0] == 20_000 and _fig(doc["head"], "mfu")["source"].startswith(
        "line 20001 (step 20000)")
    assert doc["log"]["lines"] == 20_000


# ---- the hardware: the fake NVML and the fake driver ------------------------------------

@pytest.fixture
def nvml(monkeypatch):
    fake = fake_nvml(monkeypatch)
    yield fake
    fake.lib.fake_nvml_reset()


def test_the_ladder_ofu_and_self_check_on_the_fake_nvml(fake, nvml, tmp_path, monkeypatch):
    # GPU busy 97 %, SM active 88 %, tensor pipes 62.5 %; MFU 5e11 / 1 ms / 1e15 = 0.5
    nvml.script_gpm(62.5, 31.0, sm_pct=88.0, gpu_pct=97.0)
    path = tmp_path / "gpm.jsonl"
    gpm_log(fake, path, monkeypatch)
    doc = PageState(str(path)).snapshot()
    rungs = {r["id"]: r["value"] for r in doc["ladder"]["rungs"]}
    assert rungs == {"hw/gpu_busy": 0.97, "hw/sm_active": 0.88, "hw/tensor_active": 0.625,
                     "mfu": pytest.approx(0.5, rel=1e-12)}
    assert all(r["how"] == "measured" for r in doc["ladder"]["rungs"][:3])
    assert doc["ladder"]["ofu"]["value"] == 0.625 and doc["ladder"]["ofu"]["label"] == "OFU"
    _, last = _metrics(path)[-1]
    # the fake's SM clock: 1755 of 1980 MHz
    assert last["throughput/clock_ratio"] == pytest.approx(1755 / 1980, rel=1e-12)
    assert doc["ladder"]["ofu_clock"]["value"] == pytest.approx(0.625 * 1755 / 1980, rel=1e-12)
    check = doc["ladder"]["self_check"]
    assert check["value"] == pytest.approx(0.5 / 0.625, rel=1e-12)   # 0.8
    assert check["check"] == pytest.approx(check["value"], rel=1e-12)
    assert doc["ladder"]["verdict"] == "MFU is within what the tensor pipes did"
    assert doc["series"]["ofu"] == [[4, 0.625], [8, 0.625]]
    memory = {f["id"]: f["value"] for f in doc["memory"]["figures"]}
    assert memory["memory/peak_allocated_gib"] == 8.0
    # 8 GiB in 2 MiB segments = 8 GiB reserved, of the fake's 80 GiB: 1 - 0.1 headroom
    assert memory["memory_headroom"] == pytest.approx(1 - 8 / 80, rel=1e-12)


def test_mfu_above_the_tensor_pipes_is_flagged(fake, nvml, tmp_path, monkeypatch):
    nvml.script_gpm(10.0, 31.0)                      # tensor 0.10, MFU 0.5: 5x the hardware
    path = tmp_path / "high.jsonl"
    with pytest.warns(RuntimeWarning, match="clearly above"):
        gpm_log(fake, path, monkeypatch, windows=1)
    doc = PageState(str(path)).snapshot()
    assert doc["ladder"]["self_check"]["value"] == pytest.approx(5.0, rel=1e-12)
    assert "clearly above" in doc["ladder"]["verdict"]


def test_view_json_prints_the_document(cpu_log, capsys):
    from mfu_tracker.cli import main

    assert main(["view", cpu_log, "--json", "--budget-steps", "24"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert _fig(doc["progress"], "fraction_done")["value"] == 0.5
    assert main(["view", cpu_log, "--budget-steps", "0"]) == 2


def test_a_log_that_is_not_there_yet_waits(tmp_path):
    doc = PageState(str(tmp_path / "later.jsonl")).snapshot()
    assert "No such file" in doc["error"]     # the page says it waits for the log


def test_per_rank_spread_and_the_straggler_are_the_newest_lines(tmp_path):
    # two ranks' aggregated keys, as rank 0 logs them with distributed=True
    lines = []
    for step, low, high in ((10, 0.20, 0.26), (20, 0.22, 0.30)):
        lines.append({"step": step, "time": 1000.0 + step, "throughput/mfu": (low + high) / 2,
                      "throughput/mfu_rank_min": low, "throughput/mfu_rank_mean": (low + high) / 2,
                      "throughput/mfu_rank_max": high, "throughput/slowest_rank": 1,
                      "throughput/step_time_rank_max": 0.5, "throughput/step_time_rank_min": 0.4,
                      "throughput/straggler_rank": 1, "throughput/straggler_lost": 0.125})
    path = tmp_path / "ranks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    doc = PageState(str(path)).snapshot()
    shown = {f["id"]: f for f in doc["ranks"]["figures"]}
    assert "absent" not in doc["ranks"]
    assert {k: f["value"] for k, f in shown.items()} == {
        "mfu_rank_min": 0.22, "mfu_rank_mean": 0.26, "mfu_rank_max": 0.30, "slowest_rank": 1,
        "step_time_rank_max": 0.5, "step_time_rank_min": 0.4, "straggler_rank": 1,
        "straggler_lost": 0.125}
    assert shown["mfu_rank_min"]["source"] == "line 2 (step 20): throughput/mfu_rank_min"
    assert shown["straggler_rank"]["how"] == "measured"
    # the spread over steps, every logged line
    assert doc["series"]["mfu_rank_min"] == [[10, 0.20], [20, 0.22]]
    assert doc["series"]["mfu_rank_max"] == [[10, 0.26], [20, 0.30]]


def test_one_process_has_no_spread_and_says_so(cpu_log):
    ranks = PageState(cpu_log).snapshot()["ranks"]
    assert ranks["figures"] == [] and "one process" in ranks["absent"]


@pytest.fixture(scope="module")
def profiled_log(tmp_path_factory):
    """Six CPU steps, steps 2 and 5 profiled (profile_steps=3, warm-up 1)."""
    path = str(tmp_path_factory.mktemp("view") / "profiled.jsonl")
    train(path, steps=6, log_every=2, profile_steps=3)
    return path


def test_the_kernel_breakdown_is_the_newest_profiled_steps(profiled_log):
    from mfu_tracker.breakdown._record import LABELS

    doc = PageState(profiled_log).snapshot()
    with open(profiled_log, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    breakdown = [r for r in records if r.get("record") == "breakdown"][-1]
    # the shares come in the metrics line after the profiled step
    keyed = [r for r in records if "throughput/kernel_step_s" in r][-1]
    assert breakdown["step"] == 5 and keyed["step"] == 6
    kernels = doc["kernels"]
    assert kernels["step"] == breakdown["step"] and "absent" not in kernels   # the profiled step
    by_class = {row["class"]: row for row in kernels["rows"]}
    for name, label in LABELS.items():
        key = f"throughput/kernel_share/{name}"
        if key in keyed:
            assert by_class[label]["share"] == keyed[key], name
    assert sum(row["share"] for row in kernels["rows"]) == pytest.approx(1.0, abs=1e-9)
    # each class's seconds add up to the profiled step's
    assert sum(row["time_s"] for row in kernels["rows"]) == pytest.approx(
        breakdown["step_s"], rel=1e-9)
    assert by_class[LABELS["gemm"]]["tflops"] == pytest.approx(
        keyed["throughput/kernel_tflops/gemm"], rel=1e-9)


def test_the_advice_bounds_by_hand_from_the_log(profiled_log):
    from mfu_tracker.job._advice import FUSABLE_MIN, OPTIMIZER_MIN

    doc = PageState(profiled_log).snapshot()
    with open(profiled_log, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if '"record"' not in line]
    keyed = [r for r in lines if "throughput/kernel_step_s" in r][-1]
    advice = {a["rule"]: a for a in doc["advice"]["advice"]}
    # torch.compile would fuse the elementwise and reduction kernels: their share of the
    # profiled step bounds it, listed from FUSABLE_MIN on (the shares are measured: either
    # side of the threshold, the page must agree with the log)
    fusable = keyed["throughput/kernel_share/elementwise"] + \
        keyed["throughput/kernel_share/reduction"]
    assert ("compile" in advice) == (fusable >= FUSABLE_MIN)
    if "compile" in advice:
        assert advice["compile"]["bound"] == pytest.approx(fusable, rel=1e-12)
    # a fused optimizer: at most the optimizer phase's share of the newest window
    optimizer = lines[-1]["throughput/mfu_lost/optimizer"]
    assert ("fused_optimizer" in advice) == (optimizer >= OPTIMIZER_MIN)
    if "fused_optimizer" in advice:
        assert advice["fused_optimizer"]["bound"] == optimizer
    bounds = [a["bound"] for a in doc["advice"]["advice"]]
    assert bounds == sorted(bounds, reverse=True)                 # ranked by the bound
    needs = {n["rule"]: n["needs"] for n in doc["advice"]["needs"]}
    assert "executed FLOPs" in needs["selective_checkpointing"]
