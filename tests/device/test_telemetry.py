"""Device telemetry (docs/mixed-precision.md) against a fake NVML, and the
measured ceiling.

The fake (tests/c/fake_nvml/fake_nvml.c, built here like the fake driver in
conftest.py) is one device whose energy counter advances at a set power on
CLOCK_MONOTONIC, and whose power, clocks and throttle reasons are knobs. The
core loads it through MFU_TRACKER_NVML_LIBRARY; ctypes opens the same
instance for the knobs and call counts. Step periods come from the fake GPU
driver (exact); power comes from the energy counter over real seconds, so it
is checked to the counter's 1 mJ resolution.
"""
from __future__ import annotations

import time
import types
import warnings

import pytest
from _fake_nvml import UUID, fake_nvml

from mfu_tracker import _C, user_gpu_spec
from mfu_tracker.device._telemetry import Telemetry, device_id_of
from mfu_tracker.step import Tracker

MS = 1_000_000  # ns
SPEC = user_gpu_spec(1000.0, name="fake GPU")  # 1e15 FLOP/s


@pytest.fixture
def nvml(monkeypatch):
    fake = fake_nvml(monkeypatch)
    yield fake
    fake.lib.fake_nvml_reset()


def _steps(fake, tracker, n, period_ms, **kwargs):
    tracker.step()
    for _ in range(n):
        fake.set_work_ns(int(period_ms * MS))
        fake.advance(int(period_ms * MS))
        tracker.step(**kwargs)
    tracker.flush()


def test_figures_from_the_fake_device(fake, nvml):
    nvml.set("power_mw", 400_000)                       # 400 W
    t0 = time.monotonic()                               # CLOCK_MONOTONIC, as the core and fake
    tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, telemetry=UUID)
    t1 = time.monotonic()
    _steps(fake, tracker, 4, 1.0, num_tokens=1000)      # 1 ms steps of 1000 tokens
    time.sleep(0.1)
    t2 = time.monotonic()
    m = tracker.metrics()
    t3 = time.monotonic()
    # The two readings' times and the fake's (the energy is 400 W x its clock)
    # lie within [t0, t1] and [t2, t3]: power = energy delta / time delta is
    # 400 W x (fake span / our span), both spans within [t2 - t1, t3 - t0],
    # to the counter's 1 mJ.
    lo, hi = t2 - t1, t3 - t0
    assert 400.0 * lo / hi - 1e-3 / lo <= m["throughput/power_w"] <= 400.0 * hi / lo + 1e-3 / lo
    tokens_per_sec = 1000 / 0.001                       # 1e6 tokens/s (exact: fake clock)
    assert m["throughput/tokens_per_sec"] == pytest.approx(tokens_per_sec, rel=1e-9)
    # J/token = W / (tokens/s), e.g. 400 / 1e6 = 4e-4
    assert m["throughput/energy_j_per_token"] == pytest.approx(
        m["throughput/power_w"] / tokens_per_sec, rel=1e-12)
    # 5e11 FLOPs per ms = 500 TFLOP/s; TFLOP/s per W, e.g. 500 / 400 = 1.25
    assert m["throughput/tflops_per_watt"] == pytest.approx(
        500.0 / m["throughput/power_w"], rel=1e-9)
    assert m["throughput/sm_clock_mhz"] == 1755.0
    assert m["throughput/clock_ratio"] == pytest.approx(1755.0 / 1980.0, rel=1e-12)
    assert m["throughput/throttled"] == 0.0
    nvml.set("reasons", 0x4)                            # SwPowerCap
    nvml.set("sm_mhz", 1200)
    m = tracker.metrics()
    assert m["throughput/throttled"] == 1.0
    assert m["throughput/clock_ratio"] == pytest.approx(1200.0 / 1980.0, rel=1e-12)


def test_power_is_the_counter_delta_over_each_interval(fake, nvml):
    # The counter keeps growing since nvmlInit; the second interval's power is its own
    # delta over its own seconds (400 W), not the counter's total over them.
    nvml.set("power_mw", 400_000)
    tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, telemetry=UUID)
    _steps(fake, tracker, 2, 1.0, num_tokens=1000)
    time.sleep(0.3)                                     # the counter reaches ~120 J
    t0 = time.monotonic()
    tracker.metrics()
    t1 = time.monotonic()
    time.sleep(0.05)
    t2 = time.monotonic()
    m = tracker.metrics()
    t3 = time.monotonic()
    # the two readings lie within [t0, t1] and [t2, t3]: their span within [t2 - t1,
    # t3 - t0], so power = 400 W x (fake span / our span) within these bounds, to 1 mJ
    # (the counter's total over the span would be ~(120 + 20) J / 0.05 s = 2.8 kW)
    lo, hi = t2 - t1, t3 - t0
    assert 400.0 * lo / hi - 1e-3 / lo <= m["throughput/power_w"] <= 400.0 * hi / lo + 1e-3 / lo


