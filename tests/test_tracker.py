"""track(), compute_mfu() and compute_mbu(): arithmetic against hand formulas,
the clock against real sleeps, and every bad input."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import warnings

import pytest

import mfu_tracker
from mfu_tracker import compute_mbu, compute_mfu, lookup_gpu_spec, track, user_gpu_spec

from _bracket import Bracket


def _busy_sleep(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


def test_track_figures_follow_from_elapsed_time():
    spec = user_gpu_spec(100.0, name="test device", memory_bandwidth_tbs=2.0)
    with Bracket() as block:
        with track(3e12, 4e9, hfu_flop_count=4e12, num_tokens=8192, dtype="bf16",
                   spec=spec) as r:
            assert r.mfu is None and r.elapsed_sec is None and not r.ready
            time.sleep(0.05)
    t = r.elapsed_sec
    # Real 50 ms sleep, within the test's bracket of the block: a clock in the wrong
    # unit (ms, us) or a stuck clock fails this
    assert 0.05 <= t <= block.s
    assert r.ready
    assert r.mfu == pytest.approx(3e12 / t / 100e12, rel=1e-12)  # model FLOPs / s / peak
    assert r.hfu == pytest.approx(4e12 / t / 100e12, rel=1e-12)
    assert r.mbu == pytest.approx(4e9 / t / 2e12, rel=1e-12)  # bytes / s / (2 TB/s)
    assert r.achieved_tflops == pytest.approx(3e12 / t / 1e12, rel=1e-12)
    assert r.achieved_tbs == pytest.approx(4e9 / t / 1e12, rel=1e-12)
    assert r.tokens_per_sec == pytest.approx(8192 / t, rel=1e-12)
    assert r.peak_flops_per_sec == 100e12
    assert r.dtype == "bf16"
    assert r.gpu_spec is spec


def test_track_clock_measures_cpu_work():
    with track(1.0, peak_tflops=1.0, device="cpu") as r:  # no param_bytes: no MBU
        _busy_sleep(0.02)
    assert 0.02 <= r.elapsed_sec < 2.0


def test_num_gpus_multiplies_the_peak():
    spec = user_gpu_spec(10.0, name="x", memory_bandwidth_tbs=1.0)
    with track(1e12, 1e9, spec=spec, num_gpus=4) as r:
        time.sleep(0.01)
    assert r.mfu == pytest.approx(1e12 / r.elapsed_sec / (4 * 10e12), rel=1e-12)
    assert r.mbu == pytest.approx(1e9 / r.elapsed_sec / (4 * 1e12), rel=1e-12)
    assert r.peak_flops_per_sec == 40e12
    assert r.num_gpus == 4


def test_optional_figures_are_none_when_not_given():
    with track(1e9, peak_tflops=1.0, device="cpu") as r:
        pass
    assert r.hfu is None and r.tokens_per_sec is None and r.mbu is None
    assert r.mfu is not None


def test_exception_in_block_propagates_unchanged():
    error = KeyError("from the training step")
    with pytest.raises(KeyError) as caught:
        with track(1e9, 1e6, peak_tflops=1.0, device="cpu") as r:
            raise error
    assert caught.value is error
    assert r.elapsed_sec is not None  # the block was still timed


def test_block_cannot_be_reentered():
    block = track(1e9, 1e6, peak_tflops=1.0, device="cpu")
    with block:
        pass
    with pytest.raises(RuntimeError, match="entered once"):
        with block:
            pass


MFU_ABOVE_ONE_SCRIPT = r"""
import json, warnings
from mfu_tracker import track
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mfus = []
    for _ in range(3):
        with track(1e18, peak_tflops=1.0, device="cpu") as r:
            pass
        mfus.append(r.mfu)
print(json.dumps({"mfus": mfus, "warnings": [str(w.message) for w in caught
                                            if issubclass(w.category, RuntimeWarning)]}))
