"""Mixed precision (docs/mixed-precision.md): ``flops_by_dtype`` and ``{p}/mfu_mixed``.

mfu_mixed = (sum_d F_d / peak_d) / T / num_gpus: the share of the window the
device would have needed at each dtype's own peak. Step periods come from the
fake GPU driver (tests/conftest.py), so T is exact; peaks are the H100 SXM
datasheet row (fp8 1978.9, bf16 989.4, tf32 494.7 dense TFLOP/s).
"""
from __future__ import annotations

import warnings

import pytest

from mfu_tracker import _C, lookup_gpu_spec, user_gpu_spec
from mfu_tracker.step import Tracker

MS = 1_000_000  # ns
H100 = lookup_gpu_spec("NVIDIA H100 80GB HBM3", num_sms=132, total_memory_bytes=80 * 10**9)
FP8, BF16 = 1978.9e12, 989.4e12  # H100 SXM dense peaks, FLOP/s


def _steps(fake, tracker, periods_ms, **step_kwargs):
    tracker.step()
    for period in periods_ms:
        fake.set_work_ns(int(period * MS))
        fake.advance(int(period * MS))
        tracker.step(**step_kwargs)
    tracker.flush()


def test_h100_row_has_the_peaks_used_here():
    assert H100.peak_flops_by_dtype["fp8"] == FP8
    assert H100.peak_flops_by_dtype["bf16"] == BF16


def test_mixed_against_hand_arithmetic(fake):
    # One fp8 _scaled_mm linear (x [4096, 8192] @ w [8192, 8192]) and one bf16
    # linear of the same shape, per step: 2 * 4096 * 8192 * 8192 FLOPs each.
    f = 2 * 4096 * 8192 * 8192                                  # 549,755,813,888
    tracker = Tracker(dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=0,
                      flops_by_dtype={"fp8": f, "bf16": f})
    _steps(fake, tracker, [2, 2, 2])                            # T = 6 ms
    s = tracker.summary()
    ideal_per_step = f / FP8 + f / BF16                         # 2.778e-4 + 5.556e-4 s
    assert s["ideal_s"] == pytest.approx(3 * ideal_per_step, rel=1e-12)
    assert s["mfu_mixed"] == pytest.approx(3 * ideal_per_step / 0.006, rel=1e-9)  # = 0.4167
    # mfu keeps its meaning: all model FLOPs (the dict's sum) against the bf16 peak.
    assert s["mfu"] == pytest.approx(3 * 2 * f / 0.006 / BF16, rel=1e-9)           # = 0.5556
    m = tracker.metrics()
    assert m["throughput/mfu_mixed"] == s["mfu_mixed"]
    assert m["throughput/mfu"] == s["mfu"]


def test_one_dtype_equals_mfu(fake):
    tracker = Tracker(1e12, dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=0,
                      num_gpus=2, flops_by_dtype={"bf16": 1e12})
    _steps(fake, tracker, [1, 3])
    s = tracker.summary()
    assert s["mfu_mixed"] == pytest.approx(s["mfu"], rel=1e-12)
    assert s["mfu_mixed"] == pytest.approx(2e12 / 0.004 / (2 * BF16), rel=1e-9)


def test_per_step_dicts_and_the_masking_rules(fake):
    tracker = Tracker(dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=0, window=2)
    _steps(fake, tracker, [1, 1], flops_by_dtype={"fp8": FP8 * 1e-4, "tf32": 494.7e12 * 1e-4})
    s = tracker.summary()
    # each step: 1e-4 s at fp8 peak + 1e-4 s at tf32 peak, in 1 ms
    assert s["mfu_mixed"] == pytest.approx(2 * 2e-4 / 0.002, rel=1e-9)            # = 0.2
    # the dict's sum is the step's model FLOPs when model_flops is not given
    assert s["mfu"] == pytest.approx(2 * (FP8 + 494.7e12) * 1e-4 / 0.002 / BF16, rel=1e-9)
    # model_flops alone: that step's split is unknown, mfu_mixed left out
    fake.advance(MS), fake.set_work_ns(MS)
    tracker.step(model_flops=1e12)
    tracker.flush()
    assert "mfu_mixed" not in tracker.summary()
    assert "throughput/mfu_mixed" not in tracker.metrics()
    # ... until it leaves the window (2 steps)
    _steps_more = [1, 1]
    for period in _steps_more:
        fake.advance(period * MS)
        tracker.step(flops_by_dtype={"bf16": BF16 * 1e-4})
    tracker.flush()
    assert tracker.summary()["mfu_mixed"] == pytest.approx(2e-4 / 0.002, rel=1e-9)


