"""The step tracker: end-to-end MFU of a training run, one call per step.

``Tracker.step()`` marks a step boundary. A step's *period* is the time from
one boundary to the next, so it covers everything the loop does -- data
loading, forward, backward, optimizer, logging: the utilization the run
actually gets. (``track()`` times a block instead: its ``elapsed_sec`` is that
block's compute window.) On a CUDA / ROCm device the boundaries are GPU events
on the device's stream, resolved without ever synchronizing; elsewhere the
monotonic CPU clock. The hot path and the windowed statistics are in C
(``_C.StepTracker``, ``csrc/core/stats.h``).

Under ``torch.distributed`` each rank's tracker measures that rank, and
``metrics()`` is a collective that returns global figures (see
:mod:`mfu_tracker.distributed`).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Dict, List, Mapping, Optional, Union

from .._native import _C
from .._validate import (
    WARMUP_MAX,
    WINDOW_MAX,
    check_clock,
    check_instance,
    check_int,
    check_log_path,
    check_optional_flag,
    check_optional_number,
    check_optional_work,
    check_parallel_degrees,
    check_positive_number,
    check_prefix,
    check_stream,
)
from ..distributed._collective import (
    DEFAULT_TIMEOUT_S,
    Aggregator,
    process_group_initialized,
)
from ..distributed._figures import (
    TELEMETRY_FIELDS,
    DistributedFigures,
    RankFigures,
    combine,
    comm_families,
)
from ..job._log import MetricsLog, rank_world
from ..job._prometheus import metrics_port as check_metrics_port
from ..job._prometheus import serve as serve_metrics
from ..peaks._resolve import Peak, dtype_peaks, resolve_peak
from ..peaks._table import GPUSpec, measured_gpu_spec
from ..timing._clock import current_stream_getter, mark_timer, resolve_clock
from ..timing._metrics import format_metrics
from ..timing._hardware import DeviceWindow, check_memory
from ..timing._breakdown import BREAKDOWN_RECORD, Breakdown
from ..timing._step_profile import StepProfiler, check_profile_steps, check_trace_dir
from ..timing._waterfall import PHASES, split_communication, waterfall
from ._run import RunBook

__all__ = ["Tracker"]


#: No window totals given (never mutated).
_NO_TOTALS: Dict[str, float] = {}


def _window_totals(model_flops: Any, executed_flops: Any, num_tokens: Any,
                   ideal_s: Any, language_flops: Any = None,
                   overcompute_flops: Any = None) -> Dict[str, float]:
    """The window totals given at logging time (``Tracker.metrics()``): each
    a finite number >= 0, or NaN (unknown) after one warning for anything
    else -- never an exception, which on one rank would leave the others
    waiting in the collective. Totals not given are left out."""
    if (model_flops is None and executed_flops is None and num_tokens is None
            and ideal_s is None and language_flops is None and overcompute_flops is None):
        return _NO_TOTALS  # the common call: nothing given, nothing to check
    given = dict(model_flops=model_flops, executed_flops=executed_flops,
                 num_tokens=num_tokens, ideal_s=ideal_s, language_flops=language_flops,
                 overcompute_flops=overcompute_flops)
    totals: Dict[str, float] = {}
    for argument, value in given.items():
        if value is None:
            continue
        try:
            totals[argument] = check_optional_number(value, argument, 0)  # type: ignore[assignment]
        except (TypeError, ValueError) as exc:
            warnings.warn(f"mfu_tracker: Tracker: {exc}; the figures using it are left out",
                          RuntimeWarning, stacklevel=4)
            totals[argument] = math.nan
    return totals


def _mfu_language(figures: Mapping[str, Any], language_flops: float) -> Optional[float]:
    """MFU of the language model alone (a VLM's tower left out: the
    lmms-engine convention): ``mfu`` x language FLOPs / the window's model
    FLOPs, so it shares every denominator with ``mfu``. None when either is
    unknown."""
    mfu, achieved, window_s = (figures.get("mfu"), figures.get("achieved_flops_per_sec"),
                               figures.get("window_s"))
    if mfu is None or not achieved or not window_s or language_flops != language_flops:
        return None
    return mfu * language_flops / (achieved * window_s)


def _share(value: Optional[float], model_parallel: int) -> Optional[float]:
    """A rank's share of a replica's figure (None stays None)."""
    return None if value is None else float(value) / model_parallel


def _times(ratio: Optional[float], ceiling: Optional[float]) -> Optional[float]:
    """A utilization back to its rate: ratio x ceiling (None when either is)."""
    return None if ratio is None or ceiling is None else float(ratio) * ceiling


def _check_comm(comm: Any, link_bandwidth_gbs: Any) -> None:
    """``comm`` and ``link_bandwidth_gbs``; comm=True needs a process group."""
    check_optional_flag(comm, "comm")
    if comm is True:
        import torch.distributed  # noqa: F401  (makes the check below see it)
    if link_bandwidth_gbs is not None:
        check_positive_number(link_bandwidth_gbs, "link_bandwidth_gbs", "GB/s")
    if comm is True and not process_group_initialized():
        raise ValueError("comm=True needs an initialized torch.distributed process group: "
                         "call torch.distributed.init_process_group() first")


def _distributed_mode(distributed: Any, timeout: Any, model_parallel: int) -> bool:
    """Whether the tracker aggregates across ranks; configuration errors raise."""
    check_optional_flag(distributed, "distributed")
    check_positive_number(timeout, "distributed_timeout", "seconds")
    if distributed is False:
        return False
    if distributed is True:
        import torch.distributed  # noqa: F401  (makes the check below see it)
    if not process_group_initialized():
        if distributed is True:
            raise ValueError("distributed=True needs an initialized torch.distributed process "
                             "group: call torch.distributed.init_process_group() first")
        return False
    import torch.distributed as dist

    world = dist.get_world_size()
    if world % model_parallel:
        raise ValueError(f"the parallel degrees multiply to {model_parallel}, which does not "
                         f"divide the world size {world}")
    return True


def _measure(peak: Peak, kind: str, index: Optional[int], torch: Any) -> float:
    """The GEMM peak of the tracker's device for its dtype, measured now
    (:func:`measured_gpu_spec`), FLOP/s: the CUDA / ROCm device torch runs
    on, else the CPU. One warning when it exceeds the peak in use."""
    on_gpu = kind != "cpu" and torch is not None and index is not None
    device = f"cuda:{index}" if on_gpu else "cpu"
    measured = measured_gpu_spec(peak.dtype, device).peak_flops_per_sec(peak.dtype)
    if peak.flops_per_sec is not None and measured > peak.flops_per_sec:
        warnings.warn(f"mfu_tracker: Tracker: the measured {peak.dtype} GEMM peak "
                      f"({measured * 1e-12:.4g} TFLOP/s) exceeds the {peak.source} peak "
                      f"({peak.flops_per_sec * 1e-12:.4g} TFLOP/s): boost clocks, or a "
                      f"wrong table row; mfu_vs_measured is reported beside mfu",
                      RuntimeWarning, stacklevel=3)
    return measured


def _communication(tracker: "Tracker", comm: Optional[bool], link_bandwidth_gbs: Optional[float],
                   peak: Peak, kind: str, agg: Optional[Aggregator]) -> Any:
    """The tracker's communication observation
    (:mod:`mfu_tracker.distributed._comm_observer`), or None: ``comm`` False,
    no process group, or (one warning) the C++ observer unavailable."""
    if comm is False or not process_group_initialized():
        return None
    from ..distributed._comm_observer import observe
    from ..flops.counter._counter import observer_module

    try:
        module = observer_module()
        if module is None:
            raise RuntimeError("the C++ observer mfu_tracker._torch is unavailable (see the "
                               "FLOP counter's warning)")
        import torch.distributed as dist

        spec = peak.spec
        device_name = spec.name if spec is not None and spec.source == "datasheet" else None
        return observe(tracker, module, aggregator=agg, rank=dist.get_rank(),
                       device_name=device_name, on_gpu=kind != "cpu",
                       link_bandwidth_gbs=link_bandwidth_gbs)
    except Exception as exc:  # noqa: BLE001 -- a fault here must not stop the run
        warnings.warn(f"mfu_tracker: Tracker: communication is not observed ({exc}); the "
                      f"comm_* keys are left out and exposed communication stays in the "
                      f"phases it interrupts", RuntimeWarning, stacklevel=3)
        return None


class Tracker(_C.StepTracker):
    """End-to-end MFU / HFU / MBU, tokens/s and step time of a training loop::

        tracker = Tracker(flops_per_step, dtype="bf16", param_bytes=param_bytes(model))
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            opt.step(); opt.zero_grad()
            tracker.step(num_tokens=batch["input_ids"].numel())
            log(tracker.metrics())          # e.g. every step: never blocks

    Under ``torch.distributed`` (a process group initialized before the
    tracker is created), on every rank::

        tracker = Tracker(flops_per_step_of_this_rank, dtype="bf16")
        for step, batch in enumerate(loader, 1):
            ...
            tracker.step(num_tokens=tokens_of_this_rank)
            if step % log_every == 0:
                m = tracker.metrics()       # a collective: every rank, same steps
                if rank == 0:
                    log(m)                  # global MFU, per-rank spread, straggler

    The first ``step()`` starts the clock; each later call closes one step
    (what the call's arguments describe) whose period runs from the previous
    boundary. Figures cover the last ``window`` resolved steps after the first
    ``warmup`` steps, as *sums over the window*: tokens/s = total tokens /
    total time, MFU = total model FLOPs / total time / peak -- not a mean of
    per-step ratios. With a GPU clock a step resolves once the GPU has passed
    its closing boundary, so read every step the figures lag by about one step;
    nothing ever waits except :meth:`flush` / :meth:`close` (and, when
    distributed, the aggregation in ``metrics()`` for the other ranks).

    ``metrics(prefix="throughput")`` returns (figures that are unavailable are
    left out, never None or NaN; ``{}`` before the first resolved step):

    ===============================  =====================================================
    key                              meaning
    ===============================  =====================================================
    ``{prefix}/mfu``                 model FLOPs / window time / peak (unclamped)
    ``{prefix}/hfu``                 executed FLOPs / window time / peak
    ``{prefix}/mbu``                 param_bytes per step / step time / peak bandwidth
    ``{prefix}/tokens_per_sec``      tokens / window time (needs ``num_tokens``)
    ``{prefix}/achieved_tflops``     model TFLOP/s over all ``num_gpus`` devices
    ``{prefix}/step_time_s``         mean step period, seconds (end to end)
    ``{prefix}/step_time_min_s``     shortest step period in the window
    ``{prefix}/step_time_max_s``     longest step period in the window
    ``{prefix}/peak_tflops``         the MFU denominator: peak TFLOP/s x ``num_gpus``
    ``{prefix}/mfu_mixed``           (sum_d F_d / peak_d) / window time / ``num_gpus``:
                                     each dtype's FLOPs charged to its own peak (needs
                                     ``flops_by_dtype``; equals ``mfu`` for one dtype)
    ``{prefix}/mfu_language``        MFU of the language model alone: a VLM's vision tower
                                     left out (the lmms-engine convention; needs a
                                     ``language_flops`` window total: the integrations
                                     give it for a VLM config)
    ``{prefix}/mfu_vs_measured``     model FLOP/s / the measured GEMM peak
                                     (``measure_peak=True``)
    ``{prefix}/power_w``             mean board power since the previous ``metrics()``, W
    ``{prefix}/energy_j_per_token``  ``power_w`` / tokens per second, J
    ``{prefix}/tflops_per_watt``     model TFLOP/s / ``power_w``
    ``{prefix}/sm_clock_mhz``        SM clock at the reading, MHz
    ``{prefix}/clock_ratio``         SM clock / maximum SM clock
    ``{prefix}/throttled``           1 when a power or thermal throttle reason is set
    ===============================  =====================================================

    The last six come from NVML (:mod:`mfu_tracker.timing._telemetry`), read once at
    construction and once per ``metrics()`` call -- never per step, never on a
    thread; a missing or failing NVML leaves them out with one warning. Under
    a process group these eight keys are global too (below).

    **Measured by the hardware** (docs/hardware-counters.md;
    :mod:`mfu_tracker.timing._hardware`). At the same edges, on Hopper and later,
    NVML's GPM counters give ``{prefix}/hw/tensor_active``, ``hw/dram_bw_util``
    (the measured MBU), ``hw/sm_active``, ``hw/sm_occupancy`` (0-1 shares of the
    interval since the previous ``metrics()``, >= 0.1 s), ``hw/nvlink_gbs`` and
    ``comm_link_measured_util``; ``hw/mfu_consistency`` = mfu / tensor_active
    checks MFU (a clear excess, or pipes busy far beyond it, warns once, naming
    the likely cause). The caching allocator gives ``memory/peak_allocated_gib``,
    ``memory/peak_reserved_gib`` (with ``_frac`` of the device's memory),
    ``memory/alloc_retries`` and ``memory/ooms`` (in the window). Unsupported:
    absent, with one warning saying why. Local figures only: left out under
    a process group's aggregation.

    **Phases and the waterfall.** ``with tracker.phase(name):`` (or
    ``begin_phase(name)`` / ``end_phase()`` from hooks) marks a phase of the
    step: "data", "forward", "backward", "optimizer" (and "communication",
    exposed communication, which the communication observer marks by itself
    -- see below -- and a loop may mark by hand).
    An unknown name raises ``ValueError``. Each mark is one point on the
    tracker's clock, never a sync: on a GPU clock a phase lasts what the GPU
    timeline says, so a host stall (a data wait) while queued kernels still
    run costs nothing and only the part after the GPU drained counts; on the
    CPU clock it is host time. Nested phases: the inner one wins and the
    outer resumes at its exit. A phase still open at ``step()`` is closed
    there (one warning); ``end_phase()`` with none open, or more than
    ``_C.LIMIT_PHASE_DEPTH_MAX`` nested, is ignored (one warning). When
    phases were marked in the window, ``metrics()`` adds the waterfall
    (fractions of the step period; ``mfu`` + the ``mfu_lost`` shares = 1
    exactly; definitions in :mod:`mfu_tracker.timing._waterfall`):

    ====================================  ===========================================================
    key                                   meaning
    ====================================  ===========================================================
    ``{prefix}/mfu_lost/data``            the GPU waited for input (data phase / step time)
    ``{prefix}/mfu_lost/communication``   exposed communication (not overlapped with compute)
    ``{prefix}/mfu_lost/pipeline_bubble`` a pipeline stage waiting for its neighbours
    ``{prefix}/mfu_lost/optimizer``       the optimizer phase
    ``{prefix}/mfu_lost/recompute``       hfu - mfu - over-compute (needs executed FLOPs)
    ``{prefix}/mfu_lost/compute``         forward + backward beyond ideal and recompute
                                          (over-compute included: ``step(overcompute_flops=)``)
    ``{prefix}/mfu_lost/other``           everything else: host / launch bound idle, unmarked time
    ``{prefix}/phase_s/<phase>``          seconds per step in each marked phase
    ====================================  ===========================================================

    A phase never marked in the window has no key (its time is in ``other``).
    ``metrics()`` leaves its own time out of the step it falls in: the
    aggregation collective on either clock, the local call on the CPU clock.

    **Communication.** Under an initialized process group (``comm`` not
    False) the tracker observes every collective the process issues, with
    no attach call -- DDP, FSDP1 / FSDP2, DTensor tensor / sequence / context
    parallelism, all-to-all, broadcast, p2p, pipeline schedules
    (:mod:`mfu_tracker.distributed._comm_observer`) -- and adds, per step over
    the window (kinds: ``all_gather``, ``reduce_scatter``, ``all_reduce``,
    ``all_to_all``, ``broadcast``, ``p2p``, ``other``):

    ====================================  ===========================================================
    key                                   meaning
    ====================================  ===========================================================
    ``{prefix}/comm_bytes/<kind>``        payload bytes per step (all-gather: its output; reduce-
                                          scatter and all-to-all: their input; the rest: the tensor)
    ``{prefix}/comm_s/<kind>``            exposed seconds per step: the compute stream (CPU clock:
                                          the host) waiting for collectives of that kind
    ``{prefix}/phase_s/communication``    the sum of ``comm_s``; ``mfu_lost/communication`` its share
    ``{prefix}/phase_s/pipeline_bubble``  a stage's waits for its neighbours' p2p inside a
                                          ``torch.distributed.pipelining`` schedule (not also
                                          communication); ``mfu_lost/pipeline_bubble`` its share
    ``{prefix}/comm_busbw_gbs/<kind>``    bus bandwidth, GB/s: payload / duration (launch to
                                          completion) x nccl-tests' factor for the group's size
    ``{prefix}/net_utilization``          bus bytes / what the groups' links carry in the same time
                                          (link table: NVLink, xGMI, PCIe, InfiniBand, RoCE; needs a
                                          known link or ``link_bandwidth_gbs``)
    ``{prefix}/comm_overlap``             share of the collectives' time hidden under compute (GPU
                                          clocks only)
    ====================================  ===========================================================

    Under a process group each is the mean over ranks, and
    ``{prefix}/comm_s_max`` is the largest rank's exposed total; the
    straggler takes exposed communication and the bubble out of busy time.

    **Distributed.** When a ``torch.distributed`` process group is initialized
    at construction (and ``distributed`` is not False), ``metrics()`` is a
    *collective*: every rank must call it at the same steps -- at logging
    intervals, not every step -- and one all-gather of a ~150-byte row per
    rank on a dedicated gloo group (CPU tensors: no GPU synchronization)
    gives every rank the same global figures: the keys above then cover the
    whole job as below, and the per-rank keys are added (definitions and
    their justification: :mod:`mfu_tracker.distributed`):

    ==============================================  ==========================================================
    key                                             meaning
    ==============================================  ==========================================================
    ``{prefix}/mfu``                                global: sum_r achieved_r / sum_r peak_r, the peak-weighted
                                                    mean of per-rank MFU (``hfu``, ``mbu`` alike)
    ``{prefix}/achieved_tflops``                    sum over ranks of model TFLOP/s
    ``{prefix}/tokens_per_sec``                     sum over ranks of tokens/s
    ``{prefix}/peak_tflops``                        sum over ranks of the peak (the denominator)
    ``{prefix}/step_time_s``                        max over ranks of the mean step period (the job's pace)
    ``{prefix}/step_time_min_s`` / ``max``          min / max over ranks of the window min / max
    ``{prefix}/tokens_per_sec_per_device``          tokens/s over all devices (sum of ``num_gpus``)
    ``{prefix}/mfu_rank_min`` / ``mean`` / ``max``  spread of the per-rank MFU (unweighted mean)
    ``{prefix}/slowest_rank``                       the rank that took longest (host seconds per step) from
                                                    the previous aggregation to this one
    ``{prefix}/step_time_rank_max``                 its seconds per step over that interval
    ``{prefix}/step_time_rank_min``                 the fastest rank's seconds per step
    ``{prefix}/straggler_rank``                     (phases marked on every rank) the rank with the most busy
                                                    seconds per step: step time less exposed communication
                                                    and pipeline bubble
    ``{prefix}/straggler_lost``                     the other ranks' mean wait for it, a fraction of the job's
                                                    step time
    ``{prefix}/mfu_mixed``                          device-weighted mean of the ranks' ``mfu_mixed``
    ``{prefix}/mfu_language``                       peak-weighted mean of the ranks' ``mfu_language``
    ``{prefix}/mfu_vs_measured``                    sum_r achieved_r / sum_r measured peak_r
    ``{prefix}/power_w``                            sum over ranks (each rank reads its own device)
    ``{prefix}/energy_j_per_token``                 ``power_w`` / the job's tokens per second
    ``{prefix}/tflops_per_watt``                    the job's model TFLOP/s / ``power_w``
    ``{prefix}/sm_clock_mhz`` / ``clock_ratio``     mean / lowest over ranks
    ``{prefix}/throttled``                          1 when any rank reports a throttle reason
    ==============================================  ==========================================================

    With phases marked on every rank the waterfall keys are global too: the
    peak-weighted mean of the ranks' shares (the weights of the global MFU),
    and ``phase_s`` the mean over ranks.

    A figure is global only when every rank has it (else left out). World
    size 1 gives the same keys with no collective. A rank whose peers do not
    reach the aggregation within ``distributed_timeout`` seconds warns once
    and reports its local figures from then on (no more waits); ranks that
    aggregate at different step counts get global figures and one warning.
    Without a process group, or with ``distributed=False``, ``metrics()`` is
    the local table above and never communicates.

    **Parallel degrees.** ``num_gpus`` keeps the pure-Python package's
    meaning: *this process* drives ``num_gpus`` devices and its figures cover
    all of them. ``tensor_parallel``, ``sequence_parallel``,
    ``context_parallel`` and ``pipeline_parallel`` count *ranks* (processes)
    that together process one model replica's batch. Give every such rank the
    replica's figures -- the full (unsharded) model's FLOPs on the replica's
    batch, e.g. :func:`transformer_flops`, and that batch's tokens -- and the
    tracker counts ``1 / (tp x sp x cp x pp)`` of them on this rank: its MFU
    is per GPU, and summing over ranks counts each replica once. Locally
    (without aggregation) the FLOP/s and tokens/s shown are the replica's and
    the peak is multiplied by the degree. ``sequence_parallel`` means ranks
    *beyond* the tensor-parallel group that split the sequence (DeepSpeed
    Ulysses); Megatron-style sequence parallelism runs on the tensor-parallel
    ranks themselves: declare it through ``tensor_parallel`` only. With
    ``pipeline_parallel`` every stage reports the replica average; to see
    stage imbalance give each stage its own FLOPs and leave the degree at 1.
    Data parallelism (DDP, FSDP) needs no declaration: each rank gives its own
    batch's FLOPs. An op-level counter on a tensor-parallel rank sees only
    its shards (local FLOPs): then leave the degrees at 1 and give the local
    share of the tokens. FSDP is not model parallelism here: its ranks each
    run the full (all-gathered) weights on their own batch, which is what a
    FLOP counter sees and what ``param_bytes()`` reports (DTensor parameters
    have their full shape).

    Args:
        flops_per_step: model FLOPs of one step on this rank (the MFU
            numerator), or None to give them per step (``step(model_flops=)``).
        dtype: compute dtype selecting the peak ("bf16", torch.bfloat16, ...).
        window: steps the figures cover (1 .. ``_C.LIMIT_WINDOW_MAX``).
        warmup: timed steps ignored at the start (compilation, warm-up).
        param_bytes: bytes of weights read per step (the MBU numerator).
        executed_flops_per_step: executed FLOPs per step for HFU (recompute
            included), or None.
        num_gpus: devices the FLOPs per step ran on; the peak is multiplied by it.
        device: the device whose peak and clock to use (default: torch's
            current CUDA device, else the CPU).
        spec: a :class:`GPUSpec` to use instead of looking the device up.
        peak_tflops: per-device peak in TFLOP/s, overriding the table.
        clock: "auto" (GPU events on a CUDA / ROCm device, else the CPU clock),
            "cuda", "hip" (pin the GPU clock) or "cpu".
        stream: the stream the boundary events go on: a ``torch.cuda.Stream``,
            a raw handle (int) or None (torch's current stream of the device
            when the tracker is created; the null stream without torch CUDA).
        distributed: None (aggregate across ranks iff a ``torch.distributed``
            process group is initialized when the tracker is created), True
            (require one: ValueError without) or False (never communicate).
            A distributed tracker's construction creates a gloo process group
            and gathers the ranks' host names on it -- collectives: construct
            it on every rank, in the same order relative to your other
            ``new_group()`` calls.
        distributed_timeout: seconds a rank waits in the aggregation for the
            others before it gives up (one warning, local figures after).
        tensor_parallel, sequence_parallel, context_parallel,
        pipeline_parallel: model-parallel degrees (see above); their product
            must divide the world size when aggregating.
        flops_by_dtype: model FLOPs of one step split by compute dtype,
            ``{"fp8": F1, "bf16": F2, ...}`` (names: ``_C.dtype_names()``), for
            ``mfu_mixed``; with ``flops_per_step`` None their sum is it. Per
            step: ``step(flops_by_dtype=)``. A dtype without a peak on the
            device leaves ``mfu_mixed`` out, with one warning. Each dtype's
            peak comes from the spec in use (the device's table row, or
            ``spec``); ``peak_tflops`` is the user's peak for every dtype, so
            with it ``mfu_mixed`` equals ``mfu``.
        measure_peak: measure the device's GEMM peak for ``dtype`` once, now
            (:func:`measure_peak_flops`, about 0.3 s -- before training, never
            during it) and report ``mfu_vs_measured``; a measured peak above
            the one in use gives one warning. On a CPU it measures the CPU
            matmul. Under a process group ``mfu_vs_measured`` is global.
        telemetry: device telemetry from NVML (power, energy, clocks, and the
            GPM counters ``hw/*``): None (on when the tracker's clock is a
            CUDA device), True (the same, warning when the device cannot be
            identified), False (off), or an NVML device id (a UUID "GPU-..."
            or a PCI bus id) to read.
        memory: the caching allocator's memory headroom (``memory/*``): None
            (on when the tracker's clock is a CUDA / ROCm device torch has),
            True (the same, warning when it cannot be read), "window"
            (per-window peaks: each ``metrics()`` resets the allocator's peak
            statistics, so ``torch.cuda.max_memory_allocated()`` restarts
            there too) or False (off). The default reports running peaks and
            changes nothing.
        log_path: a file to append the run's records to: a run record now
            (run id, host, ranks, the process's start time from the OS,
            ``start_step``, the peak), one JSON line per non-empty
            ``metrics()`` dict with ``step`` (the global step: ``start_step``
            + steps completed), ``time`` (wall seconds) and the job ledger's
            interval (the steps since the previous line, their time and
            phase seconds), and a run-end record at ``close()`` (or the
            interpreter's exit) -- the input of ``mfu-tracker report`` and
            ``mfu-tracker goodput``. Runs of one job (restarts) append to the
            same file. Only rank 0 writes; a failing write gives one warning
            and stops the logging (:mod:`mfu_tracker.job`). None: no log.
        start_step: the global step this run resumes from (after loading a
            checkpoint: the steps before it were trained by earlier runs);
            steps an earlier run logged at or beyond it are lost progress in
            the job ledger. The integrations take it from the trainer.
        metrics_port: serve the latest ``metrics()`` values on this port, on
            rank 0, as Prometheus gauges ``mfu_tracker_*`` (labels ``job``,
            ``rank``, ``prefix``; :mod:`mfu_tracker.job._prometheus`); 0 picks
            a free port (:attr:`metrics_port`). Default: the
            ``MFU_TRACKER_METRICS_PORT`` environment variable, else none.
            Needs ``prometheus_client`` (the ``[prometheus]`` extra).

        comm: observe the process's collectives (see "Communication"):
            None (yes, under an initialized process group), True (require
            one: ValueError without) or False (no: exposed communication
            stays in the phases it interrupts, as :meth:`attach_ddp`'s
            marking hook leaves it). Needs the C++ observer
            (``mfu_tracker._torch``; without it, one warning and no keys).
            The links' hosts come from the one gather of host names a
            distributed tracker makes when it creates its group; afterwards
            nothing communicates outside ``metrics()``.
        link_bandwidth_gbs: the link peak every group's ``net_utilization``
            is measured against, GB/s per direction, instead of the link
            table's (NVLink, xGMI, PCIe for one node; the node's InfiniBand
            or RoCE ports, shared by its ranks, across nodes).
        profile_steps: profile chosen steps and break each down by kernel
            class (docs/kernel-breakdown.md, :mod:`mfu_tracker.timing._step_profile`):
            None (off, the default), N (the first step after the warm-up,
            then every N-th), True (every 500th) or a collection of global
            step numbers. A profiled step runs ``torch.profiler`` (CPU + CUDA
            activities) and a FLOP counter; its trace is reduced in memory
            to :attr:`last_breakdown` (GEMM, attention, fused, reduction,
            elementwise, optimizer, other, memory, communication and idle:
            time, count, FLOPs, bytes), a ``breakdown`` record in the log,
            and ``{prefix}/kernel_share/<class>`` (adding up to 1),
            ``kernel_tflops/<class>``, ``kernel_gbs/<class>`` and
            ``kernel_step_s`` in the next local ``metrics()``. A profiler
            already running (the user's) is left alone, with one warning;
            a failure is one warning and no breakdown.
        profile_trace_dir: keep each profiled step's raw Kineto trace in
            this directory (None: never written).

    **The job** (issue 28). A step is numbered by the boundaries: the first
    ``step()`` starts the clock, the i-th step it closes is global step
    ``start_step + i`` -- call ``step()`` once before the loop and once after
    each step (what the integrations do), or the first loop iteration is part
    of the run's startup. ``phase("checkpoint")``, ``phase("eval")`` and
    ``phase("compile")`` mark the job's badput: their time leaves the step it
    falls in (like ``metrics()``' own), so no step's MFU is charged for it,
    and the ledger books it; marked before the first ``step()`` they are part
    of startup (no step is open to charge).

    Bad arguments raise ``TypeError`` / ``ValueError`` naming them. After
    construction nothing raises into the loop: a GPU driver failure gives one
    warning and the CPU clock (steps in flight are dropped); a bad per-step
    value gives one warning and leaves the figures that need it out.
    """

    __slots__ = ("_peak", "_dtype", "_num_gpus", "_model_parallel", "_dist",
                 "_measured_flops_per_sec", "_hardware", "_run", "_comm", "_profiler",
                 "__weakref__")

    def __new__(cls, *args: Any, **kwargs: Any) -> "Tracker":
        # The kernel breakdown: a tracker that profiles steps is a
        # ProfiledTracker, whose step() adds the profiler's boundary; any
        # other keeps step() in C alone (no cost when profiling is off).
        if cls is Tracker and _profiles(kwargs.get("profile_steps")):
            cls = PROFILED[0]      # registered by ._profiled (the package imports it)
        return super().__new__(cls)

    def __init__(
        self,
        flops_per_step: Optional[float] = None,
        *,
        dtype: Any = "bf16",
        window: int = 100,
        warmup: int = 1,
        param_bytes: Optional[float] = None,
        executed_flops_per_step: Optional[float] = None,
        num_gpus: int = 1,
        device: Any = None,
        spec: Optional[GPUSpec] = None,
        peak_tflops: Optional[float] = None,
        clock: str = "auto",
        stream: Any = None,
        distributed: Optional[bool] = None,
        distributed_timeout: float = DEFAULT_TIMEOUT_S,
        tensor_parallel: int = 1,
        sequence_parallel: int = 1,
        context_parallel: int = 1,
        pipeline_parallel: int = 1,
        flops_by_dtype: Optional[Mapping[str, float]] = None,
        measure_peak: bool = False,
        telemetry: Union[bool, str, None] = None,
        memory: Union[bool, str, None] = None,
        log_path: Any = None,
        start_step: int = 0,
        metrics_port: Optional[int] = None,
        comm: Optional[bool] = None,
        link_bandwidth_gbs: Optional[float] = None,
        profile_steps: Any = None,
        profile_trace_dir: Any = None,
    ) -> None:
        schedule = check_profile_steps(profile_steps)   # the kernel breakdown
        trace_dir = check_trace_dir(profile_trace_dir)
        log_file = check_log_path(log_path)
        start_step = check_int(start_step, "start_step", 0)
        port = check_metrics_port(metrics_port)
        model_flops = check_optional_work(flops_per_step, "flops_per_step", "MFU")
        executed_flops = check_optional_work(executed_flops_per_step, "executed_flops_per_step", "HFU")
        bytes_per_step = check_optional_work(param_bytes, "param_bytes", "MBU")
        window = check_int(window, "window", 1, WINDOW_MAX)
        warmup = check_int(warmup, "warmup", 0, WARMUP_MAX)
        num_gpus, model_parallel = check_parallel_degrees(num_gpus, dict(
            tensor_parallel=tensor_parallel, sequence_parallel=sequence_parallel,
            context_parallel=context_parallel, pipeline_parallel=pipeline_parallel))
        check_optional_flag(measure_peak, "measure_peak")
        if telemetry is not None:
            check_instance(telemetry, "telemetry", (bool, str), "None, a bool or an NVML device id (str)")
        check_memory(memory)
        aggregate = _distributed_mode(distributed, distributed_timeout, model_parallel)
        _check_comm(comm, link_bandwidth_gbs)
        check_clock(clock)
        handle = None if stream is None else check_stream(stream)
        peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)

        kind, index, torch = resolve_clock(clock, device)
        if kind != "cpu":
            # The shared timer's creation makes the device's context current
            # and tells, once per process and device, whether the GPU clock works.
            if mark_timer(kind, index, torch, "Tracker") is None:
                kind = "cpu"  # warned already
            elif handle is None:
                getter = current_stream_getter(torch, index)
                handle = getter(index) if getter is not None else 0
        super().__init__(
            clock=kind,
            stream=handle or 0,
            model_flops=model_flops,
            executed_flops=executed_flops,
            param_bytes=bytes_per_step,
            peak_flops_per_sec=peak.flops_per_sec,
            peak_bytes_per_sec=peak.bytes_per_sec,
            # The figures given cover num_gpus devices of this process times
            # the ranks of a model-parallel group: the denominator covers both.
            num_gpus=num_gpus * model_parallel,
            window=window,
            warmup=warmup,
            dtype_peaks=dtype_peaks(peak),
            flops_by_dtype=flops_by_dtype,
        )
        self._measured_flops_per_sec = _measure(peak, kind, index, torch) if measure_peak else None
        spec = peak.spec
        self._hardware = DeviceWindow.open(
            telemetry=telemetry, memory=memory, kind=kind, index=index, torch=torch,
            spec_name=spec.name if spec is not None and spec.source == "datasheet" else None,
            link_bandwidth_gbs=link_bandwidth_gbs)
        self._peak = peak
        self._dtype = peak.dtype
        self._num_gpus = num_gpus
        self._model_parallel = model_parallel
        endpoint = serve_metrics(port) if port is not None and rank_world()[0] == 0 else None
        self._run = RunBook(start_step=start_step, endpoint=endpoint,
                            log=None if log_file is None else MetricsLog(log_file))
        self._run.start(self, peak=peak, num_gpus=num_gpus)
        self._profiler = None if schedule is None else StepProfiler(
            schedule, kind=kind, index=index, peak=peak, first_step=start_step + warmup + 1,
            start_step=start_step, trace_dir=trace_dir, sink=self._log_breakdown,
            rank=rank_world()[0])
        # Last: the group creation is the only step that communicates (with
        # the observer's one gather of the ranks' hosts, on that group).
        self._dist = Aggregator(distributed_timeout) if aggregate else None
        self._comm = _communication(self, comm, link_bandwidth_gbs, peak, kind, self._dist)

    @property
    def peak(self) -> Peak:
        """The per-device peak the figures are measured against."""
        return self._peak

    @property
    def distributed(self) -> bool:
        """Whether ``metrics()`` is currently the cross-rank collective.

        False without a process group, with ``distributed=False``, after
        ``close()`` and after a failed aggregation.
        """
        agg = self._dist
        return agg is not None and agg.failed is None

    @property
    def observes_communication(self) -> bool:
        """Whether this tracker observes the process's collectives (the
        ``comm`` argument; :mod:`mfu_tracker.distributed._comm_observer`)."""
        return self._comm is not None

    @property
    def model_parallel(self) -> int:
        """tensor x sequence x context x pipeline parallel degree."""
        return self._model_parallel

    def metrics(
        self,
        prefix: str = "throughput",
        *,
        model_flops: Optional[float] = None,
        executed_flops: Optional[float] = None,
        num_tokens: Optional[float] = None,
        ideal_s: Optional[float] = None,
        language_flops: Optional[float] = None,
        overcompute_flops: Optional[float] = None,
    ) -> Dict[str, float]:
        """The figures as ``{prefix}/name`` keys (see the class doc; ``prefix=""``
        gives bare names), made by the one metric formatter
        (:mod:`mfu_tracker.timing._metrics`).

        ``{}`` until a measured step is in the window -- not an error, and not
        warned about: the first ``step()`` starts the clock, each later one
        closes a step, and the first ``warmup`` closed steps are not measured,
        so with ``warmup=1`` the first figures come after the third ``step()``
        call (on a GPU clock, once the GPU has passed that step's end: about
        one step later). A figure the window cannot give (MFU without a
        peak, tokens/s without ``num_tokens``) is left out, never 0.

        Local and never blocking without a process group; with one, a
        collective returning the global figures on every rank. The time
        spent inside (the collective's wait above all) is left out of the
        step it falls in, on either clock.

        ``model_flops``, ``executed_flops`` (FLOPs), ``num_tokens`` and
        ``ideal_s`` (seconds the model FLOPs need at each dtype's peak, for
        ``mfu_mixed``) are totals over the steps now in the window, for
        loops that know a window's work only at logging time (the
        integrations): each replaces the window's own total, and the ratios
        are formed from it. A bad one (negative, NaN, not a number) gives one
        warning and leaves the figures that need it out. ``language_flops``:
        the part of the window's model FLOPs spent in the language model (a
        VLM's vision tower left out), giving ``mfu_language``.
        ``overcompute_flops``: executed FLOPs beyond the model convention that
        are not recompute (``FlopCounter.overcompute_flops``), booked to
        ``mfu_lost/compute`` rather than ``recompute``.
        """
        check_prefix(prefix)  # before the collective: the same on every rank
        totals = _window_totals(model_flops, executed_flops, num_tokens, ideal_s, language_flops,
                                overcompute_flops)
        run = self._run
        # The ledger's interval: for the log's line and the aggregation's row only.
        interval = run.interval(self) if run.log is not None or self.distributed else None
        out = self._metrics(prefix, totals, interval)
        if out:
            run.logged(out, interval, prefix=prefix, step=self.global_step)
        return out

    @property
    def global_step(self) -> int:
        """``start_step`` + the steps completed (``step()`` calls - 1): the
        ``step`` of the run's log lines."""
        return self._run.start_step + max(int(_C.StepTracker.counters(self)["boundaries"]) - 1, 0)

    @property
    def start_step(self) -> int:
        """The global step this run resumed from (``start_step=``)."""
        return self._run.start_step

    @property
    def run_id(self) -> str:
        """This run's id in the log's run record (a fresh random id per tracker)."""
        return self._run.run_id

    @property
    def metrics_port(self) -> Optional[int]:
        """The port the Prometheus endpoint serves on (None: no endpoint here)."""
        endpoint = self._run.endpoint
        return None if endpoint is None else endpoint.port

    def peak_check(self, measured_flops_per_sec: float) -> bool:
        """A second measurement of the peak (FLOP/s per device, e.g. measured
        again after training): logged as a ``peak_check`` record, so the
        report can carry a caveat; True when it and the tracker's peak differ
        by more than 25% (the machine was busy during one of them)."""
        value = check_positive_number(measured_flops_per_sec, "measured_flops_per_sec", "FLOP/s")
        return self._run.peak_check(value)

    @property
    def last_breakdown(self) -> Optional[Breakdown]:
        """The kernel breakdown of the last profiled step (``profile_steps``;
        :mod:`mfu_tracker.timing._breakdown`), or None."""
        return None if self._profiler is None else self._profiler.last

    def _log_breakdown(self, breakdown: Breakdown) -> None:
        """A profiled step's breakdown: a ``breakdown`` record in the log."""
        log = self._run.log
        if log is not None:
            log.write_record(BREAKDOWN_RECORD, breakdown.to_record())

    def _book_flops(self, model_flops: float, steps: int) -> None:
        """An integration's model FLOPs of ``steps`` closed steps it resolved
        late (:meth:`RunBook.book_flops`)."""
        self._run.book_flops(model_flops, steps)

    def _compile_call(self) -> None:
        """An integration marked a whole compiled call as compile
        (:meth:`RunBook.compile_call`)."""
        self._run.compile_call()

    def _metrics(self, prefix: str, totals: Dict[str, float],
                 interval: Optional[Dict[str, Any]]) -> Dict[str, float]:
        if self._comm is not None:
            self._comm.refresh()  # links of groups created since
        agg = self._dist
        collective = agg is not None and agg.failed is None
        # Left out of the step: the collective on either clock; the local
        # path (microseconds of host work) on the CPU clock only -- on a GPU
        # clock it overlaps queued work, and two event records per call
        # would cost more than they measure.
        exclude = collective or self.clock == "cpu"
        if exclude:
            self._exclude_begin()
        try:
            if collective:
                figures = self._aggregate(agg, totals, interval)  # type: ignore[arg-type]
                if figures is not None:
                    if interval is not None:   # the job's FLOPs of it: every rank's, summed
                        interval["model_flops"] = figures.ledger_model_flops
                        interval["flops_ranks"] = figures.world_size
                    return figures.metrics(prefix)
            local = self._window_figures(totals)
            if not local["steps"]:
                return {}
            local["dtype"] = self._dtype
            local.update(self._hardware.figures(local))
            if self._profiler is not None:   # the kernel breakdown's keys, once
                local.update(self._profiler.take_figures())
            return format_metrics(local, prefix)
        finally:
            if exclude:
                self._exclude_end()

    def _window_figures(self, totals: Mapping[str, float]) -> Dict[str, Any]:
        """This rank's figures over its window: the one place they are formed.

        The C summary (every ratio, ``mfu_mixed`` included, formed in C from
        the window's totals or the ``totals`` given), ``mfu_language`` (with a
        ``language_flops`` total), ``mfu_vs_measured``,
        and, when phases were marked in the window, their seconds per step
        (``phase_s``) and the waterfall (``mfu_lost``).
        """
        language = totals.get("language_flops")
        if language is not None:  # not the C summary's: formed below
            totals = {k: v for k, v in totals.items() if k != "language_flops"}
        out: Dict[str, Any] = (_C.StepTracker.summary(self, **totals) if totals
                               else _C.StepTracker.summary(self))
        if language is not None:
            out["mfu_language"] = _mfu_language(out, language)
        measured = self._measured_flops_per_sec
        achieved = out["achieved_flops_per_sec"]
        if measured and achieved is not None:
            out["mfu_vs_measured"] = achieved / (measured * self._num_gpus * self._model_parallel)
        # The badput phases left the step (the ledger books them, not the
        # waterfall): split_communication reports the step's phases only.
        phases, comm_s = split_communication(_C.StepTracker.phases(self)["phase_s"])
        if phases:
            out["phase_s"] = phases
            out["mfu_lost"] = waterfall(out["mfu"], out["hfu"], out["step_time_s"], phases,
                                        out.get("overcompute"))
        if self._comm is not None:
            comm = _C.StepTracker.comm(self)
            if comm["steps"]:
                out["comm_s"] = comm_s
                for key in ("comm_bytes", "comm_busbw_gbs", "net_utilization", "comm_overlap"):
                    out[key] = comm[key]
                self._comm.check(out)
        return out

    def phases(self) -> Dict[str, Any]:
        """The window's phases: ``steps``, ``phase_s`` (seconds per step of each
        marked phase, ``communication`` the sum of every collective kind's
        exposed seconds), ``comm_s`` (those seconds by kind) and
        ``excluded_s`` (the tracker's own time per step, left out)."""
        raw = _C.StepTracker.phases(self)
        raw["phase_s"], raw["comm_s"] = split_communication(raw["phase_s"])
        return raw

    def read_telemetry(self, achieved_flops_per_sec: Optional[float] = None,
                       tokens_per_sec: Optional[float] = None) -> Dict[str, float]:
        """Read the device's telemetry now (NVML, see ``telemetry``) and give
        its figures over the interval since the previous reading: ``power_w``,
        ``energy_j_per_token`` (needs ``tokens_per_sec``), ``tflops_per_watt``
        (needs ``achieved_flops_per_sec``, FLOP/s), ``sm_clock_mhz``,
        ``clock_ratio``, ``throttled``. ``{}`` without telemetry. ``metrics()``
        calls it. Never raises (a failing read: one warning, figures out).
        """
        telemetry = self._hardware.telemetry
        if telemetry is None:
            return {}
        return telemetry.figures(achieved_flops_per_sec, tokens_per_sec)

    @property
    def measured_peak_flops_per_sec(self) -> Optional[float]:
        """The GEMM peak measured at construction (``measure_peak=True``), per
        device, FLOP/s; None when not measured."""
        return self._measured_flops_per_sec

    def aggregate(
        self,
        *,
        model_flops: Optional[float] = None,
        executed_flops: Optional[float] = None,
        num_tokens: Optional[float] = None,
        ideal_s: Optional[float] = None,
        language_flops: Optional[float] = None,
        overcompute_flops: Optional[float] = None,
    ) -> Optional[DistributedFigures]:
        """Global figures with every rank's row (:class:`DistributedFigures`).

        A collective like ``metrics()`` when distributed; otherwise this
        process's figures as a one-rank aggregation (no communication).
        None when the aggregation failed (warned once). The window totals
        are those of :meth:`metrics`.
        """
        totals = _window_totals(model_flops, executed_flops, num_tokens, ideal_s, language_flops,
                                overcompute_flops)
        agg = self._dist
        if agg is None or agg.failed is not None:
            return combine([self._rank_figures(totals)])
        self._exclude_begin()
        try:
            return self._aggregate(agg, totals)
        finally:
            self._exclude_end()

    def _aggregate(self, agg: Aggregator, totals: Mapping[str, float],
                   interval: Optional[Mapping[str, Any]] = None) -> Optional[DistributedFigures]:
        if not process_group_initialized():
            # destroy_process_group() ran: nothing to aggregate with.
            agg.close()
            agg.failed = "the process group was destroyed"
            return None
        return agg.aggregate(self._rank_figures(totals, interval))

    def rank_figures(
        self,
        *,
        model_flops: Optional[float] = None,
        executed_flops: Optional[float] = None,
        num_tokens: Optional[float] = None,
        ideal_s: Optional[float] = None,
        language_flops: Optional[float] = None,
        overcompute_flops: Optional[float] = None,
    ) -> RankFigures:
        """This rank's row of an aggregation: its window's figures, as its share.

        Rates and peaks are divided by the model-parallel degree. The interval
        fields are the host time and step() calls since the previous
        aggregation (or construction); None / 0 when not distributed. The
        window totals are those of :meth:`metrics`; a bad one gives one
        warning and leaves its figures out -- never an exception, which on
        one rank would leave the others waiting in the collective.
        """
        return self._rank_figures(_window_totals(model_flops, executed_flops, num_tokens, ideal_s,
                                                 language_flops, overcompute_flops))

    def _rank_figures(self, totals: Mapping[str, float],
                      interval: Optional[Mapping[str, Any]] = None) -> RankFigures:
        w = self._window_figures(totals)
        if interval is None:
            interval = self._run.interval(self)
        mp = self._model_parallel
        peak = w["peak_flops_per_sec"]  # per-device peak x num_gpus x mp
        bandwidth = self._peak.bytes_per_sec
        bandwidth = None if bandwidth is None else bandwidth * self._num_gpus * mp
        agg = self._dist
        if agg is not None and agg.failed is None:
            interval_s, interval_steps = agg.interval(int(w["boundaries"]))
            rank: int = agg.rank
        else:
            interval_s, interval_steps, rank = None, 0, 0
        phases = w.get("phase_s", {})
        # This rank's own device: the per-work figures are the job's (combine()).
        telemetry = self._hardware.reading()
        return RankFigures(
            rank=rank,
            boundaries=int(w["boundaries"]),
            steps=int(w["steps"]),
            window_s=w["window_s"],
            step_time_s=w["step_time_s"],
            step_time_min_s=w["step_time_min_s"],
            step_time_max_s=w["step_time_max_s"],
            achieved_flops_per_sec=_share(w["achieved_flops_per_sec"], mp),
            executed_flops_per_sec=_share(_times(w["hfu"], peak), mp),
            achieved_bytes_per_sec=_share(_times(w["mbu"], bandwidth), mp),
            tokens_per_sec=_share(w["tokens_per_sec"], mp),
            peak_flops_per_sec=_share(peak, mp),
            peak_bytes_per_sec=_share(bandwidth, mp),
            num_devices=self._num_gpus,
            model_parallel=mp,
            interval_s=interval_s,
            interval_steps=interval_steps,
            mfu=w["mfu"],
            **{f"phase_{name}_s": phases.get(name) for name in PHASES},
            mfu_mixed=w["mfu_mixed"],
            mfu_language=w.get("mfu_language"),
            measured_flops_per_sec=(None if not self._measured_flops_per_sec
                                    else self._measured_flops_per_sec * self._num_gpus),
            **{key: telemetry.get(key) for key in TELEMETRY_FIELDS},
            comm_observed=1.0 if self._comm is not None else None,
            comm=comm_families(w),
            net_utilization=w.get("net_utilization"),
            comm_overlap=w.get("comm_overlap"),
            ledger_model_flops=_share(interval["model_flops"], mp),
            overcompute_flops_per_sec=_share(_times(w["overcompute"], peak), mp),
        )

    def attach_ddp(self, model: Any, hook: Any = None, state: Any = None) -> None:
        """Measure exposed communication under DDP: register a communication
        hook on ``model`` (a ``DistributedDataParallel``) that runs ``hook``
        (default: DDP's all-reduce) and, when the last gradient bucket is
        handed over, switches the running backward phase to
        ``communication`` (:mod:`mfu_tracker.distributed._comm_hook`). Needs backward
        marked (by hand or by an integration)."""
        from ..distributed._comm_hook import attach_ddp

        attach_ddp(self, model, hook, state, mark=self._comm is None)

    def distributed_counters(self) -> Dict[str, int]:
        """Aggregation counters: ``aggregations`` (collective metrics() /
        aggregate() calls), ``collectives`` (all-gathers started; 0 at world
        size 1), ``failures``, ``world_size``, ``active``. All zero when the
        tracker is not distributed."""
        agg = self._dist
        if agg is None:
            return {"aggregations": 0, "collectives": 0, "failures": 0, "world_size": 1,
                    "active": 0}
        return agg.counters()

    def close(self) -> None:
        """Resolve every step taken (one wait), stop timing, drop the side group;
        with ``log_path``, write the run-end record (its interval holds this
        rank's FLOPs only: no collective runs here) and close the log.

        The figures stay readable; ``metrics()`` after ``close()`` is local.
        """
        super().close()
        if self._profiler is not None:
            self._profiler.close()
        comm = self._comm
        if comm is not None:
            comm.close()
        self._run.end(self, self.global_step)
        agg = self._dist
        if agg is not None and agg.failed is None:
            agg.close()
            agg.failed = "closed"

    def summary(self) -> Dict[str, Any]:
        """Every windowed figure, None where unavailable.

        Keys: ``steps`` (in the window), ``steps_seen`` (resolved, warm-up
        included), ``steps_skipped`` (warm-up), ``steps_pending`` (not resolved
        yet), ``steps_dropped`` (lost to a failure), ``boundaries`` (step()
        calls), ``window_s``, ``step_time_s`` / ``_min_s`` / ``_max_s`` (step
        periods, end to end), ``tokens_per_sec``, ``achieved_flops_per_sec``,
        ``achieved_tflops``, ``mfu``, ``hfu``, ``mbu``, ``peak_flops_per_sec``
        and ``peak_tflops`` (the MFU denominator, x num_gpus), ``peak_source``
        ("datasheet", "measured", "user" or "unknown"), ``dtype``, ``clock``;
        when phases were marked in the window also ``phase_s`` (seconds per
        step of each marked phase) and ``mfu_lost`` (the waterfall shares,
        or None without MFU); and, only while available, ``mfu_mixed`` and
        ``ideal_s`` (the window's seconds at each dtype's peak,
        ``flops_by_dtype``) and ``mfu_vs_measured`` (``measure_peak``).
        """
        out: Dict[str, Any] = self._window_figures({})
        for key in ("mfu_mixed", "ideal_s"):
            if out.get(key, 0) is None:
                del out[key]
        out["peak_source"] = self._peak.source
        out["dtype"] = self._dtype
        return out

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Tracker(dtype={self._dtype!r}, clock={self.clock!r}, window={self.window}, "
                f"warmup={self.warmup}, peak_source={self._peak.source!r})")


#: The Tracker subclass ``profile_steps`` selects: :mod:`._profiled` puts it
#: here when the package loads (a registration, so this module never imports
#: the subclass's module, which imports this one).
PROFILED: List[type] = []


def _profiles(profile_steps: Any) -> bool:
    """Whether ``profile_steps`` turns profiling on (a bad value: False here,
    ``__init__`` names it)."""
    try:
        return check_profile_steps(profile_steps) is not None
    except (TypeError, ValueError):
        return False
