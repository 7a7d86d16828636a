"""The step tracker: end-to-end MFU of a training run, one call per step.

``Tracker.step()`` marks a step boundary. A step's *period* is the time from
one boundary to the next, so it covers everything the loop does -- data
loading, forward, backward, optimizer, logging: the utilization the run
actually gets. (``track()`` times a block instead: its ``elapsed_sec`` is that
block's compute window.) On a CUDA / ROCm device the boundaries are GPU events
on the device's stream, resolved without ever synchronizing; elsewhere the
monotonic CPU clock. The hot path, the step records and every ratio are in C
(``_C.StepTracker``, ``csrc/core/steps/steps.h``, ``csrc/core/steps/records.h``).

A Tracker is a composition: its checked configuration
(:class:`._config.TrackerConfig`), the peak, the clock and the step engine it
subclasses, what it reads from the device at window edges
(:mod:`mfu_tracker.device._hardware`), the run book of the job
ledger (:mod:`mfu_tracker.job._run`), the aggregator and the communication
observer (:mod:`mfu_tracker.distributed`). The window's figures are
:mod:`mfu_tracker.timing._figures`', a rank's row of an aggregation
:mod:`mfu_tracker.distributed._rank_row`'s, the metric keys
:mod:`mfu_tracker.timing._metrics`'. Its reference (the class docstring) is
in :mod:`._doc`.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Mapping, Optional, Union

from .._native import _C
from .._validate import check_positive_number, check_prefix
from ..breakdown._record import BREAKDOWN_RECORD, Breakdown
from ..breakdown._step_profile import StepProfiler
from ..distributed._collective import DEFAULT_TIMEOUT_S, Aggregator, process_group_initialized
from ..distributed._figures import DistributedFigures, RankFigures, combine
from ..distributed._rank_row import rank_row
from ..job._log import MetricsLog, rank_world
from ..job._prometheus import serve as serve_metrics
from ..job._run import RunBook
from ..peaks._resolve import Peak, dtype_peaks, resolve_peak
from ..peaks._table import GPUSpec
from ..timing._figures import window_figures
from ..timing._metrics import format_metrics
from ..timing._roles import ROLES, role_figures
from ..timing._moe_observer import MoEObserver
from ..timing._totals import FIELDS, NO_TOTALS, StepSums
from ..timing._waterfall import split_communication
from ._config import TrackerConfig
from ._doc import TRACKER_DOC
from ._parts import Clock, clock_of, communication, device_window, measured_peak

__all__ = ["Tracker"]

#: Summary keys left out while unavailable (they exist only with their input):
#: these ratios, and each field of the step record (its sum over the window,
#: and a per-step field's seconds per step).
_OPTIONAL_SUMMARY = ("mfu_mixed", "mfu_language", "mfu_vs_measured", "wait_ratio",
                     *(f"{role}_time_share" for role in ROLES),
                     *(field.name for field in FIELDS),
                     *(f"{field.name}_per_step" for field in FIELDS if field.per_step))


class Tracker(_C.StepTracker):
    __doc__ = TRACKER_DOC

    __slots__ = ("_config", "_peak", "_dist", "_measured_flops_per_sec", "_hardware", "_run",
                 "_comm", "_profiler", "_roles_warned", "_moe", "__weakref__")

    def __init__(
        self,
        flops_per_step: Optional[float] = None,
        *,
        dtype: Any = None,
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
        job: Optional[str] = None,
        metrics_port: Optional[int] = None,
        comm: Optional[bool] = None,
        link_bandwidth_gbs: Optional[float] = None,
        profile_steps: Any = None,
        profile_trace_dir: Any = None,
        model_info: Optional[Mapping[str, Any]] = None,
        moe: Any = None,
        moe_every: Optional[int] = None,
    ) -> None:
        config = TrackerConfig.check(
            flops_per_step=flops_per_step, dtype=dtype, window=window, warmup=warmup,
            param_bytes=param_bytes, executed_flops_per_step=executed_flops_per_step,
            num_gpus=num_gpus, device=device, spec=spec, peak_tflops=peak_tflops, clock=clock,
            stream=stream, distributed=distributed, distributed_timeout=distributed_timeout,
            tensor_parallel=tensor_parallel, sequence_parallel=sequence_parallel,
            context_parallel=context_parallel, pipeline_parallel=pipeline_parallel,
            flops_by_dtype=flops_by_dtype, measure_peak=measure_peak, telemetry=telemetry,
            memory=memory, log_path=log_path, start_step=start_step, job=job,
            metrics_port=metrics_port, comm=comm, link_bandwidth_gbs=link_bandwidth_gbs,
            profile_steps=profile_steps, profile_trace_dir=profile_trace_dir, model_info=model_info,
            moe=moe, moe_every=moe_every)
        if type(self) is Tracker and (config.profile_steps is not None or config.moe is not None):
            # The kernel breakdown: a tracker that profiles steps is a
            # ProfiledTracker, whose step() adds the profiler's boundary; any
            # other keeps step() in C alone (no cost when profiling is off).
            # The same slots, so the instance can take the subclass here,
            # once its arguments are checked (no __new__ that would hide this
            # signature and check profile_steps a second time).
            self.__class__ = PROFILED[0]   # registered by ._profiled (the package imports it)
        peak = resolve_peak(config.dtype, device=config.device, spec=config.spec,
                            peak_tflops=config.peak_tflops)
        clock = clock_of(config)
        measured = measured_peak(peak, clock) if config.measure_peak else None
        self._start_engine(config, peak, clock, measured)
        self._config = config
        self._peak = peak
        self._measured_flops_per_sec = measured
        self._hardware = device_window(config, peak, clock)
        endpoint = (serve_metrics(config.metrics_port)
                    if config.metrics_port is not None and rank_world()[0] == 0 else None)
        self._run = RunBook(start_step=config.start_step, endpoint=endpoint, job=config.job,
                            log=None if config.log_path is None else MetricsLog(config.log_path))
        self._run.start(self, peak=peak, num_gpus=config.num_gpus, model=config.model_info)
        self._profiler = None if config.profile_steps is None else StepProfiler(
            config.profile_steps, kind=clock.kind, index=clock.index, peak=peak,
            first_step=config.start_step + config.warmup + 1, start_step=config.start_step,
            trace_dir=config.profile_trace_dir, sink=self._log_breakdown, rank=rank_world()[0])
        self._moe = None if config.moe is None else MoEObserver(config.moe, config.moe_every)
        # Last: the group creation is the only step that communicates (with
        # the observer's one gather of the ranks' hosts, on that group).
        self._dist = Aggregator(config.distributed_timeout) if config.aggregate else None
        self._roles_warned = False   # role figures left out under a process group: said once
        if self._moe is not None and self._dist is not None and self._dist.world_size > 1:
            self._moe.gather, self._moe.rank = _moe_gather(self._dist), self._dist.rank
        self._comm = communication(self, config, peak, clock, self._dist)

    def _start_engine(self, config: TrackerConfig, peak: Peak, clock: Clock,
                      measured: Optional[float]) -> None:
        """The step engine (the C base): the work per step, the peak (and the
        measured one, per device, FLOP/s), the window, on the clock's stream."""
        _C.StepTracker.__init__(
            self,
            clock=clock.kind,
            stream=clock.stream,
            model_flops=config.model_flops,
            executed_flops=config.executed_flops,
            param_bytes=config.param_bytes,
            peak_flops_per_sec=peak.flops_per_sec,
            peak_bytes_per_sec=peak.bytes_per_sec,
            # The figures given cover num_gpus devices of this process times
            # the ranks of a model-parallel group: the denominator covers both.
            num_gpus=config.num_gpus * config.model_parallel,
            window=config.window,
            warmup=config.warmup,
            dtype_peaks=dtype_peaks(peak),
            flops_by_dtype=config.flops_by_dtype,
            measured_flops_per_sec=measured,
        )

    # ---- properties --------------------------------------------------------------

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
        return self._config.model_parallel

    @property
    def global_step(self) -> int:
        """``start_step`` + the steps completed (``step()`` calls - 1, and a
        step run before the clock started: :meth:`_untimed_step`): the
        ``step`` of the run's log lines."""
        return self._run.timed_from + max(int(_C.StepTracker.counters(self)["boundaries"]) - 1, 0)

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

    @property
    def measured_peak_flops_per_sec(self) -> Optional[float]:
        """The GEMM peak measured at construction (``measure_peak=True``), per
        device, FLOP/s; None when not measured."""
        return self._measured_flops_per_sec

    # ---- steps -----------------------------------------------------------------

    def book(self, step: int, sums: Optional[StepSums] = None, /,
             **fields: Optional[float]) -> bool:
        """Book work learned after its boundary onto global step ``step``
        (:attr:`global_step` right after that step's ``step()`` call).

        The work is a :class:`~mfu_tracker.timing._totals.StepSums` and/or
        its fields as keywords -- any field of the step record a caller
        gives (``_C.STEP_FIELDS``: model / executed / over-compute /
        language FLOPs, tokens, ``ideal_s`` (the seconds the step's model
        FLOPs need at each dtype's peak, for ``mfu_mixed``), ...;
        ``docs/step-records.md``): each value given replaces the step's own.
        The window's figures and the job ledger read them from then on. True
        when booked; False when the step is not held: not closed yet, lost
        to a clock failure, or ``_C.LIMIT_STEPS_KEPT`` steps past the window.
        A bad value (negative, NaN, not a number) gives one warning and is
        recorded as unknown; never raises for a value, never blocks.
        """
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"book(): step must be an int (a global step), not "
                            f"{type(step).__name__}")
        work = StepSums.of(sums, fields, "book()")
        return _C.StepTracker.book(self, step - self._run.timed_from, **work.kwargs())

    def window_steps(self) -> List[Dict[str, Any]]:
        """The steps in the window, oldest first, each as recorded: ``step``
        (global), ``period_s``, every field of the step record
        (``_C.STEP_FIELDS``: ``model_flops``, ``executed_flops``, ...) and
        ``excluded_s`` (None = unknown)."""
        steps = _C.StepTracker.window_steps(self)
        for record in steps:
            record["step"] += self._run.timed_from
        return steps

    def _untimed_step(self, model_flops: Optional[float]) -> None:
        """An integration's step whose work ran before the clock started
        (:meth:`RunBook.untimed_step`): counted in :attr:`global_step` and the
        job ledger (its FLOPs), never timed."""
        self._run.untimed_step(model_flops)

    def _compile_call(self) -> None:
        """An integration marked a whole compiled call as compile
        (:meth:`RunBook.compile_call`)."""
        self._run.compile_call()

    # ---- figures ---------------------------------------------------------------

    def metrics(self, prefix: str = "throughput", totals: Optional[StepSums] = None,
                **fields: Optional[float]) -> Dict[str, float]:
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

        ``totals`` (a :class:`~mfu_tracker.timing._totals.StepSums`) and the
        keywords -- any field of the step record a caller gives
        (``_C.STEP_FIELDS``: ``model_flops``, ``executed_flops`` (FLOPs),
        ``num_tokens``, ``ideal_s`` (seconds the model FLOPs need at each
        dtype's peak, for ``mfu_mixed``), ``language_flops`` (the part spent
        in the language model, a VLM's vision tower left out, giving
        ``mfu_language``), the over-compute FLOPs (booked to
        ``mfu_lost/compute`` rather than ``recompute``), ...;
        ``docs/step-records.md``) -- are totals over the steps now in the
        window, for loops that know a window's work only at logging time (a
        loop that knows each step's books it, :meth:`book`): each replaces
        the window's own total, and the ratios are formed from it. A bad one
        (negative, NaN, not a number) gives one warning and leaves the
        figures that need it out.
        """
        check_prefix(prefix)  # before the collective: the same on every rank
        totals = StepSums.given(totals, what="Tracker.metrics()", **fields)
        run = self._run
        # The ledger's interval: for the log's line and the aggregation's row only.
        interval = run.interval(self) if run.log is not None or self.distributed else None
        out = self._metrics(prefix, totals, interval)
        if out:
            run.logged(out, interval, prefix=prefix, step=self.global_step)
        return out

    def _metrics(self, prefix: str, totals: StepSums,
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
                self._run.ranks = None if figures is None else figures.ranks   # served per rank
                if figures is not None:
                    if figures.roles_ran and not self._roles_warned:
                        self._roles_warned = True
                        warnings.warn(
                            "mfu_tracker: under a process group the role figures (role/*, "
                            "mfu_end_to_end) are left out of metrics(): each rank's are its "
                            "own tracker's summary(); wait_ratio is the ranks' device-weighted "
                            "mean (docs/post-training.md)", RuntimeWarning, stacklevel=3)
                    if interval is not None:   # the job's FLOPs of it: every rank's, summed
                        interval["model_flops"] = figures.ledger_model_flops
                        interval["flops_ranks"] = figures.world_size
                    return {**figures.metrics(prefix), **self._moe_metrics(prefix)}
            local = self._figures(totals)
            if not local["steps"]:
                return {}
            local["dtype"] = self._peak.dtype       # the self-check's tensor dtypes
            local.update(self._hardware.figures(local))
            if self._profiler is not None:   # the kernel breakdown's keys, once
                local.update(self._profiler.take_figures())
            if self._moe is not None:        # the last sampled step's expert load
                local.update(self._moe.figures())
            return format_metrics(local, prefix)
        finally:
            if exclude:
                self._exclude_end()

    def _moe_metrics(self, prefix: str) -> Dict[str, float]:
        """The last sampled step's ``moe/*`` keys (this rank's), or ``{}``."""
        return {} if self._moe is None else format_metrics(self._moe.figures(), prefix)

    @property
    def last_moe_load(self) -> Any:
        """The expert load of the last sampled MoE step (``moe=``;
        :class:`~mfu_tracker.timing._moe_load.MoELoad`, docs/moe.md), or None."""
        return None if self._moe is None else self._moe.last

    def _figures(self, totals: StepSums) -> Dict[str, Any]:
        """This rank's figures over its window (:func:`window_figures`), and
        its roles' (:func:`role_figures`) when roles ran in it."""
        out = window_figures(self, totals, comm=self._comm)
        bandwidth, config = self._peak.bytes_per_sec, self._config
        devices = config.num_gpus * config.model_parallel   # the engine's ceilings' devices
        out.update(role_figures(out, peak_flops_per_sec=out.get("peak_flops_per_sec"),
                                peak_bytes_per_sec=bandwidth * devices if bandwidth else None))
        return out

    def summary(self) -> Dict[str, Any]:
        """Every windowed figure, None where unavailable.

        Keys: ``steps`` (in the window), ``steps_seen`` (resolved, warm-up
        included), ``steps_skipped`` (warm-up), ``steps_pending`` (not resolved
        yet), ``steps_dropped`` (lost to a failure), ``boundaries`` (step()
        calls), ``window_s``, ``step_time_s`` / ``_min_s`` / ``_max_s`` (step
        periods, end to end), ``tokens_per_sec``, ``achieved_flops_per_sec``,
        ``achieved_tflops``, ``achieved_bytes_per_sec``, ``mfu``, ``hfu``,
        ``mbu``, ``peak_flops_per_sec`` and ``peak_tflops`` (the MFU
        denominator, x num_gpus), ``overcompute`` (the over-compute share at
        the peak), ``peak_source`` ("datasheet", "measured", "user" or
        "unknown"), ``dtype``, ``clock``; when phases were marked in the
        window also ``phase_s`` (seconds per step of each marked phase) and
        ``mfu_lost`` (the waterfall shares, or None without MFU); and, only
        while available, each field's sum over the window (the step
        record's, ``_C.STEP_FIELDS``: ``model_flops``, ``num_tokens``,
        ``ideal_s`` -- the window's seconds at each dtype's peak,
        ``flops_by_dtype`` --, ``language_flops``, ...; a per-step field's
        seconds per step as ``<field>_per_step``), ``mfu_mixed``,
        ``mfu_language`` and ``mfu_vs_measured`` (``measure_peak``).
        """
        out: Dict[str, Any] = self._figures(NO_TOTALS)
        for key in _OPTIONAL_SUMMARY:
            if out.get(key, 0) is None:
                del out[key]
        out["peak_source"] = self._peak.source
        out["dtype"] = self._peak.dtype
        return out

    def phases(self) -> Dict[str, Any]:
        """The window's phases: ``steps``, ``phase_s`` (seconds per step of each
        marked phase, ``communication`` the sum of every collective kind's
        exposed seconds), ``comm_s`` (those seconds by kind) and
        ``excluded_s`` (the tracker's own time per step, left out)."""
        raw = _C.StepTracker.phases(self)
        split = split_communication(raw["phase_s"])
        raw["phase_s"], raw["comm_s"] = split.phase_s, split.comm_s
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

    def peak_check(self, measured_flops_per_sec: float) -> bool:
        """A second measurement of the peak (FLOP/s per device, e.g. measured
        again after training): logged as a ``peak_check`` record, so the
        report can carry a caveat; True when it and the tracker's peak differ
        by more than 25% (the machine was busy during one of them)."""
        value = check_positive_number(measured_flops_per_sec, "measured_flops_per_sec", "FLOP/s")
        return self._run.peak_check(value)

    # ---- aggregation -----------------------------------------------------------

    def aggregate(self, totals: Optional[StepSums] = None,
                  **fields: Optional[float]) -> Optional[DistributedFigures]:
        """Global figures with every rank's row (:class:`DistributedFigures`).

        A collective like ``metrics()`` when distributed; otherwise this
        process's figures as a one-rank aggregation (no communication).
        None when the aggregation failed (warned once). The window totals
        are those of :meth:`metrics`.
        """
        totals = StepSums.given(totals, what="Tracker.aggregate()", **fields)
        agg = self._dist
        if agg is None or agg.failed is not None:
            return combine([self._rank_figures(totals)])
        self._exclude_begin()
        try:
            return self._aggregate(agg, totals)
        finally:
            self._exclude_end()

    def _aggregate(self, agg: Aggregator, totals: StepSums,
                   interval: Optional[Mapping[str, Any]] = None) -> Optional[DistributedFigures]:
        if not process_group_initialized():
            # destroy_process_group() ran: nothing to aggregate with.
            agg.close()
            agg.failed = "the process group was destroyed"
            return None
        return agg.aggregate(self._rank_figures(totals, interval))

    def rank_figures(self, totals: Optional[StepSums] = None,
                     **fields: Optional[float]) -> RankFigures:
        """This rank's row of an aggregation: its window's figures, as its share.

        Rates and peaks are divided by the model-parallel degree. The interval
        fields are the host time and step() calls since the previous
        aggregation (or construction); None / 0 when not distributed. The
        window totals are those of :meth:`metrics`; a bad one gives one
        warning and leaves its figures out -- never an exception, which on
        one rank would leave the others waiting in the collective.
        """
        return self._rank_figures(StepSums.given(totals, what="Tracker.rank_figures()",
                                                 **fields))

    def _rank_figures(self, totals: StepSums,
                      interval: Optional[Mapping[str, Any]] = None) -> RankFigures:
        """This rank's row (:func:`rank_row`) of its window's figures."""
        figures = self._figures(totals)
        if interval is None:
            interval = self._run.interval(self)
        config = self._config
        agg = self._dist
        if agg is not None and agg.failed is None:
            # the window's own steps: before the warm-up ended, the window's periods
            since = agg.interval(int(figures["boundaries"]), self.warmup + 1)
            interval_s, interval_steps = (since.seconds, since.steps) if since is not None \
                else (figures["window_s"], int(figures["steps"]))
            rank: int = agg.rank
        else:
            interval_s, interval_steps, rank = None, 0, 0
        devices = config.num_gpus * config.model_parallel
        bandwidth, measured = self._peak.bytes_per_sec, self._measured_flops_per_sec
        return rank_row(
            figures, rank=rank, interval_s=interval_s, interval_steps=interval_steps,
            num_devices=config.num_gpus, model_parallel=config.model_parallel,
            peak_bytes_per_sec=None if bandwidth is None else bandwidth * devices,
            measured_flops_per_sec=measured * config.num_gpus if measured else None,
            readings=self._hardware.reading(), comm_observed=self._comm is not None,
            ledger_model_flops=interval["model_flops"])

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

    @property
    def last_breakdown(self) -> Optional[Breakdown]:
        """The kernel breakdown of the last profiled step (``profile_steps``;
        :mod:`mfu_tracker.breakdown._record`), or None."""
        return None if self._profiler is None else self._profiler.last

    def _log_breakdown(self, breakdown: Breakdown) -> None:
        """A profiled step's breakdown: a ``breakdown`` record in the log."""
        log = self._run.log
        if log is not None:
            log.write_record(BREAKDOWN_RECORD, breakdown.to_record())

    # ---- the end ---------------------------------------------------------------

    def close(self) -> None:
        """Resolve every step taken (one wait), stop timing, drop the side group;
        with ``log_path``, write the run-end record (its interval holds this
        rank's FLOPs only: no collective runs here) and close the log.

        The figures stay readable; ``metrics()`` after ``close()`` is local.
        """
        _C.StepTracker.close(self)
        if self._profiler is not None:
            self._profiler.close()
        if self._moe is not None:
            self._moe.close()
        comm = self._comm
        if comm is not None:
            comm.close()
        self._run.end(self, self.global_step)
        agg = self._dist
        if agg is not None and agg.failed is None:
            agg.close()
            agg.failed = "closed"

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Tracker(dtype={self._peak.dtype!r}, clock={self.clock!r}, "
                f"window={self.window}, warmup={self.warmup}, "
                f"peak_source={self._peak.source!r})")


#: The Tracker subclass ``profile_steps`` selects: :mod:`._profiled` puts it
#: here when the package loads (a registration, so this module never imports
#: the subclass's module, which imports this one).
PROFILED: List[type] = []


def _moe_gather(agg: Aggregator) -> Any:
    """The MoE observer's exchange: every rank's row on the side group (None
    once the group failed)."""
    def gather(row: List[float], what: str) -> Optional[List[List[float]]]:
        return None if agg.group is None else agg.gather_floats(row, what)
    return gather