def test_mixed_with_warmup_and_a_window_not_yet_full(fake):
    # warmup=1, window 10, three steps after the warm-up: each step's own split.
    # warm-up step: 9e-4 s at fp8 peak (left out); then 1e-4, 2e-4, 3e-4 s at the bf16
    # peak in 1 ms each: mfu_mixed = (1 + 2 + 3) e-4 / 3e-3 = 0.2
    tracker = Tracker(dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=1, window=10)
    tracker.step()
    for split in ({"fp8": FP8 * 9e-4}, {"bf16": BF16 * 1e-4}, {"bf16": BF16 * 2e-4},
                  {"bf16": BF16 * 3e-4}):
        fake.set_work_ns(MS)
        fake.advance(MS)
        tracker.step(flops_by_dtype=split)
    tracker.flush()
    s = tracker.summary()
    assert s["steps"] == 3
    assert s["ideal_s"] == pytest.approx(6e-4, rel=1e-12)
    assert s["mfu_mixed"] == pytest.approx(0.2, rel=1e-9)


def test_window_model_flops_given_without_ideal_seconds_leave_mfu_mixed_out(fake):
    # per-step splits give the window 2 x 1e-4 s of ideal time; a window total of
    # model FLOPs given at logging time no longer pairs with it: mfu_mixed out, unless
    # the ideal seconds are given too (3e-4 s / 2 ms = 0.15)
    tracker = Tracker(dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=0)
    _steps(fake, tracker, [1, 1], flops_by_dtype={"bf16": BF16 * 1e-4})
    assert tracker.metrics()["throughput/mfu_mixed"] == pytest.approx(0.1, rel=1e-9)
    m = tracker.metrics(model_flops=BF16 * 3e-4)
    assert "throughput/mfu_mixed" not in m
    assert m["throughput/mfu"] == pytest.approx(0.15, rel=1e-9)      # 3e-4 s of 2 ms at bf16
    m = tracker.metrics(model_flops=BF16 * 3e-4, ideal_s=3e-4)
    assert m["throughput/mfu_mixed"] == pytest.approx(0.15, rel=1e-9)


def test_a_step_with_its_own_model_flops_has_no_default_split(fake):
    # the tracker's default split (1e-4 s at the bf16 peak per step) belongs to its
    # default FLOPs; a step given its own model_flops has an unknown split: mfu_mixed
    # is out while that step is in the window (window 2), back once it left
    tracker = Tracker(dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=0, window=2,
                      flops_by_dtype={"bf16": BF16 * 1e-4})
    _steps(fake, tracker, [1, 1])
    assert tracker.summary()["mfu_mixed"] == pytest.approx(0.1, rel=1e-9)   # 2e-4 s / 2 ms
    fake.set_work_ns(MS)
    fake.advance(MS)
    tracker.step(model_flops=BF16 * 5e-4)
    tracker.flush()
    assert "mfu_mixed" not in tracker.summary()
    for _ in range(2):
        fake.advance(MS)
        tracker.step()
    tracker.flush()
    assert tracker.summary()["mfu_mixed"] == pytest.approx(0.1, rel=1e-9)


def test_without_flops_by_dtype_no_key(fake):
    tracker = Tracker(5e11, spec=H100, clock="cuda", stream=0, warmup=0)
    _steps(fake, tracker, [1, 1])
    assert "throughput/mfu_mixed" not in tracker.metrics()
    assert "mfu_mixed" not in tracker.summary()


