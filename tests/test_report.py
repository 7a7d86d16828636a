"""``mfu-tracker report``: the picture is a valid PNG of the promised size,
and every number it prints equals the metric in its input.

Inputs: a JSONL log written by hand with the waterfall and per-rank keys
(built by the one formatter, ``format_metrics``, so no key is retyped), a
log written by a real ``Tracker(log_path=)``, TensorBoard event files
written by ``torch.utils.tensorboard`` and by a real HF Trainer run (tiny
GPT-2 on CPU). TensorBoard stores scalars as float32, so numbers read from
event files are compared with the float32 rounding of the logged values.
"""
from __future__ import annotations

import base64
import glob
import io
import json
import math
import re
import subprocess
import sys
import warnings

import pytest

pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.cli.report import _render, plan  # noqa: E402
from mfu_tracker.cli.report.panels import hardware, kernels, waterfall  # noqa: E402
from mfu_tracker.timing._metrics import format_metrics  # noqa: E402

from _examples import run_example  # noqa: E402

CAUSES = ("data", "communication", "optimizer", "recompute", "compute", "other")


def printed(out: str):
    """{(step, key): value} of every ``step=N key=value`` line printed."""
    numbers = {}
    for line in out.splitlines():
        match = re.match(r"\s+step=(\d+) (.*)$", line)
        if not match:
            continue
        step = int(match.group(1))
        for cell in match.group(2).split():
            key, value = cell.split("=", 1)
            if key != "sum":
                numbers[(step, key)] = float(value)
    return numbers


def png_shape(data: bytes):
    return matplotlib.image.imread(io.BytesIO(data), format="png").shape


def expected_shape(panels: int):
    return (round(_render.PANEL_HEIGHT_IN * panels * _render.DPI),
            round(_render.WIDTH_IN * _render.DPI), 4)


def report(capsys, *argv):
    """``mfu-tracker report ... --numbers``: every number drawn, printed."""
    status = main(["report", *map(str, argv), "--numbers"])
    out, err = capsys.readouterr()
    return status, out, err


def hand_written(tmp_path):
    """Three logged steps with MFU, the waterfall (adds up to 1) and the rank spread."""
    rows = []
    for step, mfu, shares in (
        (10, 0.25, (0.10, 0.05, 0.05, 0.10, 0.30, 0.15)),   # 0.25 + 0.75 = 1
        (20, 0.30, (0.05, 0.05, 0.05, 0.10, 0.30, 0.15)),   # 0.30 + 0.70 = 1
        (30, 0.35, (0.00, 0.05, 0.05, 0.10, 0.30, 0.15)),   # 0.35 + 0.65 = 1
    ):
        figures = {"mfu": mfu, "mfu_lost": dict(zip(CAUSES, shares)),
                   "mfu_rank_min": mfu - 0.02, "mfu_rank_mean": mfu, "mfu_rank_max": mfu + 0.03,
                   "slowest_rank": 1}
        rows.append({"step": step, "time": 1000.0 + step, **format_metrics(figures, "throughput")})
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def test_hand_written_waterfall_png_and_numbers(tmp_path, capsys):
    path, rows = hand_written(tmp_path)
    out_png = tmp_path / "r.png"
    status, out, err = report(capsys, path, "--out", out_png)
    assert status == 0, err
    assert png_shape(out_png.read_bytes()) == expected_shape(3)   # MFU, waterfall, per-rank
    numbers = printed(out)
    expected = {(r["step"], k): v for r in rows for k, v in r.items()
                if k not in ("step", "time")}
    assert numbers == expected                  # every key of the file, each value exactly
    # each bar adds up to 1 (0.25 + 0.10 + 0.05 + 0.05 + 0.10 + 0.30 + 0.15 = 1)
    for step in (10, 20, 30):
        total = sum(v for (s, k), v in numbers.items() if s == step and "/mfu_rank" not in k
                    and not k.endswith("slowest_rank"))
        assert total == pytest.approx(1.0, abs=1e-12)
    # only the hardware and kernel panels are missing (their own tests)
    assert [line for line in out.splitlines() if line.startswith("missing:")] == \
        [f"missing: {hardware.MISSING}", f"missing: {kernels.MISSING}"]
    # the waterfall's order is the file's (the formatter's) order
    waterfall_line = next(line for line in out.splitlines() if line.startswith("  step=10 ")
                          and "mfu_lost" in line)
    assert [c.split("=")[0].rsplit("/", 1)[-1] for c in waterfall_line.split()[1:-1]] == \
        ["mfu", *CAUSES]


