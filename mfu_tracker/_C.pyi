"""Type stubs for the compiled core ``mfu_tracker._C`` (see csrc/python/)."""
from types import TracebackType
from typing import Any, Callable, Literal, Mapping, Optional, Sequence

__version__: str

# ---- module.c: the bounds of csrc/core/base/mfu_limits.h ---------------------

LIMIT_WINDOW_MAX: int
LIMIT_WARMUP_MAX: int
LIMIT_NUM_GPUS_MAX: int
LIMIT_PARALLEL_DEGREE_MAX: int
LIMIT_TIMER_SIZE_MAX: int
LIMIT_TIMER_EVENTS_INITIAL_DEFAULT: int
LIMIT_TIMER_EVENTS_MAX_DEFAULT: int
LIMIT_TIMER_HISTORY_DEFAULT: int
LIMIT_COUNTERS_MAX: int
LIMIT_GPU_NAME_MAX: int
LIMIT_GPU_CC_MAX: int
LIMIT_DTYPE_NAME_MAX: int
LIMIT_PEAK_OVERRIDE_MAX: int
LIMIT_PHASE_DEPTH_MAX: int
LIMIT_COMM_INFLIGHT_MAX: int
LIMIT_COMM_SINKS_MAX: int
LIMIT_STEPS_KEPT: int
LIMIT_GPU_CANDIDATES_MAX: int
LIMIT_TIMELINE_INTERVALS_MAX: int
LIMIT_TIMELINE_LANES_MAX: int
# The environment variables naming the dlopen'd libraries (the driver, NVML).
CUDA_LIBRARY_ENV: str
HIP_LIBRARY_ENV: str
NVML_LIBRARY_ENV: str

# ---- py_gpu_specs.c ----------------------------------------------------------

def lookup_gpu_spec(
    name: str,
    cc_major: Optional[int] = None,
    cc_minor: Optional[int] = None,
    num_sms: Optional[int] = None,
    total_memory_bytes: Optional[int] = None,
) -> Optional[dict[str, Any]]: ...
def gpu_candidates(
    name: str,
    cc_major: Optional[int] = None,
    cc_minor: Optional[int] = None,
    num_sms: Optional[int] = None,
    total_memory_bytes: Optional[int] = None,
) -> Optional[dict[str, Any]]: ...
def gpu_spec_table() -> list[dict[str, Any]]: ...
def normalize_gpu_name(name: str, /) -> str: ...
def parse_peak_override(text: str, dtype: str) -> Optional[float]: ...
def dtype_names() -> tuple[str, ...]: ...

# ---- py_flops.c ---------------------------------------------------------------

def mm_flop(m: int, k: int, n: int) -> int: ...
def addmm_flop(m: int, k: int, n: int) -> int: ...
def bmm_flop(b: int, m: int, k: int, n: int) -> int: ...
def baddbmm_flop(b: int, m: int, k: int, n: int) -> int: ...
def grouped_mm_flop(a_shape: Sequence[int], b_shape: Sequence[int]) -> int: ...
def convolution_flop(
    x_shape: Sequence[int], w_shape: Sequence[int], out_shape: Sequence[int], transposed: bool = False
) -> int: ...
def convolution_backward_flop(
    grad_out_shape: Sequence[int],
    x_shape: Sequence[int],
    w_shape: Sequence[int],
    transposed: bool = False,
    groups: int = 1,
    input_grad: bool = True,
    weight_grad: bool = True,
) -> int: ...
def sdpa_flop(
    batch: int, heads_q: int, heads_kv: int, seq_q: int, seq_kv: int, head_dim_qk: int, head_dim_v: int,
    *, causal_attention: str = "full",
) -> int: ...
def sdpa_backward_flop(
    batch: int, heads_q: int, heads_kv: int, seq_q: int, seq_kv: int, head_dim_qk: int, head_dim_v: int,
    *, causal_attention: str = "full",
) -> int: ...
def varlen_attention_flop(
    cu_seqlens_q: Sequence[int], cu_seqlens_k: Optional[Sequence[int]], heads_q: int, heads_kv: int,
    head_dim_qk: int, head_dim_v: int, *, causal_attention: str = "full", backward: bool = False,
) -> int: ...
def sdpa_model_flop(
    batch: int, heads_q: int, heads_kv: int, seq_q: int, seq_kv: int, head_dim_qk: int, head_dim_v: int,
    *, causal_attention: str = "full", with_backward: bool = False,
) -> int: ...

# ---- py_transformer.c: the analytic count, the family table, the 6N rule ---------

