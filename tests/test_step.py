"""The step tracker: mfu_tracker.step.Tracker over _C.StepTracker.

GPU clock tests run against the fake driver (tests/conftest.py): the fake's
host clock stands still until ``fake.advance``; a record completes at
max(previous record + work_ns, now + lag_ns). Step periods are therefore
known exactly.
"""
from __future__ import annotations

import math
import time
import tracemalloc
import types
import warnings

import pytest

from mfu_tracker import _C, user_gpu_spec
from mfu_tracker.step import Tracker

from _bracket import Bracket

MS = 1_000_000  # ns
SPEC = user_gpu_spec(1000.0, name="fake GPU", memory_bandwidth_tbs=2.0)  # 1e15 FLOP/s, 2e12 B/s
KEYS = {"mfu", "hfu", "mbu", "tokens_per_sec", "achieved_tflops", "step_time_s",
        "step_time_min_s", "step_time_max_s", "peak_tflops"}


def _steps_with_periods(fake, tracker, periods_ms, **step_kwargs):
    """One boundary, then one step per period: the GPU does `period` of work
    before each closing record; the host keeps pace."""
    tracker.step()
    for period in periods_ms:
        fake.set_work_ns(int(period * MS))
        fake.advance(int(period * MS))
        tracker.step(**step_kwargs)
    tracker.flush()  # one wait: the steps are all resolved, the host at the GPU's time


