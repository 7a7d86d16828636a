"""The page's sections drawn from the report's plan (:mod:`mfu_tracker.cli.report`):
the series over steps, the waterfall, per-rank spread and the straggler,
the job ledger, the kernel breakdown and the advice. Each figure is the
plan's (the report's panels collect them; the ledger is
:func:`mfu_tracker.job._ledger.job_ledger`'s, the advice
:func:`mfu_tracker.job._advice.advise`'s); this module only says where
each came from and how."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...breakdown._record import LABELS as KERNEL_LABELS
from ...breakdown._record import ROWS
from ...job._advice import advise, evidence_of_run
from ...job._ledger import BUCKETS, LABELS
from ..report._model import LOST, PHASES, Record, Report, number
from ._figure import COUNTED, DERIVED, MEASURED, Figure, Newest

__all__ = ["advice", "kernels", "ledger", "ranks", "series", "waterfall"]

#: The series drawn over steps: (name, key name).
SERIES = (("mfu", "mfu"), ("step_time_s", "step_time_s"), ("tokens_per_sec", "tokens_per_sec"),
          ("ofu", "hw/tensor_active"), ("mfu_rank_min", "mfu_rank_min"),
          ("mfu_rank_max", "mfu_rank_max"))


def series(report: Report) -> Dict[str, Any]:
    """Each series' [step, value] points over the drawn lines, and each
    drawn run's first step (JSON)."""
    out: Dict[str, Any] = {name: [] for name, _ in SERIES}
    for record, _ in report.points:
        for name, key in SERIES:
            value = number(record.get(report.key(key)))
            if value is not None:
                out[name].append([record["step"], value])
    out["run_starts"] = [list(start) for start in report.run_starts]
    out["sampling"] = [run.sampling for run in report.runs if run.sampling]
    return out


def _bar_line(report: Report) -> Optional[Record]:
    """The newest line holding both MFU and the waterfall's losses."""
    base = report.key(LOST) + "/"
    for record, _ in reversed(report.points):
        if number(record.get(report.mfu_key)) is not None and \
                any(k.startswith(base) for k in record):
            return record
    return None


def waterfall(report: Report) -> Dict[str, Any]:
    """The newest bar of the waterfall (its shares as figures, their sum, the
    diagnosis), or the phases in seconds without MFU (JSON)."""
    bars = report.panel("waterfall")
    if bars is None:
        return _phases(report)
    step, shares = bars.rows[-1]
    record = _bar_line(report)
    line = "" if record is None else f"line {record['_line']} (step {record['step']}): "
    figures = []
    for key, value in shares.items():
        name = key.rsplit("/", 1)[-1]
        formula = ("model FLOPs / time / peak: the ideal part of the step" if key ==
                   report.mfu_key else "what closes the sum to exactly 1: unmarked time"
                   if name == "other" else f"{LABELS.get(name, name)}: its seconds per step "
                   f"/ step time (docs/waterfall.md)")
        figures.append(Figure(name, "MFU" if key == report.mfu_key else name, value,
                              "fraction of step time",
                              DERIVED if key == report.mfu_key or name == "other" else MEASURED,
                              formula=formula,
                              source=line + key).to_json())
    return {"step": step, "shares": figures, "sum": bars.bar_tops()[-1],
            "diagnosis": report.diagnosis}


def _phases(report: Report) -> Dict[str, Any]:
    seconds = report.panel("phases")
    if seconds is None:
        return {"absent": f"no {report.key(LOST)}/* or {report.key(PHASES)}/* keys: mark phases "
                          f"(tracker.phase(...), the integrations mark them) for the waterfall"}
    (step, phases), rest = seconds.rows[-1], seconds.unmarked[-1]
    figures = [Figure(key.rsplit("/", 1)[-1], key.rsplit("/", 1)[-1], value, "s", MEASURED,
                      formula="seconds per step in the phase (the window's mean)",
                      source=key).to_json() for key, value in phases.items()]
    if rest is not None:
        figures.append(Figure("unmarked", "unmarked", rest, "s", DERIVED,
                              formula="step time less the marked phases").to_json())
    return {"step": step, "seconds": figures,
            "note": report.no_mfu or "no MFU, so no waterfall of shares: the phases in seconds"}


