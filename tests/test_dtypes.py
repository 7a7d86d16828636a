"""mfu_tracker._dtypes.normalize_dtype: canonical names, aliases, torch dtypes."""
import subprocess
import sys

import pytest
import torch

from mfu_tracker import _C
from mfu_tracker._dtypes import DTYPE_NAMES, normalize_dtype

CANONICAL = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")


def test_canonical_names_come_from_the_c_core():
    assert DTYPE_NAMES == CANONICAL
    assert tuple(_C.dtype_names()) == CANONICAL


@pytest.mark.parametrize("name", CANONICAL)
def test_canonical_names_map_to_themselves(name):
    assert normalize_dtype(name) == name
    assert normalize_dtype(name.upper()) == name
    assert normalize_dtype(f"  {name} ") == name


@pytest.mark.parametrize(
    "alias, expected",
    [
        ("bfloat16", "bf16"),
        ("float16", "fp16"),
        ("half", "fp16"),
        ("float32", "fp32"),
        ("float", "fp32"),
        ("float64", "fp64"),
        ("double", "fp64"),
        ("float8_e4m3fn", "fp8"),
        ("float8_e5m2", "fp8"),
        ("tensorfloat32", "tf32"),
        ("nvfp4", "fp4"),
    ],
)
def test_aliases(alias, expected):
    assert normalize_dtype(alias) == expected


@pytest.mark.parametrize(
    "dtype, expected",
    [
        (torch.bfloat16, "bf16"),
        (torch.float16, "fp16"),
        (torch.half, "fp16"),
        (torch.float32, "fp32"),
        (torch.float64, "fp64"),
        (torch.float8_e4m3fn, "fp8"),
        (torch.float8_e5m2, "fp8"),
        (torch.int8, "int8"),
    ],
)
def test_torch_dtypes(dtype, expected):
    assert normalize_dtype(dtype) == expected


@pytest.mark.parametrize("bad", ["bf17", "", "fp", "int32", torch.int32, torch.complex64])
def test_unknown_dtype_names_the_argument_and_lists_valid_names(bad):
    with pytest.raises(ValueError) as info:
        normalize_dtype(bad, "my_dtype")
    message = str(info.value)
    assert message.startswith("my_dtype:")
    assert "bf16" in message and "fp64" in message and "fp4" in message


@pytest.mark.parametrize("bad", [None, 16, 1.5, b"bf16", ["bf16"], object()])
def test_wrong_type_is_type_error(bad):
    with pytest.raises(TypeError, match="dtype"):
        normalize_dtype(bad)


def test_module_works_without_torch():
    # torch made unimportable: _dtypes (and the package import) must not need it
    code = ("import sys; sys.modules['torch'] = None; "
            "import mfu_tracker._dtypes as d; print(d.normalize_dtype('half'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fp16"