def transformer_flops(
    dims: dict[str, Any], options: dict[str, Any], *, seq_lens: Optional[Sequence[int]] = None,
    batch_size: Optional[int] = None, seq_len: Optional[int] = None,
    vision: Optional[dict[str, Any]] = None, grids: Optional[Sequence[Sequence[int]]] = None,
) -> dict[str, float]: ...
def transformer_family(model_type: str, /) -> Optional[dict[str, Any]]: ...
def transformer_families() -> tuple[str, ...]: ...
def transformer_dim_names() -> tuple[str, ...]: ...
def params_flops(num_params: float, num_tokens: float, *, lora: bool = False) -> dict[str, float]: ...

# ---- py_conventions.c / py_context_parallel.c --------------------------------

def conventions() -> list[dict[str, Any]]: ...
def convention_rule(name: str, model_type: str, /) -> dict[str, Any]: ...
def convention_quirks() -> tuple[dict[str, str], ...]: ...
def convention_flops(
    dims: dict[str, Any], choices: dict[str, str], *, quirks: Sequence[str] = (),
    vocab_multiple: int = 1, seq_lens: Optional[Sequence[int]] = None,
    batch_size: Optional[int] = None, seq_len: Optional[int] = None,
    vision: Optional[dict[str, Any]] = None, grids: Optional[Sequence[Sequence[int]]] = None,
) -> dict[str, Any]: ...
def context_parallel_flops(
    dims: dict[str, Any], options: dict[str, Any], degree: int, rank: int, mode: str, *,
    seq_lens: Optional[Sequence[int]] = None, batch_size: Optional[int] = None,
    seq_len: Optional[int] = None,
) -> dict[str, float]: ...

# ---- py_generation.c ------------------------------------------------------------

def generation_flops(
    dims: dict[str, Any], options: dict[str, Any], prompt_lens: Sequence[int],
    output_lens: Sequence[int], *, weight_dtype: str = "bf16", cache_dtype: str = "bf16",
    mla_cache: Literal["latent", "expanded"] = "latent",
) -> dict[str, float]: ...

# ---- py_ops.c: the op table, mfu_op_count, the custom-formula registry ---------

def op_table() -> tuple[dict[str, Any], ...]: ...

# op_count() / flop_formula_count() return a struct sequence (its type is
# not a module attribute): (executed, model_backward, approximate, dtype),
# and by name model_self, overcompute and site (core/ops/ops.h).
def op_count(
    name: str, args: Sequence[Any], *, causal_attention: str = "full", backward_phase: bool = False,
    grad_enabled: bool = True, tf32: int = 0, node: Optional[str] = None,
    saved_tensor_hooks: bool = False, recomputed: bool = False,
) -> Any: ...
def register_flop_formula(op_name: str, fn: Callable[..., Any], /) -> None: ...
def unregister_flop_formula(op_name: str, /) -> None: ...
def has_flop_formula(op_name: str, /) -> bool: ...
def node_kind(custom_function: bool, name: Optional[str], forward_module: Optional[str],
              higher_order_call: bool = ..., /) -> str: ...
def flop_formula_count(
    name: str, args: tuple[Any, ...], any_requires_grad: bool, backward_phase: bool, grad_enabled: bool,
    input_dtype: Optional[str] = None, tf32: int = 0, node: Optional[str] = None,
    saved_tensor_hooks: bool = False, recomputed: bool = False, /
) -> Any: ...

# ---- py_track.c ---------------------------------------------------------------

class UtilizationResult:
    """One timed block: a context manager whose figures fill in on exit.

    Every attribute is read-only (a getter in C); figures are None until the
    block has exited and where unavailable.
    """

    mfu: Optional[float]
    mfu_mixed: Optional[float]
    hfu: Optional[float]
    mbu: Optional[float]
    elapsed_sec: Optional[float]
    achieved_tflops: Optional[float]
    achieved_flops_per_sec: Optional[float]
    achieved_tbs: Optional[float]
    tokens_per_sec: Optional[float]
    peak_flops_per_sec: Optional[float]
    model_flops: Optional[float]
    executed_flops: Optional[float]
    num_tokens: Optional[float]
    num_gpus: int
    ready: bool
    dtype: str
    gpu_spec: Any
    clock: Literal["cpu", "cuda", "hip"]

    def __enter__(self) -> UtilizationResult: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...
    def set_work(
        self,
        flop_count: Optional[float] = None,
        hfu_flop_count: Optional[float] = None,
        num_tokens: Optional[float] = None,
    ) -> None: ...