@pytest.mark.parametrize("clock", ["cuda", "hip"])
def test_zero_synchronizing_calls_over_10000_steps_read_every_step(fake, clock):
    fake.set_work_ns(1 * MS)
    fake.set_lag_ns(MS // 2)  # each boundary completes 0.5 ms after the host records it
    tracker = Tracker(5e11, spec=SPEC, clock=clock, stream=0, warmup=0, param_bytes=1e9)
    assert tracker.clock == clock
    for i in range(10_000):
        tracker.step(num_tokens=4096)
        metrics = tracker.metrics()
        summary_pending = tracker.counters()["pending"]
        if i >= 1:
            # Lags at most one step: only the step closed by this call is unresolved.
            assert summary_pending == 1
        if i >= 2:
            assert metrics["throughput/step_time_s"] == pytest.approx(0.001, abs=1e-12)
        fake.advance(1 * MS)
    assert fake.sync_calls() == 0
    counters = tracker.counters()
    assert counters["waits"] == 0 and counters["pool_full_waits"] == 0
    assert counters["events"] == 16 and counters["pool_grows"] == 0  # no allocation
    # 5e11 FLOPs per 1 ms step on a 1e15 FLOP/s peak
    assert metrics["throughput/mfu"] == pytest.approx(5e11 / 0.001 / 1e15, rel=1e-9)  # = 0.5
    assert metrics["throughput/mbu"] == pytest.approx(1e9 / 0.001 / 2e12, rel=1e-9)  # = 0.5
    assert metrics["throughput/tokens_per_sec"] == pytest.approx(4096 / 0.001, rel=1e-9)
    record = "hipEventRecord" if clock == "hip" else "cuEventRecord"
    assert fake.calls(record) == 10_000


def test_figures_against_hand_arithmetic(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0, param_bytes=1e9,
                      executed_flops_per_step=1.5e12, num_gpus=2)
    _steps_with_periods(fake, tracker, [2, 2, 2, 2], num_tokens=4096)
    m = tracker.metrics()
    assert set(m) == {f"throughput/{k}" for k in KEYS}
    # achieved = 1e12 / 0.002 s = 5e14 FLOP/s = 500 TFLOP/s; peak = 2 x 1e15
    assert m["throughput/achieved_tflops"] == pytest.approx(500.0, rel=1e-9)
    assert m["throughput/mfu"] == pytest.approx(5e14 / 2e15, rel=1e-9)  # = 0.25
    assert m["throughput/hfu"] == pytest.approx(1.5e12 / 0.002 / 2e15, rel=1e-9)  # = 0.375
    assert m["throughput/mbu"] == pytest.approx(1e9 / 0.002 / (2 * 2e12), rel=1e-9)  # = 0.125
    assert m["throughput/tokens_per_sec"] == pytest.approx(4096 / 0.002, rel=1e-9)  # = 2,048,000
    assert m["throughput/peak_tflops"] == pytest.approx(2000.0)
    assert m["throughput/step_time_s"] == pytest.approx(0.002, abs=1e-12)
    s = tracker.summary()
    assert s["steps"] == 4 and s["steps_skipped"] == 0 and s["boundaries"] == 5
    assert s["window_s"] == pytest.approx(0.008, abs=1e-12)
    assert s["peak_source"] == "user" and s["dtype"] == "bf16" and s["clock"] == "cuda"
    assert all(isinstance(v, (int, float, str)) for v in s.values())


def test_rates_are_sums_over_the_window_not_means_of_ratios(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0)
    _steps_with_periods(fake, tracker, [1, 3], num_tokens=1000)
    m = tracker.metrics()
    # 2e12 FLOPs in 4 ms = 5e14 FLOP/s (the mean of per-step rates would be 6.67e14)
    assert m["throughput/achieved_tflops"] == pytest.approx(500.0, rel=1e-9)
    assert m["throughput/tokens_per_sec"] == pytest.approx(2000 / 0.004, rel=1e-9)
    assert m["throughput/step_time_min_s"] == pytest.approx(0.001, abs=1e-12)
    assert m["throughput/step_time_max_s"] == pytest.approx(0.003, abs=1e-12)


def test_warmup_steps_are_skipped(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=2)
    _steps_with_periods(fake, tracker, [10, 10, 2, 2, 2])
    s = tracker.summary()
    assert s["steps"] == 3 and s["steps_skipped"] == 2 and s["steps_seen"] == 5
    assert s["step_time_s"] == pytest.approx(0.002, abs=1e-12)  # the 10 ms steps are gone
    assert s["step_time_max_s"] == pytest.approx(0.002, abs=1e-12)


def test_window_evicts_old_steps(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0, window=3)
    _steps_with_periods(fake, tracker, [1, 2, 3, 4, 5])
    s = tracker.summary()
    assert s["steps"] == 3
    assert s["step_time_s"] == pytest.approx(0.004, abs=1e-12)  # (3 + 4 + 5) / 3 ms
    assert s["step_time_min_s"] == pytest.approx(0.003, abs=1e-12)
    assert s["step_time_max_s"] == pytest.approx(0.005, abs=1e-12)
    assert s["achieved_flops_per_sec"] == pytest.approx(3e12 / 0.012, rel=1e-9)


def test_per_step_flops_override(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0,
                      executed_flops_per_step=2e12)
    tracker.step()
    for flops in (1e12, 3e12):
        fake.set_work_ns(2 * MS)
        fake.advance(2 * MS)
        tracker.step(model_flops=flops)
    fake.advance(100 * MS)
    m = tracker.metrics()
    # (1e12 + 3e12) FLOPs in 4 ms = 1e15 FLOP/s = MFU 1.0
    assert m["throughput/mfu"] == pytest.approx(1.0, rel=1e-9)
    # A per-step model count does not pair with the fixed executed count: HFU left out
    assert "throughput/hfu" not in m
    tracker2 = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0)
    _steps_with_periods(fake, tracker2, [2, 2], model_flops=3e12, executed_flops=4e12)
    m2 = tracker2.metrics()
    assert m2["throughput/mfu"] == pytest.approx(3e12 / 0.002 / 1e15, rel=1e-9)
    assert m2["throughput/hfu"] == pytest.approx(4e12 / 0.002 / 1e15, rel=1e-9)


