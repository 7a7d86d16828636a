"""The one formatter of metric dicts: ``{prefix}/name`` keys and their units.

Every dict of figures the package hands to a logger -- ``Tracker.metrics()``
(local and distributed), ``MFUOptimizerWrapper.metrics()``, the Trainer
callback's log entries -- is made here from a mapping of *figures* (the
fields of a ``StepTracker.summary()``, of :class:`DistributedFigures`, of an
integration's window), so a key's name, its unit and its conversion are
written once, in :data:`KEYS`.

Rules:

* a figure that is unavailable (None or NaN) is left out, never logged as
  None / NaN;
* keys come in :data:`KEYS` order (the table of the ``Tracker`` docstring);
* ``prefix=""`` gives bare names (``mfu``), anything else ``{prefix}/mfu``;
* ``roles`` ({role: {figure: value}}) gives ``{prefix}/role/{role}/{key}``
  for each :data:`ROLE_KEYS` entry;
* a *family* figure is a mapping ``{name: value}`` and gives one key per
  entry, ``{prefix}/{family}/{name}`` (:data:`FAMILIES`: the waterfall's
  per-phase keys and the per-kind communication keys use them).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, NamedTuple, Tuple


class MetricKey(NamedTuple):
    """One logged key: its name, the figure it is made from, the factor that
    converts the figure into the key's unit, and that unit."""

    name: str      # the key after "{prefix}/"
    field: str     # the figure's name in the mapping given to format_metrics()
    scale: float   # key value = figure x scale
    unit: str
    meaning: str


