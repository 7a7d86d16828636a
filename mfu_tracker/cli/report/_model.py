"""What every panel sees: the :class:`Report` (the runs drawn, their records,
the peak, the notes) and the metric keys the report reads, by the one
table's names (:mod:`mfu_tracker.timing._metrics`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...job._records import Log, Run
from ...timing._metrics import FAMILIES, KEYS, metric_key

Record = Dict[str, Any]


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
STEP_TIME = _key_name("step_time_s")
TOKENS = _key_name("tokens_per_sec")
LOST = _family_name("mfu_lost")
PHASES = _family_name("phase_s")
KERNEL_SHARE = _family_name("kernel_share")
RANK_SPREAD = (_key_name("mfu_rank_min"), _key_name("mfu_rank_mean"), _key_name("mfu_rank_max"))
SLOWEST = _key_name("slowest_rank")


def number(value: Any) -> Optional[float]:
    """``value`` as a finite float, else None (bools, strings, NaN, inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def by_run(points: Sequence[Tuple[int, float]], runs: Sequence[int]) -> List[Tuple[int, Any]]:
    """(run number, its points) in order: one line per run, never one zigzag."""
    return [(n, [p for p, r in zip(points, runs) if r == n]) for n in dict.fromkeys(runs)]


@dataclass
class Report:
    """The plan of the picture: the runs drawn and their metrics records (in
    drawing order, each with its run number), the peak and its caveat, the
    panels' data by panel name (:attr:`data`; a panel with nothing to draw
    has none), what the input lacks (:attr:`missing`) and what it held but
    cannot be drawn (:attr:`invalid`)."""

    prefix: str
    log: Log
    runs: List[Run]
    points: List[Tuple[Record, int]] = field(default_factory=list)   # (record, run number)
    missing: List[str] = field(default_factory=list)
    invalid: List[str] = field(default_factory=list)
    run_starts: List[Tuple[int, int]] = field(default_factory=list)  # (first step, run number)
    peak: Optional[str] = None                                      # "989.4 TFLOP/s ... (datasheet)"
    caveat: Optional[str] = None
    impossible: List[Tuple[str, str]] = field(default_factory=list)  # MFU > 1, share < 0: (label, why)
    no_mfu: Optional[str] = None                                    # why there is no MFU, how to get it
    diagnosis: Optional[str] = None
    data: Dict[str, Any] = field(default_factory=dict)
    steps: List[int] = field(default_factory=list)                  # the x axis: logged steps drawn
    title: str = ""                                                 # the picture's title

    @property
    def runs_total(self) -> int:
        return len(self.log.runs)

    @property
    def runs_drawn(self) -> List[int]:
        return [run.number for run in self.runs]

    @property
    def records(self) -> List[Record]:
        return [record for record, _ in self.points]

    def key(self, name: str) -> str:
        """``{prefix}/name``."""
        return metric_key(self.prefix, name)

    @property
    def mfu_key(self) -> str:
        return self.key(MFU)

    def panel(self, name: str) -> Any:
        """The data of panel ``name`` (None: the panel has nothing to draw)."""
        return self.data.get(name)
