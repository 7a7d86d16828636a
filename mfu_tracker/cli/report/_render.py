"""The picture: one matplotlib axis per panel, as PNG bytes or a
self-contained HTML page (the PNG inline as base64 and a table of the numbers)."""
from __future__ import annotations

import base64
import html
import io
import os
from typing import Any, Callable, Dict, List, Sequence

from ..._install import extra_install
from ._model import Report, ReportError
from ._text import head
from .panels import PANELS, Panel

__all__ = ["FORMATS", "check_out", "figure_png", "png_bytes", "html_text", "render", "pyplot",
           "write_out"]

#: Output formats, by file extension.
FORMATS = (".png", ".html")
#: The size of the picture, inches at DPI (one panel is PANEL_HEIGHT high).
WIDTH_IN, PANEL_HEIGHT_IN, DPI = 10.0, 3.6, 100


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend; ReportError naming the extra without it."""
    try:
        import matplotlib
    except ImportError:
        raise ReportError("drawing the report needs matplotlib, the optional extra [report]: "
                          f"{extra_install('report')}") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def check_out(out: str) -> str:
    """The extension of ``out``, one of :data:`FORMATS` (else ReportError)."""
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMATS:
        raise ReportError(f"--out {out!r}: unknown extension {ext or '(none)'!r}; "
                          f"use one of {', '.join(FORMATS)}")
    return ext


def drawn(report: Report) -> List[Panel]:
    """The panels the picture has, in order."""
    return [panel for panel in PANELS if panel.name in report.data or panel.placeholder(report)]


def figure_png(rows: int, draw: Callable[[Sequence[Any]], None]) -> bytes:
    """A figure of ``rows`` stacked axes, one panel high each, drawn by
    ``draw(axes)``, laid out and saved as PNG bytes; closed whatever happens."""
    plt = pyplot()
    fig, axes = plt.subplots(rows, 1, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * rows), dpi=DPI,
                             squeeze=False)
    try:
        draw(axes[:, 0])
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(fig)


def png_bytes(report: Report) -> bytes:
    """The picture as PNG bytes."""
    panels = drawn(report)

    def draw(axes: Sequence[Any]) -> None:
        for ax, panel in zip(axes, panels):
            panel.draw(ax, report, report.panel(panel.name))

    return figure_png(len(panels), draw)


def html_text(report: Report, png: bytes, title: str) -> str:
    """A self-contained page: the PNG inline (base64) and a table of the numbers."""
    rows: Dict[int, Dict[str, float]] = {}
    for panel in PANELS:
        data = report.panel(panel.name)
        if data is not None:
            for step, values in panel.table(report, data).items():
                rows.setdefault(step, {}).update(values)
    columns = list(dict.fromkeys(key for values in rows.values() for key in values))
    cells = "".join(f"<th>{html.escape(c)}</th>" for c in ["step"] + columns)
    body = "\n".join(
        "<tr><td>{}</td>{}</tr>".format(step, "".join(
            f"<td>{values[c]!r}</td>" if c in values else "<td></td>" for c in columns))
        for step, values in sorted(rows.items()))
    notes = report.missing + [f"invalid: {what}" for what in report.invalid]
    missing = "".join(f"<li>{html.escape(m)}</li>" for m in notes)
    image = base64.b64encode(png).decode("ascii")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
            f"<img alt=\"MFU report\" src=\"data:image/png;base64,{image}\">\n"
            + "".join(f"<p>{html.escape(line)}</p>\n" for line in head(report))
            + f"<table border=\"1\">\n<tr>{cells}</tr>\n{body}\n</table>\n"
            + (f"<p>Missing:</p><ul>{missing}</ul>\n" if missing else "")
            + "</body></html>\n")


def render(report: Report, out: str, title: str = "") -> None:
    """Write ``out`` (.png or .html)."""
    ext = check_out(out)
    report.title = title
    png = png_bytes(report)
    write_out(out, ext, png, lambda: html_text(report, png, title or "MFU report"))


def write_out(out: str, ext: str, png: bytes, html_page: Callable[[], str]) -> None:
    """Write the picture ``out``: the PNG, or (``.html``) the page
    ``html_page()`` builds around it; its directory is created."""
    parent = os.path.dirname(out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    if ext == ".png":
        with open(out, "wb") as f:
            f.write(png)
    else:
        with open(out, "w", encoding="utf-8") as f:
            f.write(html_page())
