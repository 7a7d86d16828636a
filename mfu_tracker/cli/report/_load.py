"""The report's input: a JSONL metrics log or TensorBoard event files, as runs."""
from __future__ import annotations

import os
from typing import Dict, List

from ...job._records import Log, LogError, Run, invalid_reason, read_log
from ._model import Record, ReportError

__all__ = ["ReportError", "load", "select_runs"]

#: The prefix HF Trainer's logging adds to training logs (``rewrite_logs``).
TRAINER_TAG_PREFIX = "train/"


def _is_event_file(path: str) -> bool:
    return "tfevents" in os.path.basename(path)


def load(path: str, strict: bool = False) -> Log:
    """The runs of ``path`` (a JSONL log, a TensorBoard directory or event
    file: one run), each run's metrics records sorted by step. A JSONL line
    that cannot be read is skipped and named (``strict``: refused)."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file or directory")
    if os.path.isdir(path) or _is_event_file(path):
        log = _load_tensorboard(path)
    else:
        try:
            log = read_log(path, strict=strict)
        except LogError as error:
            raise ReportError(str(error)) from None
    if not any(run.metrics for run in log.runs):
        raise ReportError(f"{path}: no metrics in it (an empty file or no scalar events)")
    return log


def _event_files(path: str) -> List[str]:
    if not os.path.isdir(path):
        return [path]
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(path)
                   for name in names if _is_event_file(name))
    if not files:
        raise ReportError(f"{path}: no TensorBoard event files (*tfevents*) in it")
    return files


def _load_tensorboard(path: str) -> Log:
    try:
        from tensorboard.backend.event_processing.event_accumulator import (
            SCALARS,
            EventAccumulator,
        )
    except ImportError:
        raise ReportError("reading TensorBoard event files needs the tensorboard package "
                          "(pip install tensorboard)") from None
    by_step: Dict[int, Record] = {}
    invalid: List[str] = []
    for name in _event_files(path):
        events = EventAccumulator(name, size_guidance={SCALARS: 0})
        try:
            events.Reload()
        except Exception as error:  # noqa: BLE001 -- a corrupt file: say which
            raise ReportError(f"{name}: not a readable TensorBoard event file ({error})") from None
        for tag in events.Tags().get(SCALARS, []):
            key = tag[len(TRAINER_TAG_PREFIX):] if tag.startswith(TRAINER_TAG_PREFIX) else tag
            for event in events.Scalars(tag):
                reason = invalid_reason(key, float(event.value))
                if reason is not None:
                    invalid.append(f"{name}: step {event.step}: {key}={event.value!r}: {reason}; "
                                   f"not drawn")
                    continue
                by_step.setdefault(int(event.step), {"step": int(event.step)})[key] = float(event.value)
    run = Run(number=1, record=None, line=0, metrics=sorted(by_step.values(), key=lambda r: r["step"]))
    return Log(path=path, runs=[run], invalid=invalid)


def select_runs(log: Log, which: str) -> List[Run]:
    """The runs ``--run`` asks for: "last" (default), "all" or a number N."""
    runs = [run for run in log.runs if run.metrics]
    if which == "last":
        return runs[-1:]
    if which == "all":
        return runs
    try:
        number = int(which)
    except ValueError:
        number = 0
    chosen = [run for run in log.runs if run.number == number]
    if not chosen:
        raise ReportError(f"--run {which!r}: give 'all' or a run number 1..{len(log.runs)} "
                          f"(the file holds {len(log.runs)} run(s))")
    if not chosen[0].metrics:
        raise ReportError(f"--run {which}: run {number} logged no metrics")
    return chosen
