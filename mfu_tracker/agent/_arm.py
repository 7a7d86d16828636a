"""Arming the agent in one interpreter: what the startup hook calls right
after ``import torch`` finished (``_boot/sitecustomize.py``).

Reads the run's configuration from the environment (:mod:`._config`),
builds the :class:`~._agent.Agent`, registers its hooks and its exit report,
and makes ``mfu_tracker.end_step()`` reach it. Never raises: a failure is one
line on stderr and an unmeasured process.
"""
from __future__ import annotations

import atexit
from typing import Any, Optional

from . import _step
from ._say import say


def arm() -> Optional[Any]:
    """Arm the agent of this process (once); the agent, or None when the
    environment asks for none or arming failed (said on stderr)."""
    if _step.ACTIVE:
        return _step.ACTIVE[0]
    try:
        from ._agent import Agent
        from ._config import RunConfig

        config = RunConfig.from_env()
        if config is None:
            return None
        agent = Agent(config)
        agent.install()
    except Exception as error:  # noqa: BLE001 -- never raise into the program
        say(f"the agent could not start ({error!r}); this process is not measured",
            every_rank=True)
        return None
    _step.ACTIVE.append(agent)
    atexit.register(agent.exit_report)   # registered first: runs after the run's end
    return agent