def test_html_is_self_contained(tmp_path, capsys):
    path, rows = hand_written(tmp_path)
    out_html = tmp_path / "r.html"
    status, out, err = report(capsys, path, "--out", out_html, "--title", "run <1>")
    assert status == 0, err
    text = out_html.read_text()
    match = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert match
    assert png_shape(base64.b64decode(match.group(1))) == expected_shape(3)
    assert "run &lt;1&gt;" in text and "http" not in text     # nothing fetched from outside
    for r in rows:
        assert f"<td>{r['throughput/mfu_lost/compute']!r}</td>" in text
        assert f"<td>{r['step']}</td>" in text


def test_a_real_tracker_log_draws_mfu_and_says_what_is_missing(tmp_path, capsys):
    from mfu_tracker import Tracker

    log = tmp_path / "t.jsonl"
    t = Tracker(100.0, dtype="fp32", peak_tflops=1.0, clock="cpu", window=4, warmup=0,
                log_path=log)
    returned = {}
    for i in range(6):
        t.step(num_tokens=8)
        m = t.metrics()
        if m:
            returned[i] = m   # i steps completed
    t.close()
    status, out, err = report(capsys, log, "--out", tmp_path / "t.png")
    assert status == 0, err
    # the MFU line and the step time on its second axis
    assert printed(out) == {(step, key): m[key] for step, m in returned.items()
                            for key in ("throughput/mfu", "throughput/step_time_s")}
    assert "missing: throughput/mfu_lost/*" in out
    assert "mfu_rank_min" not in out                  # one process: no ranks, nothing missing
    # the run record's peak and its source; the job ledger is the third panel
    assert "peak: 1 TFLOP/s per device, fp32 (user)" in out
    assert png_shape((tmp_path / "t.png").read_bytes()) == expected_shape(3)


def float32(value: float) -> float:
    import numpy

    return float(numpy.float32(value))