def test_unknown_flops_leave_mfu_out_until_the_step_leaves_the_window(fake):
    tracker = Tracker(spec=SPEC, clock="cuda", stream=0, warmup=0, window=2)
    _steps_with_periods(fake, tracker, [2], num_tokens=10)
    m = tracker.metrics()
    assert "throughput/mfu" not in m and "throughput/achieved_tflops" not in m
    assert m["throughput/tokens_per_sec"] == pytest.approx(10 / 0.002, rel=1e-9)
    assert tracker.summary()["mfu"] is None
    for _ in range(2):
        fake.set_work_ns(2 * MS)
        fake.advance(2 * MS)
        tracker.step(model_flops=1e12)
    tracker.flush()
    assert tracker.metrics()["throughput/mfu"] == pytest.approx(0.5, rel=1e-9)


def test_reading_before_any_step_is_empty_not_an_error(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0)
    assert tracker.metrics() == {}
    s = tracker.summary()
    assert s["steps"] == 0 and s["mfu"] is None and s["step_time_s"] is None
    tracker.step()
    assert tracker.metrics() == {}  # one boundary: no step yet


def test_metrics_prefix_forms(fake):
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0)
    _steps_with_periods(fake, tracker, [2])
    assert set(tracker.metrics("train")) == {f"train/{k}" for k in KEYS - {"hfu", "mbu", "tokens_per_sec"}}
    assert set(tracker.metrics(prefix="eval")) == {f"eval/{k}" for k in KEYS - {"hfu", "mbu", "tokens_per_sec"}}
    assert all(k.startswith("throughput/") for k in tracker.metrics())
    with pytest.raises(TypeError, match="prefix"):
        tracker.metrics(3)


def test_flush_waits_once_and_close_keeps_figures(fake):
    fake.set_work_ns(2 * MS)
    fake.set_lag_ns(50 * MS)
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0)
    for _ in range(4):
        tracker.step()
    assert tracker.metrics() == {} and fake.sync_calls() == 0  # the GPU is 50 ms behind
    tracker.flush()
    assert fake.sync_calls() == 1
    assert tracker.summary()["steps"] == 3
    assert tracker.metrics()["throughput/step_time_s"] == pytest.approx(0.002, abs=1e-12)
    live = fake.live_events()
    tracker.close()
    assert tracker.closed and fake.live_events() == live - 16  # its events are released
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.step()
        tracker.step()
    assert len(caught) == 1 and "close()" in str(caught[0].message)
    assert tracker.summary()["steps"] == 3


def test_context_manager_closes(fake):
    with Tracker(1e12, spec=SPEC, clock="cuda", stream=0) as tracker:
        tracker.step()
    assert tracker.closed


def test_cpu_clock_against_real_sleeps():
    tracker = Tracker(1e12, peak_tflops=1e6, device="cpu", clock="cpu", warmup=0)
    assert tracker.clock == "cpu"
    with Bracket() as steps:
        tracker.step()
        for _ in range(3):
            time.sleep(0.02)
            tracker.step(num_tokens=100)
    m = tracker.metrics()
    t = m["throughput/step_time_s"]
    # Real 20 ms sleeps: each period at least its sleep, the three within the test's
    # own bracket of the boundaries (a clock in the wrong unit or a stuck clock fails)
    assert 0.02 <= m["throughput/step_time_min_s"] <= t <= m["throughput/step_time_max_s"]
    assert 3 * t <= steps.s
    assert m["throughput/mfu"] == pytest.approx(1e12 / t / 1e18, rel=1e-9)
    assert m["throughput/tokens_per_sec"] == pytest.approx(100 / t, rel=1e-9)


def test_step_period_covers_everything_between_boundaries():
    tracker = Tracker(1e12, peak_tflops=1e6, device="cpu", clock="cpu", warmup=0)
    tracker.step()
    time.sleep(0.01)  # "data loading"
    time.sleep(0.02)  # "compute"
    tracker.step()
    assert tracker.summary()["step_time_s"] >= 0.03


