"""Roles that a framework runs one inside another, split into turns: :class:`RoleStack`.

A trainer's methods nest where :class:`~mfu_tracker.Roles` wants turns: TRL's
``training_step`` (the learner) prepares its inputs by generating (the
rollout) and scoring them (the reference). The stack keeps the frame running
now; a frame entered inside another pauses it (its seconds so far are booked,
its FLOP counter exited) and resumes it when the inner one ends, so each
second and each FLOP goes to exactly one role: the innermost. A frame named
``None`` is no role: its own seconds are the step's wait.

Each role's FLOPs are counted by one :class:`~mfu_tracker.FlopCounter` per
step, entered again for each of the role's turns (its counts add up over the
turns: a forward in one turn and its backward in the next are one count);
the rollout's by the framework adapter (a generation counter), which enters
its own turn's counter. Only one counter is active at a time. Nothing here
imports a framework. Units: seconds, FLOPs, tokens.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ..flops.counter import FlopCounter

__all__ = ["RoleStack"]


class _Frame:
    __slots__ = ("role", "began", "counter")

    def __init__(self, role: Optional[str], began: float, counter: Any) -> None:
        self.role, self.began, self.counter = role, began, counter


class RoleStack:
    """The turns of a step's roles on ``roles`` (a :class:`~mfu_tracker.Roles`).

    ``push(role)`` / ``pop()`` around each framework call that is a role
    (``None``: no role); ``counted`` names the roles whose FLOPs the stack
    counts itself. ``close()`` at the step's end books each counted role's
    FLOPs and tokens onto ``roles`` and starts the next step's counts.
    """

    def __init__(self, roles: Any, clock: Callable[[], float], counted: tuple = ()) -> None:
        self.roles = roles
        self.clock = clock
        self.counted = counted
        self._frames: List[_Frame] = []
        self._counters: Dict[str, FlopCounter] = {}
        self._tokens: Dict[str, float] = {}

    @property
    def top(self) -> Optional[str]:
        """The role running now (None: none, or a no-role frame)."""
        return self._frames[-1].role if self._frames else None

    @property
    def depth(self) -> int:
        return len(self._frames)

    def _counter(self, role: Optional[str]) -> Any:
        if role not in self.counted:
            return None
        counter = self._counters.get(role)  # type: ignore[arg-type]
        if counter is None:
            counter = self._counters[role] = FlopCounter()  # type: ignore[index]
        return counter

    def _pause(self, frame: _Frame, now: float) -> None:
        if frame.counter is not None:
            frame.counter.__exit__(None, None, None)
        if frame.role is not None:
            self.roles.add(frame.role, seconds=now - frame.began)

    def _resume(self, frame: _Frame, now: float) -> None:
        frame.began = now
        if frame.counter is not None:
            frame.counter.__enter__()

    def push(self, role: Optional[str]) -> None:
        """``role`` starts now, inside whatever ran (which pauses)."""
        now = self.clock()
        if self._frames:
            self._pause(self._frames[-1], now)
        frame = _Frame(role, now, self._counter(role))
        self._frames.append(frame)
        self._resume(frame, now)

    def pop(self) -> None:
        """The innermost role ends now; the one it interrupted resumes."""
        if not self._frames:
            return
        now = self.clock()
        self._pause(self._frames.pop(), now)
        if self._frames:
            self._resume(self._frames[-1], now)

    def add_tokens(self, role: str, tokens: float) -> None:
        self._tokens[role] = self._tokens.get(role, 0.0) + tokens

    def close(self) -> None:
        """The step ends: every frame still open ends now; each counted
        role's FLOPs and tokens go onto ``roles``, and the counts restart."""
        while self._frames:
            self.pop()
        for role, counter in self._counters.items():
            self.roles.add(role, flops=counter.model_flops, tokens=self._tokens.pop(role, None))
            counter.reset()
        for role, tokens in self._tokens.items():
            self.roles.add(role, tokens=tokens)
        self._tokens.clear()

    def abandon(self) -> None:
        """Exits the active counter and drops every frame (training ended or
        failed mid-step); nothing is booked."""
        if self._frames and self._frames[-1].counter is not None:
            try:
                self._frames[-1].counter.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 -- never raise into training
                pass
        self._frames.clear()
        for counter in self._counters.values():
            counter.reset()
        self._tokens.clear()
