"""``mfu-tracker estimate``: the FLOP text, the image flags, the throughput
and the errors a bad combination gets (figures: tests/cli/test_cli.py)."""
from __future__ import annotations

import pytest
from _cli import field, run_cli

from mfu_tracker.cli._errors import CliError
from mfu_tracker.cli._estimate import _flop_text, _grids, _shape


def test_flops_in_the_largest_unit_that_holds_them():
    assert _flop_text(57_914_449_920) == "57.91 GFLOP"
    assert _flop_text(1.2345e13) == "12,345.00 GFLOP"         # G is the top unit by default
    assert _flop_text(1.2226e15, "T") == "1,222.6 TFLOP"
    assert _flop_text(2.5e6) == "2.5 MFLOP"                    # below G: 4 significant digits
    assert _flop_text(1234.0) == "1.234 KFLOP"
    assert _flop_text(12.0) == "12 FLOP"                       # never "0.00 GFLOP"


def test_grids_take_rows_or_n_of_them():
    assert _grids(["1,16,16"], "--image-grid") == [[1, 16, 16]]
    assert _grids(["3x1,2,2", "1,4,4"], "--image-grid") == [[1, 2, 2]] * 3 + [[1, 4, 4]]
    assert _grids(["2x896,896"], "--image-sizes", 2, "H,W") == [[896, 896], [896, 896]]
    assert _grids(None, "--image-grid") is None
    for bad in ("1,16", "0,16,16", "0x1,2,2", "ax1,2,2", "1,2,x"):
        with pytest.raises(CliError, match=r"--image-grid takes T,H,W or NxT,H,W"):
            _grids([bad], "--image-grid")


def test_pixel_values_is_a_shape_of_four_or_more():
    assert _shape("1,3,896,896") == (1, 3, 896, 896)
    assert _shape(None) is None
    for bad in ("3,896,896", "1,3,0,896", "1,3,a,896"):
        with pytest.raises(CliError, match="--pixel-values takes the shape"):
            _shape(bad)


def test_step_time_gives_the_throughput(capsys):
    # 6N per token: 6 x 1e9 = 6 GFLOP; tokens/s = 4 x 1000 / 2 s = 2,000
    # achieved = 6e9 x 2000 = 1.2e13 FLOP/s = 12.0 TFLOP/s on one GPU; MFU 12 / 100 = 12.00%
    status, out, _ = run_cli(capsys, "estimate", "--params", "1e9", "--peak-tflops", "100",
                             "--batch-size", "4", "--seq-len", "1000", "--step-time", "2")
    assert status == 0
    assert field(out, "FLOP/token") == "6.00 GFLOP"
    assert field(out, "tokens/s (global)") == "2,000"
    assert field(out, "achieved per GPU") == "12.0 TFLOP/s"
    assert field(out, "MFU") == "12.00%"


def test_an_mfu_above_one_warns(capsys):
    # 6 x 1e9 x 1e6 tokens/s = 6e15 FLOP/s over 1e12 FLOP/s: MFU 6000 = 600,000%
    status, out, err = run_cli(capsys, "estimate", "--params", "1e9", "--peak-tflops", "1",
                               "--tokens-per-sec", "1e6")
    assert status == 0 and field(out, "MFU") == "600000.00%"
    assert "warning: MFU > 1 means the peak or the FLOP count is wrong" in err


@pytest.mark.parametrize("extra, error", [
    (["--tokens-per-sec", "1", "--step-time", "1"], "give --tokens-per-sec or --step-time, not both"),
    (["--step-time", "1"], "--step-time needs --batch-size (global) and --seq-len"),
    ([], "give the throughput"),
    (["--tokens-per-sec", "1", "--lora-rank", "8"], "--lora-rank needs --lora"),
    (["--tokens-per-sec", "1", "--formula", "palm"], "--params gives a bare parameter count"),
    (["--tokens-per-sec", "1", "--image-grid", "1,2,2"], "need --model (a VLM config)"),
])
def test_bad_combinations_are_named(capsys, extra, error):
    status, out, err = run_cli(capsys, "estimate", "--params", "1e9", "--peak-tflops", "100",
                               *extra)
    assert status == 2 and out == ""
    assert error in err


def test_a_model_needs_its_sequence_length(capsys):
    status, _, err = run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "B200",
                             "--tokens-per-sec", "1")
    assert status == 2 and "--seq-len is needed to count attention FLOPs for --model" in err
