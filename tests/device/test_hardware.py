"""Measured by the hardware, beside the arithmetic: NVML's GPM counters per
window, the caching allocator's memory headroom, and the self-check of MFU.

The GPM counters come from the fake NVML (tests/c/fake_nvml/fake_nvml.c,
compiled against the real nvml.h) with scripted metric values; the step
periods from the fake GPU driver (exact: MFU = FLOPs / fake time / peak);
the memory statistics from a fake of the caching allocator
(tests/_fake_allocator.py) behind ``torch.cuda.memory_stats``. Every key is
checked against hand arithmetic written beside it. GPM needs >= 100 ms
between readings, so windows that must have figures sleep 0.11 s.
"""
from __future__ import annotations

import re
import time
import warnings

import pytest
import torch
from _fake_allocator import GIB, FakeAllocator
from _fake_nvml import (
    GPM_NVLINK_TX,
    NVML_ERROR_NO_PERMISSION,
    NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_UNKNOWN,
    UUID,
    fake_nvml,
)

from mfu_tracker import user_gpu_spec
from mfu_tracker.step import Tracker
from mfu_tracker.device._consistency import (
    HIGH_MARGIN,
    LOW_RATIO,
    high_limit,
    mfu_consistency,
    verdict,
)

MS = 1_000_000  # ns
SPEC = user_gpu_spec(1000.0, name="fake GPU")  # 1e15 FLOP/s for every dtype
FLOPS = 5e11      # per 1 ms step: 5e14 FLOP/s = MFU 0.5
GPM_KEYS = ("hw/tensor_active", "hw/dram_bw_util", "hw/sm_active", "hw/sm_occupancy", "hw/gpu_busy",
            "hw/nvlink_gbs", "hw/mfu_consistency")


@pytest.fixture
def nvml(monkeypatch):
    fake = fake_nvml(monkeypatch)
    yield fake
    fake.lib.fake_nvml_reset()


@pytest.fixture
def allocator(monkeypatch):
    return FakeAllocator().install(monkeypatch, torch)


def _steps(fake, tracker, n=4, period_ms=1.0, **kwargs):
    tracker.step()
    for _ in range(n):
        fake.set_work_ns(int(period_ms * MS))
        fake.advance(int(period_ms * MS))
        tracker.step(**kwargs)
    tracker.flush()


def _window(fake, tracker, **kwargs):
    """A window of >= 100 ms on the host (GPM's minimum), then metrics()."""
    _steps(fake, tracker, **kwargs)
    time.sleep(0.11)
    return tracker.metrics()


def _tracker(**kwargs):
    kwargs.setdefault("telemetry", UUID)
    kwargs.setdefault("memory", False)
    return Tracker(FLOPS, spec=SPEC, clock="cuda", stream=0, warmup=0, dtype="bf16", **kwargs)


def _quiet(record):
    return [str(w.message) for w in record if issubclass(w.category, RuntimeWarning)]


# ---- GPM: each key by hand ---------------------------------------------------------


