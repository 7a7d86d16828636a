"""``mfu-tracker passport LOG``: the compute section of a model card, from a
metrics log, as Markdown and as JSON.

One job of the log (the last by default; :mod:`mfu_tracker.job._jobs`), read
in one pass (:func:`mfu_tracker.job.stream_log`). Each figure names the
records and keys it came from and its formula (the JSON's ``from`` and
``formula``):

* **hardware**: the runs' ``device`` (the peak's device), ``devices``,
  ``ranks``, ``dtype`` and ``host`` (run records);
* **device-hours** (GPU-hours on GPUs): the job's device-seconds / 3600 --
  each run's devices x the time charged to them, from the previous run's
  last record (the first run: its process start) to its own last record,
  restart gaps included (:mod:`mfu_tracker.job._ledger`, ``device_s``);
* **model FLOPs**: the kept steps' model FLOPs, summed over the ledger
  intervals (steps re-done after a restart counted once);
* **MFU**: ``job_mfu`` (those FLOPs / (device-seconds x peak)) and the last
  window's ``{prefix}/mfu`` (its line), with the convention (ours, or the
  one the run record names) and the denominator (peak per device x devices,
  its device, dtype and source);
* **goodput**: the job ledger's;
* **energy**, where measured: the sum over metrics lines of ``power_w``
  (the mean board power since the previous reading, NVML; the job's sum
  over ranks) x the seconds since the run's previous metrics line (the
  first: since its run record, when the tracker took its first reading);
  absent without ``power_w``.

The arithmetic of the ledger figures is :func:`mfu_tracker.job._ledger.job_ledger`'s;
this module adds only the sums it names.
"""
from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

from .._validate import check_int
from ..job._check import Layout
from ..job._intervals import BookIntervals
from ..job._jobs import jobs
from ..job._ledger import JobLedger, job_ledger
from ..job._records import Log, LogError, Run
from ..job._sample import KeepRuns
from ..job._stream import Sink, stream_log
from ..timing._metrics import metric_key
from ._flag_types import int_at_least
from ._log_notes import STRICT_HELP, warn_cut
from .report._model import number
from .report._plan import find_prefix

__all__ = ["passport", "passport_of_log", "read_passport"]

#: The power key's name in the metric table (mfu_tracker.timing._metrics).
POWER = "power_w"


class EnergySum(Sink):
    """Each run's energy: power_w x the seconds since its previous reading,
    summed over its metrics lines (module docstring), and how many lines
    gave it."""

    def __init__(self) -> None:
        self.joules: Dict[int, float] = {}
        self.lines: Dict[int, List[int]] = {}      # run -> [lines with power, metrics lines]
        self._previous: Dict[int, Optional[float]] = {}
        self._keys: Dict[int, Optional[str]] = {}

    def on_run(self, run: Run) -> None:
        self._previous[run.number] = number(run.get("time"))
        self.joules[run.number] = 0.0
        self.lines[run.number] = [0, 0]

    def _key(self, layout: Layout) -> Optional[str]:
        found = layout.memo.get(EnergySum)
        if found is None:
            found = next((k for k in layout.keys if k == POWER or k.endswith("/" + POWER)), "")
            layout.memo[EnergySum] = found
        return found or None

    def on_metrics(self, run: Run, record: Dict[str, Any], layout: Layout) -> None:
        when, key = number(record.get("time")), self._key(layout)
        previous = self._previous.get(run.number)
        counts = self.lines.setdefault(run.number, [0, 0])
        counts[1] += 1
        power = None if key is None else number(record.get(key))
        if power is not None and when is not None and previous is not None and when >= previous:
            self.joules[run.number] = self.joules.get(run.number, 0.0) + power * (when - previous)
            counts[0] += 1
        if when is not None:
            self._previous[run.number] = when


def read_passport(path: str, strict: bool = False) -> Tuple[Log, EnergySum]:
    """``path`` read in one pass: every run's ledger intervals booked, the
    newest line of each set of keys, the energy sums."""
    energy = EnergySum()
    log = stream_log(path, [BookIntervals(), KeepRuns("all", buckets=0, breakdowns=False),
                            energy], strict=strict)
    return log, energy


