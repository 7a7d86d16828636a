"""A Tracker's configuration: its constructor's arguments, checked once.

:meth:`TrackerConfig.check` turns ``Tracker(...)``'s keyword arguments into
one frozen value or raises ``TypeError`` / ``ValueError`` naming the bad
argument -- before anything is built, so a bad argument never leaves half a
tracker (an open log, a served port, a process group) behind. The tracker is
then composed from it (:mod:`._parts`): peak, clock, step engine, what it reads
at window edges, run book, aggregator, communication observer.

A new option goes in several places: the keyword of ``Tracker.__init__``
(``_tracker.py``), passed by name to :meth:`TrackerConfig.check` there, and
its entry in the class docstring (``_doc.py``); a field here, with its
keyword and its check in :meth:`TrackerConfig.check` (per-step options, such
as a profiled step every N steps, included; its keywords are Tracker's, as
tests/test_signatures.py checks); the part
that uses it, which reads it from the config (:mod:`._parts` or the module it
builds); the integrations that expose it (``MFUOptimizerWrapper``, the
callbacks), which pass it on; and the docs/ page that describes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from .._validate import (
    check_clock,
    check_instance,
    check_int,
    check_job,
    check_log_path,
    check_optional_flag,
    check_optional_work,
    check_parallel_degrees,
    check_positive_number,
    check_stream,
)
from ..breakdown._step_profile import check_profile_steps, check_trace_dir
from ..device._hardware import check_memory
from ..distributed._collective import process_group_initialized
from ..job._model_info import check_model_info
from ..job._prometheus import metrics_port as check_metrics_port
from ..timing._moe_observer import check_moe

__all__ = ["TrackerConfig"]


def _check_comm(comm: Any, link_bandwidth_gbs: Any) -> Optional[float]:
    """``comm`` and ``link_bandwidth_gbs`` (GB/s, or None); comm=True needs a
    process group."""
    check_optional_flag(comm, "comm")
    if comm is True:
        import torch.distributed  # noqa: F401  (makes the check below see it)
    link = None
    if link_bandwidth_gbs is not None:
        link = check_positive_number(link_bandwidth_gbs, "link_bandwidth_gbs", "GB/s")
    if comm is True and not process_group_initialized():
        raise ValueError("comm=True needs an initialized torch.distributed process group: "
                         "call torch.distributed.init_process_group() first")
    return link


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


@dataclass(frozen=True)
class TrackerConfig:
    """``Tracker(...)``'s arguments, checked (see ``Tracker`` for each).

    Work per step is in FLOPs and bytes (None: unknown, or given per step);
    ``num_gpus`` and ``model_parallel`` (the product of the four parallel
    degrees) count the devices the figures cover; ``aggregate`` says whether
    ``metrics()`` is the cross-rank collective. ``dtype``, ``device``,
    ``spec`` and ``peak_tflops`` are resolved into the peak, ``clock`` and
    ``stream`` into the clock, when the tracker is built; ``window``,
    ``warmup`` and ``flops_by_dtype`` are checked by the step engine (the C
    core's limits, one check with the argument's name), which is started
    before anything that could be left half built.
    """

    model_flops: Optional[float]       # per step: flops_per_step=, the MFU numerator
    executed_flops: Optional[float]    # per step: executed_flops_per_step=, the HFU numerator
    param_bytes: Optional[float]
    window: int
    warmup: int
    num_gpus: int
    model_parallel: int
    dtype: Any
    device: Any
    spec: Any
    peak_tflops: Optional[float]
    clock: str
    stream: Optional[int]
    aggregate: bool
    distributed_timeout: float
    flops_by_dtype: Optional[Mapping[str, float]]
    measure_peak: bool
    telemetry: Union[bool, str, None]
    memory: Union[bool, str, None]
    log_path: Optional[str]
    start_step: int
    job: Optional[str]
    metrics_port: Optional[int]
    comm: Optional[bool]
    link_bandwidth_gbs: Optional[float]
    profile_steps: Any = None           # the kernel breakdown's schedule (None: off)
    profile_trace_dir: Optional[str] = None
    model_info: Optional[Mapping[str, Any]] = None   # the run record's "model" (JSON-safe)
    moe: Any = None                     # the model whose MoE layers are sampled (None: off)
    moe_every: Optional[int] = None     # steps between sampled MoE steps

    @classmethod
    def check(
        cls,
        *,
        flops_per_step: Optional[float],
        dtype: Any,
        window: int,
        warmup: int,
        param_bytes: Optional[float],
        executed_flops_per_step: Optional[float],
        num_gpus: int,
        device: Any,
        spec: Any,
        peak_tflops: Optional[float],
        clock: str,
        stream: Any,
        distributed: Optional[bool],
        distributed_timeout: float,
        tensor_parallel: int,
        sequence_parallel: int,
        context_parallel: int,
        pipeline_parallel: int,
        flops_by_dtype: Optional[Mapping[str, float]],
        measure_peak: bool,
        telemetry: Union[bool, str, None],
        memory: Union[bool, str, None],
        log_path: Any,
        start_step: int,
        job: Optional[str],
        metrics_port: Optional[int],
        comm: Optional[bool],
        link_bandwidth_gbs: Optional[float],
        profile_steps: Any = None,
        profile_trace_dir: Any = None,
        model_info: Any = None,
        moe: Any = None,
        moe_every: Any = None,
    ) -> "TrackerConfig":
        """The configuration of ``Tracker(...)`` with these arguments (its
        signature holds the defaults); bad ones raise ``TypeError`` /
        ``ValueError`` naming them, in this order."""
        schedule = check_profile_steps(profile_steps)   # the kernel breakdown
        trace_dir = check_trace_dir(profile_trace_dir)
        moe_every = check_moe(moe, moe_every)            # the MoE load (docs/moe.md)
        log_file = check_log_path(log_path)
        start_step = check_int(start_step, "start_step", 0)
        job = check_job(job)
        port = check_metrics_port(metrics_port)
        model_flops = check_optional_work(flops_per_step, "flops_per_step", "MFU")
        model = check_model_info(model_info, declared=model_flops is not None)
        executed = check_optional_work(executed_flops_per_step, "executed_flops_per_step", "HFU")
        bytes_per_step = check_optional_work(param_bytes, "param_bytes", "MBU")
        num_gpus, model_parallel = check_parallel_degrees(num_gpus, dict(
            tensor_parallel=tensor_parallel, sequence_parallel=sequence_parallel,
            context_parallel=context_parallel, pipeline_parallel=pipeline_parallel))
        check_optional_flag(measure_peak, "measure_peak")
        if telemetry is not None:
            check_instance(telemetry, "telemetry", (bool, str),
                           "None, a bool or an NVML device id (str)")
        check_memory(memory)
        aggregate = _distributed_mode(distributed, distributed_timeout, model_parallel)
        link = _check_comm(comm, link_bandwidth_gbs)
        check_clock(clock)
        return cls(
            model_flops=model_flops, executed_flops=executed,
            param_bytes=bytes_per_step, window=window, warmup=warmup, num_gpus=num_gpus,
            model_parallel=model_parallel, dtype=dtype, device=device, spec=spec,
            peak_tflops=peak_tflops, clock=clock,
            stream=None if stream is None else check_stream(stream), aggregate=aggregate,
            distributed_timeout=float(distributed_timeout), flops_by_dtype=flops_by_dtype,
            measure_peak=bool(measure_peak), telemetry=telemetry, memory=memory,
            log_path=log_file,
            start_step=start_step, job=job, metrics_port=port, comm=comm, link_bandwidth_gbs=link,
            profile_steps=schedule, profile_trace_dir=trace_dir, model_info=model, moe=moe,
            moe_every=moe_every,
        )
