"""The agent of ``mfu-tracker run``: an unmodified training script measured
from inside its own processes (docs/run.md).

Owns the run's configuration as the launcher hands it to every process
(:mod:`._config`, one environment variable), the startup hook each Python
interpreter of the run loads (``_boot/sitecustomize.py``: standard library
only, it arms the agent when torch is imported), the arming
(:mod:`._arm`), the agent (:mod:`._agent`: the root module, steps at the
optimizer's step, the callback core's tracker, counter and log), what it
reads from the inputs (:mod:`._inputs`: tokens, dtype), what it says
(:mod:`._detected`, :mod:`._say`), and ``end_step()`` (:mod:`._step`), the one
line a loop without an optimizer adds.

Layer 10 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import every layer below it.
Importing this package imports no torch.
"""
from ._step import end_step

__all__ = ["end_step"]
