"""``mfu-tracker report``: a picture of a run's MFU, from its metrics log.

Input (:func:`load`):

* a JSONL file written by ``log_path=`` (:mod:`mfu_tracker.tracker._metrics_log`):
  one JSON object per line with ``step`` and metric keys;
* a directory of TensorBoard event files (or one event file), e.g. written by
  HF Trainer's TensorBoard callback with :class:`~mfu_tracker.MFUCallback`:
  scalar tags are the metric keys, the Trainer's ``train/`` prefix removed,
  and the event step is the step.

What is drawn (:func:`plan`, keys from :mod:`mfu_tracker.timing._metrics`, never
spelled here; ``{p}`` is the metric prefix, found from the MFU key):

1. MFU over steps (``{p}/mfu``);
2. the waterfall: one stacked bar per logged step, MFU then each
   ``{p}/mfu_lost/<cause>`` share of the step time (causes in the order they
   first appear), which add up to 1;
3. per-rank MFU when present: the spread ``{p}/mfu_rank_min`` / ``mean`` /
   ``max`` over steps.

Every number drawn is also printed (:func:`numbers_text`), ``key=value``
with Python's round-trip float repr. Missing keys: what exists is drawn and
the rest is named in :attr:`Report.missing`. Output ``.png`` or ``.html``
(self-contained: the PNG as base64 plus a table of the numbers). Needs
matplotlib, the ``[report]`` extra.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._install import DISTRIBUTION
from ..timing._metrics import FAMILIES, KEYS, metric_key

__all__ = ["ReportError", "Report", "load", "plan", "numbers_text", "render", "run"]

#: Output formats, by file extension.
FORMATS = (".png", ".html")
#: The size of the picture, inches at DPI (one panel is PANEL_HEIGHT high).
WIDTH_IN, PANEL_HEIGHT_IN, DPI = 10.0, 3.6, 100
#: Above this many logged steps the waterfall's bars touch and are drawn as
#: one filled band per layer (thousands of separate bars take minutes to draw).
MAX_BARS = 200
#: At most this many step labels under the waterfall's bars (every k-th step).
MAX_BAR_LABELS = 12
#: The prefix HF Trainer's logging adds to training logs (``rewrite_logs``).
TRAINER_TAG_PREFIX = "train/"


class ReportError(ValueError):
    """Bad input or output for the report: the message says what and where."""


def _key_name(name: str) -> str:
    """A scalar key's name as :data:`KEYS` spells it (fails at import if renamed)."""
    for key in KEYS:
        if key.name == name:
            return key.name
    raise LookupError(f"mfu_tracker.timing._metrics.KEYS has no {name!r} key")


def _family_name(name: str) -> str:
    for family, _, _ in FAMILIES:
        if family == name:
            return family
    raise LookupError(f"mfu_tracker.timing._metrics.FAMILIES has no {name!r} family")


MFU = _key_name("mfu")
LOST = _family_name("mfu_lost")
RANK_SPREAD = (_key_name("mfu_rank_min"), _key_name("mfu_rank_mean"), _key_name("mfu_rank_max"))
SLOWEST = _key_name("slowest_rank")

Record = Dict[str, Any]


# ---- input ----------------------------------------------------------------------

def _is_event_file(path: str) -> bool:
    return "tfevents" in os.path.basename(path)