def test_step_argument_forms():
    tracker = Tracker(1e12, peak_tflops=1e6, device="cpu", clock="cpu", warmup=0)
    tracker.step()
    tracker.step(10)
    tracker.step(num_tokens=10)
    tracker.step(10, model_flops=1e12, executed_flops=2e12)
    tracker.step(None, model_flops=None)
    assert tracker.counters()["boundaries"] == 5
    with pytest.raises(TypeError, match="unexpected"):
        tracker.step(tokens=10)
    with pytest.raises(TypeError, match="unexpected"):
        tracker.step(10, num_tokens=10)
    with pytest.raises(TypeError, match="positional"):
        tracker.step(10, 20)
    assert tracker.counters()["boundaries"] == 5  # a call that raised took no mark


@pytest.mark.parametrize("kwargs, name", [
    (dict(num_tokens=-1), "num_tokens"),
    (dict(num_tokens=math.nan), "num_tokens"),
    (dict(num_tokens="12"), "num_tokens"),
    (dict(model_flops=math.inf), "model_flops"),
    (dict(executed_flops=True), "executed_flops"),
])
def test_bad_step_values_warn_once_and_never_raise(kwargs, name):
    tracker = Tracker(1e12, peak_tflops=1e6, device="cpu", clock="cpu", warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker.step()
        for _ in range(3):
            tracker.step(**kwargs)
    assert len(caught) == 1 and name in str(caught[0].message)
    m = tracker.metrics()
    assert "throughput/step_time_s" in m
    if name == "num_tokens":
        assert "throughput/tokens_per_sec" not in m
    if name == "model_flops":
        assert "throughput/mfu" not in m


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(window=0), ValueError, "window"),
    (dict(window=2**24 + 1), ValueError, "window"),
    (dict(window=1.5), TypeError, "window"),
    (dict(window=True), TypeError, "window"),
    (dict(warmup=-1), ValueError, "warmup"),
    (dict(warmup=None), TypeError, "warmup"),
    (dict(flops_per_step=math.nan), ValueError, "flops_per_step"),
    (dict(flops_per_step=math.inf), ValueError, "flops_per_step"),
    (dict(flops_per_step=-1.0), ValueError, "flops_per_step"),
    (dict(flops_per_step="1e12"), TypeError, "flops_per_step"),
    (dict(flops_per_step=True), TypeError, "flops_per_step"),
    (dict(param_bytes=-1), ValueError, "param_bytes"),
    (dict(executed_flops_per_step=math.nan), ValueError, "executed_flops_per_step"),
    (dict(num_gpus=0), ValueError, "num_gpus"),
    (dict(num_gpus=2.0), TypeError, "num_gpus"),
    (dict(dtype="bf17"), ValueError, "dtype"),
    (dict(peak_tflops=0.0), ValueError, "peak_tflops"),
    (dict(peak_tflops=math.nan), ValueError, "peak_tflops"),
    (dict(clock="gpu"), ValueError, "clock"),
    (dict(clock=None), TypeError, "clock"),
    (dict(stream="0"), TypeError, "stream"),
    (dict(stream=-1), ValueError, "stream"),
    (dict(stream=types.SimpleNamespace()), TypeError, "stream"),
])
def test_bad_constructor_arguments_name_the_argument(kwargs, exc, name):
    args = dict(flops_per_step=1e12, peak_tflops=1.0, device="cpu", clock="cpu")
    args.update(kwargs)
    flops = args.pop("flops_per_step")
    with pytest.raises(exc, match=name):
        Tracker(flops, **args)


def test_c_step_tracker_validates_too():
    with pytest.raises(ValueError, match="window"):
        _C.StepTracker(window=0)
    with pytest.raises(ValueError, match="model_flops"):
        _C.StepTracker(model_flops=-1.0)
    with pytest.raises(ValueError, match="peak_flops_per_sec"):
        _C.StepTracker(peak_flops_per_sec=0.0)
    with pytest.raises(TypeError):
        _C.StepTracker(1)
    tracker = _C.StepTracker()
    with pytest.raises(RuntimeError, match="once"):
        tracker.__init__()


def _clock_warnings(caught):
    return [w for w in caught if issubclass(w.category, RuntimeWarning) and "clock" in str(w.message)]


