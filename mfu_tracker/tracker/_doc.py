"""The reference of :class:`~mfu_tracker.Tracker`: its class docstring, kept
here so the class's module holds its code. Every key its tables name is a
key of the one key table (:mod:`mfu_tracker.timing._metrics`), checked by
``tests/test_step_records.py::test_tracker_doc_keys_are_the_key_table``.
"""

TRACKER_DOC = """End-to-end MFU / HFU / MBU, tokens/s and step time of a training loop::

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

    The last six come from NVML (:mod:`mfu_tracker.device._telemetry`), read once at
    construction and once per ``metrics()`` call -- never per step, never on a
    thread; a missing or failing NVML leaves them out with one warning. Under
    a process group these eight keys are global too (below).

    **Measured by the hardware** (docs/hardware-counters.md;
    :mod:`mfu_tracker.device._hardware`), at the same edges. Unsupported:
    absent, with one warning saying why. Local figures only: left out under a
    process group's aggregation.

    ========================================  ================================================
    key                                       meaning
    ========================================  ================================================
    ``{prefix}/hw/tensor_active``             share (0-1) of the interval since the previous
                                              ``metrics()`` (>= 0.1 s) the tensor pipes were
                                              busy (NVML's GPM counters, Hopper and later)
    ``{prefix}/hw/dram_bw_util``              DRAM bandwidth used / its peak over the same
                                              interval: the measured MBU (GPM)
    ``{prefix}/hw/gpu_busy``                  share of the interval any kernel ran (GPM)
    ``{prefix}/hw/sm_active``                 share of the interval the SMs were busy (GPM)
    ``{prefix}/hw/sm_occupancy``              active warps / the SMs' maximum (GPM)
    ``{prefix}/hw/nvlink_gbs``                NVLink traffic, received + sent, all links, GB/s
    ``{prefix}/comm_link_measured_util``      ``hw/nvlink_gbs`` / the NVLink peak, both
                                              directions (beside the computed one)
    ``{prefix}/hw/mfu_consistency``           mfu / tensor_active: a check of MFU (a clear
                                              excess, or pipes busy far beyond it, warns
                                              once, naming the likely cause)
    ``{prefix}/memory/peak_allocated_gib``    peak memory held by tensors, GiB (running, or
                                              the window's with ``memory="window"``)
    ``{prefix}/memory/peak_reserved_gib``     peak memory the caching allocator reserved, GiB
    ``{prefix}/memory/peak_allocated_frac``   peak allocated / the device's memory
    ``{prefix}/memory/peak_reserved_frac``    peak reserved / the device's memory
    ``{prefix}/memory/alloc_retries``         allocation retries in the window
    ``{prefix}/memory/ooms``                  out-of-memory errors in the window
    ========================================  ================================================

    **Work learned late.** A loop that learns a step's work only after that
    step's ``step()`` call (the integrations resolve a step's FLOPs at logging
    time, from token counts still on the device) books it onto the step:
    ``tracker.book(step, model_flops=..., num_tokens=...)``, where ``step`` is
    :attr:`global_step` right after that step's ``step()`` call. Every fact of
    a step lives in one record in the step engine, whose fields are declared
    once (``_C.STEP_FIELDS``; ``docs/step-records.md``): ``step()``,
    ``book()`` and ``metrics()`` take the same fields, one value
    (:class:`~mfu_tracker.timing._totals.StepSums`) carries them, and what is
    booked is what the window's figures and the job ledger read; a step can be
    booked until ``_C.LIMIT_STEPS_KEPT`` more steps have left the window.
    :meth:`window_steps` lists the window's steps with their work and period.

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
    ``{prefix}/mfu_lost/idle``            the devices idle between marked phases (none running),
                                          carved out of ``other``
    ``{prefix}/mfu_lost/recompute``       hfu - mfu - over-compute (needs executed FLOPs)
    ``{prefix}/mfu_lost/compute``         forward + backward beyond ideal and recompute
                                          (over-compute included: its FLOPs given to
                                          ``step()``, ``docs/waterfall.md``)
    ``{prefix}/mfu_lost/moe_imbalance``   expert-parallel ranks waiting for the busiest experts' rank
                                          (``moe_wait_s``), carved out of communication
    ``{prefix}/mfu_lost/other``           everything else: unmarked time before a step's first phase
                                          and after its last (host / launch bound, logging)
    ``{prefix}/phase_s/<phase>``          seconds per step in each marked phase
    ``{prefix}/idle_s``                   seconds per step between marked phases, none running (on
                                          every rank, the mean over ranks)
    ``{prefix}/moe_wait_s``               seconds per step a rank waited for the busiest experts' rank
                                          (the last sampled MoE step's, docs/moe.md)
    ====================================  ===========================================================

    A phase never marked in the window has no key (its time is in ``other``).

    **Post-training roles.** A step timed by :class:`~mfu_tracker.Roles`
    (``docs/post-training.md``) carries each role's work and seconds and its
    wait (``rollout``, ``reference``, ``reward``, ``learner``,
    ``weight_sync``: ``_C.ROLES``), and adds, for every role that ran:

    ====================================  ===========================================================
    key                                   meaning
    ====================================  ===========================================================
    ``{prefix}/role/<role>/mfu``          the role's model FLOPs / its seconds / peak
    ``{prefix}/role/<role>/mbu``          the role's bytes / its seconds / peak bandwidth
    ``{prefix}/role/<role>/tokens_per_sec`` the role's tokens / its seconds
    ``{prefix}/role/<role>/achieved_tflops`` the role's model TFLOP/s while it ran
    ``{prefix}/role/<role>/time_share``   the role's seconds / the window's wall time
    ``{prefix}/role/<role>/time_s``       the role's seconds per step
    ``{prefix}/mfu_end_to_end``           every role's model FLOPs / the window's wall time / peak
    ``{prefix}/wait_ratio``               seconds no role ran / the window's wall time
    ``{prefix}/wait_s``                   seconds per step no role ran
    ``{prefix}/mfu_lost/wait``            the wait's share of the step, carved out of ``other``
    ====================================  ===========================================================
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

    **Mixture of experts.** With ``moe=model`` the last sampled step's expert
    load (docs/moe.md; token counts are token-expert assignments):

    ====================================  ===========================================================
    key                                   meaning
    ====================================  ===========================================================
    ``{prefix}/moe/imbalance``            sum over MoE layers of the busiest expert's tokens / of the
                                          mean tokens per expert (1.0: balanced)
    ``{prefix}/moe/imbalance_max``        the most imbalanced layer's max / mean
    ``{prefix}/moe/tokens_per_expert_min`` fewest tokens of an expert (``_max``, ``_mean`` likewise)
    ``{prefix}/moe/tokens_per_expert_max`` most tokens of an expert
    ``{prefix}/moe/tokens_per_expert_mean`` mean tokens per expert
    ``{prefix}/moe/straggler_layer``      the MoE layer (0-based, in run order) of the straggler
    ``{prefix}/moe/straggler_expert``     the expert with the most tokens beyond its layer's mean
    ``{prefix}/moe/straggler_rank``       the expert-parallel rank holding the busiest expert
    ``{prefix}/moe/padded_rows``          rows the expert GEMMs computed for no token
    ``{prefix}/moe/padded_flops_share``   their FLOPs / the expert GEMMs' FLOPs
    ``{prefix}/moe/dropped_tokens``       tokens beyond a capacity, never computed
    ``{prefix}/moe/dropped_share``        dropped / routed
    ``{prefix}/moe/sampled_step``         the step these were read on
    ``{prefix}/moe/layer_imbalance/<layer>`` each MoE layer's max / mean (by module name)
    ====================================  ===========================================================

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
    ``{prefix}/step_time_min_s``                    min over ranks of the window min
    ``{prefix}/step_time_max_s``                    max over ranks of the window max
    ``{prefix}/tokens_per_sec_per_device``          tokens/s over all devices (sum of ``num_gpus``)
    ``{prefix}/mfu_rank_min``                       the lowest per-rank MFU
    ``{prefix}/mfu_rank_mean``                      the unweighted mean of the per-rank MFU
    ``{prefix}/mfu_rank_max``                       the highest per-rank MFU
    ``{prefix}/slowest_rank``                       the rank that took longest (host seconds per step) from
                                                    the previous aggregation to this one (when that
                                                    interval holds the warm-up: the window's mean period)
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
    ``{prefix}/mfu_lost_rank/<loss>``               (phases marked on every rank) the rank with the largest
                                                    share of each waterfall loss
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
        dtype: compute dtype selecting the peak ("bf16", torch.bfloat16, ...;
            None: bf16, or fp16 on a device without bf16 (docs/conventions.md)).
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
            A run appended to a log that already holds runs continues their
            job only when it resumes: ``start_step`` > 0, or the same
            ``job`` id; otherwise it starts a new job in the file
            (:mod:`mfu_tracker.job._jobs`).
        job: the job's id (default: ``MFU_TRACKER_JOB``,
            ``TORCHELASTIC_RUN_ID`` or ``SLURM_JOB_ID``, else none: the run
            id stands in), in the run record and the Prometheus ``job``
            label. Runs of one log with the same id are one job.
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
            class (docs/kernel-breakdown.md, :mod:`mfu_tracker.breakdown._step_profile`):
            None (off, the default), N (the first step after the warm-up,
            then every N-th), True (every 500th) or a collection of global
            step numbers. A profiled step runs ``torch.profiler`` (CPU + CUDA
            activities) and a FLOP counter; its trace is reduced in memory
            to :attr:`last_breakdown` (GEMM, attention, fused, reduction,
            elementwise, optimizer, other, memory, communication and idle:
            time, count, FLOPs, bytes), a ``breakdown`` record in the log,
            and ``{prefix}/kernel_share/<class>`` (adding up to 1),
            ``{prefix}/kernel_tflops/<class>``, ``{prefix}/kernel_gbs/<class>``
            and ``{prefix}/kernel_step_s`` (the step the shares add up to, s)
            in the next local ``metrics()``. A profiler
            already running (the user's) is left alone, with one warning;
            a failure is one warning and no breakdown.
        profile_trace_dir: keep each profiled step's raw Kineto trace in
            this directory (None: never written).
        model_info: what the run record says about the model, for the
            readers that need it (:mod:`mfu_tracker.job._model_info`): a
            mapping with any of ``config`` (a transformers config, a
            config.json dict or a preset name), ``seq_len`` (tokens per
            sequence), ``flops`` (how the FLOPs per step were obtained:
            "counted", "declared", "analytic"; "declared" by default with
            ``flops_per_step``) and ``convention`` (another framework's
            counting convention, when the FLOPs follow one). ``mfu-tracker
            view`` shows, with ``config`` and ``seq_len``, the MFU the
            frameworks' formulas would report for the run (docs/view.md).
        moe: the model (a ``torch.nn.Module``) whose MoE layers' expert load
            is read on sampled steps (transformers' experts interface:
            ``num_experts`` and ``forward(hidden_states, top_k_index,
            top_k_weights)``; docs/moe.md). None: off.
        moe_every: steps between sampled MoE steps (default 100): only a
            sampled step's MoE layers carry hooks, and its counts are copied
            to the host at the ``step()`` after it. With
            ``model_info={"flops": "counted"}`` the sampled step's padded
            rows' FLOPs move from model to over-compute FLOPs on each later
            step (docs/moe.md, "Padding in HFU and MFU").

    **The job.** A step is numbered by the boundaries: the first
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