RANK_KEYS = (
    ("mfu_rank_min", "lowest rank MFU", DERIVED), ("mfu_rank_mean", "mean rank MFU", DERIVED),
    ("mfu_rank_max", "highest rank MFU", DERIVED), ("slowest_rank", "slowest rank", MEASURED),
    ("step_time_rank_max", "slowest rank's step", MEASURED),
    ("step_time_rank_min", "fastest rank's step", MEASURED),
    ("straggler_rank", "straggler", MEASURED),
    ("straggler_lost", "lost to the straggler", DERIVED),
)


def ranks(report: Report, newest: Newest, run_ranks: Any) -> Dict[str, Any]:
    """Per-rank spread and the straggler (JSON); ``absent`` for one process."""
    from ._figure import key_meaning

    figures = [newest.figure(name, label, how, formula=key_meaning(name))
               for name, label, how in RANK_KEYS]
    out: Dict[str, Any] = {"figures": [f.to_json() for f in figures if f.value is not None]}
    if not out["figures"]:
        many = isinstance(run_ranks, int) and run_ranks > 1
        out["absent"] = (f"{run_ranks} ranks but no per-rank keys in the log (distributed=True "
                         f"aggregates them)" if many else
                         "one process: no per-rank spread (under torchrun every rank is "
                         "gathered at each logging step)")
    return out


def ledger(report: Report) -> Dict[str, Any]:
    """The job ledger (JSON): goodput, each badput bucket, job MFU, its runs
    and notes; ``absent`` with the reason."""
    data = report.panel("ledger")
    if data is None:
        why = next((m for m in report.missing if m.startswith("the job ledger")), None)
        return {"absent": why or "no job ledger: the log has no run records (a log from "
                                 "Tracker(log_path=...) of this version has them)"}
    figures = [Figure("goodput", "goodput", data.goodput, "fraction of job wall time",
                      DERIVED, formula="kept steps' time less their data phase / job wall "
                                       "time", source="ledger intervals of every run")]
    figures += [Figure(f"badput/{name}", LABELS.get(name, name), data.badput[name],
                       "fraction of job wall time", DERIVED, source="ledger intervals",
                       formula="what closes the sum to exactly 1" if name == "other" else
                       f"badput_s/{name} / job wall time") for name in BUCKETS]
    job_wall = Figure("job_wall_s", "job wall time", data.job_wall_s, "s", MEASURED,
                      formula="the first run's process start to the job's last record",
                      source="run records' process_start, the last record's time")
    job_mfu = Figure("job_mfu", "job MFU", data.job_mfu, "ratio", DERIVED,
                     formula="kept steps' model FLOPs / (the job's device-seconds x peak)",
                     absent=next((n for n in data.notes if n.startswith("job_mfu")), None))
    name, share = data.largest_loss()
    return {"figures": [f.to_json() for f in [job_wall, job_mfu, *figures]],
            "runs": [{"run": r.number, "wall_s": r.wall_s, "seconds": r.seconds}
                     for r in data.runs],
            "notes": data.notes, "largest": [name, share]}


def kernels(report: Report) -> Dict[str, Any]:
    """The newest profiled step's kernel classes (JSON)."""
    data = report.panel("kernels")
    if data is None:
        return {"absent": "no profiled step: Tracker(profile_steps=N) (or the integrations' "
                          "profile_steps=) breaks a step down by kernel class"}
    step, shares, breakdown = data.bars[-1]
    rows: List[Dict[str, Any]] = []
    for row in ROWS:
        if row not in shares:
            continue
        cells: Dict[str, Any] = {"class": KERNEL_LABELS[row], "share": shares[row]}
        if breakdown is not None:
            cells["time_s"] = breakdown.time_of(row)
            if row in breakdown.classes:
                cells["tflops"] = breakdown.tflops(row)
                cells["peak_share"] = breakdown.peak_share(row)
        rows.append(cells)
    return {"step": step, "rows": rows, "how": f"{MEASURED} (torch.profiler), FLOPs "
                                               f"{COUNTED}"}


def advice(report: Report) -> Dict[str, Any]:
    """What to change, from the drawn run's newest figures (JSON)."""
    run = report.runs[-1]
    found, needs = advise(evidence_of_run(run, report.prefix))
    return {"advice": [vars(a) for a in found], "needs": [vars(n) for n in needs]}