def _fig(value: Any, unit: str, source: str, formula: str = "") -> Dict[str, Any]:
    out = {"value": value, "unit": unit, "from": source}
    if formula:
        out["formula"] = formula
    return out


def _hardware(runs: List[Run]) -> Dict[str, Any]:
    lines = ", ".join(str(r.line) for r in runs)
    devices = sorted({str(r.get("device")) for r in runs if r.get("device")})
    counts = sorted({int(r.get("devices")) for r in runs if number(r.get("devices"))})
    return {
        "device": _fig(devices or None, "", f"run records (lines {lines}): device"),
        "devices": _fig(counts or None, "devices", f"run records (lines {lines}): devices",
                        "ranks x num_gpus"),
        "ranks": _fig(sorted({r.get("ranks") for r in runs if r.get("ranks")}) or None,
                      "processes", f"run records (lines {lines}): ranks"),
        "dtype": _fig(sorted({str(r.get("dtype")) for r in runs if r.get("dtype")}) or None,
                      "", f"run records (lines {lines}): dtype"),
        "hosts": _fig(sorted({str(r.get("host")) for r in runs if r.get("host")}) or None, "",
                      f"run records (lines {lines}): host (rank 0's)"),
    }


def _last_mfu(runs: List[Run]) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The newest line with MFU among the job's runs (its record), and the prefix."""
    for run in reversed(runs):
        records = sorted(run.metrics, key=lambda r: r["_line"])
        prefix = find_prefix(records)
        if prefix is None:
            continue
        key = metric_key(prefix, "mfu")
        for record in reversed(records):
            if number(record.get(key)) is not None:
                return record, prefix
    return None, None


def _mfu(runs: List[Run], ledger: JobLedger) -> Dict[str, Any]:
    last = runs[-1]
    peak, devices = number(last.get("peak_tflops")), number(last.get("devices"))
    model = last.get("model") if isinstance(last.get("model"), dict) else {}
    record, prefix = _last_mfu(runs)
    out = {
        "job_mfu": _fig(ledger.job_mfu, "ratio", "the ledger intervals of every run, the run "
                        "records' devices and peak_tflops", "kept steps' model FLOPs / (the "
                        "job's device-seconds x peak per device)"),
        "convention": _fig(model.get("convention") or "mfu_tracker (ours)", "",
                           f"run record (line {last.line}): model.convention (absent: ours)"),
        "flops_obtained": _fig(model.get("flops"), "", f"run record (line {last.line}): "
                               f"model.flops (counted, declared or analytic)"),
        "peak_per_device": _fig(peak, "TFLOP/s", f"run record (line {last.line}): peak_tflops"),
        "peak_source": _fig(last.get("peak_source"), "", f"run record (line {last.line}): "
                            f"peak_source"),
        "denominator": _fig(None if peak is None or devices is None else peak * devices,
                            "TFLOP/s", f"run record (line {last.line}): peak_tflops x devices",
                            "peak per device x devices"),
        "last_window_mfu": _fig(None, "ratio", "no metrics line with MFU"),
    }
    if record is not None:
        key = metric_key(prefix or "", "mfu")
        out["last_window_mfu"] = _fig(record[key], "ratio", f"line {record['_line']} (step "
                                      f"{record['step']}): {key}", "the tracker's window MFU")
    return out


def _energy(runs: List[Run], energy: EnergySum) -> Dict[str, Any]:
    measured = sum(energy.lines.get(r.number, [0, 0])[0] for r in runs)
    total = sum(energy.lines.get(r.number, [0, 0])[1] for r in runs)
    source = (f"every metrics line of runs {', '.join(str(r.number) for r in runs)}: "
              f"power_w x (its time - the time of the run's previous metrics line, or of "
              f"its run record)")
    if not measured:
        return {"energy_j": _fig(None, "J", source + ": no line holds power_w (NVML "
                                 "telemetry: a CUDA device with telemetry on)"),
                "lines_with_power": _fig(0, "lines", source)}
    joules = math.fsum(energy.joules.get(r.number, 0.0) for r in runs)
    return {"energy_j": _fig(joules, "J", source, "sum of power_w x seconds since the "
                             "previous record"),
            "energy_kwh": _fig(joules / 3.6e6, "kWh", "energy_j / 3.6e6"),
            "lines_with_power": _fig(measured, "lines", f"{measured} of {total} metrics lines "
                                     f"hold power_w")}