def test_tensorboard_events_from_summary_writer(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    _, rows = hand_written(tmp_path)
    logdir = tmp_path / "tb"
    writer = SummaryWriter(str(logdir))
    for r in rows:
        for key, value in r.items():
            if key not in ("step", "time"):
                writer.add_scalar(key, value, r["step"])
    writer.close()
    del torch
    status, out, err = report(capsys, logdir, "--out", tmp_path / "tb.png")
    assert status == 0, err
    expected = {(r["step"], k): float32(v) for r in rows for k, v in r.items()
                if k not in ("step", "time")}
    assert printed(out) == expected


def test_tensorboard_and_jsonl_from_a_real_trainer_run(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    pytest.importorskip("tensorboard")
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    from mfu_tracker.integrations.hf_trainer import MFUCallback

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=64,
                                       n_positions=64, bos_token_id=0, eos_token_id=0))
    ids = torch.randint(1, 64, (32, 8), generator=torch.Generator().manual_seed(1))
    dataset = [{"input_ids": row, "labels": row} for row in ids]
    log = tmp_path / "hf.jsonl"
    cb = MFUCallback(peak_tflops=0.5, log_path=log)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=6,
                             per_device_train_batch_size=2, logging_steps=2,
                             report_to=["tensorboard"], use_cpu=True, save_strategy="no",
                             disable_tqdm=True, learning_rate=1e-3, seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=dataset, callbacks=[cb])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    # logs at steps 2, 4, 6: the callback's own record of what it logged
    history = {e["step"]: e["metrics"] for e in cb.history}
    assert sorted(history) == [2, 4, 6]
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines = [line for line in lines if "record" not in line]   # the metrics lines
    assert [line["step"] for line in lines] == [2, 4, 6]
    for line in lines:
        assert {k: v for k, v in line.items() if k not in ("step", "time", "ledger")} == \
            history[line["step"]]

    status, out, err = report(capsys, log, "--out", tmp_path / "hf.png")
    assert status == 0, err
    # phases=True (the default) marks the waterfall: its shares are printed too
    shown = {(s, k): v for s, m in history.items() for k, v in m.items()
             if k in ("throughput/mfu", "throughput/step_time_s")
             or k.startswith("throughput/mfu_lost/")}
    # mfu, step time + six losses (idle between phases; no DDP hook: no communication)
    assert len(shown) == 3 * 8
    assert printed(out) == shown

    events = glob.glob(str(tmp_path / "out" / "**" / "*tfevents*"), recursive=True)
    assert events
    status, out, err = report(capsys, tmp_path / "out", "--out", tmp_path / "hf_tb.png")
    assert status == 0, err
    assert printed(out) == {key: float32(value) for key, value in shown.items()}
    # TensorBoard has no run records: no ledger panel
    assert png_shape((tmp_path / "hf_tb.png").read_bytes()) == expected_shape(2)


# ---- bad input: a clear error, exit status 2 ---------------------------------------

def test_missing_file(tmp_path, capsys):
    status, _, err = report(capsys, tmp_path / "nope.jsonl", "--out", tmp_path / "r.png")
    assert status == 2 and "no such file" in err and "nope.jsonl" in err


def test_empty_file(tmp_path, capsys):
    (tmp_path / "e.jsonl").write_text("\n")
    status, _, err = report(capsys, tmp_path / "e.jsonl", "--out", tmp_path / "r.png")
    assert status == 2 and "no metrics" in err


def test_a_corrupt_line_is_skipped_and_counted_and_strict_refuses_it(tmp_path, capsys):
    path, rows = hand_written(tmp_path)
    path.write_text(path.read_text() + '{"step": 40, "throughput/mfu": 0.\n')
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png", "--strict")
    assert status == 2 and "metrics.jsonl:4: not a JSON line" in err
    assert not (tmp_path / "r.png").exists()
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0 and err == "", err
    assert "skipped: 1 line(s) that could not be read" in out
    assert "metrics.jsonl:4: not a JSON line" in out
    assert {s for s, _ in printed(out)} == {10, 20, 30}


@pytest.mark.parametrize("line, message", [('[1, 2]', "not a JSON object"),
                                           ('{"throughput/mfu": 0.1}', "no numeric 'step'")])
def test_lines_that_are_not_records(tmp_path, capsys, line, message):
    (tmp_path / "m.jsonl").write_text(line + "\n")
    status, _, err = report(capsys, tmp_path / "m.jsonl", "--out", tmp_path / "r.png")
    assert status == 2 and f"m.jsonl:1: {message}" in err


def test_binary_file(tmp_path, capsys):
    (tmp_path / "m.bin").write_bytes(b"\xff\xfe\x00\x81" * 10)
    status, _, err = report(capsys, tmp_path / "m.bin", "--out", tmp_path / "r.png")
    assert status == 2 and "not a UTF-8 text file" in err


@pytest.mark.parametrize("out", ["r.svg", "r", "r.png.txt"])
def test_unknown_output_extension(tmp_path, capsys, out):
    path, _ = hand_written(tmp_path)
    status, _, err = report(capsys, path, "--out", tmp_path / out)
    assert status == 2 and "unknown extension" in err and ".png, .html" in err


