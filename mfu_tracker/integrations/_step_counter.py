"""The FLOP counter of one counted optimizer step (the step-FLOPs policy's
"counted" source, :mod:`._step_flops`): started and stopped around each region
of the step that runs the model; never raises into the loop (a failure is
one warning through the policy's ``warn_once`` and an uncounted step).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from ..timing._totals import StepSums
from ._step_record import Flops, dtype_shares

#: No FLOPs counted yet.
_NONE_COUNTED = Flops(StepSums(), 0.0)


class StepCounter:
    """The FLOP counter of one counted optimizer step: started and stopped
    around each region of the step that runs the model (a block, a closure,
    all its micro-batches); its totals cover them all."""

    __slots__ = ("_policy", "_counter", "_active", "_before", "ran", "failed")

    def __init__(self, policy: Any) -> None:
        self._policy = policy
        self._counter: Any = None
        self._active = False
        self._before: Flops = _NONE_COUNTED
        self.ran = False      # a region was counted to its end
        self.failed = False   # a region could not be counted: the step is not counted

    def start(self) -> None:
        """Count from here (never raises: a failure warns once)."""
        if self._active or self.failed:
            return
        try:
            if self._counter is None:
                from ..flops.counter import (
                    FlopCounter,  # lazy: the counter loads its extension
                )

                # the first counted step audits what the count does not cover
                self._counter = FlopCounter(causal_attention=self._policy.causal_attention,
                                            modules=False, audit=not self._policy.audited)
            self._before = self.totals()
            self._counter.__enter__()
        except Exception as error:  # noqa: BLE001 -- never raise into the loop
            self.failed = True
            self._policy.warn_once("counter", f"the FLOP counter is unavailable ({error!r}); "
                                   "FLOPs of such steps are estimated")
            return
        self._active = True

    def stop(self) -> Optional[Flops]:
        """Stop counting; the raw FLOPs of the region since :meth:`start`
        (None when it was not counted). Ops that could not be counted warn
        once per run."""
        if not self._active:
            return None
        self._active = False
        try:
            problem = self._counter.stop(warn=False)
            after = self.totals()
            whole = self._counter.half_warning()
        except Exception as error:  # noqa: BLE001
            self.failed = True
            self._policy.warn_once("counter", f"FLOP counting failed ({error!r}); FLOPs of such "
                                   "steps are estimated")
            return None
        if problem is not None:  # every counted step would repeat it: once per run
            self._policy.warn_once("uncounted", f"FlopCounter: {problem}; the MFU of such steps "
                                   "is low (not warned again)")
        if whole is not None:  # causal_attention="half" over attention it could not halve
            self._policy.warn_once("half", f"FlopCounter: {whole} (not warned again)")
        self.ran = True
        return after.minus(self._before)

    def warn_audit(self) -> None:
        """One warning per run naming the FLOP-heavy ops the audited step
        ran without counting them (FlopCounter.audit_warning)."""
        heavy = self._counter.audit_warning() if self._counter is not None else None
        if heavy is not None:
            self._policy.warn_once("audit", f"FlopCounter (first counted step): {heavy}")

    def shares(self) -> Optional[Dict[str, float]]:
        """Each dtype's share of the model FLOPs counted so far."""
        c = self._counter
        if c is None:
            return None
        return dtype_shares(c.flops_by_dtype)

    def totals(self) -> Flops:
        """The raw FLOPs counted so far: every kind of the step record the
        counter counts (model, executed, over-compute), and the forward."""
        c = self._counter
        if c is None:
            return _NONE_COUNTED
        return Flops(StepSums.read(c), float(c.forward_flops))
