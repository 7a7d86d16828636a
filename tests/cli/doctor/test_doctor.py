"""``mfu-tracker doctor`` against the fake driver (tests/c/fake_driver/fake_cuda.c).

There is no GPU here: the doctor's GPU paths run on the fake, which answers the
driver API's device queries (an H100 SXM by default) and runs *programmed* GPU
work -- a GEMM of F FLOPs takes F / (0.7 x the datasheet peak) on its timeline
(``mfu_tracker.cli.doctor._platform.FAKE_SPEED``). The independent references are therefore:
the programmed kernel times (the event timer's reference, as
``torch.cuda.Event`` is on a GPU), the programmed speed (measured peaks and
MFU must come out at exactly 70%), the fake's own count of synchronizing calls
(the shim's count must equal it), FlopCounterMode, and hand arithmetic.

Each failure mode is driven through a fake-driver knob (environment knobs,
read by the fake's cuInit, because the doctor and its zero-sync child are
separate processes): a GPU that falls behind (MFU_FAKE_CUDA_LAG_NS: the event
pool fills and the timer synchronizes -> zero_sync FAILs), a timer that
disagrees (MFU_FAKE_CUDA_ELAPSED_SCALE -> event_timer FAILs, the peaks WARN),
an unknown device (MFU_FAKE_CUDA_DEVICE -> table_row WARNs with how to give a
peak), and no driver at all (the CPU-only run).
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from conftest import FAKE_PATH, ROOT

# hand arithmetic for the quick GPT-2 (2 layers, width 128 -> 2 heads of 64,
# batch 2 x seq 64): SDPA forward = 4 b h s^2 d per layer (QK^T and PV);
# its backward (FlopCounterMode's and ours) 2.5x that.
SDPA_FORWARD = 2 * 4 * 2 * 2 * 64 * 64 * 64    # = 8,388,608
SDPA_BACKWARD = SDPA_FORWARD * 5 // 2           # = 20,971,520


def _doctor(tmp_path: Path, *args: str, env: Optional[Dict[str, str]] = None,
            name: str = "doctor") -> tuple[int, str, Dict[str, Any]]:
    """Run `python -m mfu_tracker doctor --quick ARGS` as a user would; (rc, stdout, JSON)."""
    out = tmp_path / f"{name}.json"
    child_env = dict(os.environ)
    child_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), child_env.get("PYTHONPATH", "")])
    child_env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the shim is built per test run
    child_env.update(env or {})
    done = subprocess.run([sys.executable, "-m", "mfu_tracker", "doctor", "--quick", "--json",
                           str(out), *args], capture_output=True, text=True, env=child_env,
                          timeout=300)
    report = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, done.stdout + done.stderr, report


def _rows(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {f"{c['section']}/{c['name']}": c for c in report["checks"]}


@pytest.fixture(scope="module")
def full_quick(tmp_path_factory):
    return _doctor(tmp_path_factory.mktemp("doctor"))


def test_quick_on_the_fake_driver_passes_every_gpu_check(full_quick):
    rc, text, report = full_quick
    assert rc == 0, text
    rows = _rows(report)
    assert report["platform"] == "fake"
    for key in ("environment/versions", "environment/driver", "environment/flop_counter",
                "device/properties", "device/table_row", "timing/event_timer",
                "timing/zero_sync", "peak/gemm_bf16", "peak/gemm_fp16", "peak/gemm_fp32",
                "counting/sdpa_math", "counting/sdpa_flash",
                "counting/model_flops_across_backends", "end_to_end/training",
                "end_to_end/overhead"):
        assert rows[key]["status"] == "PASS", (key, rows[key])
    # the table: one line per check with its status
    for key, row in rows.items():
        assert f"{key}" in text and row["status"] in text
    assert "FAIL" not in {r["status"] for r in rows.values()}


def test_environment_names_the_driver_and_where_it_was_loaded_from(full_quick):
    rows = _rows(full_quick[2])
    driver = rows["environment/driver"]["data"]
    assert driver["library"] == FAKE_PATH
    assert os.path.realpath(driver["path"]) == os.path.realpath(FAKE_PATH)
    assert driver["driver_version"] == "12.4"  # the fake's cuDriverGetVersion: 12040
    # NVML is built, but the fake driver's device is no torch CUDA device, so
    # there is no NVML device id to read: skipped, saying why
    nvml = rows["environment/nvml"]
    assert nvml["status"] == "SKIP" and nvml["figure"] == "no NVIDIA device"
    assert "platform fake" in nvml["detail"]


def test_device_row_is_the_fake_h100_sxm(full_quick):
    rows = _rows(full_quick[2])
    props = rows["device/properties"]["data"]
    assert props == {"name": "NVIDIA H100 80GB HBM3", "num_sms": 132,
                     "memory_bytes": 85520809984, "cc": [9, 0]}
    row = rows["device/table_row"]["data"]
    assert row["row"] == "H100 SXM"
    assert row["peaks_tflops"]["bf16"] == 989.4  # datasheet (docs/conventions.md's reference value)


def test_timer_and_peaks_match_the_programmed_gpu_times(full_quick):
    rows = _rows(full_quick[2])
    timer = rows["timing/event_timer"]["data"]
    assert timer["reference"] == "the fake's programmed kernel times"
    # 100 GEMMs of 2 x 4096^3 = 137,438,953,472 FLOPs at 0.7 x 989.4 TFLOP/s:
    # 137,438,953,472 / 692.58e12 s = 198,445 ns each (rounded to the ns)
    assert timer["reference_s"] == [pytest.approx(100 * 198445e-9, rel=1e-9)] * 3
    assert timer["worst_deviation"] < 1e-5  # float milliseconds from the driver
    for dtype in ("bf16", "fp16", "fp32"):
        assert rows[f"peak/gemm_{dtype}"]["data"]["ratio"] == pytest.approx(0.7, rel=1e-4)


def test_zero_sync_counts_through_the_shim(full_quick):
    data = _rows(full_quick[2])["timing/zero_sync"]["data"]
    assert data["sync_calls"] == 0 and data["driver_sync_calls"] == 0
    assert data["steps"] == 1200 and data["steps_dropped"] == 0
    assert data["calls"]["cuEventRecord"] == 1201  # one per boundary, all through the shim
    assert data["target"] == FAKE_PATH and data["target_error"] == ""
    assert data["clock"] == "cuda" and data["warnings"] == []


def test_counting_equals_flop_counter_mode_but_the_documented_cpu_flash(full_quick):
    rows = _rows(full_quick[2])
    math_row = rows["counting/sdpa_math"]["data"]
    assert math_row["executed"] == math_row["flop_counter_mode"]
    assert math_row["documented_deviation"] == 0
    flash = rows["counting/sdpa_flash"]["data"]
    # FlopCounterMode counts _scaled_dot_product_flash_attention_for_cpu as 0 (README)
    assert flash["documented_deviation"] == SDPA_FORWARD + SDPA_BACKWARD  # 29,360,128
    assert flash["executed"] == flash["flop_counter_mode"] + SDPA_FORWARD + SDPA_BACKWARD
    across = rows["counting/model_flops_across_backends"]["data"]
    assert across["math"] == across["flash"] == math_row["model"]
    for backend in ("efficient", "cudnn"):  # CUDA-only kernels: skipped with torch's reason
        assert rows[f"counting/sdpa_{backend}"]["status"] == "SKIP"


def test_end_to_end_mfu_is_the_programmed_speed(full_quick):
    rows = _rows(full_quick[2])
    data = rows["end_to_end/training"]["data"]
    assert data["clock"] == "cuda"
    # every step's GPU time is its model FLOPs at 0.7 x peak, rounded to the
    # fake's whole nanoseconds: MFU = F / (ns x 1e-9) / peak, about 0.7
    assert data["fake_speed"] == 0.7
    flops, peak = data["flops_per_step"], 989.4e12
    ns = round(flops / (0.7 * peak) * 1e9)
    assert data["metrics"]["mfu"] == pytest.approx(flops / (ns * 1e-9) / peak, rel=1e-5)
    assert data["metrics"]["mfu"] == pytest.approx(0.7, rel=1e-3)
    cost = rows["end_to_end/overhead"]["data"]
    assert cost["clock"] == "cuda" and cost["track_us"] > 0 and cost["tracker_step_us"] > 0
    # the step's GPU work is queued inside its forward / backward phases, so
    # the waterfall charges the 30% below the programmed speed to compute,
    # and mfu + the losses add up to 1
    assert rows["end_to_end/waterfall"]["status"] == "PASS"
    metrics = data["metrics"]
    assert metrics["mfu_lost/compute"] == pytest.approx(0.3, abs=1e-3)  # mfu is 0.7 +- 1e-3 (above)
    losses = [v for k, v in metrics.items() if k.startswith("mfu_lost/")]
    assert math.fsum([metrics["mfu"], *losses]) == pytest.approx(1.0, abs=1e-12)


def test_a_gpu_that_falls_behind_makes_zero_sync_fail(tmp_path):
    # 10^6 s of launch lag: no event completes during the run, the timer's
    # pool (1024 events) fills, and the core has to synchronize.
    rc, text, report = _doctor(tmp_path, "--only", "timing",
                               env={"MFU_FAKE_CUDA_LAG_NS": str(10**15)})
    assert rc == 1, text
    rows = _rows(report)
    row = rows["timing/zero_sync"]
    assert row["status"] == "FAIL"
    assert row["data"]["sync_calls"] > 0
    assert row["data"]["sync_calls"] == row["data"]["driver_sync_calls"]  # the shim counts right
    assert "cuEventSynchronize" in row["detail"]
    assert rows["timing/event_timer"]["status"] == "PASS"  # lag shifts both marks alike


def test_a_timer_that_disagrees_fails_and_skews_the_peaks(tmp_path):
    # elapsed times reported at half their length: 100% off; measured peaks 1.4x datasheet
    rc, text, report = _doctor(tmp_path, "--only", "timing,peak",
                               env={"MFU_FAKE_CUDA_ELAPSED_SCALE": "0.5"})
    assert rc == 1, text
    rows = _rows(report)
    assert rows["timing/event_timer"]["status"] == "FAIL"
    assert rows["timing/event_timer"]["data"]["worst_deviation"] == pytest.approx(0.5, rel=1e-5)
    for dtype in ("bf16", "fp16", "fp32"):
        row = rows[f"peak/gemm_{dtype}"]
        assert row["status"] == "WARN" and "above the datasheet" in row["detail"]
        assert row["data"]["ratio"] == pytest.approx(1.4, rel=1e-4)  # 0.7 / 0.5


def test_a_slow_device_warns_below_half_the_datasheet(tmp_path):
    rc, text, report = _doctor(tmp_path, "--only", "peak",
                               env={"MFU_FAKE_CUDA_ELAPSED_SCALE": "2"})
    assert rc == 0, text  # WARN is not a failure
    for dtype in ("bf16", "fp16", "fp32"):
        row = _rows(report)[f"peak/gemm_{dtype}"]
        assert row["status"] == "WARN" and "below 50%" in row["detail"]
        assert row["data"]["ratio"] == pytest.approx(0.35, rel=1e-4)  # 0.7 / 2


def test_an_unknown_device_says_how_to_give_a_peak(tmp_path):
    rc, text, report = _doctor(tmp_path, "--only", "device,peak",
                               env={"MFU_FAKE_CUDA_DEVICE": "Fake GPU 9000;10;1073741824;9;0"})
    assert rc == 0, text
    rows = _rows(report)
    assert rows["device/properties"]["data"]["name"] == "Fake GPU 9000"
    row = rows["device/table_row"]
    assert row["status"] == "WARN"
    for hint in ("peak_tflops=", "MFU_TRACKER_PEAK_TFLOPS", "measured_gpu_spec"):
        assert hint in row["detail"]
    assert rows["peak/gemm_bf16"]["status"] == "WARN"  # measured, nothing to compare with


def test_cpu_only_runs_the_cpu_parts_and_says_what_it_skipped(tmp_path):
    rc, text, report = _doctor(tmp_path, env={"MFU_TRACKER_CUDA_LIBRARY": "",
                                              "MFU_TRACKER_HIP_LIBRARY": ""})
    assert rc == 0, text
    rows = _rows(report)
    assert report["platform"] == "cpu"
    for key in ("environment/driver", "device/properties", "device/table_row",
                "timing/event_timer", "timing/zero_sync", "peak/gemm_bf16"):
        assert rows[key]["status"] == "SKIP"
        assert "no CUDA/ROCm device visible to torch" in rows[key]["detail"]
    assert rows["counting/sdpa_math"]["status"] == "PASS"
    training = rows["end_to_end/training"]
    assert training["status"] == "PASS" and training["data"]["clock"] == "cpu"
    assert "MFU needs a peak" in training["detail"]


def test_a_device_that_cannot_be_opened_fails(tmp_path):
    rc, text, report = _doctor(tmp_path, "--device", "3", "--only", "device", name="dev3")
    assert rc == 1, text
    row = _rows(report)["device/properties"]
    assert row["status"] == "FAIL"
    assert "--device 3: the fake driver has one device (0)" in row["detail"]


def test_bad_command_lines_exit_2(capsys):
    from mfu_tracker.cli import main

    assert main(["doctor", "--device", "-1"]) == 2
    assert "--device must be >= 0" in capsys.readouterr().err
    assert main(["doctor", "--only", "bogus"]) == 2
    assert "unknown section(s) bogus" in capsys.readouterr().err


def test_the_shim_forwards_and_counts_like_the_driver(fake, tmp_path, monkeypatch):
    """The shim in this process, forwarding to the fake the core already has
    (the same handle): its counts equal the fake's own, call by call."""
    from mfu_tracker.cli.doctor import _shim as _doctor_shim

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("MFU_TRACKER_SHIM_TARGET", FAKE_PATH)
    shim = ctypes.CDLL(str(_doctor_shim.build_shim()))
    assert _doctor_shim.build_shim() == Path(shim._name)  # cached: built once
    shim.mfu_shim_target.restype = ctypes.c_char_p
    shim.mfu_shim_calls.argtypes = [ctypes.c_char_p]
    shim.mfu_shim_calls.restype = ctypes.c_long
    shim.mfu_shim_sync_calls.restype = ctypes.c_long
    assert shim.mfu_shim_target().decode() == FAKE_PATH
    shim.mfu_shim_reset()
    event = ctypes.c_void_p()
    ms = ctypes.c_float()
    begin = ctypes.c_void_p()
    assert shim.cuEventCreate(ctypes.byref(begin), 0) == 0
    assert shim.cuEventCreate(ctypes.byref(event), 0) == 0
    assert shim.cuEventRecord(begin, None) == 0
    fake.advance(1000)
    fake.set_work_ns(2_000_000)
    assert shim.cuEventRecord(event, None) == 0
    assert shim.cuEventQuery(event) == 600  # not ready: 2 ms of work
    assert shim.cuEventSynchronize(event) == 0
    assert shim.cuStreamSynchronize(None) == 0
    assert shim.cuCtxSynchronize() == 0
    # the fake exports only the pre-12.8 name: the _v2 call is forwarded to it
    assert shim.cuEventElapsedTime_v2(ctypes.byref(ms), begin, event) == 0
    assert ms.value == pytest.approx(2.0)
    # and only cuEventDestroy_v2: the old name is forwarded to it
    assert shim.cuEventDestroy(begin) == 0 and shim.cuEventDestroy_v2(event) == 0
    for name, fake_name in (("cuEventCreate", "cuEventCreate"), ("cuEventRecord", "cuEventRecord"),
                            ("cuEventQuery", "cuEventQuery"),
                            ("cuEventSynchronize", "cuEventSynchronize"),
                            ("cuStreamSynchronize", "cuStreamSynchronize"),
                            ("cuCtxSynchronize", "cuCtxSynchronize")):
        assert shim.mfu_shim_calls(name.encode()) == fake.calls(fake_name), name
    assert shim.mfu_shim_calls(b"cuEventElapsedTime_v2") == fake.calls("cuEventElapsedTime") == 1
    assert shim.mfu_shim_calls(b"cuEventDestroy") + shim.mfu_shim_calls(b"cuEventDestroy_v2") \
        == fake.calls("cuEventDestroy_v2") == 2
    assert shim.mfu_shim_sync_calls() == fake.sync_calls() == 3
    assert shim.mfu_shim_calls(b"cuNotACall") == -1