def test_nothing_to_draw(tmp_path, capsys):
    (tmp_path / "m.jsonl").write_text('{"step": 1, "loss": 2.0}\n')
    status, _, err = report(capsys, tmp_path / "m.jsonl", "--out", tmp_path / "r.png")
    assert status == 2 and "no MFU, step time or tokens/s key" in err and "nothing to draw" in err


def test_no_mfu_names_the_missing_peak_only_when_no_run_had_one(tmp_path, capsys):
    lines = []
    for run, peak in ((1, None), (2, 1.0)):
        lines.append({"record": "run", "time": 100.0 * run, "run_id": f"r{run}", "job": "j",
                      "ranks": 1, "devices": 1, "process_start": 99.0 * run, "start_step": run - 1,
                      "peak_tflops": peak})
        lines.append({"step": run + 1, "time": 100.0 * run + 1,
                      **format_metrics({"step_time_s": 0.5}, "throughput")})
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png", "--run", "all")
    assert status == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("no MFU:")]
    # run 2 had a peak: the log lacks the MFU values, not a peak
    assert "the log has no throughput/mfu values" in line
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png", "--run", "1")
    assert "no MFU: the run record has no peak" in out


def test_a_run_without_a_peak_draws_what_it_has_and_says_why(tmp_path, capsys):
    """A CPU run with no peak: step time, tokens/s, the phases in seconds and the
    job ledger are drawn; one line says why there is no MFU and how to give a peak."""
    from mfu_tracker import Tracker

    log = tmp_path / "cpu.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # "no datasheet peak for a cpu device"
        t = Tracker(1e6, dtype="fp32", clock="cpu", window=4, warmup=0, log_path=log)
    returned = {}
    t.step()
    for i in range(5):
        with t.phase("data"):
            sum(range(1000))
        with t.phase("forward"):
            sum(range(3000))
        t.step(num_tokens=64)
        m = t.metrics()
        if m:
            returned[i + 1] = m                    # i + 1 steps completed
    t.close()
    assert returned and not any("throughput/mfu" in m for m in returned.values())
    status, out, err = report(capsys, log, "--out", tmp_path / "cpu.png")
    assert status == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("no MFU:")]
    assert "the run record has no peak" in line and "MFU_TRACKER_PEAK_TFLOPS" in line
    assert "peak_tflops=" in line and "measured_gpu_spec" in line
    keys = ("throughput/step_time_s", "throughput/tokens_per_sec", "throughput/phase_s/data",
            "throughput/phase_s/forward")
    numbers = printed(out)
    assert {k: v for k, v in numbers.items() if k[1] != "unmarked_s"} == \
        {(step, key): m[key] for step, m in returned.items() for key in keys}
    for step, m in returned.items():       # the unmarked rest: step time less the phases
        assert numbers[(step, "unmarked_s")] == m["throughput/step_time_s"] - math.fsum(
            [m["throughput/phase_s/data"], m["throughput/phase_s/forward"]])
    assert "job ledger" in out
    # step time + tokens/s, the phases in seconds, the job ledger
    assert png_shape((tmp_path / "cpu.png").read_bytes()) == expected_shape(3)
    status, out, err = main(["goodput", str(log)]), *capsys.readouterr()
    assert status == 0, err
    (why,) = [line for line in out.splitlines() if line.startswith("job_mfu:")]
    assert "a run has no peak" in why and "MFU_TRACKER_PEAK_TFLOPS" in why


def test_directory_without_event_files(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    status, _, err = report(capsys, tmp_path / "d", "--out", tmp_path / "r.png")
    assert status == 2 and "no TensorBoard event files" in err


def test_corrupt_event_file(tmp_path, capsys):
    pytest.importorskip("tensorboard")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "events.out.tfevents.1.host").write_bytes(b"\x00garbage" * 8)
    status, _, err = report(capsys, tmp_path / "d", "--out", tmp_path / "r.png")
    # TensorBoard's reader skips a record it cannot read: nothing is left to draw
    assert status == 2 and ("no metrics in it" in err or "not a readable" in err)


