"""``mfu-tracker gpus``: the peak table, each cell a peak, '-' or 'n/a'."""
from __future__ import annotations

import argparse

import torch

from mfu_tracker.cli._gpus import NONE, TABLE_DTYPES, UNPUBLISHED, peak_cell, print_table, run
from mfu_tracker.peaks._table import gpu_spec_table


def _row(name):
    return next(s for s in gpu_spec_table() if s.name == name)


def test_a_cell_is_the_peak_none_or_unpublished():
    h100 = _row("H100 SXM")
    assert peak_cell(h100, "bf16") == "989.4"      # datasheet dense bf16
    assert peak_cell(h100, "fp4") == NONE           # Hopper has no fp4 unit
    unpublished = [(s, d) for s in gpu_spec_table() for d in s.unpublished_dtypes]
    assert unpublished, "the table names a dtype no source publishes (B300 int8)"
    spec, dtype = unpublished[0]
    assert peak_cell(spec, dtype) == UNPUBLISHED


def test_the_table_has_a_line_per_row_with_its_bandwidth(capsys):
    print_table([_row("H100 SXM"), _row("B200")])
    out = capsys.readouterr().out.splitlines()
    header = out[2].split()
    assert header == ["device", *TABLE_DTYPES, "TB/s", "SMs"]
    h100 = out[3].split()
    assert out[3].startswith("H100 SXM") and h100[-2] == "3.35"   # 3.35 TB/s HBM3
    assert h100[2 + TABLE_DTYPES.index("bf16")] == "989.4"
    assert out[4].startswith("B200") and out[4].split()[1 + TABLE_DTYPES.index("bf16")] == "2250"


def test_the_command_lists_every_row_and_its_source(capsys):
    assert run(argparse.Namespace(detect=False)) == 0
    out = capsys.readouterr().out
    specs = gpu_spec_table()
    assert out.count("\n  ") == len(specs)      # one source line per row
    for spec in specs:
        assert f"  {spec.name}: {spec.citation}" in out


def test_detect_without_a_gpu_says_so(capsys):
    assert not torch.cuda.is_available()   # this machine: CPU only
    assert run(argparse.Namespace(detect=True)) == 0
    assert "no CUDA/ROCm device visible to torch" in capsys.readouterr().out