@pytest.mark.parametrize("call", ["cuEventRecord", "cuEventQuery", "cuEventElapsedTime"])
def test_driver_failure_mid_run_warns_once_and_continues_on_cpu(fake, call):
    fake.set_work_ns(1 * MS)
    tracker = Tracker(1e12, spec=SPEC, clock="cuda", stream=0, warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            tracker.step()
            fake.advance(1 * MS)
        fake.fail_next(call, 700)
        with Bracket() as on_cpu:
            for _ in range(5):
                tracker.step()
                time.sleep(0.01)
                fake.advance(1 * MS)
            tracker.step()
        m = tracker.metrics()
    got = _clock_warnings(caught)
    assert len(got) == 1 and call in str(got[0].message) and "CUDA_ERROR_ILLEGAL_ADDRESS" in str(got[0].message)
    assert tracker.clock == "cpu"
    s = tracker.summary()
    assert s["steps_dropped"] >= 1
    # The CPU-clock steps (10 ms sleeps) now dominate the window's maximum (at most
    # the test's bracket of them: no fake-GPU time mixed in)
    assert 0.01 <= m["throughput/step_time_max_s"] <= on_cpu.s


def test_no_context_at_construction_warns_once_and_uses_cpu(fake):
    fake.set_no_context(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tracker = _C.StepTracker(clock="cuda", model_flops=1.0)
        tracker.step()
        tracker.step()
    assert len(_clock_warnings(caught)) == 1 and tracker.clock == "cpu"
    assert "context" in str(_clock_warnings(caught)[0].message)


def test_stream_handle_reaches_the_tracker_and_the_driver(fake):
    fake.set_work_ns(1 * MS)
    a = Tracker(1e12, spec=SPEC, clock="cuda", stream=5, warmup=0)
    b = Tracker(1e12, spec=SPEC, clock="cuda", stream=types.SimpleNamespace(cuda_stream=6), warmup=0)
    c = Tracker(1e12, spec=SPEC, clock="cuda", warmup=0)  # None: the null stream on a CPU build
    assert (a.stream, b.stream, c.stream) == (5, 6, 0)
    # Interleaved boundaries: on separate streams each tracker's GPU timeline
    # advances 1 ms per record; on one shared stream each period would be 3 ms.
    for _ in range(4):
        a.step()
        b.step()
        c.step()
    fake.advance(1000 * MS)
    for t in (a, b, c):
        assert t.metrics()["throughput/step_time_s"] == pytest.approx(0.001, abs=1e-12)


def test_memory_is_flat_over_a_million_steps():
    tracker = Tracker(1e3, peak_tflops=1e6, device="cpu", clock="cpu", window=100)
    step = tracker.step
    for _ in range(1000):
        step(4096)
    tracker.metrics()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(1_000_000):
        step(4096)
        if i % 1000 == 0:
            tracker.metrics()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 16 * 1024
    assert tracker.summary()["steps"] == 100


def test_memory_is_flat_on_the_gpu_clock(fake):
    fake.set_work_ns(1 * MS)
    tracker = Tracker(5e11, spec=SPEC, clock="cuda", stream=0)
    for _ in range(1000):
        tracker.step(4096)
        fake.advance(1 * MS)
        tracker.metrics()
    live = fake.live_events()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(50_000):
        tracker.step(4096)
        fake.advance(1 * MS)
        tracker.metrics()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 16 * 1024
    assert fake.live_events() == live


def test_tracker_is_the_c_type_with_a_typed_surface():
    tracker = Tracker(1e12, peak_tflops=1e6, device="cpu", clock="cpu")
    assert isinstance(tracker, _C.StepTracker)
    assert Tracker.step is _C.StepTracker.step  # the C fast path, no Python frame
    assert tracker.peak.flops_per_sec == 1e18 and tracker.window == 100 and tracker.warmup == 1
    assert "Tracker(" in repr(tracker)
    with pytest.raises(AttributeError):
        tracker.not_a_field = 1  # __slots__