def test_dtype_without_peak_warns_once_and_leaves_mfu_mixed_out(fake):
    spec = user_gpu_spec({"bf16": 1000.0}, name="bf16-only GPU")
    with pytest.warns(RuntimeWarning, match="no fp8 peak"):
        tracker = Tracker(dtype="bf16", spec=spec, clock="cuda", stream=0, warmup=0,
                          flops_by_dtype={"fp8": 1e12, "bf16": 1e12})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _steps(fake, tracker, [1, 1])
        m = tracker.metrics()
    assert "throughput/mfu_mixed" not in m and "throughput/mfu" in m
    # per step: one warning too, once
    tracker = Tracker(dtype="bf16", spec=spec, clock="cuda", stream=0, warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _steps(fake, tracker, [1, 1, 1], flops_by_dtype={"fp64": 1.0})
    assert len([w for w in caught if "no fp64 peak" in str(w.message)]) == 1
    # a dtype with zero FLOPs costs nothing, whatever its peak
    tracker = Tracker(dtype="bf16", spec=spec, clock="cuda", stream=0, warmup=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _steps(fake, tracker, [1], flops_by_dtype={"fp8": 0, "bf16": 1e12})
    assert tracker.summary()["mfu_mixed"] == pytest.approx(1e12 / 1e15 / 0.001, rel=1e-9)


def test_user_peak_applies_to_every_dtype(fake):
    # peak_tflops is the user's peak for the run (user_gpu_spec: every dtype),
    # so every dtype's FLOPs are charged to it and mfu_mixed == mfu.
    tracker = Tracker(dtype="bf16", spec=H100, peak_tflops=500.0, clock="cuda", stream=0,
                      warmup=0, flops_by_dtype={"bf16": 5e11, "fp8": 5e11})
    _steps(fake, tracker, [2])
    s = tracker.summary()
    assert s["mfu_mixed"] == pytest.approx(1e12 / 5e14 / 0.002, rel=1e-9)  # = 1.0
    assert s["mfu_mixed"] == pytest.approx(s["mfu"], rel=1e-12)


def test_spec_rows_give_every_dtype_its_peak(fake):
    spec = user_gpu_spec({"bf16": 1000.0, "fp8": 2000.0}, name="two-dtype GPU")
    tracker = Tracker(dtype="bf16", spec=spec, clock="cuda", stream=0, warmup=0,
                      flops_by_dtype={"bf16": 1e12, "fp8": 2e12})
    _steps(fake, tracker, [2])
    # 1e12 / 1e15 + 2e12 / 2e15 = 2e-3 s in 2 ms
    assert tracker.summary()["mfu_mixed"] == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("value, exc, text", [
    ({"fp9": 1.0}, ValueError, "flops_by_dtype: unknown dtype 'fp9'"),
    ({"bf16": -1.0}, ValueError, r"flops_by_dtype\['bf16'\]"),
    ({"bf16": float("nan")}, ValueError, r"flops_by_dtype\['bf16'\]"),
    ({"bf16": "1e12"}, TypeError, r"flops_by_dtype\['bf16'\] must be a number"),
    ({"bf16": True}, TypeError, r"flops_by_dtype\['bf16'\]"),
    ({1: 1.0}, TypeError, "flops_by_dtype must be a dict with str keys"),
    ([("bf16", 1.0)], TypeError, "flops_by_dtype must be a dict"),
])
def test_bad_flops_by_dtype_raises_at_construction(value, exc, text):
    with pytest.raises(exc, match=text):
        Tracker(1e12, spec=H100, clock="cpu", flops_by_dtype=value)


def test_bad_per_step_dict_warns_once_and_never_raises(fake):
    tracker = Tracker(5e11, spec=H100, clock="cuda", stream=0, warmup=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _steps(fake, tracker, [1, 1], flops_by_dtype={"fp9": 1.0})
        _steps(fake, tracker, [1], flops_by_dtype=[1, 2])
    assert len([w for w in caught if "flops_by_dtype" in str(w.message)]) == 1
    assert "mfu_mixed" not in tracker.summary()


def test_dtype_names_and_case():
    # every canonical name is a key; case is ignored; two spellings add up
    assert set(_C.dtype_names()) >= {"fp8", "bf16", "fp16", "tf32", "fp32", "fp64"}
    t = Tracker(spec=H100, clock="cpu", flops_by_dtype={"BF16": 1e12, "bf16": 1e12})
    assert t.summary()["steps"] == 0  # accepted


def test_c_step_tracker_dtype_peaks_argument():
    with pytest.raises(ValueError, match="dtype_peaks: must have 9 entries"):
        _C.StepTracker(dtype_peaks=(1.0,))
    with pytest.raises(ValueError, match="dtype_peaks"):
        _C.StepTracker(dtype_peaks=(None,) * 8 + (-1.0,))
    with pytest.raises(TypeError, match="dtype_peaks"):
        _C.StepTracker(dtype_peaks=3)


# ---- track(flops_by_dtype=) -------------------------------------------------------

def test_track_mfu_mixed_against_hand_arithmetic():
    from mfu_tracker import track

    f = 2 * 4096 * 8192 * 8192                       # one [4096, 8192] x [8192, 8192] GEMM
    with track(2 * f, dtype="bf16", spec=H100, clock="cpu",
               flops_by_dtype={"fp8": f, "bf16": f}) as r:
        pass
    t = r.elapsed_sec
    assert r.mfu_mixed == pytest.approx((f / FP8 + f / BF16) / t, rel=1e-9)
    assert r.mfu == pytest.approx(2 * f / t / BF16, rel=1e-9)
    # one dtype: mfu_mixed == mfu; without the dict: None
    with track(f, dtype="bf16", spec=H100, clock="cpu", num_gpus=4,
               flops_by_dtype={"bf16": f}) as r:
        pass
    assert r.mfu_mixed == pytest.approx(r.mfu, rel=1e-12)
    with track(f, dtype="bf16", spec=H100, clock="cpu") as r:
        pass
    assert r.mfu_mixed is None


def test_track_bad_dict_raises_and_no_peak_warns_once():
    from mfu_tracker import track
    from mfu_tracker.timing import _clock

    with pytest.raises(ValueError, match="flops_by_dtype: unknown dtype 'fp9'"):
        track(1.0, spec=H100, clock="cpu", flops_by_dtype={"fp9": 1.0})
    with pytest.raises(TypeError, match=r"flops_by_dtype\['fp8'\] must be a number"):
        track(1.0, spec=H100, clock="cpu", flops_by_dtype={"fp8": None})
    _clock.reset_caches()
    state_spec = user_gpu_spec({"bf16": 1000.0}, name="bf16-only GPU")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with track(1e12, dtype="bf16", spec=state_spec, clock="cpu",
                       flops_by_dtype={"fp8": 1e12}) as r:
                pass
            assert r.mfu_mixed is None and r.mfu is not None
    assert len([w for w in caught if "no fp8 peak" in str(w.message)]) == 1


# ---- the integrations fill flops_by_dtype from the counter ------------------------
# These need FlopCounter.flops_by_dtype / executed_flops_by_dtype.

def test_counter_split_on_meta_against_hand_arithmetic(fake):
    """A worked example: one fp8 ``_scaled_mm`` linear and one bf16 linear,
    counted on meta, with the H100 SXM row: mfu_mixed = (F_fp8 / 1978.9e12 +
    F_bf16 / 989.4e12) / T."""
    torch = pytest.importorskip("torch")
    from mfu_tracker.counter import FlopCounter

    m, k, n = 64, 128, 256
    a = torch.empty(m, k, device="meta", dtype=torch.float8_e4m3fn)
    b = torch.empty(n, k, device="meta", dtype=torch.float8_e4m3fn).t()
    one = torch.ones((), device="meta")
    x = torch.empty(m, k, device="meta", dtype=torch.bfloat16)
    w = torch.empty(n, k, device="meta", dtype=torch.bfloat16)
    with FlopCounter(modules=False) as counter:
        torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        torch.nn.functional.linear(x, w)
    f = 2 * m * k * n                                        # 2 * 64 * 128 * 256 = 4,194,304
    assert counter.flops_by_dtype == {"fp8": f, "bf16": f}   # no grad: forward only
    tracker = Tracker(dtype="bf16", spec=H100, clock="cuda", stream=0, warmup=0,
                      flops_by_dtype=counter.flops_by_dtype)
    _steps(fake, tracker, [1, 1])                            # T = 2 ms
    assert tracker.summary()["mfu_mixed"] == pytest.approx(
        2 * (f / FP8 + f / BF16) / 0.002, rel=1e-9)          # = 6.36e-9


def test_optimizer_wrapper_fills_flops_by_dtype():
    """One dtype (a float32 model on CPU; H100 fp32 peak 66.9 TFLOP/s):
    the wrapper's mfu_mixed equals its mfu."""
    torch = pytest.importorskip("torch")
    from mfu_tracker.optim import MFUOptimizerWrapper

    torch.manual_seed(0)
    model = torch.nn.Linear(16, 8, bias=False)
    opt = MFUOptimizerWrapper(torch.optim.SGD(model.parameters(), lr=0.1), model, spec=H100,
                              dtype="fp32", clock="cpu", warmup=0)
    for _ in range(4):
        with opt.track_step():
            model(torch.ones(4, 16)).sum().backward()
        opt.step()
        opt.zero_grad()
    s = opt.summary()
    assert s["mfu_mixed"] == pytest.approx(s["mfu"], rel=1e-9)


def test_no_peak_at_all_gives_no_second_warning(fake):
    # A device with no peak (unknown GPU, CPU): the lookup's warning is the one.
    spec = user_gpu_spec({"bf16": 1000.0}, name="x")
    empty = type(spec)(name="no peaks", peak_flops_by_dtype={}, source="unknown")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tracker = Tracker(dtype="bf16", spec=empty, clock="cuda", stream=0, warmup=0,
                          flops_by_dtype={"bf16": 1e12})
        _steps(fake, tracker, [1], flops_by_dtype={"fp8": 1e12})
    assert "mfu_mixed" not in tracker.summary()
