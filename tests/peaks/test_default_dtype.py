"""The one default dtype rule (mfu_tracker/peaks/_resolve.py ``default_dtype``):
``dtype=None`` is bf16, or fp16 on a device without a bf16 peak
(docs/conventions.md, "The default dtype"), for every entry point that takes a
dtype. The expected peaks are the datasheet rows the table cites."""
from __future__ import annotations

import inspect
import warnings

import pytest

from mfu_tracker import Tracker, compute_mfu, generation_utilization, lookup_gpu_spec, track
from mfu_tracker.integrations.engines import engine_utilization
from mfu_tracker.integrations.optim import MFUOptimizerWrapper
from mfu_tracker.integrations.verl import FlopsCounter
from mfu_tracker.peaks._resolve import default_dtype, resolve_peak
from mfu_tracker.peaks._table import gpu_spec_table, user_gpu_spec

H100 = lookup_gpu_spec("NVIDIA H100 80GB HBM3")     # bf16 = fp16 = 989.4 TFLOP/s dense
V100 = lookup_gpu_spec("Tesla V100-SXM2-16GB")      # fp16 125 TFLOP/s, no bf16


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_the_default_is_bf16_or_fp16_without_bf16():
    assert default_dtype(H100) == "bf16"
    assert default_dtype(V100) == "fp16"
    assert default_dtype(None) == "bf16"
    assert default_dtype(user_gpu_spec(100.0)) == "bf16"


def test_every_table_device_with_both_peaks_has_them_equal():
    """Why the rule keeps every figure of the old fp16 default of track():
    where bf16 exists its dense peak is the fp16 one (the datasheets)."""
    both = [s for s in gpu_spec_table() if s.has_peak("bf16") and s.has_peak("fp16")]
    assert len(both) > 20
    assert [s.name for s in both if s.peak_flops_per_sec("bf16") != s.peak_flops_per_sec("fp16")] == []


def test_resolve_peak_applies_it():
    assert resolve_peak(spec=H100).dtype == "bf16"
    v100 = resolve_peak(spec=V100)
    assert (v100.dtype, v100.flops_per_sec) == ("fp16", 125e12)   # V100 SXM2: 125 TFLOP/s
    assert resolve_peak(peak_tflops=100.0, spec=V100).dtype == "fp16"
    assert resolve_peak("tf32", spec=H100).flops_per_sec == 494.7e12   # a dtype given is kept


def test_track_and_tracker_follow_the_same_rule():
    for spec, dtype in ((H100, "bf16"), (V100, "fp16")):
        tracker = Tracker(1e12, spec=spec, clock="cpu")
        assert tracker.peak.dtype == dtype
        tracker.close()
        with track(1e12, spec=spec, clock="cpu") as r:
            pass
        assert r.dtype == dtype


def test_track_keeps_its_figures_on_a_device_with_both():
    # 1e12 FLOPs in 1 s on an H100: 1e12 / 989.4e12 = 0.0010107...
    assert compute_mfu(1e12, 1.0, spec=H100) == pytest.approx(1e12 / 989.4e12)
    assert compute_mfu(1e12, 1.0, spec=H100) == compute_mfu(1e12, 1.0, spec=H100, dtype="fp16")
    # on a V100 the default is fp16, as track()'s always was: 1e12 / 125e12
    assert compute_mfu(1e12, 1.0, spec=V100) == pytest.approx(0.008)


def test_a_tracker_on_a_device_without_bf16_is_measured_against_fp16():
    """Changed (docs/compatibility.md): the old bf16 default raised here."""
    tracker = Tracker(1e12, spec=V100, clock="cpu")
    assert tracker.peak.flops_per_sec == 125e12
    tracker.close()
    with pytest.raises(ValueError, match="no dense bf16 peak"):
        Tracker(1e12, spec=V100, dtype="bf16", clock="cpu")   # asked for: still an error


@pytest.mark.parametrize("entry", [track, compute_mfu, Tracker, MFUOptimizerWrapper,
                                   generation_utilization, engine_utilization, FlopsCounter])
def test_every_entry_point_defaults_to_the_rule(entry):
    assert inspect.signature(entry).parameters["dtype"].default is None