def test_every_gpm_key_is_the_hand_arithmetic(fake, nvml):
    # NVML reports percent and MiB/s: tensor 62.5 %, DRAM 31 %, SM 88 %, occupancy 40 %,
    # NVLink 100000 MiB/s in + 50000 MiB/s out, GPU busy (GRAPHICS_UTIL) 96 %
    nvml.script_gpm(62.5, 31.0, 88.0, 40.0, rx_mib_s=100000.0, tx_mib_s=50000.0, gpu_pct=96.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracker = _tracker(link_bandwidth_gbs=450.0)
        m = _window(fake, tracker)
    assert m["throughput/mfu"] == pytest.approx(0.5, rel=1e-12)   # 5e11 / 1 ms / 1e15
    assert m["throughput/hw/tensor_active"] == 0.625                # 62.5 / 100
    assert m["throughput/hw/dram_bw_util"] == 0.31                  # 31 / 100
    assert m["throughput/hw/sm_active"] == 0.88
    assert m["throughput/hw/sm_occupancy"] == 0.40
    assert m["throughput/hw/gpu_busy"] == 0.96                      # 96 / 100
    # (100000 + 50000) MiB/s x 1048576 B/MiB / 1e9 = 157.2864 GB/s
    assert m["throughput/hw/nvlink_gbs"] == pytest.approx(157.2864, rel=1e-12)
    # 157.2864 GB/s / (2 directions x 450 GB/s) = 0.174763
    assert m["throughput/comm_link_measured_util"] == pytest.approx(157.2864 / 900.0, rel=1e-12)
    # 0.5 / 0.625 = 0.8
    assert m["throughput/hw/mfu_consistency"] == pytest.approx(0.8, rel=1e-12)
    assert nvml.calls("nvmlGpmMetricsGet") == 1   # once per metrics(), never per step
    assert nvml.calls("nvmlGpmSampleGet") == 2    # construction + this edge
    del tracker
    assert nvml.live_samples() == 0               # freed with the tracker


def test_nvlink_util_from_the_link_table_row(fake, nvml):
    # An H100 SXM row: NVLink 4, 450 GB/s per direction (the link table)
    from mfu_tracker.peaks._table import lookup_gpu_spec

    nvml.script_gpm(50.0, 20.0, rx_mib_s=200000.0, tx_mib_s=200000.0)
    tracker = Tracker(FLOPS, spec=lookup_gpu_spec("H100 SXM"), clock="cuda", stream=0, warmup=0,
                      telemetry=UUID, memory=False)
    m = _window(fake, tracker)
    # 400000 MiB/s = 419.4304 GB/s over 900 GB/s
    assert m["throughput/comm_link_measured_util"] == pytest.approx(419.4304 / 900.0, rel=1e-12)


# ---- absent, with one reason ------------------------------------------------------------


@pytest.mark.parametrize("case, knob, match", [
    ("before Hopper", ("gpm_supported", 0), "does not support GPM"),
    ("no permission", ("fail", NVML_ERROR_NO_PERMISSION), "failed with 4 .Insufficient Permissions"),
    ("not supported", ("fail", NVML_ERROR_NOT_SUPPORTED), "failed with 3 .Not Supported"),
])
def test_unsupported_leaves_the_keys_out_with_one_reason(fake, nvml, case, knob, match):
    nvml.script_gpm(62.5, 31.0)
    if knob[0] == "fail":
        nvml.fail_next("nvmlGpmQueryDeviceSupport", knob[1])
    else:
        nvml.set(*knob)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        tracker = _tracker()
        m1 = _window(fake, tracker)
        m2 = _window(fake, tracker)
    messages = _quiet(record)
    assert len(messages) == 1, messages
    assert "hardware counters: GPM is unavailable" in messages[0]
    assert re.search(match, messages[0]), messages[0]
    for m in (m1, m2):
        assert not [k for k in m if "/hw/" in k]          # absent, never 0
        assert m["throughput/mfu"] == pytest.approx(0.5)  # the rest is there
        assert m["throughput/sm_clock_mhz"] == 1755.0
    assert nvml.calls("nvmlGpmSampleGet") == 0


def test_a_window_under_100_ms_is_left_out_with_one_message(fake, nvml):
    nvml.script_gpm(62.5, 31.0)
    with nvml.virtual_clock():                    # host time only as the test moves it
        tracker = _tracker()
        nvml.advance(0.099)
        with pytest.warns(RuntimeWarning, match=r"a window of 99 ms .* under the 100 ms GPM "
                                                r"needs"):
            _steps(fake, tracker)
            short = tracker.metrics()             # 99 ms after construction
        with warnings.catch_warnings():
            warnings.simplefilter("error")        # said once
            nvml.advance(0.05)
            again = tracker.metrics()             # 50 ms after that edge
            nvml.advance(0.101)
            long = tracker.metrics()              # 101 ms: over GPM's minimum, a window
        tracker.close()
    assert not [k for k in short if "/hw/" in k] and not [k for k in again if "/hw/" in k]
    assert long["throughput/hw/tensor_active"] == 0.625
    assert nvml.calls("nvmlGpmMetricsGet") == 1   # the short windows never asked NVML


def test_failing_calls_leave_that_window_out_and_warn_once(fake, nvml):
    nvml.script_gpm(62.5, 31.0, rx_mib_s=10.0, tx_mib_s=10.0)
    tracker = _tracker()
    _window(fake, tracker)
    # the metrics call fails: nothing this window; its sample starts the next one
    nvml.fail_next("nvmlGpmMetricsGet", NVML_ERROR_UNKNOWN)
    with pytest.warns(RuntimeWarning, match="nvmlGpmMetricsGet failed with 999"):
        m = _window(fake, tracker)
    assert not [k for k in m if "/hw/" in k]
    # one metric not supported (NVLink on a PCIe card): that key alone is out
    nvml.set_gpm(GPM_NVLINK_TX, 0.0, NVML_ERROR_NOT_SUPPORTED)
    with pytest.warns(RuntimeWarning, match="NVLINK_TOTAL_RX/TX_PER_SEC: Not Supported"):
        m = _window(fake, tracker)
    assert "throughput/hw/nvlink_gbs" not in m and "throughput/comm_link_measured_util" not in m
    assert m["throughput/hw/tensor_active"] == 0.625
    # a sample fails: that edge starts nothing, the next window needs two good edges
    nvml.fail_next("nvmlGpmSampleGet", NVML_ERROR_UNKNOWN)
    with pytest.warns(RuntimeWarning, match="nvmlGpmSampleGet failed with 999"):
        m = _window(fake, tracker)
    assert not [k for k in m if "/hw/" in k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = _window(fake, tracker)
    assert not [k for k in m if "/hw/" in k]      # the first good edge after the failure
    m = _window(fake, tracker)
    assert m["throughput/hw/tensor_active"] == 0.625


def test_telemetry_off_reads_no_counters(fake, nvml):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracker = _tracker(telemetry=False)
        m = _window(fake, tracker)
    assert not [k for k in m if "/hw/" in k]
    assert nvml.calls("nvmlGpmSampleGet") == 0


# ---- the self-check ---------------------------------------------------------------------


def test_thresholds_by_hand():
    # the ceiling: 1 + 0.10 + 2 x 0.1 s / window
    assert HIGH_MARGIN == 0.10 and LOW_RATIO == 0.5
    assert high_limit(10.0) == pytest.approx(1.12)        # 1 + 0.10 + 0.02
    assert high_limit(1.0) == pytest.approx(1.30)         # 1 + 0.10 + 0.20
    assert high_limit(None) == pytest.approx(3.10)        # no interval: 2 edges of 1 refresh
    assert mfu_consistency(0.5, 0.625) == pytest.approx(0.8)
    assert mfu_consistency(0.5, 0.0) is None and mfu_consistency(None, 0.5) is None
    f = dict(dtype="bf16", hw_window_s=10.0, hw_tensor_active=0.5)
    assert verdict({**f, "mfu": 0.56}) is None            # 0.56 = 0.5 x 1.12: at the limit
    assert verdict({**f, "mfu": 0.561}) == "high"
    assert verdict({**f, "mfu": 0.25}) is None            # = 0.5 x 0.5: at the floor
    assert verdict({**f, "mfu": 0.249}) == "low"
    # pipes barely busy (< 10 %): no "busy far beyond" claim
    assert verdict({**f, "hw_tensor_active": 0.09, "mfu": 0.01}) is None
    # fp32 / fp64 math is not the tensor pipes'
    assert verdict({**f, "dtype": "fp32", "mfu": 0.9}) is None


def test_mfu_clearly_above_the_tensor_pipes_warns_once_naming_count_or_peak(fake, nvml):
    # MFU 0.5 against pipes busy 10 %: 5x, far above 1.1 + 0.2 / ~0.11 s = ~2.9
    nvml.script_gpm(10.0, 31.0)
    tracker = _tracker()
    with pytest.warns(RuntimeWarning, match="clearly above what the tensor pipes did") as record:
        m = _window(fake, tracker)
    message = next(str(w.message) for w in record if "clearly above" in str(w.message))
    assert "FLOP count" in message and "peak" in message
    assert m["throughput/hw/mfu_consistency"] == pytest.approx(5.0)   # 0.5 / 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                # once
        _window(fake, tracker)


def test_the_limit_uses_the_counters_own_interval(fake, nvml):
    # MFU 0.5 over pipes busy 16.5 %: 3.03, above 1.1 + 0.2 / window for any window of
    # 0.11 s or more (<= 2.92), below the 3.1 of an interval unknown
    nvml.script_gpm(16.5, 31.0)
    tracker = _tracker()
    with pytest.warns(RuntimeWarning, match="clearly above what the tensor pipes did"):
        m = _window(fake, tracker)
    assert m["throughput/hw/mfu_consistency"] == pytest.approx(0.5 / 0.165)


def test_pipes_busy_far_beyond_mfu_names_kernels_below_peak(fake, nvml):
    # MFU 0.5 against pipes busy 100 %: 0.5 / 1.0 = 0.5 is the floor itself (not
    # below it); MFU 0.3 (3e11 per ms) is below: kernels below peak, the clock named
    nvml.script_gpm(100.0, 31.0)
    tracker = Tracker(3e11, spec=SPEC, clock="cuda", stream=0, warmup=0, dtype="bf16",
                      telemetry=UUID, memory=False)
    with pytest.warns(RuntimeWarning, match="far beyond MFU") as record:
        m = _window(fake, tracker)
    message = next(str(w.message) for w in record if "far beyond" in str(w.message))
    assert "below peak per busy cycle" in message and "0.89 of its maximum" in message  # 1755/1980
    assert "recompute: HFU" not in message
    assert m["throughput/hw/mfu_consistency"] == pytest.approx(0.3)


def test_pipes_busy_far_beyond_mfu_names_recompute_when_hfu_explains_it(fake, nvml):
    # MFU 0.3, HFU 0.6 (executed 6e11 per ms: activation recompute) against 100 %:
    # 0.3 < 0.5 x 1.0, and HFU 0.6 >= 0.5: the recompute
    nvml.script_gpm(100.0, 31.0)
    tracker = Tracker(3e11, executed_flops_per_step=6e11, spec=SPEC, clock="cuda", stream=0,
                      warmup=0, dtype="bf16", telemetry=UUID, memory=False)
    with pytest.warns(RuntimeWarning, match="recompute: HFU 0.600"):
        _window(fake, tracker)


@pytest.mark.parametrize("tensor_pct, flops, dtype", [
    (62.5, 5e11, "bf16"),   # 0.8: a healthy GEMM-bound run
    (50.0, 5e11, "bf16"),   # 1.0: the ceiling itself
    (100.0, 5e11, "bf16"),  # 0.5: the floor itself
    (5.0, 9e11, "fp32"),    # 18: fp32 is not tensor-pipe work: no check, no key
])
def test_no_warning_inside_the_thresholds(fake, nvml, tensor_pct, flops, dtype):
    nvml.script_gpm(tensor_pct, 31.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracker = Tracker(flops, spec=SPEC, clock="cuda", stream=0, warmup=0, dtype=dtype,
                          telemetry=UUID, memory=False)
        m = _window(fake, tracker)
    if dtype == "fp32":
        assert "throughput/hw/mfu_consistency" not in m
        assert m["throughput/hw/tensor_active"] == 0.05
    else:
        assert m["throughput/hw/mfu_consistency"] == pytest.approx(flops / 1e12 / (tensor_pct / 100))


# ---- memory headroom ------------------------------------------------------------------


def test_memory_keys_running_peak_by_default(fake, nvml, allocator):
    allocator.malloc(1 * GIB)                       # held before the tracker
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracker = _tracker(telemetry=False, memory=True)
        _steps(fake, tracker)
        allocator.malloc(3 * GIB)
        allocator.free(3 * GIB)                     # peak 4 GiB, back to 1 GiB
        allocator.retry()
        allocator.retry()
        allocator.oom()
        m1 = tracker.metrics()
        allocator.malloc(1 * GIB)                   # 2 GiB: under the running peak
        allocator.free(1 * GIB)
        m2 = tracker.metrics()
    assert m1["throughput/memory/peak_allocated_gib"] == 4.0
    assert m1["throughput/memory/peak_allocated_frac"] == 4.0 / 80.0      # 0.05
    assert m1["throughput/memory/peak_reserved_gib"] == 4.0               # 2 MiB segments
    assert m1["throughput/memory/peak_reserved_frac"] == 0.05
    assert m1["throughput/memory/alloc_retries"] == 2.0                   # 2 - 0
    assert m1["throughput/memory/ooms"] == 1.0                            # 1 - 0
    assert m2["throughput/memory/peak_allocated_gib"] == 4.0              # running peak
    assert m2["throughput/memory/alloc_retries"] == 0.0                   # 2 - 2
    assert m2["throughput/memory/ooms"] == 0.0
    assert allocator.resets == 0                                          # the user's peak kept
    assert torch.cuda.max_memory_allocated() == 4 * GIB


def test_memory_per_window_peaks_when_opted_in(fake, nvml, allocator):
    allocator.malloc(1 * GIB)
    tracker = _tracker(telemetry=False, memory="window")    # resets at construction
    _steps(fake, tracker)
    allocator.malloc(3 * GIB)
    allocator.free(3 * GIB)
    m1 = tracker.metrics()
    allocator.malloc(1 * GIB)
    allocator.free(1 * GIB)
    m2 = tracker.metrics()
    assert m1["throughput/memory/peak_allocated_gib"] == 4.0     # 1 held + 3
    # the window's own: max(1 GiB held at the edge, 1 + 1) = 2 GiB
    assert m2["throughput/memory/peak_allocated_gib"] == 2.0
    assert m2["throughput/memory/peak_allocated_frac"] == 2.0 / 80.0
    # reserved: segments stay cached, so the window's reserved peak is what is held: 4 GiB
    assert m2["throughput/memory/peak_reserved_gib"] == 4.0
    # the documented side effect: the user's max_memory_allocated() restarted at the edge
    assert torch.cuda.max_memory_allocated() == 1 * GIB
    assert allocator.resets == 3                            # construction + 2 edges


def test_counters_reset_by_the_user_give_no_negative_difference(fake, nvml, allocator):
    tracker = _tracker(telemetry=False, memory=True)
    allocator.retry()
    allocator.retry()
    allocator.retry()
    _steps(fake, tracker)
    assert tracker.metrics()["throughput/memory/alloc_retries"] == 3.0   # 3 - 0
    torch.cuda.reset_accumulated_memory_stats()                           # 3 -> 0 by the user
    allocator.retry()
    m = tracker.metrics()
    assert "throughput/memory/alloc_retries" not in m                     # 1 - 3: unknown, never -2
    assert m["throughput/memory/ooms"] == 0.0                             # 0 - 0
    allocator.retry()
    assert tracker.metrics()["throughput/memory/alloc_retries"] == 1.0   # 2 - 1


def test_memory_without_statistics_warns_once_and_leaves_the_keys_out(fake, nvml, monkeypatch,
                                                                       allocator):
    monkeypatch.setattr(torch.cuda, "memory_stats", lambda device=None: {})  # CUDA not initialized
    with pytest.warns(RuntimeWarning, match="reports no statistics"):
        tracker = _tracker(telemetry=False, memory=True)
        _steps(fake, tracker)
        m = tracker.metrics()
        tracker.metrics()
    assert not [k for k in m if "/memory/" in k]


def test_memory_argument(fake):
    with pytest.raises(ValueError, match="memory must be None, True, False or 'window'"):
        _tracker(memory="windows")
    with pytest.raises(TypeError, match="memory must be None, a bool or 'window'"):
        _tracker(memory=1)
    # on the CPU clock, asked for: one warning; by default nothing, silently
    with pytest.warns(RuntimeWarning, match="memory=True but the tracker runs on the CPU clock"):
        Tracker(FLOPS, spec=SPEC, clock="cpu", memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Tracker(FLOPS, spec=SPEC, clock="cpu")
        Tracker(FLOPS, spec=SPEC, clock="cuda", stream=0)   # torch without a GPU: off


def test_everything_together_in_one_window(fake, nvml, allocator):
    nvml.script_gpm(62.5, 31.0)
    tracker = _tracker(memory=True)
    allocator.malloc(8 * GIB)
    m = _window(fake, tracker)
    assert {"throughput/hw/tensor_active", "throughput/memory/peak_allocated_gib",
            "throughput/power_w", "throughput/mfu"} <= set(m)
    assert m["throughput/memory/peak_allocated_gib"] == 8.0


# ---- the doctor's row ------------------------------------------------------------------


class _Platform:
    """A GEMM loop of known speed: each gemm(n, dtype, iters) is 2 n^3 iters FLOPs
    and sleeps (n / 8192)^3 x iters x 1 ms: 8192^3 x 2 / 1 ms = 1.0995e15 FLOP/s."""

    def __init__(self):
        self.calls = 0

    def gemm(self, n, dtype, iters):
        assert dtype == "bf16"
        self.calls += 1
        time.sleep((n / 8192) ** 3 * iters * 1e-3)
        return 2.0 * n ** 3 * iters

    def synchronize(self):
        pass


@pytest.mark.parametrize("tensor_pct, status, words", [
    (90.0, "PASS", "MFU / tensor-active"),
    (20.0, "WARN", "peak table's row or the GEMM's FLOP count"),   # MFU far above the pipes
])
def test_doctor_self_check_row(nvml, tensor_pct, status, words):
    from mfu_tracker.cli.doctor._self_check import self_check_row
    from mfu_tracker.peaks._table import lookup_gpu_spec

    nvml.script_gpm(tensor_pct, 10.0)
    rows = []
    spec = lookup_gpu_spec("H100 SXM")             # bf16 989.4 TFLOP/s
    self_check_row(lambda *a, **k: rows.append((a, k)), _Platform(), spec, UUID, quick=True)
    (section, name, got, figure, detail), data = rows[0]
    assert (section, name, got) == ("peak", "mfu_self_check", status)
    assert words in figure + detail
    # the loop's MFU is its FLOPs over its wall time over the peak (sleeps overshoot:
    # at most the programmed 1.0995e15 / 989.4e12 = 1.11)
    assert data["mfu"] == pytest.approx(data["loop_flops"] / data["loop_seconds"] / 989.4e12)
    assert 0.3 < data["mfu"] <= 1.112
    assert data["counters"]["tensor_active"] == tensor_pct / 100


def test_doctor_self_check_row_says_why_it_cannot_run(nvml):
    from mfu_tracker.cli.doctor._self_check import self_check_row
    from mfu_tracker.peaks._table import lookup_gpu_spec

    rows = []
    add = lambda *a, **k: rows.append(a)  # noqa: E731
    spec = lookup_gpu_spec("H100 SXM")
    self_check_row(add, _Platform(), spec, None, quick=True)
    nvml.set("gpm_supported", 0)
    self_check_row(add, _Platform(), spec, UUID, quick=True)
    assert [(r[2], r[3]) for r in rows] == [("SKIP", "no NVML device"), ("SKIP", "GPM unavailable")]
    assert "does not support GPM" in rows[1][4]


def test_amd_gpus_say_the_counters_are_not_read(fake):
    # the ROCm clock (the fake driver answers the HIP calls too): one warning, no keys
    with pytest.warns(RuntimeWarning, match="AMD GPUs: device telemetry and the hardware counters "
                                            "are not read"):
        tracker = Tracker(FLOPS, spec=SPEC, clock="hip", stream=0, warmup=0, memory=False)
    _steps(fake, tracker)
    assert not [k for k in tracker.metrics() if "/hw/" in k]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Tracker(FLOPS, spec=SPEC, clock="hip", stream=0, telemetry=False, memory=False)
