"""The roles of a post-training step, timed on one tracker: :class:`Roles`.

An RL step runs several jobs on the same model -- generating (``rollout``),
scoring (``reference``, ``reward``), training (``learner``), copying the
weights to the generator (``weight_sync``) -- the roles declared once in the
C core (``_C.ROLES``). :class:`Roles` times each role on the host clock, takes
the work each did (model FLOPs, bytes, tokens) and closes the tracker's step
with them as fields of the step record, with the step's wait: the seconds no
role ran. Nothing is kept here between steps: the record carries it all, and
the window's figures (``role/<name>/...``, ``wait_ratio``,
``mfu_end_to_end``, the waterfall's ``wait``) are formed from the record.

Both layouts are the same code: colocated, one tracker times every role on
the devices they share (the wait: reward on the host, scheduling); in a
disaggregated layout each pool's process has its own tracker and times its
own roles (the wait: that pool blocked on the other). Conventions:
``docs/post-training.md``. Units: FLOPs, bytes, tokens, seconds.
"""
from __future__ import annotations

import math
import time
import warnings
from typing import Any, Callable, Dict, Iterator, Optional
from contextlib import contextmanager

from .._validate import check_optional_number
from ..timing._roles import ROLES

__all__ = ["Roles", "RoleRun"]

#: Roles that do no model FLOPs by definition: their FLOPs count 0 unless given.
_NO_FLOPS = ("weight_sync",)


class RoleRun:
    """One role's work in the step being timed: :meth:`add` what it did."""

    __slots__ = ("name", "flops", "bytes", "tokens", "seconds")

    def __init__(self, name: str) -> None:
        if name not in ROLES:
            raise ValueError(f"RoleRun: name must be one of {', '.join(ROLES)}, not {name!r}")
        self.name = name
        self.flops: Optional[float] = 0.0 if name in _NO_FLOPS else None
        self.bytes: Optional[float] = None
        self.tokens: Optional[float] = None
        self.seconds = 0.0

    def add(self, *, flops: Optional[float] = None, bytes: Optional[float] = None,
            tokens: Optional[float] = None) -> "RoleRun":
        """Add the role's model FLOPs, bytes read and written and tokens
        (None: not known). A bad one (negative, NaN, not a number) never
        stops the run: one warning, and the field is unknown for this step.
        Returns self."""
        for name, value in (("flops", flops), ("bytes", bytes), ("tokens", tokens)):
            try:
                value = check_optional_number(value, f"{self.name} {name}", 0)
            except (TypeError, ValueError) as exc:
                warnings.warn(f"mfu_tracker: Roles: {exc}; the figures using it are left out",
                              RuntimeWarning, stacklevel=3)
                value = math.nan
            if value is not None:
                held = getattr(self, name)
                setattr(self, name, value if held is None else held + value)
        return self


def _synchronizer(clock: str) -> Optional[Callable[[], None]]:
    """A role's edge on a GPU clock waits for the device (a role's end is a
    host sync point in every RL loop: its outputs are read on the host)."""
    if clock not in ("cuda", "hip"):
        return None
    import torch
    return torch.cuda.synchronize


