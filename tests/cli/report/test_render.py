"""mfu_tracker/cli/report/_render.py: the output format, the panels drawn,
the PNG's size, the self-contained HTML page and writing the file."""
from __future__ import annotations

import base64
import io
import re

import pytest

pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

from mfu_tracker.cli.report._model import ReportError  # noqa: E402
from mfu_tracker.cli.report._render import (DPI, PANEL_HEIGHT_IN, WIDTH_IN, check_out,  # noqa: E402
                                            drawn, html_text, png_bytes, render, write_out)

from cli.report._logs import line, run_record  # noqa: E402


def test_check_out_accepts_png_and_html_only():
    assert check_out("a/b.PNG") == ".png" and check_out("x.html") == ".html"
    with pytest.raises(ReportError, match=r"--out 'x.svg': unknown extension '.svg'"):
        check_out("x.svg")
    with pytest.raises(ReportError, match=r"unknown extension '\(none\)'"):
        check_out("report")


def test_the_panels_drawn_and_the_png_size(report_of):
    report = report_of([run_record(), line(1, mfu=0.5, mfu_lost__data=0.5),
                        line(2, mfu=0.4, mfu_lost__data=0.6)])
    # MFU, the waterfall and the ledger (the run has its run record); no phases (the
    # waterfall is drawn), no ranks, hardware or kernels data
    assert [panel.name for panel in drawn(report)] == ["mfu", "waterfall", "ledger"]
    shape = matplotlib.image.imread(io.BytesIO(png_bytes(report)), format="png").shape
    assert shape == (round(PANEL_HEIGHT_IN * 3 * DPI), round(WIDTH_IN * DPI), 4)   # 1080 x 1000


def test_html_holds_the_png_the_numbers_and_what_is_missing(report_of):
    report = report_of([run_record(), line(1, mfu=0.5, step_time_s=0.125)])
    page = html_text(report, b"\x89PNG fake", "a <title>")
    assert "<title>a &lt;title&gt;</title>" in page
    image = re.search(r'src="data:image/png;base64,([^"]+)"', page).group(1)
    assert base64.b64decode(image) == b"\x89PNG fake"
    assert "<th>step</th><th>throughput/mfu</th><th>throughput/step_time_s</th>" in page
    assert "<tr><td>1</td><td>0.5</td><td>0.125</td></tr>" in page
    assert "<p>Missing:</p>" in page and "<li>" in page


def test_render_writes_into_a_new_directory(report_of, tmp_path):
    report = report_of([run_record(), line(1, mfu=0.5)])
    out = tmp_path / "new" / "r.png"
    render(report, str(out), title="T")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and report.title == "T"
    page = tmp_path / "p.html"
    write_out(str(page), ".html", b"", lambda: "<html/>")
    assert page.read_text() == "<html/>"