def test_the_shim_source_ships_as_package_data():
    from mfu_tracker.cli.doctor import _shim as _doctor_shim

    assert _doctor_shim.SHIM_SOURCE.is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"mfu_tracker.cli.doctor" = ["*.c"]' in pyproject


def test_the_driver_library_name_is_the_cores_rule(monkeypatch):
    """The doctor names the library the core opens: the override when set and
    non-empty (gpu_driver.c), else the default; it keeps no copy of the rule."""
    from mfu_tracker import _C
    from mfu_tracker.cli.doctor._platform import driver_library_name

    monkeypatch.setenv("MFU_TRACKER_CUDA_LIBRARY", "/opt/x/libcuda.so.1")
    monkeypatch.setenv("MFU_TRACKER_HIP_LIBRARY", "")
    assert driver_library_name("cuda") == "/opt/x/libcuda.so.1"
    assert driver_library_name("hip") == "libamdhip64.so"  # empty: the default
    monkeypatch.delenv("MFU_TRACKER_CUDA_LIBRARY")
    assert driver_library_name("cuda") == "libcuda.so.1"
    with pytest.raises(ValueError, match="api"):
        _C.gpu_driver_library("cpu")
    with pytest.raises(ValueError, match="api"):
        _C.gpu_driver_library("rocm")