class Roles:
    """Times a post-training step's roles on ``tracker`` (a :class:`Tracker`).

    ::

        roles = Roles(tracker)
        roles.start()                          # the first boundary
        for batch in loader:
            with roles.role("rollout") as run:
                with GenerationCounter(model) as gen:
                    out = model.generate(...)
                run.add(flops=gen.model_flops, bytes=..., tokens=gen.generated_tokens)
            with roles.role("learner") as run:
                ...
                run.add(flops=counted_step_flops, tokens=n)
            roles.step()                       # closes the tracker's step
            roles.metrics()                    # role/<name>/mfu, wait_ratio, ...

    A role's seconds are host seconds between its edges (on a GPU clock
    each edge waits for the device); a role may run several times a step
    (its seconds and work add up), never inside another role. The step's
    wait is its host seconds from boundary to boundary less the roles'
    (less the time inside :meth:`metrics`, which the tracker leaves out of
    the step too).
    """

    def __init__(self, tracker: Any) -> None:
        from ._tracker import Tracker

        if not isinstance(tracker, Tracker):
            raise TypeError(f"Roles: tracker must be a mfu_tracker.Tracker (the one whose steps "
                            f"the roles divide), not {type(tracker).__name__}")
        self.tracker = tracker
        self._sync = _synchronizer(getattr(tracker, "clock", "cpu"))
        self._runs: Dict[str, RoleRun] = {}
        self._current: Optional[str] = None
        self._boundary_s: Optional[float] = None
        self._excluded_s = 0.0

    def _now(self) -> float:
        if self._sync is not None:
            self._sync()
        return time.perf_counter()

    def now(self) -> float:
        """The roles' clock, in seconds: the host's, after the device
        finished its work on a GPU clock (for a role timed outside
        :meth:`role` and booked with :meth:`add`)."""
        return self._now()

    def start(self) -> None:
        """The first boundary: starts the tracker's clock (its first
        ``step()``) and the host clock of the wait."""
        self.tracker.step()
        self._boundary_s, self._excluded_s = self._now(), 0.0
        self._runs.clear()

    def run(self, name: str) -> RoleRun:
        """The step's record of role ``name`` (created on first use)."""
        if name not in ROLES:
            raise ValueError(f"Roles: role must be one of {', '.join(ROLES)}, not {name!r}")
        run = self._runs.get(name)
        if run is None:
            run = self._runs[name] = RoleRun(name)
        return run

    @contextmanager
    def role(self, name: str) -> Iterator[RoleRun]:
        """Times role ``name`` over the block; yields its :class:`RoleRun`."""
        run = self.run(name)
        if self._current is not None:
            raise ValueError(f"Roles.role(): {name!r} inside role {self._current!r}; "
                             "roles take turns, they do not nest")
        self._current = name
        began = self._now()
        try:
            yield run
        finally:
            run.seconds += self._now() - began
            self._current = None

    def add(self, name: str, *, flops: Optional[float] = None, bytes: Optional[float] = None,
            tokens: Optional[float] = None, seconds: Optional[float] = None) -> RoleRun:
        """Work of role ``name`` learned outside :meth:`role` (its seconds
        too, when it was timed elsewhere)."""
        run = self.run(name).add(flops=flops, bytes=bytes, tokens=tokens)
        seconds = check_optional_number(seconds, "seconds", 0)  # a bad one: the caller's bug
        if seconds:
            run.seconds += seconds
        return run

    def fields(self, wall_s: float) -> Dict[str, float]:
        """The step record's role fields for a step of ``wall_s`` host
        seconds: each role that ran its four (an unknown one left out: the
        record's unknown), each other role 0; ``wait_s``; ``model_flops``,
        every role's FLOPs, when all of them are known."""
        out: Dict[str, float] = {}
        roles_s = 0.0
        flops_known, total = True, 0.0
        for role in ROLES:
            run = self._runs.get(role)
            if run is None:
                out.update({f"{role}_flops": 0.0, f"{role}_bytes": 0.0,
                            f"{role}_tokens": 0.0, f"{role}_s": 0.0})
                continue
            out[f"{role}_s"] = run.seconds
            roles_s += run.seconds
            for field in ("flops", "bytes", "tokens"):
                value = getattr(run, field)
                if value is not None and not math.isnan(value):
                    out[f"{role}_{field}"] = value
            if run.flops is None or math.isnan(run.flops):
                flops_known = False
            else:
                total += run.flops
        out["wait_s"] = max(wall_s - roles_s, 0.0)
        if flops_known:
            out["model_flops"] = total
        return out

    def step(self, **fields: Any) -> Dict[str, float]:
        """Closes the tracker's step with the roles' fields and the wait
        (``fields``: any other field of the step record, which wins over
        the roles'; the first call without :meth:`start` is the start).
        Returns the fields given."""
        if self._current is not None:
            raise ValueError(f"Roles.step(): role {self._current!r} is still running")
        if self._boundary_s is None:
            self.start()
            return {}
        now = self._now()
        given = self.fields(now - self._boundary_s - self._excluded_s)
        given.update({k: v for k, v in fields.items() if v is not None})
        self.tracker.step(**given)
        self._boundary_s, self._excluded_s = now, 0.0
        self._runs.clear()
        return given

    def metrics(self, *args: Any, **kwargs: Any) -> Dict[str, float]:
        """``tracker.metrics(...)``, its time left out of the step's wait."""
        began = time.perf_counter()
        try:
            return self.tracker.metrics(*args, **kwargs)
        finally:
            self._excluded_s += time.perf_counter() - began
