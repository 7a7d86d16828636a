"""mfu_tracker/peaks/_table.py: GPUSpec, the datasheet lookup by name, the
user's peak, the environment override and the CPU's "no peak".

Expected numbers are the vendors' published dense peaks (NVIDIA H100 and A100
datasheets, AMD MI300X data sheet), the table's sources; units as documented
in docs/ (FLOP/s per device, bytes/s)."""
from __future__ import annotations

import warnings

import pytest
import torch

from mfu_tracker.peaks import _table
from mfu_tracker.peaks._table import (PEAK_ENV_VAR, GPUSpec, get_gpu_spec, lookup_gpu_spec,
                                      user_gpu_spec)


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(_table, "_warned", set())
    monkeypatch.delenv(PEAK_ENV_VAR, raising=False)


def test_h100_sxm_datasheet_peaks():
    spec = lookup_gpu_spec("H100 SXM")
    assert spec.source == "datasheet"
    assert spec.peak_tflops("bf16") == pytest.approx(989.4)     # dense BF16, H100 SXM datasheet
    assert spec.peak_tflops(torch.float16) == pytest.approx(989.4)
    assert spec.peak_tflops("fp8") == pytest.approx(1978.9)     # 2 x the BF16 figure
    assert spec.peak_memory_bandwidth_tbs == pytest.approx(3.35)  # 3.35 TB/s HBM3
    assert spec.num_sms == 132


def test_device_name_as_torch_prints_it_finds_its_row():
    spec = lookup_gpu_spec("NVIDIA A100-SXM4-80GB")
    assert spec.name == "A100 SXM4 80GB"
    assert spec.peak_flops_per_sec("bf16") == pytest.approx(312e12)
    assert spec.memory_bandwidth_bytes_per_sec == pytest.approx(2.039e12)
    # the A100 has no FP8 tensor cores: the error lists what it has
    with pytest.raises(ValueError, match=r"dtype: .*no dense fp8 peak; it has: .*bf16"):
        spec.peak_flops_per_sec("fp8")
    assert not spec.has_peak("fp8") and spec.has_peak("int8")


def test_ambiguous_name_keeps_the_shared_peaks_and_drops_the_bandwidth():
    with pytest.warns(UserWarning):
        spec = lookup_gpu_spec("A100")  # four rows: 40/80 GB, SXM/PCIe
    assert len(spec.candidates) == 4
    assert spec.peak_tflops("bf16") == pytest.approx(312.0)  # the same on all four
    assert spec.memory_bandwidth_bytes_per_sec == 0.0  # 1.555 vs 2.039 TB/s: no MBU
    assert "A100" in spec.match_note


def test_unknown_name_is_none_after_one_warning():
    with pytest.warns(UserWarning) as caught:
        assert lookup_gpu_spec("Imaginary GPU 9000") is None
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lookup_gpu_spec("Imaginary GPU 9000") is None  # once per name


def test_cpu_has_no_peak_and_says_how_to_give_one():
    with pytest.warns(UserWarning, match="MFU is unavailable.*peak_tflops="):
        spec = get_gpu_spec("cpu")
    assert spec.source == "unknown" and spec.peak_flops_by_dtype == {}
    with pytest.raises(ValueError, match="no peak is known"):
        spec.peak_flops_per_sec("fp32")


def test_environment_override_replaces_the_peak(monkeypatch):
    monkeypatch.setenv(PEAK_ENV_VAR, "123.5")
    spec = get_gpu_spec("cpu")
    assert spec.source == "user"
    assert spec.peak_flops_per_sec("bf16") == pytest.approx(123.5e12)
    assert PEAK_ENV_VAR in spec.citation
    monkeypatch.setenv(PEAK_ENV_VAR, "fast")
    with pytest.raises(ValueError, match=PEAK_ENV_VAR):
        get_gpu_spec("cpu")


def test_user_gpu_spec_units_and_bad_values():
    spec = user_gpu_spec({"bf16": 100, torch.float32: 25}, memory_bandwidth_tbs=2.0)
    assert isinstance(spec, GPUSpec) and spec.source == "user"
    assert spec.peak_flops_by_dtype == {"bf16": 100e12, "fp32": 25e12}
    assert spec.memory_bandwidth_bytes_per_sec == 2e12
    assert user_gpu_spec(7).peak_flops_per_sec("int8") == 7e12  # one number: every dtype
    with pytest.raises(ValueError, match="peak_tflops"):
        user_gpu_spec(-1)
    with pytest.raises(ValueError, match="memory_bandwidth_tbs"):
        user_gpu_spec(1, memory_bandwidth_tbs=float("nan"))
    with pytest.raises(TypeError, match="name"):
        user_gpu_spec(1, name=3)