#: Every scalar key the package logs, in order.
KEYS: Tuple[MetricKey, ...] = (
    MetricKey("mfu", "mfu", 1.0, "ratio", "model FLOPs / time / peak (unclamped)"),
    MetricKey("hfu", "hfu", 1.0, "ratio", "executed FLOPs (recompute included) / time / peak"),
    MetricKey("mbu", "mbu", 1.0, "ratio", "parameter bytes per step / step time / peak bandwidth"),
    MetricKey("tokens_per_sec", "tokens_per_sec", 1.0, "tokens/s", "tokens / time"),
    MetricKey("achieved_tflops", "achieved_flops_per_sec", 1e-12, "TFLOP/s",
              "model FLOP/s over all num_gpus devices"),
    MetricKey("step_time_s", "step_time_s", 1.0, "s", "mean step period, end to end"),
    MetricKey("step_time_min_s", "step_time_min_s", 1.0, "s", "shortest step period"),
    MetricKey("step_time_max_s", "step_time_max_s", 1.0, "s", "longest step period"),
    MetricKey("idle_s", "idle_s_per_step", 1.0, "s",
              "seconds per step the devices sat idle between marked phases"),
    MetricKey("moe_wait_s", "moe_wait_s_per_step", 1.0, "s",
              "seconds per step expert-parallel ranks waited for the busiest experts' rank"),
    MetricKey("peak_tflops", "peak_flops_per_sec", 1e-12, "TFLOP/s",
              "the MFU denominator: peak x num_gpus"),
    # post-training's roles (mfu_tracker.timing._roles; docs/post-training.md)
    MetricKey("mfu_end_to_end", "mfu_end_to_end", 1.0, "ratio",
              "every role's model FLOPs / the window's wall time / peak"),
    MetricKey("wait_ratio", "wait_ratio", 1.0, "fraction of wall time",
              "seconds no role ran / the window's wall time"),
    MetricKey("wait_s", "wait_s_per_step", 1.0, "s", "seconds per step no role ran"),
    # mixed precision, the measured ceiling, device telemetry (docs/mixed-precision.md)
    *(MetricKey(name, name, 1.0, unit, meaning) for name, unit, meaning in (
        ("mfu_mixed", "ratio", "sum over dtypes of FLOPs / that dtype's peak, over time"),
        # a VLM's language model alone (lmms-engine's convention)
        ("mfu_language", "ratio", "language-model FLOPs / time / peak: the vision tower left out"),
        ("mfu_vs_measured", "ratio", "model FLOPs / time / the measured GEMM peak"),
        # device telemetry (mfu_tracker.device._telemetry), read at logging time
        ("power_w", "W", "mean board power since the last reading"),
        ("energy_j_per_token", "J/token", "power / tokens per second"),
        ("tflops_per_watt", "TFLOP/s per W", "model TFLOP/s / power"),
        ("sm_clock_mhz", "MHz", "SM clock at the reading"),
        ("clock_ratio", "ratio", "SM clock / maximum SM clock"),
        ("throttled", "flag", "1 when a power or thermal clock-event reason is set"),
    )),
    # what the hardware did over the window (mfu_tracker.device._hardware: NVML
    # GPM, Hopper and later, windows >= 0.1 s; docs/hardware-counters.md)
    *(MetricKey(name, name.replace("/", "_"), 1.0, unit, meaning) for name, unit, meaning in (
        ("hw/tensor_active", "ratio", "share of the window the tensor pipes were busy "
         "(GPM ANY_TENSOR_UTIL)"),
        ("hw/dram_bw_util", "ratio", "DRAM bandwidth used / its peak over the window "
         "(GPM DRAM_BW_UTIL): the measured MBU"),
        ("hw/gpu_busy", "ratio", "share of the window any kernel ran: nvidia-smi's GPU-Util, "
         "over the window (GPM GRAPHICS_UTIL)"),
        ("hw/sm_active", "ratio", "share of the window the SMs were busy (GPM SM_UTIL)"),
        ("hw/sm_occupancy", "ratio", "active warps / the SMs' maximum (GPM SM_OCCUPANCY)"),
        ("hw/nvlink_gbs", "GB/s", "NVLink traffic, received + sent, all links"),
        ("hw/mfu_consistency", "ratio", "mfu / hw/tensor_active: the self-check of MFU"),
        ("comm_link_measured_util", "ratio", "hw/nvlink_gbs / the NVLink peak, both "
         "directions: measured, beside the computed net_utilization"),
        # the caching allocator's host-side statistics (mfu_tracker.device._memory)
        ("memory/peak_allocated_gib", "GiB", "peak memory held by tensors (running, or the "
         "window's with per-window peaks)"),
        ("memory/peak_allocated_frac", "ratio", "memory/peak_allocated_gib / device memory"),
        ("memory/peak_reserved_gib", "GiB", "peak memory the caching allocator reserved"),
        ("memory/peak_reserved_frac", "ratio", "memory/peak_reserved_gib / device memory"),
        ("memory/alloc_retries", "count", "allocations retried after freeing the cache, "
         "in the window"),
        ("memory/ooms", "count", "out-of-memory errors the allocator raised in the window"),
    )),
    # distributed (mfu_tracker.distributed.DistributedFigures)
    MetricKey("tokens_per_sec_per_device", "tokens_per_sec_per_device", 1.0, "tokens/s",
              "tokens/s over all devices"),
    MetricKey("mfu_rank_min", "mfu_rank_min", 1.0, "ratio", "lowest per-rank MFU"),
    MetricKey("mfu_rank_mean", "mfu_rank_mean", 1.0, "ratio", "unweighted mean per-rank MFU"),
    MetricKey("mfu_rank_max", "mfu_rank_max", 1.0, "ratio", "highest per-rank MFU"),
    MetricKey("step_time_rank_max", "step_time_rank_max", 1.0, "s",
              "the slowest rank's host seconds per step since the last aggregation (the "
              "window's mean period while that interval held the warm-up)"),
    MetricKey("step_time_rank_min", "step_time_rank_min", 1.0, "s",
              "the fastest rank's host seconds per step since the last aggregation (the "
              "window's mean period while that interval held the warm-up)"),
    MetricKey("slowest_rank", "slowest_rank", 1.0, "rank", "the rank that took longest"),
    # the waterfall's straggler (mfu_tracker.distributed, phases marked on every rank)
    MetricKey("straggler_rank", "straggler_rank", 1.0, "rank",
              "the rank with the most busy time per step (step less exposed communication)"),
    MetricKey("straggler_lost", "straggler_lost", 1.0, "fraction of step time",
              "the other ranks' mean wait for the straggler / the job's step time"),
    # communication (mfu_tracker.distributed._comm_observer; docs/communication.md)
    MetricKey("comm_s_max", "comm_s_max", 1.0, "s",
              "the largest rank's exposed communication per step (all kinds)"),
    MetricKey("comm_overlap", "comm_overlap", 1.0, "ratio",
              "share of the collectives' time hidden under compute (GPU clocks only)"),
    MetricKey("net_utilization", "net_utilization", 1.0, "ratio",
              "bus bytes / what the links could carry while collectives ran"),
    # the job ledger (mfu_tracker.job, docs/goodput.md): `mfu-tracker goodput`'s figures
    MetricKey("job_wall_s", "job_wall_s", 1.0, "s",
              "the first run's process start to the job's last record"),
    MetricKey("goodput", "goodput", 1.0, "fraction of job wall time",
              "kept steps' time less their data phase / job_wall_s"),
    MetricKey("goodput_s", "goodput_s", 1.0, "s", "kept steps' time less their data phase"),
    MetricKey("job_mfu", "job_mfu", 1.0, "ratio",
              "kept steps' model FLOPs / (the job's device-seconds x peak)"),
    # the kernel breakdown of a profiled step (mfu_tracker.breakdown._record),
    # logged once by the metrics() after it
    MetricKey("kernel_step_s", "kernel_step_s", 1.0, "s",
              "the profiled step's time the kernel_share rows add up to"),
    # a mixture of experts' load on the last sampled step (Tracker(moe=); docs/moe.md)
    *(MetricKey(f"moe/{name}", f"moe_{name}", 1.0, unit, meaning) for name, unit, meaning in (
        ("imbalance", "ratio", "sum over MoE layers of the busiest expert's tokens / of the "
         "mean tokens per expert (1.0: balanced)"),
        ("imbalance_max", "ratio", "the most imbalanced layer's max / mean tokens per expert"),
        ("tokens_per_expert_min", "tokens", "fewest token-expert assignments of an expert"),
        ("tokens_per_expert_max", "tokens", "most token-expert assignments of an expert"),
        ("tokens_per_expert_mean", "tokens", "mean token-expert assignments per expert"),
        ("straggler_layer", "layer", "the MoE layer (0-based, in run order) of the straggler"),
        ("straggler_expert", "expert", "the expert with the most tokens beyond its layer's mean"),
        ("straggler_rank", "rank", "the expert-parallel rank holding the busiest expert (0: one "
         "process)"),
        ("padded_rows", "rows", "rows the expert GEMMs computed for no token (alignment, "
         "capacity buffers)"),
        ("padded_flops_share", "ratio", "padded rows' FLOPs / the expert GEMMs' FLOPs"),
        ("dropped_tokens", "tokens", "token-expert assignments beyond a capacity, not computed"),
        ("dropped_share", "ratio", "dropped / routed token-expert assignments"),
        ("sampled_step", "step", "the step these moe/* figures were read on"),
    )),
)

