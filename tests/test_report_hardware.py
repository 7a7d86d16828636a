"""``mfu-tracker report``'s hardware panel: drawn from a log with the GPM keys
(MFU against tensor-active, MBU against DRAM use), every number printed;
left out, with the note, from a log without them."""
from __future__ import annotations

import io
import json
import re

import pytest

matplotlib = pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.cli.report import _render  # noqa: E402
from mfu_tracker.cli.report.panels import hardware  # noqa: E402
from mfu_tracker.timing._metrics import format_metrics  # noqa: E402

# (step, mfu, mbu, tensor_active, dram_bw_util): the file's values
ROWS = ((10, 0.40, 0.10, 0.50, 0.30), (20, 0.42, 0.11, 0.60, 0.35), (30, 0.44, 0.12, 0.55, 0.32))


def _log(tmp_path, hardware=True):
    lines = []
    for step, mfu, mbu, active, dram in ROWS:
        figures = {"mfu": mfu, "mbu": mbu,
                   "mfu_lost": {"data": 0.1, "compute": 0.9 - mfu, "other": 0.0}}
        if hardware:
            figures.update(hw_tensor_active=active, hw_dram_bw_util=dram,
                           hw_mfu_consistency=mfu / active)
        lines.append({"step": step, "time": 1.0 * step, **format_metrics(figures, "throughput")})
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _run(capsys, *argv, numbers=True):
    """``mfu-tracker report``: every number drawn (``--numbers``), else the summary."""
    status = main(["report", *map(str, argv), *(["--numbers"] if numbers else [])])
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def _panels(png: bytes) -> int:
    height = matplotlib.image.imread(io.BytesIO(png), format="png").shape[0]
    return round(height / (_render.PANEL_HEIGHT_IN * _render.DPI))


def test_the_panel_is_drawn_from_a_log_with_the_keys(tmp_path, capsys):
    out_png = tmp_path / "r.png"
    out = _run(capsys, _log(tmp_path), "--out", out_png)
    assert _panels(out_png.read_bytes()) == 3          # MFU, waterfall, hardware
    section = out[out.index("hardware (shares of the window"):]
    printed = {}
    for step, cells in re.findall(r"^\s+step=(\d+) (.*)$", section, flags=re.M):
        for cell in cells.split():
            key, value = cell.split("=", 1)
            printed[(int(step), key)] = float(value)
    for step, mfu, mbu, active, dram in ROWS:
        assert printed[(step, "throughput/mfu")] == mfu
        assert printed[(step, "throughput/hw/tensor_active")] == active
        assert printed[(step, "throughput/mbu")] == mbu
        assert printed[(step, "throughput/hw/dram_bw_util")] == dram
        assert printed[(step, "throughput/hw/mfu_consistency")] == mfu / active
    # the waterfall's compute share read against the pipes (the last step): 0.44 / 0.55 = 0.8
    assert "compute at step 30: tensor pipes busy 0.55 of the window, MFU / tensor-active 0.8" in out
    assert hardware.MISSING not in out


def test_the_panel_is_left_out_with_a_note_without_the_keys(tmp_path, capsys):
    out_png = tmp_path / "r.png"
    out = _run(capsys, _log(tmp_path, hardware=False), "--out", out_png)
    assert _panels(out_png.read_bytes()) == 2          # MFU, waterfall
    assert f"missing: {hardware.MISSING}" in out
    assert "hardware (shares" not in out and "compute at step" not in out


def test_html_holds_the_panel(tmp_path, capsys):
    out_html = tmp_path / "r.html"
    _run(capsys, _log(tmp_path), "--out", out_html)
    assert "data:image/png;base64," in out_html.read_text()


def test_a_negative_counter_is_not_drawn(tmp_path, capsys):
    path = _log(tmp_path)
    lines = path.read_text().splitlines()
    row = json.loads(lines[1])
    row["throughput/hw/tensor_active"] = -0.2          # no share is negative: not drawn
    lines[1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    out = _run(capsys, path, "--out", tmp_path / "r.png")
    section = out[out.index("hardware (shares of the window"):]
    assert "step=20 throughput/mfu=0.42 throughput/mbu=0.11 throughput/hw/dram_bw_util=0.35" in section
    assert "-0.2" not in section


def test_the_summary_reads_the_last_step_against_the_counters(tmp_path, capsys):
    out = _run(capsys, _log(tmp_path), "--out", tmp_path / "r.png", numbers=False)
    # step 30's file values: MFU 0.44 vs tensor-active 0.55, MBU 0.12 vs DRAM use 0.32
    assert ("measured by the hardware at step 30: MFU 0.440 vs tensor-active 0.550, "
            "MBU 0.120 vs DRAM use 0.320") in out
    assert "compute at step 30: tensor pipes busy 0.55 of the window, MFU / tensor-active 0.8" in out
