"""The self-check of every MFU: the arithmetic against what the hardware did.

MFU is arithmetic: counted model FLOPs over a datasheet peak and a clock.
NVML's GPM counter ``hw_tensor_active`` is the share of the window the tensor
pipes were busy. A busy cycle can do at most the peak's work per cycle at the
datasheet clock (the peak *is* that rate), so with a tensor-core dtype::

    mfu <= hfu <= tensor_active x (SM clock / the datasheet's boost clock) <= tensor_active

``hw/mfu_consistency`` = mfu / tensor_active; 1 is the ceiling, a dense GEMM
at full activity reads the clock ratio times its per-cycle efficiency (about
0.7 - 0.9 on an H100), a run with activation recompute about 3/4 of that.

**Thresholds** (the arithmetic above, with what the two measurements cannot
see):

* *MFU above the hardware*: ``mfu > tensor_active x (1 + HIGH_MARGIN +
  2 x GPM_REFRESH_S / window_s)``. ``HIGH_MARGIN`` = 0.10 covers the step
  window MFU is formed over not being the counters' interval (MFU covers the
  tracker's last ``window`` steps, the counters the time since the previous
  reading) in a steady run; the last term is the counters' edge uncertainty:
  NVML refreshes them every ``GPM_REFRESH_S`` = 0.1 s, so each of the two
  edges of a ``window_s`` interval is known to 0.1 s (2% at a 10 s window,
  20% at 1 s). Above it the count or the peak is wrong: FLOPs counted twice,
  or by a convention that counts work the kernels skip (causal attention
  counted in full: the default convention; a half-precision model counted
  as fp8 work), or a peak too low (a wrong table row, another dtype's peak,
  a MIG slice given the whole GPU's share).
* *Tensor pipes busy far beyond MFU*: ``mfu < LOW_RATIO x tensor_active``
  with ``tensor_active >= LOW_MIN_ACTIVE``. ``LOW_RATIO`` = 0.5: the pipes did
  at least twice the work MFU books -- beyond the clock ratio (>= 0.8 under
  sustained load on current parts) times a good GEMM's per-cycle efficiency
  (>= 0.7) times the 3/4 that full activation recompute leaves (0.8 x 0.7 x
  0.75 = 0.42 is the usual floor of a healthy, recomputing run; 0.5 leaves
  a healthy run without recompute, >= 0.56, unflagged). The warning says
  where the work went: recompute (when ``hfu`` is known and brings the ratio
  back over ``LOW_RATIO``), over-compute, or kernels below peak per busy
  cycle (small or skinny GEMMs, pipes waiting on memory, a clock held down --
  ``clock_ratio`` when known -- or a peak above the device's dense figure: a
  sparse figure).

Both are checked only for tensor-core dtypes (:data:`TENSOR_DTYPES`): fp32
and fp64 math runs outside the tensor pipes. Each direction warns once per
tracker. The checks read figures the tracker already has: no extra reading.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, Mapping, Optional

#: Dtypes whose peak is the tensor pipes'.
TENSOR_DTYPES = frozenset({"tf32", "bf16", "fp16", "fp8", "int8", "fp4"})
#: NVML's GPM sample refresh (nvml.h: nvmlGpmSampleGet), seconds.
GPM_REFRESH_S = 0.1
#: MFU may exceed tensor_active by this share (plus the edge term) before it
#: is called clearly above the hardware.
HIGH_MARGIN = 0.10
#: MFU below this share of tensor_active: the pipes were busy far beyond it.
LOW_RATIO = 0.5
#: ... checked only when the pipes were busy at least this share of the window.
LOW_MIN_ACTIVE = 0.10


def mfu_consistency(mfu: Optional[float], tensor_active: Optional[float]) -> Optional[float]:
    """mfu / tensor_active; None when either is unknown or the pipes were idle."""
    if mfu is None or tensor_active is None or not tensor_active > 0:
        return None
    return mfu / tensor_active


def high_limit(window_s: Optional[float]) -> float:
    """The largest mfu / tensor_active not called clearly above the hardware,
    for a counter interval of ``window_s`` seconds."""
    edge = 2.0 * GPM_REFRESH_S / window_s if window_s and window_s > 0 else 2.0
    return 1.0 + HIGH_MARGIN + edge


def verdict(figures: Mapping[str, Any]) -> Optional[str]:
    """"high", "low" or None for a window's figures (``mfu``, ``hw_tensor_active``,
    ``hw_window_s``, ``dtype``), by the thresholds of the module doc."""
    mfu, active = figures.get("mfu"), figures.get("hw_tensor_active")
    if figures.get("dtype") not in TENSOR_DTYPES or mfu is None or active is None:
        return None
    if mfu > active * high_limit(figures.get("hw_window_s")):
        return "high"
    if active >= LOW_MIN_ACTIVE and mfu < LOW_RATIO * active:
        return "low"
    return None


def _high_message(f: Mapping[str, Any]) -> str:
    return (f"MFU {f['mfu']:.3f} is clearly above what the tensor pipes did (busy "
            f"{f['hw_tensor_active']:.3f} of the window; mfu / tensor_active "
            f"{f['mfu'] / max(f['hw_tensor_active'], 1e-12):.2f}, above "
            f"{high_limit(f.get('hw_window_s')):.2f}): the FLOP count is too high (counted "
            f"twice, or by a convention counting work the kernels skip, e.g. causal attention "
            f"counted in full) or the peak is too low (a wrong table row, another dtype's "
            f"peak); check the model FLOPs and the peak the report prints")


def _low_message(f: Mapping[str, Any]) -> str:
    mfu, active, hfu = f["mfu"], f["hw_tensor_active"], f.get("hfu")
    head = (f"the tensor pipes were busy {active:.3f} of the window, far beyond MFU "
            f"{mfu:.3f} (mfu / tensor_active {mfu / active:.2f} < {LOW_RATIO}): ")
    if hfu is not None and hfu >= LOW_RATIO * active:
        return head + (f"recompute: HFU {hfu:.3f} (activation or attention recompute runs "
                       f"on the pipes but is not model work)")
    over = f.get("overcompute")
    clock = f.get("clock_ratio")
    parts = ["kernels running below peak per busy cycle (small or skinny GEMMs, tensor "
             "pipes waiting on memory"
             + (f", the SM clock at {clock:.2f} of its maximum" if clock is not None else "")
             + ")"]
    if over:
        parts.append(f"over-compute ({over:.3f} of the peak: work beyond the model's)")
    parts.append("or a peak above the device's dense figure (a sparse figure)")
    return head + "; ".join(parts)


class SelfCheck:
    """The check of one tracker's windows: ``hw_mfu_consistency`` and one
    warning per direction (module doc)."""

    __slots__ = ("_what", "_warned")

    def __init__(self, what: str) -> None:
        self._what = what
        self._warned: set = set()

    def figures(self, figures: Mapping[str, Any]) -> Dict[str, float]:
        """``hw_mfu_consistency`` of a window (tensor-core dtypes only), after
        warning once per direction when :func:`verdict` says so."""
        if figures.get("dtype") not in TENSOR_DTYPES:
            return {}
        found = verdict(figures)
        if found is not None and found not in self._warned:
            self._warned.add(found)
            message = _high_message(figures) if found == "high" else _low_message(figures)
            warnings.warn(f"mfu_tracker: {self._what}: {message}", RuntimeWarning, stacklevel=5)
        ratio = mfu_consistency(figures.get("mfu"), figures.get("hw_tensor_active"))
        return {} if ratio is None else {"hw_mfu_consistency": ratio}