#: The keys of each role that ran, ``{prefix}/role/{role}/{name}``, made from
#: its figures (:func:`mfu_tracker.timing._roles.role_figures`).
ROLE_KEYS: Tuple[MetricKey, ...] = (
    MetricKey("mfu", "mfu", 1.0, "ratio", "the role's model FLOPs / its seconds / peak"),
    MetricKey("mbu", "mbu", 1.0, "ratio", "the role's bytes / its seconds / peak bandwidth"),
    MetricKey("tokens_per_sec", "tokens_per_sec", 1.0, "tokens/s",
              "the role's tokens / its seconds"),
    MetricKey("achieved_tflops", "achieved_flops_per_sec", 1e-12, "TFLOP/s",
              "the role's model FLOP/s while it ran"),
    MetricKey("time_share", "time_share", 1.0, "fraction of wall time",
              "the role's seconds / the window's wall time"),
    MetricKey("time_s", "seconds_per_step", 1.0, "s", "the role's seconds per step"),
)

#: Families of keys, one per entry of a mapping figure: (family, unit, meaning).
FAMILIES: Tuple[Tuple[str, str, str], ...] = (
    ("mfu_lost", "fraction of step time", "the waterfall: step time lost to each cause"),
    ("phase_s", "s", "seconds per step in each marked phase"),
    ("comm_bytes", "bytes", "payload bytes per step by collective kind"),
    ("comm_s", "s", "exposed communication seconds per step by collective kind"),
    ("comm_busbw_gbs", "GB/s", "bus bandwidth by collective kind (nccl-tests' conventions)"),
    # distributed: where each waterfall loss is concentrated (docs/distributed.md)
    ("mfu_lost_rank", "rank", "the rank with the largest share of each loss"),
    # the job ledger (docs/goodput.md): badput/* and goodput add up to 1
    ("badput", "fraction of job wall time", "the job's wall time lost to each cause"),
    ("badput_s", "s", "seconds of the job's wall time lost to each cause"),
    # the kernel breakdown of a profiled step: each class's (and idle's)
    # share of it, adding up to 1; its TFLOP/s and operand GB/s where known
    ("kernel_share", "fraction of the profiled step", "time of each kernel class, and idle"),
    ("kernel_tflops", "TFLOP/s", "executed TFLOP/s of each kernel class while it ran"),
    ("kernel_gbs", "GB/s", "operand GB/s of each kernel class while it ran (a lower bound)"),
    ("moe/layer_imbalance", "ratio", "each MoE layer's max / mean tokens per expert"),
)


def metric_key(prefix: str, name: str) -> str:
    """``{prefix}/{name}``, or ``name`` for an empty prefix."""
    return f"{prefix}/{name}" if prefix else name


#: prefix -> ((figure, key, scale) for every KEYS entry): keys are built once
#: per prefix, not per call (a loop may log every step).
_PLANS: Dict[str, Tuple[Tuple[str, str, float], ...]] = {}
_PLANS_MAX = 64


def _plan(prefix: str) -> Tuple[Tuple[str, str, float], ...]:
    plan = _PLANS.get(prefix)
    if plan is None:
        plan = tuple((key.field, metric_key(prefix, key.name), key.scale) for key in KEYS)
        if len(_PLANS) < _PLANS_MAX:
            _PLANS[prefix] = plan
    return plan


def format_metrics(figures: Mapping[str, Any], prefix: str) -> Dict[str, float]:
    """The logged dict of ``figures`` (None / NaN = unavailable: left out)."""
    out: Dict[str, float] = {}
    get = figures.get
    for field, key, scale in _plan(prefix):
        value = get(field)
        if value is not None and value == value:  # NaN != NaN
            out[key] = value * scale                # a float (the scales are floats)
    roles = get("roles")
    if roles:
        for role, role_figures in roles.items():
            base = metric_key(prefix, f"role/{role}")
            for key in ROLE_KEYS:
                value = role_figures.get(key.field)
                if value is not None and value == value:
                    out[f"{base}/{key.name}"] = value * key.scale
    for family, _, _ in FAMILIES:
        entries = get(family)
        if entries:
            base = metric_key(prefix, family)
            for name, value in entries.items():
                if value is not None and value == value:
                    out[f"{base}/{name}"] = float(value)
    return out
