"""The report's input: a JSONL metrics log or TensorBoard event files, as runs.

:func:`load` keeps every record (the API, small logs); :func:`load_streamed`
is what the commands read with: one pass (:func:`mfu_tracker.job.stream_log`)
that keeps only the runs ``--run`` chooses, a long run's lines downsampled
keeping each drawn key's extremes (:mod:`mfu_tracker.job._sample`), and
every run's ledger intervals booked (:mod:`mfu_tracker.job._intervals`), in
memory bounded by what is drawn."""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Tuple

from ...job._check import Layout
from ...job._intervals import BookIntervals
from ...job._records import Log, LogError, Run, invalid_reason
from ...job._sample import KeepRuns
from ...job._stream import Sink, read_log, stream_log
from ._model import (KERNEL_SHARE, LOST, MFU, PHASES, RANK_SPREAD, SLOWEST, STEP_TIME, TOKENS,
                     Record, ReportError)
from .panels.hardware import SERIES as HARDWARE_SERIES

__all__ = ["ReportError", "drawn_keys", "load", "load_streamed", "select_runs"]

#: The prefix HF Trainer's logging adds to training logs (``rewrite_logs``).
TRAINER_TAG_PREFIX = "train/"


def _is_event_file(path: str) -> bool:
    return "tfevents" in os.path.basename(path)


def load(path: str, strict: bool = False) -> Log:
    """The runs of ``path`` (a JSONL log, a TensorBoard directory or event
    file: one run), every record kept. A JSONL line that cannot be read is
    skipped and named (``strict``: refused)."""
    return _load(path, lambda: read_log(path, strict=strict))


def load_streamed(path: str, which: str = "last", strict: bool = False,
                  drawn: bool = True) -> Log:
    """The runs of ``path`` read in one pass, keeping what ``--run which``
    draws (module docstring). ``drawn``: the lines a picture needs (a long
    run downsampled) and every run's ledger intervals (the ledger panel);
    otherwise only the first and newest line of each set of keys, enough for
    the advice and the prefix. TensorBoard input is read whole."""
    sinks: List[Sink] = [KeepRuns(which, follows=drawn_keys)] if drawn else \
        [KeepRuns(which, buckets=0)]
    if drawn:
        sinks.append(BookIntervals())
    return _load(path, lambda: stream_log(path, sinks, strict=strict))


def _load(path: str, read: Callable[[], Log]) -> Log:
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file or directory")
    if os.path.isdir(path) or _is_event_file(path):
        log = _load_tensorboard(path)
    else:
        try:
            log = read()
        except LogError as error:
            raise ReportError(str(error)) from None
    if not any(run.logged for run in log.runs):
        if log.cut is not None:   # the only metrics line was the one a killed writer cut
            raise ReportError(f"{path}: no metrics in it but a cut line: {log.cut}")
        raise ReportError(f"{path}: no metrics in it (an empty file or no scalar events)")
    return log


#: The keys the panels draw (names without the prefix), and the families.
DRAWN_NAMES = frozenset((MFU, STEP_TIME, TOKENS, *RANK_SPREAD, SLOWEST,
                         *(name for _, name in HARDWARE_SERIES)))
DRAWN_FAMILIES = frozenset((LOST, PHASES, KERNEL_SHARE))


def _name(key: str) -> Optional[str]:
    """The drawn name of ``key`` (``{prefix}/name``, any prefix: a name or a
    family of :data:`DRAWN_NAMES` / :data:`DRAWN_FAMILIES`), else None."""
    parts = key.split("/")
    for i in range(len(parts)):
        if "/".join(parts[i:]) in DRAWN_NAMES:
            return "/".join(parts[i:])
        if len(parts) - i == 2 and parts[i] in DRAWN_FAMILIES:
            return parts[i]
    return None


def drawn_keys(layout: Layout) -> Tuple[str, ...]:
    """The keys of a set of keys whose values the report draws (their
    extremes are kept when a long run is downsampled): never tokens/s and
    the phases beside MFU and the waterfall (the panels draw those only
    without them), the waterfall only beside MFU (a bar needs both)."""
    names = {key: _name(key) for key in layout.keys}
    drawn = set(names.values())
    skip = {TOKENS} if MFU in drawn else set()
    if MFU in drawn and LOST in drawn:
        skip.add(PHASES)
    if MFU not in drawn:
        skip.add(LOST)
    return tuple(key for key, name in names.items() if name is not None and name not in skip)


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
    runs = [run for run in log.runs if run.logged]
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
    if not chosen[0].logged:
        raise ReportError(f"--run {which}: run {number} logged no metrics")
    return chosen