def new_track(
    flop_count: float,
    param_bytes: Optional[float],
    hfu_flop_count: Optional[float],
    num_tokens: Optional[float],
    peak_flops_per_sec: Optional[float],
    peak_bytes_per_sec: Optional[float],
    num_gpus: int,
    dtype: str,
    gpu_spec: Any,
    timer: Optional[MarkTimer] = None,
    stream: int = 0,
    /,
) -> UtilizationResult: ...
def track(
    flop_count: float,
    param_bytes: Optional[float] = None,
    *,
    hfu_flop_count: Optional[float] = None,
    num_tokens: Optional[float] = None,
    dtype: Any = None,
    num_gpus: int = 1,
    device: Any = None,
    spec: Any = None,
    peak_tflops: Optional[float] = None,
    clock: str = "auto",
    stream: Any = None,
    flops_by_dtype: Optional[Mapping[str, float]] = None,
) -> UtilizationResult: ...
def set_track_resolver(resolver: Any, /) -> None: ...
def compute_metrics(
    model_flops: float,
    elapsed_s: float,
    *,
    executed_flops: Optional[float] = None,
    param_bytes: Optional[float] = None,
    num_tokens: Optional[float] = None,
    peak_flops_per_sec: Optional[float] = None,
    peak_bytes_per_sec: Optional[float] = None,
    num_gpus: int = 1,
) -> dict[str, Optional[float]]: ...

# ---- py_mark_timer.c, py_step_tracker.c, py_phases.c ----------------------------

class MarkTimer:
    """A mark timer on the CPU or a GPU clock (core/device/timing.h)."""

    def __init__(
        self,
        clock: Literal["cpu", "cuda", "hip"],
        *,
        events_initial: int = 0,
        events_max: int = 0,
        history: int = 0,
    ) -> None: ...
    def mark(self, stream: int = 0, /) -> int: ...
    def poll(self, /) -> None: ...
    def ready(self, id: int, /) -> bool: ...
    def time_s(self, id: int, *, wait: bool = True) -> Optional[float]: ...
    def elapsed_s(self, start: int, end: int, *, wait: bool = True) -> Optional[float]: ...
    def flush(self, /) -> None: ...
    def counters(self, /) -> dict[str, int]: ...
    @property
    def clock(self) -> Literal["cpu", "cuda", "hip"]: ...
    @property
    def failed(self) -> bool: ...
    @property
    def error(self) -> Optional[str]: ...

PhaseName = Literal["data", "forward", "backward", "optimizer", "communication", "checkpoint",
                    "eval", "compile"]

class PhaseBlock:
    """A ``StepTracker.phase()`` block: begins the phase on entry, ends it on exit."""

    def __enter__(self) -> "PhaseBlock": ...
    def __exit__(self, *exc_info: object) -> bool: ...

# ---- py_record.c: the step record (csrc/core/steps/step_fields.h) and its formula -----

class StepField:
    """One field of the step record (a struct sequence)."""

    name: str
    unit: str
    given: bool
    defaulted: bool
    per_step: bool
    loss: Optional[str]
    meaning: str
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int

class Ratio:
    """One ratio of the one formula (a struct sequence)."""

    name: str
    field: str
    ceiling: str
    meaning: str
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int

STEP_FIELDS: tuple[StepField, ...]
RATIOS: tuple[Ratio, ...]
LOSSES: tuple[str, ...]
ROLES: tuple[tuple[str, str], ...]

def form_figures(
    sums: Mapping[str, Optional[float]],
    seconds: float,
    /,
    *,
    peak_flops_per_sec: Optional[float] = None,
    peak_bytes_per_sec: Optional[float] = None,
    devices: Optional[float] = None,
    measured_flops_per_sec: Optional[float] = None,
    step_s: Optional[float] = None,
    phase_s: Optional[Mapping[str, Optional[float]]] = None,
    per_step: Optional[Mapping[str, Optional[float]]] = None,
) -> dict[str, Any]: ...
def closing_share(shares: Sequence[float], /) -> float: ...