def test_a_counter_that_went_back_gives_no_power_never_a_negative_one(fake, nvml):
    # The fake's counter is power x seconds since init: dropping the power to 0 takes
    # it back to 0 (as a counter reset would). The interval's delta is negative: no
    # power_w, and no figure made from it; the clocks are still read.
    nvml.set("power_mw", 400_000)
    tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, telemetry=UUID)
    _steps(fake, tracker, 2, 1.0, num_tokens=1000)
    time.sleep(0.02)
    assert tracker.metrics()["throughput/power_w"] > 0
    nvml.set("power_mw", 0)
    m = tracker.metrics()
    assert not any(k in m for k in ("throughput/power_w", "throughput/energy_j_per_token",
                                    "throughput/tflops_per_watt"))
    assert m["throughput/sm_clock_mhz"] == 1755.0


def test_read_only_at_window_edges(fake, nvml):
    tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, telemetry=UUID)
    assert nvml.calls("nvmlDeviceGetTotalEnergyConsumption") == 1   # at construction
    _steps(fake, tracker, 1000, 1.0, num_tokens=10)
    assert nvml.calls("nvmlDeviceGetTotalEnergyConsumption") == 1   # never per step
    for i in range(3):
        tracker.metrics()
        assert nvml.calls("nvmlDeviceGetTotalEnergyConsumption") == 2 + i
    assert nvml.calls("nvmlInit_v2") == 1
    del tracker
    assert nvml.initialized() == 0                                  # shut down with it


def test_pci_bus_id_finds_the_device(fake, nvml):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the hardware counters' window under 100 ms (tests/timing/test_hardware.py)
        warnings.filterwarnings("ignore", message=".*hardware counters: a window of")
        tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0,
                          telemetry="0000:3b:00.0")
        _steps(fake, tracker, 2, 1.0)
        assert "throughput/sm_clock_mhz" in tracker.metrics()


def test_missing_nvml_warns_once_and_leaves_the_keys_out(fake, monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
    with pytest.warns(RuntimeWarning, match="device telemetry is unavailable.*dlopen"):
        tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, telemetry=UUID)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _steps(fake, tracker, 2, 1.0, num_tokens=10)
        m = tracker.metrics()
    assert "throughput/mfu" in m
    assert not {"power_w", "energy_j_per_token", "tflops_per_watt", "sm_clock_mhz",
                "clock_ratio", "throttled"} & {k.split("/")[1] for k in m}


def test_unknown_device_and_failing_init_warn(nvml):
    with pytest.warns(RuntimeWarning, match="nvmlDeviceGetHandleByUUID failed with 6"):
        Tracker(5e11, spec=SPEC, clock="cpu", telemetry="GPU-ffffffff")
    nvml.set("init_fails", 999)
    with pytest.warns(RuntimeWarning, match="nvmlInit_v2 failed with 999"):
        Tracker(5e11, spec=SPEC, clock="cpu", telemetry=UUID)