"""


def test_mfu_above_one_is_flagged_not_clamped():
    with track(1e18, peak_tflops=1.0, device="cpu") as r:
        pass
    assert r.mfu > 1.0  # 1e18 FLOPs in well under 1e6 s against 1 TFLOP/s
    # _C flags it once per process (a flag Python cannot reset, possibly used
    # up by an earlier test): the warning is checked in a fresh interpreter.
    out = subprocess.run([sys.executable, "-c", MFU_ABOVE_ONE_SCRIPT], capture_output=True,
                         text=True, check=True, timeout=120)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(m > 1.0 for m in result["mfus"]), result  # reported unclamped, every block
    assert len(result["warnings"]) == 1, result  # flagged once, not per block
    assert "> 1" in result["warnings"][0] and "unclamped" in result["warnings"][0], result


def test_cpu_without_peak_gives_none_and_one_warning(monkeypatch):
    monkeypatch.delenv("MFU_TRACKER_PEAK_TFLOPS", raising=False)
    monkeypatch.setattr(mfu_tracker.peaks._table, "_warned", set())  # not used up by an earlier test
    mfu_tracker.timing._clock.reset_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with track(1e9, 1e6, dtype="fp32", device="cpu") as r:
                pass
            assert r.mfu is None and r.elapsed_sec is not None and r.achieved_tflops is not None
    # get_gpu_spec warns once per device; the cached peak is not re-resolved.
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1, messages
    assert "MFU_TRACKER_PEAK_TFLOPS" in messages[0], messages


def test_env_peak_override_is_used(monkeypatch):
    monkeypatch.setenv("MFU_TRACKER_PEAK_TFLOPS", "2.5")
    # The override is read when track()'s arguments are first resolved.
    mfu_tracker.timing._clock.reset_caches()
    with track(1e12, dtype="fp32", device="cpu") as r:
        time.sleep(0.01)
    assert r.peak_flops_per_sec == 2.5e12
    assert r.mfu == pytest.approx(1e12 / r.elapsed_sec / 2.5e12, rel=1e-12)
    assert r.gpu_spec.source == "user"


# ---- compute_mfu / compute_mbu against the seeds' worked examples -------------

def _h100_sxm():
    spec = lookup_gpu_spec("NVIDIA H100 80GB HBM3", compute_capability=(9, 0), num_sms=132,
                           total_memory_bytes=85520809984)
    assert spec is not None
    return spec


def test_compute_mfu_explainer_7b_on_8_h100():
    # flops-mfu-explainer: 6 * 7e9 * (8 * 4096 tokens) per 1.2 s step on 8 H100 SXM.
    # tokens/s = 8 * 4096 / 1.2 = 27,306.7; achieved = 6 * 7e9 * 27,306.7 = 1.1469e15 FLOP/s
    # peak = 8 * 989.4e12 = 7.9152e15 -> MFU = 0.1449 ("about 14.5%")
    flops_per_step = 6 * 7e9 * 8 * 4096
    mfu = compute_mfu(flops_per_step, 1.2, dtype="bf16", num_gpus=8, spec=_h100_sxm())
    assert mfu == pytest.approx(flops_per_step / 1.2 / (8 * 989.4e12), rel=1e-12)
    assert round(mfu * 100, 1) == 14.5


def test_compute_mfu_lambda_llama_8b_on_b200():
    # Lambda appendix: 57.91 GFLOP/token x 21,111 tokens/s = 1,222.6 TFLOP/s; / 2,250 = 54.34%.
    b200 = lookup_gpu_spec("NVIDIA B200")
    assert b200 is not None
    mfu = compute_mfu(57.913e9 * 21111, 1.0, dtype="bf16", spec=b200)
    assert round(mfu * 100, 2) == 54.34


def test_compute_mbu_hand_arithmetic():
    spec = user_gpu_spec(1.0, name="x", memory_bandwidth_tbs=3.35)
    # 16 GB of weights read in 10 ms = 1.6 TB/s; / 3.35 TB/s = 0.4776
    assert compute_mbu(16e9, 0.01, spec=spec) == pytest.approx(1.6e12 / 3.35e12, rel=1e-12)
    assert compute_mbu(16e9, 0.01, spec=spec, num_gpus=2) == pytest.approx(0.8e12 / 3.35e12, rel=1e-12)


def test_peak_tflops_argument_overrides_table():
    spec = _h100_sxm()
    mfu = compute_mfu(1e15, 1.0, dtype="bf16", spec=spec, peak_tflops=1000.0)
    assert mfu == pytest.approx(1.0, rel=1e-12)


def test_dtype_the_device_lacks_is_a_clear_error():
    a100 = lookup_gpu_spec("NVIDIA A100-SXM4-80GB")
    assert a100 is not None
    with pytest.raises(ValueError, match="fp8"):
        compute_mfu(1e12, 1.0, dtype="fp8", spec=a100)


def test_torch_dtype_accepted():
    import torch

    spec = _h100_sxm()
    assert compute_mfu(989.4e12, 1.0, dtype=torch.bfloat16, spec=spec) == pytest.approx(1.0)


# ---- bad input ---------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        (dict(flop_count=-1.0), ValueError, "flop_count"),
        (dict(flop_count=math.nan), ValueError, "flop_count"),
        (dict(flop_count=math.inf), ValueError, "flop_count"),
        (dict(flop_count="1e12"), TypeError, "flop_count"),
        (dict(flop_count=True), TypeError, "flop_count"),
        (dict(param_bytes=-5), ValueError, "param_bytes"),
        (dict(param_bytes=math.nan), ValueError, "param_bytes"),
        (dict(hfu_flop_count=-1), ValueError, "hfu_flop_count"),
        (dict(num_tokens=-1), ValueError, "num_tokens"),
        (dict(num_tokens=math.inf), ValueError, "num_tokens"),
        (dict(num_gpus=0), ValueError, "num_gpus"),
        (dict(num_gpus=-2), ValueError, "num_gpus"),
        (dict(num_gpus=1.5), TypeError, "num_gpus"),
        (dict(dtype="bf17"), ValueError, "dtype"),
        (dict(dtype=3), TypeError, "dtype"),
        (dict(peak_tflops=0.0), ValueError, "peak_tflops"),
        (dict(peak_tflops=-3.0), ValueError, "peak_tflops"),
        (dict(peak_tflops=math.nan), ValueError, "peak_tflops"),
        (dict(peak_tflops="fast"), TypeError, "peak_tflops"),
        # A non-GPUSpec spec beside peak_tflops once escaped as AttributeError.
        (dict(spec="H100"), TypeError, "spec"),
    ],
)
def test_track_rejects_bad_input_naming_the_argument(kwargs, exc, name):
    args = dict(flop_count=1e12, param_bytes=1e9, dtype="fp32", device="cpu", peak_tflops=1.0)
    args.update(kwargs)
    flop_count = args.pop("flop_count")
    param_bytes = args.pop("param_bytes")
    with pytest.raises(exc, match=name):
        track(flop_count, param_bytes, **args)


def test_bad_spec_with_peak_tflops_is_a_type_error():
    # The peak_tflops branch read spec.memory_bandwidth_bytes_per_sec before
    # checking the type: AttributeError instead of a TypeError naming spec.
    with pytest.raises(TypeError, match="spec must be a GPUSpec"):
        compute_mfu(1e12, 1.0, spec="H100", peak_tflops=1.0)
    with pytest.raises(TypeError, match="spec must be a GPUSpec"):
        mfu_tracker.Tracker(1e12, spec={"name": "H100"}, peak_tflops=1.0, clock="cpu")


@pytest.mark.parametrize("elapsed", [0.0, -1.0, math.nan, math.inf])
def test_compute_mfu_rejects_bad_elapsed(elapsed):
    with pytest.raises(ValueError, match="elapsed_sec"):
        compute_mfu(1e12, elapsed, peak_tflops=1.0, device="cpu")
    with pytest.raises(ValueError, match="elapsed_sec"):
        compute_mbu(1e9, elapsed, spec=user_gpu_spec(1.0, name="x", memory_bandwidth_tbs=1.0))


def test_many_blocks_do_not_grow_memory():
    import tracemalloc

    spec = user_gpu_spec(1.0, name="x", memory_bandwidth_tbs=1.0)
    for _ in range(1000):  # warm caches
        with track(1e9, 1e6, spec=spec, num_tokens=10):
            pass
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(20000):
        with track(1e9, 1e6, spec=spec, num_tokens=10) as r:
            pass
        r.mfu
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024  # a leak of one object per block would be > 1 MB


# ---- clock and stream arguments (GPU paths: tests/timing/test_track.py) ----------

def test_track_clock_defaults_to_cpu_without_a_gpu():
    with Bracket() as block:
        with track(1e9, peak_tflops=1.0, device="cpu") as r:
            _busy_sleep(0.01)
    assert r.clock == "cpu" and 0.01 <= r.elapsed_sec <= block.s
    with track(1e9, peak_tflops=1.0, device="cpu", clock="cpu", stream=None) as r:
        pass
    assert r.clock == "cpu" and r.ready


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        (dict(clock="gpu"), ValueError, "clock"),
        (dict(clock="CUDA"), ValueError, "clock"),
        (dict(clock=None), TypeError, "clock"),
        (dict(clock=1), TypeError, "clock"),
        (dict(stream="0"), TypeError, "stream"),
        (dict(stream=-5), ValueError, "stream"),
        (dict(stream=False), TypeError, "stream"),
    ],
)
def test_track_rejects_bad_clock_and_stream(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        track(1e9, peak_tflops=1.0, device="cpu", **kwargs)


def test_cpu_block_takes_no_driver_call():
    from mfu_tracker.timing import _clock

    _clock.reset_caches()
    with track(1e9, peak_tflops=1.0, device="cpu", clock="cpu"):
        pass
    assert _clock.MARK_TIMERS == {}  # no GPU timer was created


def test_user_peak_on_cpu_gives_no_unavailable_warning():
    import mfu_tracker.peaks._table

    mfu_tracker.timing._clock.reset_caches()
    mfu_tracker.peaks._table._warned.clear()  # so a warning would show even if given before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with track(1e9, 1e6, dtype="fp32", device="cpu", peak_tflops=0.5) as r:
            pass
    assert r.mfu is not None
    assert not [w for w in caught if "unavailable" in str(w.message)]


# ---- window totals given at logging time (the integrations' one call) -------

def _stepped(steps: int = 3, **kwargs):
    from mfu_tracker import Tracker

    tracker = Tracker(None, dtype="bf16", spec=user_gpu_spec(100.0), clock="cpu", warmup=0,
                      **kwargs)
    tracker.step()
    for _ in range(steps):
        _busy_sleep(0.002)
        tracker.step()
    return tracker


def test_metrics_with_window_totals_forms_every_ratio_from_them():
    tracker = _stepped()
    window_s = tracker.summary()["window_s"]
    assert "throughput/mfu" not in tracker.metrics()     # no FLOPs per step: no MFU
    m = tracker.metrics(model_flops=6e11, executed_flops=9e11, num_tokens=3000)
    peak = 100e12
    assert m["throughput/mfu"] == pytest.approx(6e11 / window_s / peak, rel=1e-12)
    assert m["throughput/hfu"] == pytest.approx(9e11 / window_s / peak, rel=1e-12)
    assert m["throughput/tokens_per_sec"] == pytest.approx(3000 / window_s, rel=1e-12)
    assert m["throughput/achieved_tflops"] == pytest.approx(6e11 / window_s * 1e-12, rel=1e-12)
    # mfu_mixed needs the ideal seconds with the FLOPs: 3e-3 s of the window's devices' time
    assert "throughput/mfu_mixed" not in m
    m = tracker.metrics(model_flops=6e11, ideal_s=3e-3)
    assert m["throughput/mfu_mixed"] == pytest.approx(3e-3 / window_s, rel=1e-12)
    # the same totals through aggregate() give the same figures (one path)
    agg = tracker.aggregate(model_flops=6e11, ideal_s=3e-3)
    assert agg.mfu == pytest.approx(m["throughput/mfu"], rel=1e-12)
    assert agg.mfu_mixed == pytest.approx(m["throughput/mfu_mixed"], rel=1e-12)


def test_a_bad_window_total_warns_and_leaves_its_figures_out():
    tracker = _stepped()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = tracker.metrics(model_flops=-1.0, num_tokens=3000)
    assert "throughput/mfu" not in m and "throughput/tokens_per_sec" in m
    assert len(caught) == 1 and "model_flops" in str(caught[0].message)


def test_mfu_language_from_a_language_flops_total():
    """A VLM window: mfu_language = the language model's FLOPs over the
    same time and peak as mfu (the tower's FLOPs left out)."""
    t = mfu_tracker.Tracker(peak_tflops=1.0, clock="cpu", window=4, warmup=0)
    for _ in range(3):
        t.step(num_tokens=10)
    m = t.metrics("t", model_flops=1e9, language_flops=4e8)
    # 4e8 of the window's 1e9 model FLOPs: 0.4 x mfu, exactly
    assert m["t/mfu_language"] == pytest.approx(0.4 * m["t/mfu"], rel=1e-12)
    assert "t/mfu_language" not in t.metrics("t", model_flops=1e9)
    with pytest.warns(RuntimeWarning, match="language_flops"):
        bad = t.metrics("t", model_flops=1e9, language_flops=-1.0)
    assert "t/mfu_language" not in bad and "t/mfu" in bad