class StepTracker:
    """Hot path of mfu_tracker.Tracker: one mark per step boundary."""

    def __init__(
        self,
        *,
        clock: Literal["cpu", "cuda", "hip"] = "cpu",
        stream: int = 0,
        model_flops: Optional[float] = None,
        executed_flops: Optional[float] = None,
        param_bytes: Optional[float] = None,
        peak_flops_per_sec: Optional[float] = None,
        peak_bytes_per_sec: Optional[float] = None,
        num_gpus: int = 1,
        window: int = 100,
        warmup: int = 1,
        dtype_peaks: Optional[Sequence[Optional[float]]] = None,
        flops_by_dtype: Optional[Mapping[str, float]] = None,
        measured_flops_per_sec: Optional[float] = None,
    ) -> None: ...
    # The work keywords are the fields of STEP_FIELDS a caller gives.
    def step(
        self,
        num_tokens: Optional[float] = None,
        *,
        flops_by_dtype: Optional[Mapping[str, float]] = None,
        **fields: Optional[float],
    ) -> None: ...
    def summary(self, /, **totals: float | None) -> dict[str, Any]: ...
    def book(self, step: int, /, **fields: float | None) -> bool: ...
    def window_steps(self, /) -> list[dict[str, Any]]: ...
    def begin_phase(self, name: PhaseName, /) -> None: ...
    def end_phase(self, /) -> None: ...
    def switch_phase(self, name: PhaseName, /) -> None: ...
    def phase(self, name: PhaseName, /) -> PhaseBlock: ...
    def phase_depth(self, /) -> int: ...
    def phases(self, /) -> dict[str, Any]: ...
    def ledger(self, /) -> dict[str, Any]: ...
    def _exclude_begin(self, /) -> None: ...
    def _exclude_end(self, /) -> None: ...
    def _comm_subscribe(self, /) -> bool: ...
    def _comm_unsubscribe(self, /) -> None: ...
    def comm(self, /) -> dict[str, Any]: ...
    def _comm_begin(self, kind: str, bytes: float, bus_bytes: float,
                    link_bytes_per_sec: float, host: bool = ..., /) -> int: ...
    def _comm_end(self, token: int, stream: int = ..., /) -> None: ...
    def flush(self, /) -> None: ...
    def close(self, /) -> None: ...
    def counters(self, /) -> dict[str, int]: ...
    @property
    def clock(self) -> Literal["cpu", "cuda", "hip"]: ...
    @property
    def stream(self) -> int: ...
    @property
    def window(self) -> int: ...
    @property
    def warmup(self) -> int: ...
    @property
    def closed(self) -> bool: ...


# ---- device telemetry (py_nvml.c, core/device/nvml.h) ------------------------

class Nvml:
    """NVML telemetry of one device, found by UUID ("GPU-...") or PCI bus id."""

    def __init__(self, device_id: str, library: Optional[str] = None) -> None: ...
    def read(self, /) -> tuple[dict[str, Optional[float]], Optional[str]]: ...
    def gpm_open(self, /) -> Optional[str]: ...
    def gpm_sample(self, /) -> tuple[dict[str, float], Optional[float], Optional[str]]: ...

GPM_MIN_INTERVAL_S: float

def nvml_library() -> str: ...
def gpu_driver_library(api: Literal["cuda", "hip"], /) -> str: ...

def ideal_seconds(
    flops_by_dtype: Mapping[str, float], dtype_peaks: Sequence[Optional[float]], /
) -> Optional[float]: ...


# ---- communication (py_comm.c, py_links.c; core/comm/comm.h, core/comm/links.h) ---

def comm_wait_begin(phase: int, /) -> None: ...
def comm_wait_end() -> None: ...
def comm_sinks() -> int: ...
def link_table() -> tuple[dict[str, Any], ...]: ...
def link_intra(device_name: str, /) -> Optional[dict[str, Any]]: ...
def link_inter(link_layer: str, rate_gbps: float, /) -> Optional[dict[str, Any]]: ...
def link_parse_rate(text: str, /) -> float: ...
def link_share(bytes_per_sec: float, ports: int, ranks: int, /) -> Optional[float]: ...
def comm_kinds() -> tuple[str, ...]: ...
def phase_names() -> tuple[str, ...]: ...
def comm_kind_phase(kind: str, /) -> int: ...
def comm_op_type_kind(op_type: str, /) -> Optional[str]: ...
def comm_busbw_factor(kind: str, group_size: int, /) -> Optional[float]: ...
def comm_op_table() -> tuple[dict[str, Any], ...]: ...

# core/breakdown/kernels.h, core/breakdown/timeline.h (py_kernels.c): the kernel breakdown
def kernel_classes() -> tuple[str, ...]: ...
def kernel_class(name: str, source: str, /) -> tuple[Optional[str], bool, Optional[int]]: ...
def kernel_rules() -> tuple[dict[str, Any], ...]: ...
def timeline_split(starts_ns: Sequence[int], ends_ns: Sequence[int], lanes: Sequence[int],
                   classes: Sequence[int], lane_count: int, window_start_ns: int,
                   window_end_ns: int, /) -> dict[str, Any]: ...
