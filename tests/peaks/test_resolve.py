"""mfu_tracker/peaks/_resolve.py: the one rule that picks a run's peak
(peak_tflops > spec > the table, the environment override by the lookup) and
the per-dtype denominators of mfu_mixed."""
from __future__ import annotations

import pytest

from mfu_tracker._dtypes import DTYPE_NAMES
from mfu_tracker.peaks import _table, lookup_gpu_spec, user_gpu_spec
from mfu_tracker.peaks._resolve import Peak, clear_cache, dtype_peaks, resolve_peak


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(_table, "_warned", set())
    monkeypatch.delenv(_table.PEAK_ENV_VAR, raising=False)
    clear_cache()
    yield
    clear_cache()


def test_peak_tflops_wins_over_spec_and_keeps_its_bandwidth():
    h100 = lookup_gpu_spec("H100 SXM")
    peak = resolve_peak("bf16", spec=h100, peak_tflops=500)
    assert peak.flops_per_sec == 500e12  # the user's figure, TFLOP/s -> FLOP/s
    assert peak.bytes_per_sec == pytest.approx(3.35e12)  # the H100's, for MBU
    assert peak.source == "user"


def test_spec_gives_its_dtype_row():
    peak = resolve_peak("fp8", spec=lookup_gpu_spec("H100 SXM"))
    assert peak == Peak("fp8", pytest.approx(1978.9e12), pytest.approx(3.35e12), peak.spec)
    assert peak.source == "datasheet"


def test_known_device_without_the_dtype_is_a_configuration_error():
    with pytest.raises(ValueError, match="fp8"):
        resolve_peak("fp8", spec=lookup_gpu_spec("NVIDIA A100-SXM4-80GB"))


def test_cpu_without_a_peak_is_unknown_never_guessed():
    with pytest.warns(UserWarning):
        peak = resolve_peak("fp32", device="cpu")
    assert peak.flops_per_sec is None and peak.source == "unknown"


def test_environment_override_applies_and_is_part_of_the_cache_key(monkeypatch):
    monkeypatch.setenv(_table.PEAK_ENV_VAR, "10")
    assert resolve_peak("fp32", device="cpu").flops_per_sec == 10e12
    monkeypatch.setenv(_table.PEAK_ENV_VAR, "20")
    assert resolve_peak("fp32", device="cpu").flops_per_sec == 20e12  # not the cached 10


def test_bad_peak_tflops_names_the_argument():
    with pytest.raises(ValueError, match="peak_tflops"):
        resolve_peak("bf16", device="cpu", peak_tflops=0)


def test_dtype_peaks_puts_the_peak_in_use_in_its_dtype_slot():
    spec = user_gpu_spec({"bf16": 100, "fp32": 25})
    by_name = dict(zip(DTYPE_NAMES, dtype_peaks(resolve_peak("fp32", spec=spec))))
    assert len(by_name) == len(DTYPE_NAMES)
    assert by_name["fp32"] == 25e12 and by_name["bf16"] == 100e12  # the spec's row
    assert by_name["fp16"] is None  # the user gave no fp16 peak
    # peak_tflops is one figure for every dtype (user_gpu_spec of one number)
    assert set(dtype_peaks(resolve_peak("bf16", spec=spec, peak_tflops=80))) == {80e12}
    assert dtype_peaks(Peak("fp32", None, None, None)) == (None,) * len(DTYPE_NAMES)