# ---- the end-to-end rows compare with an independent clock, and can FAIL ----

def test_a_timer_that_disagrees_fails_the_training_row_not_the_waterfall(tmp_path):
    # elapsed times reported 1.1x their length: the tracker's step time is 10%
    # longer than the programmed GPU time of the same steps -> training FAILs;
    # every phase stretches alike, so the shares (the waterfall) still agree.
    rc, text, report = _doctor(tmp_path, "--only", "end_to_end",
                               env={"MFU_FAKE_CUDA_ELAPSED_SCALE": "1.1"})
    assert rc == 1, text
    rows = _rows(report)
    training = rows["end_to_end/training"]
    assert training["status"] == "FAIL"
    assert "step_time_s off by 10.0%" in training["detail"]
    assert "mfu off by 9.1%" in training["detail"]          # 1 - 1 / 1.1 = 9.09%
    assert training["data"]["metrics"]["step_time_s"] == pytest.approx(
        1.1 * training["data"]["reference_step_s"], rel=1e-6)
    assert rows["end_to_end/waterfall"]["status"] == "PASS"


def _measured(mfu=0.5, step=0.1, forward=0.03, backward=0.05, optimizer=0.01, **lost):
    """Tracker-like metrics: phases in seconds per step, shares by the definition
    (compute = (0.03 + 0.05) / 0.1 - 0.5 = 0.3, optimizer 0.1, other 0.1)."""
    metrics = {"mfu": mfu, "step_time_s": step, "phase_s/forward": forward,
               "phase_s/backward": backward, "phase_s/optimizer": optimizer,
               "mfu_lost/optimizer": optimizer / step,
               "mfu_lost/compute": (forward + backward) / step - mfu}
    metrics["mfu_lost/other"] = 1.0 - math.fsum(
        [mfu, metrics["mfu_lost/optimizer"], metrics["mfu_lost/compute"]])
    metrics.update({f"mfu_lost/{k}": v for k, v in lost.items()})
    return metrics


