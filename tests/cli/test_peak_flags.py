"""``--gpu`` / ``--peak-tflops`` / ``--dtype``: the peak, worded for a command line."""
from __future__ import annotations

import pytest

from mfu_tracker.cli._peak_flags import FlagError, resolve_peak_flags


def test_one_row_gives_its_dense_peak():
    # NVIDIA H100 SXM datasheet: 989.4 TFLOP/s dense bf16 (1,979 with sparsity)
    choice = resolve_peak_flags("H100 SXM", None, "bf16")
    assert choice.flops_per_sec == 989.4e12
    assert choice.spec.name == "H100 SXM" and choice.notes == []
    assert choice.text.startswith("989.4 TFLOP/s dense bf16, H100 SXM (datasheet: ")


def test_rows_that_share_the_peak_give_it_with_a_note():
    # every A100 row (SXM4 / PCIe, 40 / 80 GB) has 312 TFLOP/s dense bf16
    choice = resolve_peak_flags("A100", None, "bf16")
    assert choice.flops_per_sec == 312e12
    assert "each row 'A100' fits" in choice.text
    assert len(choice.notes) == 1 and "312 TFLOP/s dense bf16" in choice.notes[0]


def test_rows_with_different_peaks_are_an_error_listing_them():
    # H100 SXM 989.4 vs H100 PCIe 756 TFLOP/s dense bf16
    with pytest.raises(FlagError, match=r"--gpu 'H100' fits 2 rows .*different dense bf16 "
                       r"peaks.*--gpu 'H100 SXM'"):
        resolve_peak_flags("H100", None, "bf16")


def test_the_given_peak_wins_and_is_checked():
    choice = resolve_peak_flags("H100", 500.0, "bf16")
    assert choice.flops_per_sec == 500e12
    assert choice.text == "500 TFLOP/s bf16 (given by --peak-tflops)"
    assert resolve_peak_flags(None, 1.5, "fp32").flops_per_sec == 1.5e12
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(FlagError, match="--peak-tflops must be a finite number > 0"):
            resolve_peak_flags(None, bad, "bf16")


def test_errors_name_the_flag():
    assert issubclass(FlagError, ValueError)
    with pytest.raises(FlagError, match=r"give --gpu NAME .* or --peak-tflops"):
        resolve_peak_flags(None, None, "bf16")
    with pytest.raises(FlagError, match=r"--dtype fp8: A100 SXM4 80GB has no dense fp8 "
                       r"peak in the table \(it has: .*bf16.*\); choose another --dtype"):
        resolve_peak_flags("A100 SXM4 80GB", None, "fp8")
    with pytest.raises(FlagError, match=r"--gpu 'H100 SMX': 'smx' is in no row's "
                       r"name; did you mean 'H100 SXM'"):
        resolve_peak_flags("H100 SMX", None, "bf16")
    with pytest.raises(FlagError, match=r"--gpu 'Zorblatt': not in the peak table"):
        resolve_peak_flags("Zorblatt", None, "bf16")