def passport_of_log(log: Log, energy: EnergySum, job: Optional[int] = None
                    ) -> Tuple[str, Dict[str, Any]]:
    """The passport of ``log``'s job ``job`` (default: the last): (Markdown, data)."""
    ledger = job_ledger(log, job)
    runs = next(j.runs for j in jobs(log) if j.number == ledger.number)
    device_s = [r.device_s for r in ledger.runs]
    hours = None if any(s is None for s in device_s) else math.fsum(device_s) / 3600  # type: ignore[arg-type]
    data: Dict[str, Any] = {
        "log": log.path, "job": ledger.number, "job_id": runs[-1].get("job"),
        "runs": [r.number for r in runs],
        "hardware": _hardware(runs),
        "device_hours": _fig(hours, "device-hours", "the run records' devices and "
                             "process_start, each run's last record's time",
                             "sum over runs of devices x (its last record - the previous "
                             "run's last record, the first run's process start) / 3600"),
        "job_wall_s": _fig(ledger.job_wall_s, "s", "the first run's process_start to the last "
                           "record's time"),
        "model_flops": _fig(ledger.model_flops, "FLOP", "the ledger intervals' model_flops "
                            "(and untimed_flops) of the kept steps",
                            "sum over the kept steps (steps re-done after a restart once)"),
        "mfu": _mfu(runs, ledger),
        "goodput": _fig(ledger.goodput, "fraction of job wall time", "the ledger intervals",
                        "kept steps' time less their data phase / job wall time"),
        "energy": _energy(runs, energy),
        "version": runs[-1].get("version"),
        "notes": ledger.notes,
    }
    from ._passport_text import markdown

    return markdown(data), data


def passport(path: str, job: Optional[int] = None, strict: bool = False
             ) -> Tuple[str, Dict[str, Any]]:
    """The passport of the metrics log ``path``: (Markdown, data). LogError
    for a log without run records; TypeError / ValueError naming a bad
    argument."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    if job is not None:
        check_int(job, "job", 1)
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, not {type(strict).__name__}")
    log, energy = read_passport(os.fspath(path), strict)
    warn_cut(log, "passport")
    return passport_of_log(log, energy, job)


def _cmd_passport(args: argparse.Namespace) -> int:
    if not os.path.isfile(args.log):
        raise ValueError(f"{args.log}: no such file; give the JSONL log of log_path=")
    try:
        text, data = passport(args.log, args.job, args.strict)
    except LogError as error:
        raise ValueError(str(error)) from None
    print(text)
    for out, content in ((args.out, text + "\n"),
                         (args.json, json.dumps(data, indent=1, allow_nan=False) + "\n")):
        if out is not None:
            parent = os.path.dirname(out)
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(out, "w", encoding="utf-8") as f:
                f.write(content)
            print(f"wrote {out}")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``passport`` on the command line's subparsers."""
    parser = sub.add_parser("passport", help="the compute section of a model card from a "
                            "metrics log (hardware, device-hours, model FLOPs, MFU, goodput, "
                            "energy), Markdown and JSON, each figure traced to the log")
    parser.add_argument("log", help="the JSONL log of Tracker(log_path=...) / mfu-tracker run")
    parser.add_argument("--out", default=None, metavar="CARD.md", help="also write the Markdown")
    parser.add_argument("--json", default=None, metavar="OUT",
                        help="also write the figures with the records each came from")
    parser.add_argument("--job", type=int_at_least(1), default=None, metavar="N",
                        help="which job of the file (1 = the first; default: the last)")
    parser.add_argument("--strict", action="store_true", help=STRICT_HELP)
    parser.set_defaults(func=_cmd_passport)
