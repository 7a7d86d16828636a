"""``mfu-tracker goodput LOG [--json OUT]``: the job ledger of a metrics log.

Reads every run that appended to ``LOG`` (``Tracker(log_path=...)``, the
integrations' ``log_path=``; records: :mod:`mfu_tracker.job._records`) and
prints, over the whole job (arithmetic: :mod:`mfu_tracker.job._ledger`):

* ``job_wall_s``: the first run's process start to the last record;
* ``goodput``: the kept steps' time less their data phase, over
  ``job_wall_s`` (``goodput_s`` in seconds);
* ``badput/<bucket>`` for startup, compile, checkpoint, eval, data,
  lost_progress, restart_gap and other -- with ``goodput`` they add up to
  exactly 1 (``badput_s/<bucket>`` in seconds);
* ``job_mfu``: the kept steps' model FLOPs over (the job's device-seconds x
  peak), restart gaps charged;
* one line per run, the notes (what was split or left out, and why), and one
  diagnosis line naming the largest loss.

``--json OUT`` writes the same figures (keys as printed, from the one table
:mod:`mfu_tracker.timing._metrics`), the runs and the notes to ``OUT``.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List

from ..job._intervals import BookIntervals
from ..job._ledger import BUCKETS, JobLedger, diagnosis, job_ledger, rank_of
from ..job._records import Log, LogError
from ..job._sample import KeepRuns
from ..job._stream import stream_log
from ..timing._metrics import format_metrics
from ._figures import seconds, shown
from ._flag_types import int_at_least
from ._log_notes import STRICT_HELP, skipped_lines, warn_cut

__all__: List[str] = []


def _diagnosis(log: Log, ledger: JobLedger) -> str:
    """The largest badput bucket, its share of the job, and the rank where it
    is concentrated when the log has per-rank figures for it."""
    name, share = ledger.largest_loss()
    records = [record for run in log.runs for record in run.metrics]  # what the reader kept
    return diagnosis({name: share}, "the job's wall time", rank_of(records, name))  # type: ignore[return-value]


def figures_json(log: Log, ledger: JobLedger) -> Dict[str, Any]:
    """The ``--json`` document."""
    return {
        **format_metrics(ledger.figures(), ""),
        "runs": [{"run": r.number, "run_id": r.run_id, "start_step": r.start_step,
                  "wall_s": r.wall_s, "device_s": r.device_s, "seconds": r.seconds}
                 for r in ledger.runs],
        "job": ledger.number,
        "notes": ledger.notes,
        "invalid": log.invalid,
        "skipped": log.skipped + ([log.cut] if log.cut else []),
        "diagnosis": _diagnosis(log, ledger),
    }


def text(log: Log, ledger: JobLedger) -> str:
    """What ``goodput`` prints: each figure rounded to what it means (``--json``
    has them exact)."""
    keys = format_metrics(ledger.figures(), "")
    lines = [f"{log.path}: {len(log.runs)} run(s)"]
    lines += [f"{key}={shown(key, value)}" for key, value in keys.items()]
    why = next((note for note in ledger.notes if note.startswith("job_mfu: ")), None)
    if ledger.job_mfu is None:
        lines.append(why or "job_mfu: not available")
    lines.append("runs (seconds: goodput, then each badput bucket):")
    for run in ledger.runs:
        cells = " ".join(f"{k}={seconds(run.seconds[k])}" for k in ("goodput", *BUCKETS))
        lines.append(f"  run={run.number} start_step={run.start_step} wall_s={seconds(run.wall_s)} "
                     f"{cells}")
    lines += [f"note: {note}" for note in ledger.notes if note != why]
    lines += [f"invalid: {what}" for what in log.invalid]
    lines += skipped_lines(log)
    lines.append(_diagnosis(log, ledger))
    return "\n".join(lines)


def read_goodput(path: str, strict: bool = False) -> Log:
    """``path`` read in one pass for the ledger: every run's intervals booked
    as they come, and of each run's lines only the first and newest of each
    set of keys (the newest per-rank loss, for the diagnosis)."""
    return stream_log(path, [BookIntervals(), KeepRuns("all", buckets=0, breakdowns=False)],
                      strict=strict)


def _cmd_goodput(args: argparse.Namespace) -> int:
    if not os.path.exists(args.log):
        raise ValueError(f"{args.log}: no such file")
    if os.path.isdir(args.log):
        raise ValueError(f"{args.log}: is a directory; give the JSONL log of log_path=")
    if args.json is not None and os.path.isdir(args.json):
        raise ValueError(f"--json {args.json!r} is a directory; give a file name")
    try:
        log = read_goodput(args.log, args.strict)
        warn_cut(log, "goodput")
        ledger = job_ledger(log, args.job)
    except LogError as error:
        raise ValueError(str(error)) from None
    print(text(log, ledger))
    if args.json is not None:
        parent = os.path.dirname(args.json)
        if parent:
            os.makedirs(parent, exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures_json(log, ledger), out, indent=1, allow_nan=False)
            out.write("\n")
        print(f"wrote {args.json}")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``goodput`` on the command line's subparsers."""
    parser = sub.add_parser("goodput", help="the job ledger of a metrics log: goodput, badput "
                            "(startup, compile, checkpoint, eval, data, lost progress, restart "
                            "gaps), one job MFU, over every run that appended to it")
    parser.add_argument("log", help="the JSONL log of Tracker(log_path=...) / log_path=")
    parser.add_argument("--json", default=None, metavar="OUT",
                        help="also write the figures, the runs and the notes to this JSON file")
    parser.add_argument("--job", type=int_at_least(1), default=None, metavar="N",
                        help="which job of the file (1 = the first; default: the last): a run "
                             "continues the job before it only when it resumes (start_step > 0 "
                             "or the same job id)")
    parser.add_argument("--strict", action="store_true", help=STRICT_HELP)
    parser.set_defaults(func=_cmd_goodput)
