"""The denominator: what a device can do at its peak.

Owns the front of the C peak table (``csrc/core/gpu_table.c``): :class:`GPUSpec`,
lookup by device name + SM count + memory + compute capability, the user's and
the measured peaks (:mod:`._table`), and the one rule that picks the peak a
run is measured against (:mod:`._resolve`: argument, environment override,
table row; none -> MFU unavailable).

Layer 1 of the package (peaks -> flops -> timing -> distributed -> tracker ->
integrations -> cli). May import: the foundation (``_C``, ``_validate``,
``_dtypes``) only.
"""
from ._table import (
    PEAK_ENV_VAR,
    GPUSpec,
    get_gpu_spec,
    gpu_spec_table,
    lookup_gpu_spec,
    measure_peak_flops,
    measured_gpu_spec,
    user_gpu_spec,
)

__all__ = [
    "GPUSpec",
    "lookup_gpu_spec",
    "get_gpu_spec",
    "gpu_spec_table",
    "user_gpu_spec",
    "measure_peak_flops",
    "measured_gpu_spec",
    "PEAK_ENV_VAR",
]
