"""Lightning's precision -> the peak's dtype (integrations/_lightning_precision.py)."""
from __future__ import annotations

import pytest
import torch

from mfu_tracker.integrations._lightning_precision import PRECISION_DTYPES, dtype_from_precision


@pytest.mark.parametrize("precision, dtype", [
    ("bf16-mixed", "bf16"), ("16-mixed", "fp16"), ("32-true", "fp32"), (32, "fp32"),
    (16, "fp16"), ("64", "fp64"), ("transformer-engine", "fp8"), (" BF16-True ", "bf16"),
])
def test_precision_strings_and_ints(precision, dtype):
    assert dtype_from_precision(precision) == dtype


def test_a_plugin_is_read_by_its_precision_attribute():
    class Plugin:
        precision = "16-mixed"

    assert dtype_from_precision(Plugin()) == "fp16"


def test_a_bitsandbytes_plugin_runs_its_matmuls_in_its_compute_dtype():
    class Bnb:  # BitsandbytesPrecision: precision is the base default, dtype the compute one
        precision = "32-true"
        dtype = torch.bfloat16

    assert dtype_from_precision(Bnb()) == "bf16"


@pytest.mark.parametrize("unknown", ["8-mixed", None, True, object(), 3.5])
def test_an_unknown_precision_is_none(unknown):
    assert dtype_from_precision(unknown) is None


def test_fp32_on_cuda_is_tf32_when_the_matmuls_may_use_it():
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert dtype_from_precision("32-true", device=torch.device("cuda")) == "tf32"
        assert dtype_from_precision("32-true", device="cuda") == "tf32"
        assert dtype_from_precision("32-true", device=torch.device("cpu")) == "fp32"
        torch.set_float32_matmul_precision("highest")
        allow = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            assert dtype_from_precision("32-true", device="cuda") == "fp32"
        finally:
            torch.backends.cuda.matmul.allow_tf32 = allow
    finally:
        torch.set_float32_matmul_precision(before)


def test_every_table_dtype_is_a_known_peak_dtype():
    from mfu_tracker._dtypes import normalize_dtype

    for dtype in PRECISION_DTYPES.values():
        assert normalize_dtype(dtype) == dtype
