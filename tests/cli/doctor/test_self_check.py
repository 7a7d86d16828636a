"""The doctor's MFU self-check row (cli/doctor/_self_check.py): the verdict
of a loop's MFU against the tensor pipes' busy share, by hand; the GEMM loop
on the fake driver; the SKIP rows that say why."""
from __future__ import annotations

from mfu_tracker import user_gpu_spec
from mfu_tracker.peaks._table import GPUSpec
from mfu_tracker.cli.doctor._platform import FakeGpuPlatform, open_platform
from mfu_tracker.cli.doctor._self_check import gemm_window, judge, self_check_row


def test_consistent_high_and_low_by_hand():
    # over a 1 s window the high limit is 1 + margin + 2 x 0.1 / 1: MFU 0.5 with the
    # pipes busy 0.55 is consistent; 0.9 with 0.5 busy is above (1.8 x); 0.2 with 0.6
    # busy is below half of it (0.2 < 0.5 x 0.6 = 0.3)
    assert judge(0.5, {"tensor_active": 0.55}, 1.0)[0] == "PASS"
    status, figure, detail = judge(0.9, {"tensor_active": 0.5}, 1.0)
    assert status == "WARN" and "MFU / tensor-active 1.8" in figure
    assert "MFU above what the tensor pipes did" in detail
    status, _, detail = judge(0.2, {"tensor_active": 0.6}, 1.0)
    assert status == "WARN" and "busy far beyond MFU" in detail
    assert judge(0.5, {}, 1.0) == ("WARN", "MFU 0.500, no tensor-active reading",
                                   "GPM gave no ANY_TENSOR_UTIL")


def test_the_gemm_loop_counts_every_gemm_it_ran(fake):
    platform = open_platform(0)
    assert isinstance(platform, FakeGpuPlatform)
    n = 256
    loop = gemm_window(platform, 0.05, n=n)
    assert loop["seconds"] >= 0.05
    per_call = 10 * 2 * n ** 3                     # 10 GEMMs of 2 n^3 FLOPs a call
    calls = loop["flops"] / per_call
    assert calls >= 1 and calls == int(calls)      # the warm-up GEMM is not counted


def _rows(*args):
    rows = []
    self_check_row(lambda *row, **extra: rows.append(row), *args)
    return rows


def test_skip_rows_say_why():
    (row,) = _rows(None, user_gpu_spec(100.0), None, True)
    assert row[:4] == ("peak", "mfu_self_check", "SKIP", "no NVML device")
    fp8_only = GPUSpec(name="fp8 only", peak_flops_by_dtype={"fp8": 1e15}, source="user")
    (row,) = _rows(None, fp8_only, "GPU-0", True)
    assert row[2:4] == ("SKIP", "no bf16 peak")
    (row,) = _rows(None, None, "GPU-0", True)
    assert row[2:4] == ("SKIP", "no bf16 peak")
