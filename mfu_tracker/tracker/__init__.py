"""The step tracker: end-to-end MFU of a training run, one call per step.

Owns :class:`Tracker` (:mod:`._tracker`), a composition: its checked
configuration (:mod:`._config`), the parts built from it (:mod:`._parts`:
clock, measured peak, window-edge readers, communication observer), the step
engine it subclasses (``_C.StepTracker``: boundaries, phases and one record
per step), and its reference (:mod:`._doc`); a post-training step's roles
timed on it (:mod:`._roles`). The window's figures are
:mod:`mfu_tracker.timing`'s, a rank's row :mod:`mfu_tracker.distributed`'s,
the run's log and ledger :mod:`mfu_tracker.job`'s.

Layer 8 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: every layer below it.
"""
from ._tracker import Tracker
from ._roles import RoleRun, Roles
from . import _profiled  # noqa: F401 -- registers the profile_steps subclass

__all__ = ["Tracker", "Roles", "RoleRun"]
