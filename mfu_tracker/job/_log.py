"""The metrics log's writer: one JSON line per record, for ``mfu-tracker report``
and ``mfu-tracker goodput``.

``Tracker(log_path=...)`` (and through it ``MFUCallback(log_path=...)`` and
``MFUOptimizerWrapper(log_path=...)``) owns one :class:`MetricsLog`. The
tracker writes a run record when it is created, one metrics line per
non-empty ``metrics()`` and a run-end record when it closes (the record
kinds: :mod:`mfu_tracker.job._records`). A metrics line::

    {"step": 10, "time": 1763870000.123, "throughput/mfu": 0.41, ..., "ledger": {...}}

* ``step``: the global step, steps completed (``Tracker``: ``start_step`` +
  ``step()`` calls - 1; the Trainer: ``state.global_step``);
* ``time``: wall-clock seconds since the epoch (``time.time()``);
* ``rank`` / ``world_size``: only when a ``torch.distributed`` process group
  of more than one rank is up at the first write;
* then the metric dict, keys and values as returned (the keys of
  :mod:`mfu_tracker.timing._metrics`), and the job ledger's interval.

**One writer per process, rank 0 only.** Under ``torchrun`` only rank 0
writes (the rank of the default process group at the first write, else the
``RANK`` environment variable): a distributed tracker's figures are global and
the same on every rank, so one file holds the job; per-rank spread is in the
``mfu_rank_*`` keys. Other ranks never open the file.

**Crash-safe lines.** The file is opened at the first write (appending,
``O_APPEND``, parent directories created). Each record is encoded whole and
handed to the OS by one ``os.write`` of the complete line, newline included
(no buffer in between: every record is flushed as it is written), so a
process killed at any moment loses at most the record being written, and
another writer's line never lands inside one. A file whose last line was cut
short by a killed writer gets a newline before this run's first record, so
the cut line stays one line, which the readers skip and count
(:func:`~._records.read_log`). Nothing is fsync'ed: the OS holds every
record written; a power loss may lose the last ones.

**Never raises into training.** A failing open or write gives one
``RuntimeWarning`` and stops the logging; the metrics are still returned to
the caller.
"""
from __future__ import annotations

import json
import math
import os
import threading
import time
import warnings
from typing import Any, Mapping, Optional, Tuple, Union

from .._validate import check_log_path
from ..distributed._collective import process_group_initialized
from ._records import LEDGER

PathLike = Union[str, "os.PathLike[str]"]


def rank_world() -> Tuple[int, int]:
    """(rank, world size) of this process: the default process group's, else
    torchrun's environment, else (0, 1)."""
    if process_group_initialized():
        import torch.distributed as dist

        return dist.get_rank(), dist.get_world_size()
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def write_whole(fd: int, data: bytes) -> None:
    """``data`` to ``fd`` by one ``os.write`` (a regular file takes it whole);
    a short write -- a full disk, a signal -- is continued, never dropped."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _ends_a_line(fd: int) -> bool:
    """Whether the file is empty or its last byte is a newline."""
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def _number(value: Any) -> Any:
    """A JSON-safe value: finite floats as floats, anything else non-finite as
    None (inside objects too)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _number(v) for key, v in value.items()}
    return value


class MetricsLog:
    """Appends metric dicts to a JSONL file (see the module docstring)."""

    __slots__ = ("path", "lines", "_file", "_stopped", "_extra", "_owner", "_lock")

    def __init__(self, path: PathLike, owner: str = "Tracker") -> None:
        checked = check_log_path(path)
        assert checked is not None
        self.path: str = checked
        self.lines = 0                  # lines written
        self._file: Optional[int] = None   # the file descriptor, O_APPEND
        self._stopped: Optional[str] = None
        self._extra: dict = {}
        self._owner = owner
        self._lock = threading.Lock()   # one line at a time from any thread

    @property
    def active(self) -> bool:
        """False once logging stopped (a failure, another rank, ``close()``)."""
        return self._stopped is None

    def write(self, metrics: Mapping[str, Any], *, step: int,
              ledger: Optional[Mapping[str, Any]] = None) -> None:
        """Append ``metrics`` with ``step``, the time and the ledger's interval
        (when given); never raises."""
        if self._stopped is not None or not metrics:
            return
        extra = {} if ledger is None else {LEDGER: _number(ledger)}
        self._append(lambda: {"step": int(step), "time": time.time(), **self._extra,
                              **{k: _number(v) for k, v in metrics.items()}, **extra})

    def write_record(self, kind: str, fields: Mapping[str, Any]) -> None:
        """Append a ``{"record": kind, "time": ..., **fields}`` line (a run, a
        run end, a peak check: :mod:`._records`); never raises."""
        if self._stopped is not None:
            return
        self._append(lambda: {"record": kind, "time": time.time(), **_number(fields)})

    def _append(self, make: Any) -> None:
        with self._lock:
            try:
                fd = self._file
                if fd is None:
                    if self._stopped is not None:
                        return
                    fd = self._open()
                    if fd is None:
                        return
                line = (json.dumps(make(), allow_nan=False, default=str) + "\n").encode("utf-8")
                write_whole(fd, line)
                self.lines += 1
            except Exception as error:  # noqa: BLE001 -- never raise into training
                self._fail(f"writing {self.path!r} failed ({error!r})")

    def _open(self) -> Optional[int]:
        rank, world = rank_world()
        if rank != 0:
            self._stopped = f"rank {rank}: only rank 0 writes"
            return None
        if world > 1:
            self._extra = {"rank": rank, "world_size": world}
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _CLOEXEC, 0o666)
        try:
            if not _ends_a_line(fd):   # a killed writer's cut last line: end it first
                write_whole(fd, b"\n")
        except BaseException:
            os.close(fd)
            raise
        self._file = fd
        return fd

    def _fail(self, reason: str) -> None:
        self._stopped = reason
        warnings.warn(f"mfu_tracker: {self._owner}(log_path=...): {reason}; metrics logging "
                      f"stops (the metrics are still returned)", RuntimeWarning, stacklevel=5)
        self._close_file()

    def _close_file(self) -> None:
        fd, self._file = self._file, None
        if fd is not None:
            try:
                os.close(fd)
            except Exception:  # noqa: BLE001
                pass

    def close(self) -> None:
        """Close the file; later writes are dropped."""
        with self._lock:
            if self._stopped is None:
                self._stopped = "closed"
            self._close_file()

    def __del__(self) -> None:
        # The owner (a Tracker, a callback) is gone: close without a ResourceWarning.
        try:
            self._close_file()
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self) -> str:
        state = "active" if self._stopped is None else self._stopped
        return f"MetricsLog({self.path!r}, lines={self.lines}, {state})"
