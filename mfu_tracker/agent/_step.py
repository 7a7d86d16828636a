"""``mfu_tracker.end_step()``: the one line a training loop without an
optimizer adds, so that ``mfu-tracker run`` finds its steps (docs/run.md).

Importing this module imports no torch; outside ``mfu-tracker run`` the call
does nothing, so the script runs unchanged under plain ``python``.
"""
from __future__ import annotations

from typing import Any, List

__all__ = ["end_step"]

#: The armed agents of this process (``mfu-tracker run``'s; at most one).
ACTIVE: List[Any] = []


def end_step() -> None:
    """End one training step here: under ``mfu-tracker run``, a step boundary
    (from the first call on, these calls draw the steps and the optimizer's
    steps no longer do); otherwise nothing. Never raises, never blocks."""
    for agent in ACTIVE:
        agent.end_step()
