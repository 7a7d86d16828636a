"""The agent's voice: one line on the training process's stderr, prefixed
``mfu-tracker run:``, each message once. Rank 0 speaks for the job; a
message every rank must give (a failing probe) names its rank.

Written straight to stderr, not through :mod:`warnings`: a script run with
``-W error`` turns warnings into exceptions, and the agent never raises into
the program it measures.
"""
from __future__ import annotations

import os
import sys
from typing import Set

_SAID: Set[str] = set()


def rank() -> int:
    """This process's rank under torchrun (``RANK``), else 0."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def say(message: str, *, every_rank: bool = False) -> None:
    """Print ``message`` once (rank 0 only, unless ``every_rank``); never raises."""
    here = rank()
    if (here != 0 and not every_rank) or message in _SAID:
        return
    _SAID.add(message)
    prefix = "mfu-tracker run" if here == 0 else f"mfu-tracker run (rank {here})"
    try:
        sys.stderr.write(f"{prefix}: {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 -- a closed stderr: nothing to tell
        pass


def say_warning(message: object) -> None:
    """A warning of the package's, said as the agent's (its ``mfu_tracker:``
    prefix dropped)."""
    text = str(message)
    if text.startswith("mfu_tracker: "):
        text = text[len("mfu_tracker: "):]
    say(f"warning: {text}")
