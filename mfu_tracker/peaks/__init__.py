"""The denominator: what a device can do at its peak.

Owns the front of the C peak table (``csrc/core/peaks/gpu_table.c``): :class:`GPUSpec`,
lookup by device name + SM count + memory + compute capability, the user's and
the measured peak, a GEMM benchmark that checks itself against a busy
machine (:mod:`._measure`), and the one rule that picks the peak a
run is measured against (:mod:`._resolve`: argument, environment override,
table row; none -> MFU unavailable).

Layer 1 of the package (peaks -> flops -> timing -> device -> breakdown ->
distributed -> job -> tracker -> integrations -> agent -> cli). May import: the
foundation (``_C``, ``_validate``, ``_dtypes``) only.
"""
from ._measure import PeakMeasurementError, measure_peak_flops, measured_gpu_spec
from ._table import *  # noqa: F403 -- the names _table.__all__ lists
from ._table import __all__ as _table_names

__all__ = [*_table_names, "PeakMeasurementError", "measure_peak_flops", "measured_gpu_spec"]