def _waterfall_status(metrics, step_s=0.1, phase_s=None):
    from mfu_tracker.cli.doctor import Report
    from mfu_tracker.cli.doctor._end_to_end import waterfall_row

    report = Report()
    waterfall_row(report, metrics, step_s,
                  phase_s or {"forward": 0.03, "backward": 0.05, "optimizer": 0.01})
    (row,) = report.checks
    return row


def test_the_waterfall_row_passes_when_the_independent_clock_agrees():
    row = _waterfall_status(_measured())
    assert row.status == "PASS", row.detail
    # 1% of the step off on the independent clock: within the 2% tolerance
    assert _waterfall_status(_measured(), phase_s={"forward": 0.031, "backward": 0.05,
                                                   "optimizer": 0.01}).status == "PASS"


def test_the_waterfall_row_fails_when_a_share_disagrees_with_the_independent_clock():
    # the independent clock saw 30 ms of optimizer (30% of the step); the tracker 10%
    row = _waterfall_status(_measured(), phase_s={"forward": 0.03, "backward": 0.05,
                                                  "optimizer": 0.03})
    assert row.status == "FAIL"
    assert "optimizer 10.00% vs 30.00% on the independent clock" in row.detail
    # a waterfall that books compute as recompute still adds up -- and still
    # sums forward + backward right: PASS; one that moves compute into other FAILs
    moved = _measured()
    moved["mfu_lost/other"] += 0.05
    moved["mfu_lost/compute"] -= 0.05
    row = _waterfall_status(moved)
    assert row.status == "FAIL" and "mfu+recompute+compute 75.00% vs 80.00%" in row.detail


