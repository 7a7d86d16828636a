"""Ranks: cross-rank aggregation and communication.

Owns the rows every rank contributes (:mod:`._row`: their layout, the step
record's sums per second and the rank's ceilings; :mod:`._row_v5`: the
layout before; :mod:`._rank_row`: a rank's row from its tracker's window
figures) and their combination into the job's
figures (:mod:`._figures`: global MFU, per-rank spread, the straggler, the
job's communication), the collective that gathers them (:mod:`._collective`:
a dedicated gloo group, a bounded wait) and the observation of the
training's own communication: every collective, with no attach call
(:mod:`._comm_observer`, over the C++ observer of ``csrc/torch/comm.cpp``,
or :mod:`._comm_mode` where its dispatch key cannot be used),
the links they travel over (:mod:`._links`: intra- vs inter-node by host,
the link table of the C core) and DDP's communication hook
(:mod:`._comm_hook`: ``attach_ddp``, and the marking hook without the
observer).

Layer 6 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: the foundation (the C++
observer's loader is ``_native``'s), ``peaks``, ``flops``, ``timing``, ``device``
(a rank's power figures).
"""
from ._figures import *  # noqa: F403 -- the names _figures.__all__ lists
from ._figures import __all__  # noqa: F401
# and the row's layout and arithmetic, for tests and benchmarks
from ._figures import combine  # noqa: F401
from ._row import ROW_FIELDS, ROW_LAYOUT, TELEMETRY_FIELDS  # noqa: F401
