"""Device readings: what the hardware itself reports over a window.

Owns NVML telemetry and the GPM counters (:mod:`._telemetry`: energy,
power, clocks, throttle reasons, tensor-pipe activity, NVLink traffic), the
caching allocator's memory headroom (:mod:`._memory`), the self-check of MFU
against the tensor pipes (:mod:`._consistency`), and the one component a
tracker calls at its window edges to read them all (:mod:`._hardware`:
``DeviceWindow``). Every reading is taken at a window edge, never per step,
and a device that cannot be read gives missing figures, never a wrong one.

Layer 4 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: the foundation only.
"""
