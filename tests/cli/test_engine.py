"""``mfu-tracker engine``: MBU and MFU of a server from two saved expositions
(the counters' parsing: tests/integrations/test_engines.py)."""
from __future__ import annotations

import argparse

from mfu_tracker.cli import main
from mfu_tracker.cli._engine import _scrapes

LABELS = 'engine="0",model_name="m"'


def _exposition(flops: float, read: float, write: float) -> str:
    return "".join(f"vllm:estimated_{what}_per_gpu_total{{{LABELS}}} {value!r}\n"
                   for what, value in (("flops", flops), ("read_bytes", read),
                                       ("write_bytes", write)))


def _files(tmp_path, second):
    a, b = tmp_path / "a.prom", tmp_path / "b.prom"
    a.write_text(_exposition(0.0, 0.0, 0.0))
    b.write_text(_exposition(*second))
    return str(a), str(b)


def test_the_given_peak_and_bandwidth_by_hand(tmp_path, capsys):
    # over 10 s: 2e15 FLOPs / 10 s = 2e14 FLOP/s over a 400 TFLOP/s peak: MFU 0.5;
    # (1e12 + 1e12) bytes / 10 s = 2e11 B/s over 1 TB/s: MBU 0.2
    a, b = _files(tmp_path, (2e15, 1e12, 1e12))
    assert main(["engine", a, b, "--interval", "10", "--peak-tflops", "400",
                 "--memory-bandwidth-tbs", "1"]) == 0
    out = capsys.readouterr().out
    assert "peak: 400 TFLOP/s bf16 (given by --peak-tflops); memory bandwidth: 1 TB/s" in out
    assert "MBU 0.2 · MFU 0.5 over 10 s" in out


def test_the_tables_bandwidth_and_no_mbu_without_one(tmp_path, capsys):
    a, b = _files(tmp_path, (1e15, 0.0, 0.0))
    assert main(["engine", a, b, "--interval", "10", "--gpu", "H100 SXM"]) == 0
    assert "memory bandwidth: 3.35 TB/s" in capsys.readouterr().out       # H100 SXM HBM3
    assert main(["engine", a, b, "--interval", "10", "--peak-tflops", "100"]) == 0
    assert "unknown (no MBU; give --memory-bandwidth-tbs)" in capsys.readouterr().out


def test_one_source_must_be_a_url_and_a_missing_file_is_named(tmp_path, capsys):
    args = argparse.Namespace(source=str(tmp_path / "a.prom"), second=None, interval=1.0)
    try:
        _scrapes(args)
    except ValueError as error:
        assert "one source must be a URL (scraped twice)" in str(error)
    else:
        raise AssertionError("a lone file was scraped")
    missing = str(tmp_path / "nope.prom")
    assert main(["engine", missing, missing, "--peak-tflops", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mfu-tracker engine: error: {missing}: ") and err.count("\n") == 1
    assert main(["engine", missing, "--interval", "0", "--peak-tflops", "1"]) == 2
    assert "argument --interval: must be a finite number > 0" in capsys.readouterr().err