def test_the_waterfall_row_fails_when_the_shares_do_not_add_up_to_exactly_1():
    metrics = _measured()
    metrics["mfu_lost/other"] += 1e-12   # within every tolerance but the exact sum
    row = _waterfall_status(metrics)
    assert row.status == "FAIL" and "not exactly 1" in row.detail


def test_the_training_row_fails_an_mfu_above_1_and_a_missing_figure():
    from mfu_tracker.cli.doctor import Report
    from mfu_tracker.cli.doctor._end_to_end import Loop, training_row
    from mfu_tracker.cli.doctor._platform import Platform

    loop = Loop(Platform(0), None, {}, None, None, steps=6, tokens=1000, what="stub", fake=None)
    # 1e12 FLOPs per 10 ms step on a 50 TFLOP/s peak: MFU = 1e14 / 5e13 = 2
    good = {"step_time_s": 0.01, "tokens_per_sec": 1e5, "mfu": 2.0, "peak_tflops": 50.0}
    report = Report()
    training_row(report, loop, good, 1e12, 0.01, "cpu")
    row = report.checks[0]
    assert row.status == "FAIL" and "MFU 2.000 > 1" in row.detail
    report = Report()
    training_row(report, loop, {"step_time_s": 0.01}, 1e12, 0.01, "cpu")  # no tokens/s
    assert report.checks[0].status == "FAIL" and "tokens_per_sec missing" in report.checks[0].detail
    report = Report()
    training_row(report, loop, {"step_time_s": 0.01, "tokens_per_sec": 1e5}, 1e12, 0.01, "cpu")
    assert report.checks[0].status == "PASS"   # no peak: MFU out, nothing to compare