def load(path: str) -> List[Record]:
    """The records of ``path`` (JSONL file, TensorBoard directory or event
    file), each a dict with an int ``step``, sorted by step."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file or directory")
    if os.path.isdir(path) or _is_event_file(path):
        records = _load_tensorboard(path)
    else:
        records = _load_jsonl(path)
    if not records:
        raise ReportError(f"{path}: no metrics in it (an empty file or no scalar events)")
    return sorted(records, key=lambda r: r["step"])


def _load_jsonl(path: str) -> List[Record]:
    records: List[Record] = []
    try:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as error:
                    raise ReportError(f"{path}:{number}: not a JSON line ({error})") from None
                if not isinstance(record, dict):
                    raise ReportError(f"{path}:{number}: not a JSON object")
                step = record.get("step")
                if isinstance(step, bool) or not isinstance(step, (int, float)) or step != step:
                    raise ReportError(f"{path}:{number}: no numeric 'step' field")
                record["step"] = int(step)
                records.append(record)
    except UnicodeDecodeError as error:
        raise ReportError(f"{path}: not a UTF-8 text file ({error.reason}); give a JSONL "
                          f"metrics log or a TensorBoard log directory") from None
    except IsADirectoryError:  # pragma: no cover -- checked by load()
        raise ReportError(f"{path}: is a directory") from None
    return records


def _load_tensorboard(path: str) -> List[Record]:
    try:
        from tensorboard.backend.event_processing.event_accumulator import (
            SCALARS,
            EventAccumulator,
        )
    except ImportError:
        raise ReportError("reading TensorBoard event files needs the tensorboard package "
                          "(pip install tensorboard)") from None
    if os.path.isdir(path):
        files = sorted(os.path.join(root, name) for root, _, names in os.walk(path)
                       for name in names if _is_event_file(name))
    else:
        files = [path]
    if not files:
        raise ReportError(f"{path}: no TensorBoard event files (*tfevents*) in it")
    by_step: Dict[int, Record] = {}
    for name in files:
        events = EventAccumulator(name, size_guidance={SCALARS: 0})
        try:
            events.Reload()
        except Exception as error:  # noqa: BLE001 -- a corrupt file: say which
            raise ReportError(f"{name}: not a readable TensorBoard event file ({error})") from None
        for tag in events.Tags().get(SCALARS, []):
            key = tag[len(TRAINER_TAG_PREFIX):] if tag.startswith(TRAINER_TAG_PREFIX) else tag
            for event in events.Scalars(tag):
                by_step.setdefault(int(event.step), {"step": int(event.step)})[key] = float(event.value)
    return list(by_step.values())


# ---- what to draw ---------------------------------------------------------------

@dataclass
class Report:
    """What :func:`render` draws: every series as (step, value) and the
    waterfall rows; ``missing`` names what the input lacks."""

    prefix: str
    mfu: List[Tuple[int, float]] = field(default_factory=list)
    causes: List[str] = field(default_factory=list)                 # waterfall keys, in order
    waterfall: List[Tuple[int, Dict[str, float]]] = field(default_factory=list)
    ranks: Dict[str, List[Tuple[int, float]]] = field(default_factory=dict)
    slowest: List[Tuple[int, float]] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)

    @property
    def mfu_key(self) -> str:
        return metric_key(self.prefix, MFU)


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def find_prefix(records: Sequence[Record]) -> Optional[str]:
    """The metric prefix: ``p`` of the first ``p/mfu`` key (``""`` for a bare one)."""
    suffix = "/" + MFU
    for record in records:
        for key in record:
            if key == MFU:
                return ""
            if key.endswith(suffix):
                return key[: -len(suffix)]
    return None


def plan(records: Sequence[Record], prefix: Optional[str] = None) -> Report:
    """The series of ``records`` to draw (see the module docstring)."""
    if prefix is None:
        prefix = find_prefix(records)
        if prefix is None:
            raise ReportError(f"no MFU key (<prefix>/{MFU}) in any record: nothing to draw")
    report = Report(prefix)
    mfu_key = report.mfu_key
    lost_base = metric_key(prefix, LOST) + "/"
    for record in records:
        step = record["step"]
        mfu = _number(record.get(mfu_key))
        if mfu is not None:
            report.mfu.append((step, mfu))
        lost = {key: v for key, v in ((k, _number(x)) for k, x in record.items()
                                       if k.startswith(lost_base)) if v is not None}
        if lost and mfu is not None:
            for key in lost:
                if key not in report.causes:
                    report.causes.append(key)
            report.waterfall.append((step, {mfu_key: mfu, **lost}))
        for name in RANK_SPREAD:
            value = _number(record.get(metric_key(prefix, name)))
            if value is not None:
                report.ranks.setdefault(metric_key(prefix, name), []).append((step, value))
        slowest = _number(record.get(metric_key(prefix, SLOWEST)))
        if slowest is not None:
            report.slowest.append((step, slowest))
    if not (report.mfu or report.waterfall or report.ranks):
        raise ReportError(f"no {mfu_key}, {lost_base}* or per-rank MFU values in the input "
                          f"(prefix {prefix!r}; found: {find_prefix(records)!r})")
    if not report.mfu:
        report.missing.append(f"{mfu_key}: no values (the MFU panel is empty)")
    if not report.waterfall:
        report.missing.append(f"{lost_base}*: no waterfall keys (the waterfall panel is empty)")
    if not report.ranks:
        report.missing.append(f"{metric_key(prefix, RANK_SPREAD[0])} / _mean / _max: no per-rank "
                              f"MFU (not distributed; no per-rank panel)")
    return report


def numbers_text(report: Report) -> str:
    """Every number drawn, one ``step=N key=value ...`` line per step and panel."""
    lines = [f"MFU over steps ({report.mfu_key}):"]
    lines += [f"  step={step} {report.mfu_key}={value!r}" for step, value in report.mfu]
    if report.waterfall:
        lines.append("waterfall (fractions of the step time; each bar adds up to 1):")
        for step, shares in report.waterfall:
            cells = " ".join(f"{key}={value!r}" for key, value in shares.items())
            lines.append(f"  step={step} {cells} sum={math.fsum(shares.values())!r}")
    if report.ranks:
        lines.append("per-rank MFU:")
        steps = sorted({step for series in report.ranks.values() for step, _ in series})
        slowest = dict(report.slowest)
        by_key = {key: dict(series) for key, series in report.ranks.items()}
        for step in steps:
            cells = [f"{key}={values[step]!r}" for key, values in by_key.items() if step in values]
            if step in slowest:
                cells.append(f"{metric_key(report.prefix, SLOWEST)}={int(slowest[step])}")
            lines.append(f"  step={step} " + " ".join(cells))
    lines += [f"missing: {what}" for what in report.missing]
    return "\n".join(lines)


# ---- drawing --------------------------------------------------------------------

def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ReportError("drawing the report needs matplotlib, the optional extra [report]: "
                          f"pip install '{DISTRIBUTION}[report]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _check_out(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMATS:
        raise ReportError(f"--out {out!r}: unknown extension {ext or '(none)'!r}; "
                          f"use one of {', '.join(FORMATS)}")
    return ext


def png_bytes(report: Report, title: str = "") -> bytes:
    """The picture as PNG bytes."""
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    panels = 3 if report.ranks else 2
    fig, axes = plt.subplots(panels, 1, figsize=(WIDTH_IN, PANEL_HEIGHT_IN * panels), dpi=DPI)
    try:
        ax = axes[0]
        if report.mfu:
            steps, values = zip(*report.mfu)
            ax.plot(steps, values, marker="o" if len(steps) <= MAX_BARS else None, markersize=3)
        else:
            ax.text(0.5, 0.5, f"no {report.mfu_key} values", ha="center", transform=ax.transAxes)
        ax.set_title(title or "MFU over steps")
        ax.set_xlabel("step")
        ax.set_ylabel(report.mfu_key)
        ax.set_ylim(0, max([v for _, v in report.mfu], default=1.0) * 1.15 or 1.0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)

        ax = axes[1]
        ax.set_title("waterfall: where the step time goes (fractions of step time)")
        if report.waterfall:
            keys = [report.mfu_key] + report.causes
            positions = list(range(len(report.waterfall)))
            bottoms = [0.0] * len(positions)
            for key in keys:
                heights = [shares.get(key, 0.0) for _, shares in report.waterfall]
                tops = [b + h for b, h in zip(bottoms, heights)]
                label = key.rsplit("/", 1)[-1]
                if len(positions) <= MAX_BARS:
                    ax.bar(positions, heights, bottom=bottoms, label=label)
                else:  # the same bars, touching, as one polygon per layer (fast)
                    ax.fill_between(positions, bottoms, tops, step="mid", label=label,
                                    linewidth=0)
                bottoms = tops
            every = max(1, math.ceil(len(positions) / MAX_BAR_LABELS))
            ax.set_xticks(positions[::every], [str(step) for step, _ in report.waterfall][::every])
            ax.set_xlabel("step")
            ax.set_ylim(0, max(1.0, max(bottoms)))
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
        else:
            ax.text(0.5, 0.5, f"no {metric_key(report.prefix, LOST)}/* keys in the input",
                    ha="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])

        if report.ranks:
            ax = axes[2]
            for key, series in report.ranks.items():
                steps, values = zip(*series)
                ax.plot(steps, values, marker=".", label=key.rsplit("/", 1)[-1])
            ax.set_title("per-rank MFU spread")
            ax.set_xlabel("step")
            ax.set_ylabel("MFU")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(fig)


def html_text(report: Report, png: bytes, title: str) -> str:
    """A self-contained page: the PNG inline (base64) and a table of the numbers."""
    columns = [report.mfu_key] + report.causes + list(report.ranks)
    rows: Dict[int, Dict[str, float]] = {}
    for step, value in report.mfu:
        rows.setdefault(step, {})[report.mfu_key] = value
    for step, shares in report.waterfall:
        rows.setdefault(step, {}).update(shares)
    for key, series in report.ranks.items():
        for step, value in series:
            rows.setdefault(step, {})[key] = value
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["step"] + columns)
    body = "\n".join(
        "<tr><td>{}</td>{}</tr>".format(step, "".join(
            f"<td>{values[c]!r}</td>" if c in values else "<td></td>" for c in columns))
        for step, values in sorted(rows.items()))
    missing = "".join(f"<li>{html.escape(m)}</li>" for m in report.missing)
    image = base64.b64encode(png).decode("ascii")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
            f"<img alt=\"MFU report\" src=\"data:image/png;base64,{image}\">\n"
            f"<table border=\"1\">\n<tr>{head}</tr>\n{body}\n</table>\n"
            + (f"<p>Missing:</p><ul>{missing}</ul>\n" if missing else "")
            + "</body></html>\n")


def render(report: Report, out: str, title: str = "") -> None:
    """Write ``out`` (.png or .html)."""
    ext = _check_out(out)
    png = png_bytes(report, title)
    parent = os.path.dirname(out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    if ext == ".png":
        with open(out, "wb") as f:
            f.write(png)
    else:
        with open(out, "w", encoding="utf-8") as f:
            f.write(html_text(report, png, title or "MFU report"))


def run(path: str, out: str, prefix: Optional[str] = None, title: str = "") -> str:
    """Load ``path``, draw ``out``; returns the numbers drawn (:func:`numbers_text`)."""
    _check_out(out)
    _pyplot()                       # the missing extra is said before any work
    report = plan(load(path), prefix)
    render(report, out, title)
    return numbers_text(report)