def test_without_matplotlib_the_error_names_the_extra(tmp_path):
    path, _ = hand_written(tmp_path)
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from mfu_tracker.cli import main\n"
            f"sys.exit(main(['report', {str(path)!r}, '--out', {str(tmp_path / 'r.png')!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    # an install that works while the package is on no index: the extra's own requirement,
    # as pyproject.toml's [report] extra lists it (and this installation's metadata)
    assert "the optional extra [report]: pip install 'matplotlib>=3.5'" in proc.stderr
    assert "torch-mfu[report]" not in proc.stderr


def test_the_main_job_logs_and_its_report_prints_the_logged_mfu(tmp_path):
    """`make run`'s two commands, tiny: examples/train_gpt2.py --log-path, then the report."""
    log = tmp_path / "run" / "metrics.jsonl"
    proc = run_example("train_gpt2.py", "--steps", "5", "--batch-size", "2", "--seq-len", "16",
                       "--hidden", "32", "--layers", "1", "--heads", "2", "--vocab-size", "64",
                       "--log-path", log)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines = [line for line in lines if "record" not in line]   # the metrics lines
    # warm-up 2: the loop's metrics() has figures after steps 0..2 complete (3 steps, at
    # the top of step 3), then 4; the final metrics() after the closing step() adds step 5
    assert [line["step"] for line in lines] == [3, 4, 5]
    for line in lines:   # the loop marks data/forward/backward/optimizer: the waterfall adds up
        lost = {k: v for k, v in line.items() if k.startswith("throughput/mfu_lost/")}
        assert set(lost) == {f"throughput/mfu_lost/{name}"
                             for name in ("data", "optimizer", "idle", "compute", "other")}
        assert math.fsum([line["throughput/mfu"], *lost.values()]) == 1.0
        assert line["throughput/phase_s/forward"] > 0 and line["throughput/phase_s/backward"] > 0
    out_png = tmp_path / "report.png"
    proc = subprocess.run([sys.executable, "-m", "mfu_tracker", "report", str(log), "--out",
                           str(out_png), "--numbers"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert printed(proc.stdout) == {(line["step"], key): value for line in lines
                                    for key, value in line.items()
                                    if key in ("throughput/mfu", "throughput/step_time_s")
                                    or "/mfu_lost/" in key}
    assert png_shape(out_png.read_bytes()) == expected_shape(3)   # + the job ledger


def test_many_steps_draw_the_waterfall_as_bands(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(waterfall, "MAX_BARS", 4)   # the band path, without thousands of lines
    rows = []
    for step in range(1, 11):
        # 0.2 + 0.3 + 0.5 = 1
        figures = {"mfu": 0.2, "mfu_lost": {"data": 0.3, "other": 0.5}}
        rows.append({"step": step, "time": 0.0, **format_metrics(figures, "p")})
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert printed(out) == {(r["step"], k): v for r in rows for k, v in r.items()
                            if k not in ("step", "time")}
    assert png_shape((tmp_path / "r.png").read_bytes()) == expected_shape(2)


def test_a_prefix_with_nothing_under_it(tmp_path, capsys):
    path, _ = hand_written(tmp_path)
    status, _, err = report(capsys, path, "--out", tmp_path / "r.png", "--prefix", "train")
    assert status == 2 and "no train/mfu" in err and "found: 'throughput'" in err
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png", "--prefix", "throughput")
    assert status == 0, err


# ---- the report as a new user reads it (docs/report.md): runs, invalid values, sums, axes, peak ----

def two_run_log(tmp_path, *, busy=False):
    """Two runs appended to one log (run 2 resumed at step 15), written by hand:
    MFU rows whose waterfall adds up to 1, the run records' peak."""
    lines = []
    for run, (start, steps) in enumerate(((0, (10, 20)), (15, (20, 30))), 1):
        lines.append({"record": "run", "time": 100.0 * run, "run_id": f"r{run}", "ranks": 1,
                      "devices": 1, "process_start": 100.0 * run - 1, "start_step": start,
                      "peak_tflops": 174.2e-3, "peak_source": "measured", "dtype": "fp32"})
        for step in steps:
            figures = {"mfu": 0.25 + run / 100, "step_time_s": 0.5 + run / 10,
                       "mfu_lost": {"data": 0.25, "other": 0.5 - run / 100}}
            lines.append({"step": step, "time": 100.0 * run + step,
                          **format_metrics(figures, "throughput")})
        if busy and run == 2:
            lines.append({"record": "peak_check", "time": 250.0, "peak_tflops": 174.2e-3,
                          "remeasured_tflops": 48.8e-3, "busy": True})
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, lines


def test_the_last_run_is_drawn_and_the_runs_are_counted(tmp_path, capsys):
    path, lines = two_run_log(tmp_path)
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert "runs: the file holds 2; drawn: run 2 (--run all|N to choose)" in out
    run2 = [line for line in lines[4:] if "step" in line]
    assert {s for s, _ in printed(out)} == {20, 30}          # run 2's steps only: no zigzag
    assert printed(out)[(20, "throughput/mfu")] == run2[0]["throughput/mfu"]
    status, out, err = report(capsys, path, "--out", tmp_path / "r1.png", "--run", "1")
    assert status == 0 and "drawn: run 1" in out and {s for s, _ in printed(out)} == {10, 20}


def test_all_runs_are_drawn_each_on_its_own_with_its_start_marked(tmp_path, capsys):
    path, lines = two_run_log(tmp_path)
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png", "--run", "all")
    assert status == 0, err
    assert "drawn: all runs" in out
    assert "run starts (dashed lines): run 1 at step 10, run 2 at step 20" in out
    mfu_lines = out.split("MFU over steps")[1].split("step time")[0].splitlines()
    # each run's points under its own heading: step 20 appears once per run
    assert [line.strip() for line in mfu_lines if line.strip().startswith("run ")] == \
        ["run 1:", "run 2:"]
    assert sum("step=20 " in line for line in mfu_lines) == 2


@pytest.mark.parametrize("which", ["3", "0", "first"])
def test_a_run_that_is_not_there_names_the_flag(tmp_path, capsys, which):
    path, _ = two_run_log(tmp_path)
    status, _, err = report(capsys, path, "--out", tmp_path / "r.png", "--run", which)
    assert status == 2 and f"--run {which!r}" in err and "holds 2 run(s)" in err


def test_invalid_values_are_named_by_line_and_not_drawn(tmp_path, capsys):
    path, rows = hand_written(tmp_path)
    text = path.read_text().splitlines()
    text.append('{"step": 40, "throughput/mfu": NaN, "throughput/mfu_lost/data": 0.5}')
    text.append('{"step": 50, "throughput/mfu": -4.0, "throughput/step_time_s": 0.5}')
    text.append('{"step": 60, "throughput/mfu": null, "throughput/mfu_rank_max": -0.1}')
    path.write_text("\n".join(text) + "\n")
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert "metrics.jsonl:4: throughput/mfu=NaN: not a finite number; not drawn" in out
    assert "metrics.jsonl:5: throughput/mfu=-4.0: negative ratio; not drawn" in out
    assert "metrics.jsonl:6: throughput/mfu=null: not a finite number; not drawn" in out
    assert "metrics.jsonl:6: throughput/mfu_rank_max=-0.1: negative ratio; not drawn" in out
    numbers = printed(out)
    assert (40, "throughput/mfu") not in numbers and (50, "throughput/mfu") not in numbers
    assert numbers[(50, "throughput/step_time_s")] == 0.5          # the line's valid value stays
    assert not any(k == "throughput/mfu_lost/data" for s, k in numbers if s == 40)  # no bar w/o MFU


def test_the_printed_sum_is_the_bar_as_drawn(tmp_path, capsys):
    rows = [{"step": 1, "time": 0.0, **format_metrics(
        {"mfu": 0.4, "mfu_lost": {"data": 0.5, "other": 0.5}}, "throughput")}]   # 1.4: a bad log
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert "each bar adds up to 1" not in out
    (line,) = [line for line in out.splitlines() if line.startswith("  step=1 ") and "sum=" in line]
    cells = [float(cell.split("=")[1]) for cell in line.split()[1:]]
    top = 0.0
    for value in cells[:-1]:
        top = top + value                                   # stacked in the printed order
    assert cells[-1] == top == 0.4 + 0.5 + 0.5
    # the drawing stacks the same layers: the picture's bar has that height
    from mfu_tracker.job import read_log

    bars = plan(read_log(str(path))).panel("waterfall")
    _, heights, bottoms = bars.stacked()[-1]
    assert [b + h for b, h in zip(bottoms, heights)] == [cells[-1]] == bars.bar_tops()


def test_the_axes_run_over_the_logged_steps(tmp_path, capsys):
    path, rows = hand_written(tmp_path)
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    steps = sorted({s for s, _ in printed(out)})
    match = re.search(r"x axis: steps (\d+)\.\.(\d+) \(the logged steps; ticks at ([\d, ]+)\)", out)
    assert match and (int(match.group(1)), int(match.group(2))) == (steps[0], steps[-1])
    assert [int(t) for t in match.group(3).split(", ")] == steps   # 3 steps: a tick each


def test_the_peak_its_source_the_step_time_and_the_busy_caveat(tmp_path, capsys):
    path, lines = two_run_log(tmp_path)
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert "peak: 0.1742 TFLOP/s per device, fp32 (measured)" in out
    assert printed(out)[(30, "throughput/step_time_s")] == lines[-1]["throughput/step_time_s"]
    assert "caveat:" not in out
    path, _ = two_run_log(tmp_path, busy=True)
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert ("caveat: the peak was measured on a busy machine: 0.1742 TFLOP/s, then 0.0488 "
            "re-measured after training (they differ by more than 25%); the MFU here is against "
            "the higher of the two") in out


def test_the_diagnosis_line_names_the_largest_loss_and_its_rank(tmp_path, capsys):
    rows = [{"step": 5, "time": 0.0, **format_metrics(
        {"mfu": 0.3, "mfu_lost": {"data": 0.18, "compute": 0.4, "other": 0.12},
         "mfu_lost_rank": {"data": 1, "compute": 3}}, "throughput")}]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, out, err = report(capsys, path, "--out", tmp_path / "r.png")
    assert status == 0, err
    assert "largest loss: compute below peak, 40.0% of step time, rank 3" in out.splitlines()


def test_the_main_job_logs_its_peak_check(tmp_path):
    """examples/train_gpt2.py re-measures its peak after training and logs it."""
    log = tmp_path / "metrics.jsonl"
    proc = run_example("train_gpt2.py", "--steps", "4", "--batch-size", "2", "--seq-len", "16",
                       "--hidden", "32", "--layers", "1", "--heads", "2", "--vocab-size", "64",
                       "--log-path", log)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    (check,) = [line for line in lines if line.get("record") == "peak_check"]
    assert lines[0]["record"] == "run" and lines[-1]["record"] == "run_end"
    assert check["peak_tflops"] == lines[0]["peak_tflops"]
    busy = max(check["peak_tflops"], check["remeasured_tflops"]) > \
        1.25 * min(check["peak_tflops"], check["remeasured_tflops"])
    assert check["busy"] is busy
    assert ("note: the peak measured" in proc.stdout) is busy      # what the job printed