def test_failing_read_mid_run_warns_once_never_raises(fake, nvml):
    tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0, warmup=0, telemetry=UUID)
    _steps(fake, tracker, 2, 1.0, num_tokens=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nvml.fail_next("nvmlDeviceGetClockInfo", 15)
        m = tracker.metrics()
        nvml.fail_next("nvmlDeviceGetClockInfo", 15)
        nvml.fail_next("nvmlDeviceGetPowerUsage", 15)
        tracker.metrics()
    assert len([w for w in caught if "nvmlDeviceGetClockInfo failed with 15" in str(w.message)]) == 1
    # one telemetry warning (besides the hardware counters' window under 100 ms)
    assert len([w for w in caught if "hardware counters" not in str(w.message)]) == 1
    assert "throughput/sm_clock_mhz" not in m and "throughput/clock_ratio" not in m
    assert "throughput/power_w" in m                # from the energy counter
    assert "throughput/sm_clock_mhz" in tracker.metrics()   # the next read is whole again


def test_telemetry_argument(fake):
    # auto on the CPU clock (or a GPU clock torch cannot identify): no telemetry, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = Tracker(5e11, spec=SPEC, clock="cpu")
        t = Tracker(5e11, spec=SPEC, clock="cuda", stream=0)
        t = Tracker(5e11, spec=SPEC, clock="cpu", telemetry=False)
    with pytest.warns(RuntimeWarning, match="telemetry=True but the tracker's device has no NVML id"):
        Tracker(5e11, spec=SPEC, clock="cpu", telemetry=True)
    with pytest.raises(TypeError, match="telemetry must be"):
        Tracker(5e11, spec=SPEC, clock="cpu", telemetry=1)
    del t


def test_device_id_of_torch_properties():
    def torch_with(**props):
        return types.SimpleNamespace(
            version=types.SimpleNamespace(hip=None),
            cuda=types.SimpleNamespace(get_device_properties=lambda i: types.SimpleNamespace(**props)))
    assert device_id_of(torch_with(uuid="58d2e3f1-0000-1111-2222-333344445555"), 0) == \
        "GPU-58d2e3f1-0000-1111-2222-333344445555"
    assert device_id_of(torch_with(uuid="MIG-abc"), 0) == "MIG-abc"
    assert device_id_of(torch_with(pci_bus_id=0x3B, pci_device_id=0, pci_domain_id=0), 0) == \
        "00000000:3b:00.0"
    assert device_id_of(torch_with(), 0) is None
    assert device_id_of(None, 0) is None
    rocm = torch_with(uuid="x")
    rocm.version.hip = "6.2"
    assert device_id_of(rocm, 0) is None


def test_c_nvml_binding(nvml):
    assert _C.nvml_library() == nvml.path
    n = _C.Nvml(UUID)
    sample, failure = n.read()
    assert failure is None
    assert sample["power_w"] == 250.0 and sample["sm_clock_max_mhz"] == 1980.0
    assert sample["throttle_reasons"] == 0 and sample["throttled"] == 0
    with pytest.raises(RuntimeError, match="nvmlDeviceGetHandleByPciBusId_v2 failed with 6"):
        _C.Nvml("0000:99:00.0")
    with pytest.raises(RuntimeError, match="dlopen"):
        _C.Nvml(UUID, "/nonexistent/lib.so")
    with pytest.raises(ValueError, match="device_id"):
        _C.Nvml("")
    with pytest.raises(TypeError, match="device_id"):
        _C.Nvml(3)
    t = Telemetry.open(UUID, "test")
    assert t is not None and t.reads == 1
    # Without the energy counter: NVML's instantaneous power (250 W), one warning.
    nvml.fail_next("nvmlDeviceGetTotalEnergyConsumption", 3)
    with pytest.warns(RuntimeWarning, match="nvmlDeviceGetTotalEnergyConsumption failed with 3"):
        figures = t.figures(2.5e14, 1e6)
    assert figures["power_w"] == 250.0
    assert figures["energy_j_per_token"] == 250.0 / 1e6       # 2.5e-4 J per token
    assert figures["tflops_per_watt"] == pytest.approx(250.0 / 250.0, rel=1e-12)
    assert t.reads == 2


# ---- the measured ceiling ------------------------------------------------------

def test_measure_peak_on_cpu_reports_mfu_vs_measured(fake, every_matmul_counts):
    tiny = user_gpu_spec(1e-6, name="tiny")   # 1 MFLOP/s: any CPU matmul beats it
    with pytest.warns(RuntimeWarning, match="measured fp32 GEMM peak .* exceeds the user peak"):
        tracker = Tracker(5e11, dtype="fp32", spec=tiny, clock="cuda", stream=0, warmup=0,
                          measure_peak=True, num_gpus=2)
    measured = tracker.measured_peak_flops_per_sec
    assert measured is not None and measured > 1e6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # MFU > 1 against the tiny peak
        _steps(fake, tracker, 3, 2.0)
        m = tracker.metrics()
    # 5e11 FLOPs per 2 ms = 2.5e14 FLOP/s, over 2 devices at the measured peak
    assert m["throughput/mfu_vs_measured"] == pytest.approx(2.5e14 / (2 * measured), rel=1e-9)
    assert tracker.summary()["mfu_vs_measured"] == m["throughput/mfu_vs_measured"]


def test_measure_peak_without_a_datasheet_peak_still_reports(fake, every_matmul_counts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # the CPU has no datasheet peak
        tracker = Tracker(5e11, dtype="fp32", device="cpu", clock="cpu", measure_peak=True)
    assert tracker.peak.flops_per_sec is None
    assert tracker.measured_peak_flops_per_sec > 0
    assert "mfu_vs_measured" not in tracker.summary()   # no steps yet


def test_measure_peak_arguments():
    with pytest.raises(TypeError, match="measure_peak"):
        Tracker(5e11, spec=SPEC, clock="cpu", measure_peak="yes")
    with pytest.raises(ValueError, match="dtype: measure_peak_flops supports"):
        Tracker(5e11, dtype="fp8", spec=user_gpu_spec({"fp8": 1000.0}), clock="cpu",
                measure_peak=True)
    t = Tracker(5e11, spec=SPEC, clock="cpu")
    assert t.measured_peak_flops_per_sec is None


def test_read_telemetry_for_integrations(fake, nvml):
    tracker = Tracker(5e11, spec=SPEC, clock="cpu", telemetry=UUID)
    figures = tracker.read_telemetry(2.5e14, 1e6)
    assert figures["sm_clock_mhz"] == 1755.0
    assert figures["energy_j_per_token"] == pytest.approx(figures["power_w"] / 1e6, rel=1e-12)
    assert Tracker(5e11, spec=SPEC, clock="cpu", telemetry=False).read_telemetry() == {}
