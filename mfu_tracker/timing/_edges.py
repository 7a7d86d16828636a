"""Readers at window edges: what a tracker reads from the device each time
it logs, never per step.

A tracker holds one :class:`EdgeReaders`: the readers it was built with, in
order (today NVML telemetry, :mod:`._telemetry`; hardware counters and the
allocator's statistics are readers of the same shape). At each ``metrics()``
call -- a window edge -- the tracker asks them either for

* :meth:`EdgeReader.figures`: figures over the interval since the reader's
  previous reading, given the window's own figures (``achieved_flops_per_sec``,
  ``tokens_per_sec``, ...) for the ratios that need them -- the local
  ``metrics()`` dict; or
* :meth:`EdgeReader.reading`: the raw values this rank contributes to a
  distributed aggregation, which combines them across ranks.

A reader never raises (a failing read is its own one warning and missing
keys) and reads only when asked. Keys are those of the one key table
(:mod:`._metrics`).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Protocol, Tuple

from ._telemetry import Telemetry

__all__ = ["EdgeReader", "EdgeReaders", "TelemetryReader"]


class EdgeReader(Protocol):
    """One source read at window edges (see the module doc)."""

    def figures(self, window: Mapping[str, Any]) -> Dict[str, float]: ...

    def reading(self) -> Dict[str, float]: ...


class TelemetryReader:
    """NVML telemetry (:class:`Telemetry`) as a window-edge reader: power,
    energy per token, TFLOP/s per W, clocks, throttling."""

    __slots__ = ("telemetry",)

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def figures(self, window: Mapping[str, Any]) -> Dict[str, float]:
        return self.telemetry.figures(window.get("achieved_flops_per_sec"),
                                      window.get("tokens_per_sec"))

    def reading(self) -> Dict[str, float]:
        return self.telemetry.reading()


class EdgeReaders:
    """The readers a tracker holds, read in order; later readers' keys win."""

    __slots__ = ("_readers",)

    def __init__(self, readers: Iterable[Optional[EdgeReader]] = ()) -> None:
        self._readers: Tuple[EdgeReader, ...] = tuple(r for r in readers if r is not None)

    def __bool__(self) -> bool:
        return bool(self._readers)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._readers)

    def figures(self, window: Mapping[str, Any]) -> Dict[str, float]:
        """Every reader's figures for the local ``metrics()`` dict."""
        out: Dict[str, float] = {}
        for reader in self._readers:
            out.update(reader.figures(window))
        return out

    def reading(self) -> Dict[str, float]:
        """Every reader's values for this rank's row of an aggregation."""
        out: Dict[str, float] = {}
        for reader in self._readers:
            out.update(reader.reading())
        return out

    def telemetry(self) -> Optional[Telemetry]:
        """The NVML telemetry among the readers, if any."""
        for reader in self._readers:
            if isinstance(reader, TelemetryReader):
                return reader.telemetry
        return None
