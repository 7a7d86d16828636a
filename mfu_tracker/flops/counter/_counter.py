"""Exact FLOP counting of real runs: model, executed (HFU) and forward FLOPs.

:class:`FlopCounter` counts every matmul, convolution and attention kernel
that runs in its block, at C speed: kernels of ``mfu_tracker._torch``
(csrc/torch) on a dispatch key of their own, registered for the counted ops
only and active only inside a counter, hand each counted op's shapes to the C
core, whose op table and ``mfu_op_count`` (csrc/core/ops.h) turn one call
into FLOPs; every other op costs nothing. It is cheap enough to count every
training step, so dynamic shapes (packed sequences, variable length,
changing batch) are exact::

    with FlopCounter() as fc:
        loss = model(**batch).loss
        loss.backward()
    fc.model_flops      # MFU numerator (DESIGN §3)
    fc.executed_flops   # HFU numerator (= fc.hfu_flops)
    fc.flops_by_dtype   # {"bf16": ..., "fp8": ...}: model FLOPs by compute dtype
    print(fc.table())

Numbers (FLOPs, one multiply-add = 2):

==================  ========================================================
``executed_flops``  every counted op that ran: forward, backward,
                    activation-checkpoint recompute, attention recompute in
                    backward kernels. Equals ``FlopCounterMode``'s total on
                    the same run except for the documented deviations below.
``forward_flops``   the counted ops run outside backward.
``model_flops``     for every op run in forward: its FLOPs plus the backward
                    its grad-requiring inputs need (matmul / convolution:
                    +1x per such input; attention: +2x, the PaLM
                    convention); plus the backward of custom autograd
                    Functions as it runs. Frozen weights cost less, recompute
                    never counts, no_grad / inference_mode count forward only.
``backward_flops``  the counted ops run inside backward (executed).
``recompute_flops`` activation-checkpoint recompute (in executed only).
``overcompute_flops`` executed beyond the model convention, not recompute
                    (the math SDPA path under ``causal_attention="half"``).
==================  ========================================================

Where an op runs decides what it adds (csrc/core/ops.h "Sites"): in the
forward, its FLOPs and the backward its inputs need; in autograd's own
backward, executed only (paid for in the forward); in the backward of a
**custom autograd Function** (Liger, Unsloth, flash-attn's Python API,
Transformer Engine's Python modules; the forward of such a Function runs
with grad mode off and charges no backward) its FLOPs count as model FLOPs
as they run, each at the model convention (an attention backward kernel:
2x its forward); a Function whose backward recomputes its forward by
calling ops counts that recompute as model FLOPs (what its kernels do is
its own business: an attention kernel's recompute is not). **Checkpointing**
recomputes with grad mode on inside a backward: executed only, recompute;
the reentrant kind (``use_reentrant=True``, Megatron's and DeepSpeed's
``CheckpointFunction``) ran its forward without grad, so its recompute
charges the backward its nested backward then runs. So model FLOPs with
checkpointing (either mode) equal those without, and executed FLOPs add the
recompute. NB: a backward with ``create_graph=True`` runs with grad mode on
too: its ops are counted as recompute.

**torch.compile**: a compiled region runs as one custom Function (AOTAutograd):
its forward counts, its backward counts as it runs, so model FLOPs equal the
eager model's; recompute the partitioner moved into the compiled backward
(checkpointing inside the region) is found from the backward graph
(``_compiled.py``) and stays HFU-only. The counter adds no graph break and
no graph: its dispatch key stays included on a thread once it counted there
(torch.compile's guards hash the included keys), and the module table's
wrapper is transparent to tracing. A model compiled *and run* before the
first counter of its thread recompiles once.

**FakeTensorMode**: a counter entered under a FakeTensorMode counts ops on
fake tensors as real ones (``profile_flops`` on a fake model); fake tensors
are not counted otherwise (torch.compile's tracing uses them).

Causal attention counts the full s² by default (PaLM / torchtitan /
FlopCounterMode); ``causal_attention="half"`` halves the model FLOPs of
calls made with ``is_causal`` (Megatron / verl), forward and backward. The
executed FLOPs are what the kernel computes: the fused kernels (flash,
efficient, cudnn, varlen) about half, the math path the full square both
ways (its excess is ``overcompute_flops``; README "Causal attention").
Attention written as plain matmuls with a mask tensor cannot be told causal
and counts in full.

Deliberate differences from ``torch.utils.flop_counter.FlopCounterMode``
(each has a test in tests/test_counter_zoo.py):

* ``aten._scaled_dot_product_flash_attention_for_cpu`` (and its backward):
  counted here; FlopCounterMode has no formula (SDPA on CPU counts 0).
* ``aten._grouped_mm`` (MoE experts in transformers >= 5): counted here;
  FlopCounterMode counts 0.
* ``aten.convolution_backward`` weight gradient: divided by ``groups`` here;
  FlopCounterMode counts it ``groups`` times too high.
* ``aten._flash_attention_*`` / ``aten._efficient_attention_*`` called with
  unpacked ``[b, s, h, d]`` inputs are read in that layout here
  (FlopCounterMode reads them as ``[b, h, s, d]``); CUDA only.

Beyond aten: flash-attn 2 and FlashAttention-3's custom ops (windows,
chunks and cumulative lengths included) and ``flex_attention`` with its
backward (the blocks its BlockMask computes) are rows of the op table;
higher-order ops are counted or passed on by Python kernels of the counting
key (:mod:`._hops`), so none of them ever fails inside a counter.

What it cannot see: kernels launched without the dispatcher -- CUDA graph
replay (``torch.compile(mode="reduce-overhead")``, ``make_graphed_callables``)
gives one warning while a counter is active, and its FLOPs are missing --,
opaque kernels that are not torch ops, and ops on threads other than the one
that entered the counter (autograd's own worker threads are seen). A custom
torch op (``torch.library``) gets a formula with :func:`register_flop_formula`.
``FlopCounter(audit=True)`` lists the ops a count did not cover
(:meth:`FlopCounter.uncounted`) and warns once about FLOP-heavy ones; under
``torch.compile`` inductor's generated kernels (flex_attention's included)
run without the dispatcher, while its matmuls and attention still call aten.

A wheel installed without torch at build time carries the observer's
sources: the first counter builds it against the installed torch into a
per-user cache (``mfu_tracker/flops/counter/_build.py``; ahead of time: ``mfu-tracker
build-ext``). If it can neither load nor build (no compiler, built against
another torch) counting falls back, with one warning, to a
``TorchDispatchMode`` over the same C op table: same numbers, slower. ``MFU_TRACKER_DISABLE_TORCH_EXT=1``
(read when this module is imported) forces the fallback.

Importing this module does not import torch.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Optional

from ..._native import _C, packaged_torch_extension
from ..._validate import check_causal_attention, check_flag
from ..._version import __version__
from ._audit import UncountedOp, heavy_message, merge_uncounted, uncounted_ops
from ._compiled import apply_deferred
from ._module_table import ModuleTable, module_rows, table_rows

__all__ = [
    "FlopCounter",
    "FlopProfile",
    "ModuleFlops",
    "UncountedOp",
    "profile_flops",
    "profile_flops_with_hfu",
    "register_flop_formula",
    "unregister_flop_formula",
    "counter_backend",
]

_DISABLE_ENV = "MFU_TRACKER_DISABLE_TORCH_EXT"
_EXT_DISABLED = os.environ.get(_DISABLE_ENV) == "1"

_COUNT_KEYS = ("executed_flops", "forward_flops", "model_flops", "backward_flops",
               "recompute_flops", "overcompute_flops", "counted_calls", "errors",
               "approximate_calls")
# FLOPs by compute dtype: a sequence indexed like _C.dtype_names()
_BY_DTYPE_KEYS = ("model_flops_by_dtype", "executed_flops_by_dtype")


# ---------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------

class _ExtBackend:
    """The C++ observer (mfu_tracker._torch), with the Python kernels of the
    higher-order operators (:mod:`._hops`)."""

    name = "torch-ext"

    def __init__(self, module: Any) -> None:
        self.module = module
        from . import _hops
        from ._compiled import recompute_plan

        def start(causal: str, count_fake: bool = False, modules: bool = False) -> int:
            _hops.sync(module)  # higher-order ops defined since the last count
            return module.start(causal, count_fake, modules)

        self.start = start
        self.audit = module.audit
        self.stop = module.stop
        self.read = module.read
        self.reset = module.reset
        self.module_enter = module.module_enter
        self.module_exit = module.module_exit
        self.sync = module.sync_kernels
        module.set_recompute_planner(recompute_plan)


_backend: Any = None
_backend_lock = threading.Lock()
_enter_lock = threading.Lock()
_counting = threading.local()   # .active: FlopCounters active on this thread
_graphs_watched = False


def _watch_cuda_graphs() -> None:
    """Warn once when a CUDA graph is replayed while a FlopCounter counts on
    the thread: its kernels run without the dispatcher, so their FLOPs are
    not in the count (torch.compile(mode="reduce-overhead"),
    make_graphed_callables, a hand-captured graph). Replay is not counted as
    capture x replays: what a graph captured, and whether capture ran inside
    a counter, is not known reliably enough to multiply."""
    global _graphs_watched
    if _graphs_watched:
        return
    _graphs_watched = True
    try:
        from torch.cuda.graphs import CUDAGraph
    except Exception:  # noqa: BLE001 -- a torch without CUDA graphs
        return
    replay = CUDAGraph.replay
    warned: list[bool] = []

    def watched_replay(self: Any) -> None:
        if getattr(_counting, "active", 0) and not warned:
            warned.append(True)
            warnings.warn(
                "mfu_tracker.FlopCounter: a CUDA graph was replayed while counting; its "
                "kernels run without the dispatcher, so their FLOPs are missing from the "
                "count (torch.compile(mode='reduce-overhead'), CUDA graphs). Count a step run "
                "without CUDA graphs (profile_flops, or mode='default') and give those FLOPs "
                "to the tracker.", RuntimeWarning, stacklevel=2)
        return replay(self)

    watched_replay.__wrapped__ = replay  # type: ignore[attr-defined]
    CUDAGraph.replay = watched_replay  # type: ignore[method-assign]


def _stale(module: Any, torch_version: str) -> Optional[str]:
    """Why a loaded ``_torch`` must not be used (another torch, another
    package version), or None."""
    if module.torch_version != torch_version:
        return (f"mfu_tracker._torch was built against torch {module.torch_version} "
                f"but torch {torch_version} is installed")
    if module.__version__ != __version__:
        return f"mfu_tracker._torch is a stale build ({module.__version__}, package {__version__})"
    return None


def _load_backend() -> Any:
    import torch

    from . import _build
    from ._dispatch import DispatchBackend

    problem = None
    if _EXT_DISABLED:
        problem = f"disabled by {_DISABLE_ENV}=1"
    else:
        # 1. the observer built with the package (pip --no-build-isolation, make build)
        module = packaged_torch_extension()
        if module is not None and _stale(module, torch.__version__) is None:
            return _ExtBackend(module)
        # 2. the per-user cache, built there now if need be (mfu_tracker/flops/counter/_build.py)
        try:
            module = _build.load(_build.ensure_built(__version__))
        except _build.BuildError as exc:
            problem = f"mfu_tracker._torch could not be built ({exc}). {exc.fix}"
        except ImportError as exc:
            problem = f"mfu_tracker._torch could not be loaded ({exc})"
        else:
            problem = _stale(module, torch.__version__)
            if problem is None:
                return _ExtBackend(module)
            problem += ". Rebuild it with `mfu-tracker build-ext --force`"
    warnings.warn(
        f"mfu_tracker: FLOP counting uses the slower TorchDispatchMode fallback: {problem}.",
        RuntimeWarning,
        stacklevel=4,
    )
    return DispatchBackend()


def _get_backend() -> Any:
    global _backend
    if _backend is None:
        with _backend_lock:
            if _backend is None:
                _backend = _load_backend()
    return _backend


def counter_backend() -> str:
    """``"torch-ext"`` (the C++ observer) or ``"dispatch"`` (the fallback)."""
    return _get_backend().name


def observer_module() -> Any:
    """The C++ observer module ``mfu_tracker._torch`` (loaded, or built at
    first use, as for counting), or None when counting fell back to the
    dispatch mode (warned once there). The communication observer
    (:mod:`mfu_tracker.distributed._comm_observer`) lives in it too."""
    return getattr(_get_backend(), "module", None)


# ---------------------------------------------------------------------------
# Custom formulas
# ---------------------------------------------------------------------------

def _op_name(op: Any) -> str:
    if isinstance(op, str):
        name = op
    else:
        schema = getattr(op, "_schema", None)
        if schema is None:
            # an OpOverloadPacket: its default overload's schema
            default = getattr(op, "default", None)
            schema = getattr(default, "_schema", None)
        if schema is None:
            raise TypeError(f"op_name must be a str like 'mylib::op' or a torch op, not {op!r}")
        name = schema.name
    if "::" not in name or name.startswith("::") or name.endswith("::"):
        raise ValueError(f"op_name must be a qualified op name like 'mylib::op', not {name!r}")
    return name


def register_flop_formula(op_name: Any, fn: Callable[..., Any]) -> None:
    """Count the custom op ``op_name`` (``"mylib::my_matmul"`` or the op
    object) with ``fn``.

    ``fn`` receives the op's arguments in schema order, tensors replaced by
    their shapes (tuples), ints / floats / bools / int lists as they are and
    anything else as None. It returns the FLOPs of the call (an int >= 0), or
    a pair ``(flops, model_backward_flops)``; with a bare int a forward call
    whose tensor inputs require grad adds ``2 * flops`` of model backward.
    Ops called inside a counted op are not counted again.

    Both counter backends read the one registry (in ``_C``); registering
    and unregistering are safe from any thread, also while counters run.

    Raises:
        ValueError: ``op_name`` has a built-in formula or one is registered.
        TypeError: ``fn`` is not callable.
    """
    _C.register_flop_formula(_op_name(op_name), fn)
    sync = getattr(_backend, "sync", None)
    if sync is not None:
        sync()  # counters already running count the op from now on


def unregister_flop_formula(op_name: Any) -> None:
    """Forget the formula :func:`register_flop_formula` gave ``op_name``.

    Raises:
        KeyError: none is registered.
    """
    _C.unregister_flop_formula(_op_name(op_name))


# ---------------------------------------------------------------------------
# FlopCounter
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ModuleFlops:
    """FLOPs of one module's forward calls, its submodules included.

    Attributes:
        forward_flops: counted ops run in its forward.
        model_flops: their model FLOPs (forward + the backward they need).
        calls: forward calls seen (activation-checkpoint recomputes excluded).
    """

    forward_flops: int
    model_flops: int
    calls: int


def _under_fake_mode() -> bool:
    """Whether the caller runs under a FakeTensorMode of its own (not
    torch.compile's tracing): then ops on fake tensors count as real ones
    would (``profile_flops`` on fake tensors)."""
    import torch

    if torch.compiler.is_compiling():
        return False
    key = torch._C._TorchDispatchModeKey
    return (torch._C._get_dispatch_mode(key.FAKE) is not None
            and torch._C._get_dispatch_mode(key.PROXY) is None)


def _zero_totals() -> dict[str, Any]:
    totals: dict[str, Any] = {key: 0 for key in _COUNT_KEYS}
    totals["first_error"] = None
    totals["ops"] = {}
    totals["modules"] = {}
    totals["uncounted"] = {}
    for key in _BY_DTYPE_KEYS:
        totals[key] = [0] * len(_C.dtype_names())
    return totals


def _merge(into: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key in _COUNT_KEYS:
        into[key] += more[key]
    for key in _BY_DTYPE_KEYS:
        into[key] = [a + b for a, b in zip(into[key], more[key])]
    if into["first_error"] is None:
        into["first_error"] = more["first_error"]
    for name, (calls, flops) in more["ops"].items():
        old_calls, old_flops = into["ops"].get(name, (0, 0))
        into["ops"][name] = (old_calls + calls, old_flops + flops)
    for token, row in more.get("modules", {}).items():
        old = into["modules"].get(token, (0, 0, 0))
        into["modules"][token] = tuple(a + b for a, b in zip(old, row))
    merge_uncounted(into["uncounted"], more.get("uncounted", {}))


def _format_flops(value: float) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6),
                        ("KFLOP", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:,.3f} {unit}"
    return f"{value:,.0f} FLOP"


class FlopCounter:
    """Count the FLOPs of the ops run in a ``with`` block (see the module
    docstring for what each number means).

    Args:
        causal_attention: ``"full"`` (default: the whole s² of causal
            attention, PaLM / FlopCounterMode) or ``"half"`` (Megatron).
        modules: attribute FLOPs to the modules whose forward ran them
            (``nn.Module.__call__`` is wrapped while such a counter is
            active; see mfu_tracker/flops/counter/_module_table.py); ``table()`` and
            ``by_module`` need it.
        audit: also record the ops outside the FLOP table that took
            tensors and during which nothing was counted (a composite op
            whose parts count is covered): :meth:`uncounted` lists them,
            and the first block that saw one that looks FLOP-heavy (a
            custom op, a higher-order op, a name with attn / attention /
            gemm / matmul / mm / conv) warns once naming them. Every op
            pays to be seen while it is on (the integrations audit their
            first counted step); off, uncounted ops cost nothing. The
            attribute may be changed between blocks.

    A counter may be entered again: counts add up over its blocks (gradient
    accumulation: one counter around every micro-batch), until
    :meth:`reset`. Counters nest: each counts everything run in its own
    block (at most ``8`` active at once in the process). A counter counts the
    ops of the thread that entered it (and autograd's worker threads during
    its backward), and must be exited on that thread.

    Counting never raises into the block: an op whose FLOPs cannot be
    computed is skipped and counted in :attr:`errors`, with one warning when
    the block exits. Misuse raises: entering an active counter again, or
    exiting it on another thread (``RuntimeError``).
    """

    def __init__(self, *, causal_attention: str = "full", modules: bool = True,
                 audit: bool = False) -> None:
        check_causal_attention(causal_attention)
        check_flag(modules, "modules")
        check_flag(audit, "audit")
        self.causal_attention = causal_attention
        self.audit = audit
        self._audit_warned = False
        self._totals = _zero_totals()
        self._handle: Any = None
        self._backend: Any = None
        self._thread: int | None = None
        self._table = ModuleTable() if modules else None

    # -- context manager -----------------------------------------------------

    def __enter__(self) -> FlopCounter:
        backend = _get_backend()
        fake = _under_fake_mode()
        _watch_cuda_graphs()
        apply_deferred()  # torch.compile came into use: its frames skip ours
        with _enter_lock:  # two threads entering one counter: one wins, no observer slot lost
            if self._handle is not None:
                raise RuntimeError("this FlopCounter is already active; nest a new FlopCounter instead")
            self._backend = backend
            self._handle = backend.start(self.causal_attention, fake, self._table is not None)
            self._thread = threading.get_ident()
            if self.audit:
                try:
                    backend.audit(self._handle)
                except BaseException:
                    backend.stop(self._handle)
                    self._handle = None
                    raise
        _counting.active = getattr(_counting, "active", 0) + 1
        if self._table is not None:
            self._table.start(backend)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        self.stop()
        return False

    def stop(self, *, warn: bool = True) -> str | None:
        """End the active block (what leaving the ``with`` block does).

        Returns the message about the op calls of this block that could not
        be counted (None when every call was counted), and warns with it
        (``RuntimeWarning``) only when ``warn`` is true: an integration that
        opens a counter every step passes ``warn=False`` and warns once per
        run instead.

        Raises ``RuntimeError`` when the counter is not active or the calling
        thread did not enter it.
        """
        if self._handle is None:
            raise RuntimeError("this FlopCounter is not active")
        if threading.get_ident() != self._thread:
            raise RuntimeError("a FlopCounter must be exited on the thread that entered it "
                               "(libtorch's op observer is thread-local)")
        if self._table is not None:
            self._table.stop()
        _counting.active -= 1
        handle, self._handle = self._handle, None
        totals = self._backend.stop(handle)
        errors_before = self._totals["errors"]
        _merge(self._totals, totals)
        if self._table is not None and self._table.error is not None:
            self._totals["errors"] += 1
            if self._totals["first_error"] is None:
                self._totals["first_error"] = self._table.error
            self._table.error = None
        heavy = None if self._audit_warned or not self.audit else self.audit_warning()
        if heavy is not None and warn:
            self._audit_warned = True
            warnings.warn(f"mfu_tracker.FlopCounter: {heavy}", RuntimeWarning, stacklevel=3)
        new_errors = self._totals["errors"] - errors_before
        if not new_errors:
            return None
        message = (f"{new_errors} op call(s) could not be counted and are missing from the "
                   f"totals (first: {self._totals['first_error']})")
        if warn:
            warnings.warn(f"mfu_tracker.FlopCounter: {message}", RuntimeWarning, stacklevel=3)
        return message

    def reset(self) -> None:
        """Zero every count (also while active)."""
        self._totals = _zero_totals()
        if self._handle is not None:
            self._backend.reset(self._handle)

    # -- results ---------------------------------------------------------------

    def _current(self) -> dict[str, Any]:
        if self._handle is None:
            return self._totals
        live = _zero_totals()
        _merge(live, self._totals)
        _merge(live, self._backend.read(self._handle))
        return live

    @property
    def model_flops(self) -> int:
        """MFU numerator: forward ops + the backward their grad-requiring
        inputs need (DESIGN §3)."""
        return int(self._current()["model_flops"])

    @property
    def executed_flops(self) -> int:
        """Every counted op that ran (HFU numerator)."""
        return int(self._current()["executed_flops"])

    @property
    def hfu_flops(self) -> int:
        """= :attr:`executed_flops`."""
        return self.executed_flops

    @property
    def forward_flops(self) -> int:
        """The counted ops run outside backward."""
        return int(self._current()["forward_flops"])

    @property
    def backward_flops(self) -> int:
        """The counted ops run inside backward (recompute included)."""
        return int(self._current()["backward_flops"])

    @property
    def recompute_flops(self) -> int:
        """The executed FLOPs of activation-checkpoint recompute (either
        ``torch.utils.checkpoint`` mode, checkpointing inside a compiled
        region): in executed FLOPs, never in model FLOPs."""
        return int(self._current()["recompute_flops"])

    @property
    def overcompute_flops(self) -> int:
        """Executed FLOPs beyond the model convention that are not recompute:
        a kernel computing the full square of a causal attention that
        ``causal_attention="half"`` counts half (the math SDPA path, forward
        and its backward). The waterfall books them to ``compute``, never to
        ``recompute``."""
        return int(self._current()["overcompute_flops"])

    @property
    def flops_by_dtype(self) -> dict[str, int]:
        """Model FLOPs by compute dtype: ``{"bf16": ..., "fp8": ...}``, only
        the dtypes that have FLOPs; the values (ints, so exact at any size)
        add up to :attr:`model_flops` exactly.

        The dtype of a call is that of its first operand (matmul ``a``,
        convolution input, attention query), as the kernel computes it
        (under autocast: the cast dtype). Names: ``"fp64"``, ``"fp32"``,
        ``"tf32"``, ``"fp16"``, ``"bf16"``, ``"fp8"`` (every float8 type,
        ``torch._scaled_mm`` included), and the rare ``"int8"`` (int8
        operands) and ``"fp4"`` (float4_e2m1fn_x2); an
        operand of another type (complex, other integers) counts as fp32.
        fp32 counts as ``"tf32"`` where torch lets it run as TF32 for that
        op: on CUDA and on ``meta`` (a meta run stands for a GPU run) when
        ``torch.backends.cuda.matmul.allow_tf32`` (i.e. float32 matmul
        precision "high" / "medium") is on for matmuls and attention, or
        ``torch.backends.cudnn.allow_tf32`` for convolutions; on CPU never.
        """
        return self._by_dtype("model_flops_by_dtype")

    @property
    def executed_flops_by_dtype(self) -> dict[str, int]:
        """:attr:`executed_flops` split as :attr:`flops_by_dtype` splits
        model FLOPs."""
        return self._by_dtype("executed_flops_by_dtype")

    def _by_dtype(self, key: str) -> dict[str, int]:
        names = _C.dtype_names()
        return {names[d]: int(v) for d, v in enumerate(self._current()[key]) if v}

    @property
    def errors(self) -> int:
        """Op calls that could not be counted (missing from the totals)."""
        return int(self._current()["errors"])

    @property
    def approximate(self) -> bool:
        """True when a varlen attention's lengths were unknown (meta
        tensors) and counted as max_seqlen each (an upper bound)."""
        return self._current()["approximate_calls"] > 0

    def uncounted(self) -> list[UncountedOp]:
        """The ops outside the FLOP table that ran while the audit was on
        (``audit=True``) and that no count covered: name, calls, largest
        input, and whether it looks FLOP-heavy; FLOP-heavy ones first.
        Higher-order ops inside which nothing was counted are listed with
        or without an audit (they never fail a count: they are noted)."""
        return uncounted_ops(self._current()["uncounted"])

    def audit_warning(self) -> str | None:
        """The warning about the FLOP-heavy ops of :meth:`uncounted` (None
        when there are none); leaving a block warns with it once per
        counter."""
        return heavy_message(self.uncounted())

    @property
    def by_op(self) -> dict[str, tuple[int, int]]:
        """Op name -> (calls, executed FLOPs)."""
        return dict(self._current()["ops"])

    @property
    def by_module(self) -> dict[str, ModuleFlops]:
        """Module name (``Root.child.grandchild``) -> its forward calls' FLOPs,
        submodules included, in first-call order."""
        if self._table is None:
            return {}
        return {name: ModuleFlops(*row)
                for name, row in module_rows(self._current()["modules"]).items()}

    @property
    def backend(self) -> str:
        """``"torch-ext"`` or ``"dispatch"`` (the fallback)."""
        return (self._backend or _get_backend()).name

    @property
    def conventions(self) -> str:
        """How the numbers were counted, as one line."""
        causal = ("causal attention in full (PaLM / FlopCounterMode), windows whole per query"
                  if self.causal_attention == "full"
                  else "causal attention halved (Megatron), windows as the pairs they keep")
        return (f"{causal}; block masks: the computed blocks; attention model backward = 2x "
                "forward; matmul / conv model backward = 1x forward per grad-requiring input; "
                "recompute not in model FLOPs")

    def table(self, depth: int | None = 3, *, collapse_repeats: bool = True) -> str:
        """A readable table: totals, per op, and per module.

        Args:
            depth: module levels shown (``None``: all).
            collapse_repeats: fold numbered siblings (``layers.0``,
                ``layers.1``, ...) into one ``layers.*`` row with their sum.
        """
        t = self._current()
        lines = [
            f"FLOPs ({self.conventions})",
            f"  model FLOPs (MFU):     {t['model_flops']:>28,}  {_format_flops(t['model_flops'])}",
            f"  executed FLOPs (HFU):  {t['executed_flops']:>28,}  {_format_flops(t['executed_flops'])}",
            f"    forward:             {t['forward_flops']:>28,}  {_format_flops(t['forward_flops'])}",
            f"    backward:            {t['backward_flops']:>28,}  {_format_flops(t['backward_flops'])}",
        ]
        for key, label in (("recompute_flops", "of which recompute"),
                           ("overcompute_flops", "over-compute (not model)")):
            if t[key]:
                lines.append(f"    {label + ':':<21}{t[key]:>28,}  {_format_flops(t[key])}")
        if t["errors"]:
            lines.append(f"  uncounted op calls: {t['errors']} (first: {t['first_error']})")
        if t["approximate_calls"]:
            lines.append(f"  approximate (varlen lengths unknown on meta): {t['approximate_calls']} call(s)")
        if t["ops"]:
            lines.append("")
            lines.append(f"  {'op':<56}{'calls':>8}  {'executed':>16}")
            for name, (calls, flops) in sorted(t["ops"].items(), key=lambda kv: -kv[1][1]):
                lines.append(f"  {name:<56}{calls:>8}  {_format_flops(flops):>16}")
        rows = (table_rows(module_rows(t["modules"]), depth, collapse_repeats)
                if self._table is not None else [])
        if rows:
            total_model = t["model_flops"] or 1
            lines.append("")
            lines.append(f"  {'module':<56}{'calls':>8}  {'forward':>16}  {'model':>16}  {'% model':>8}")
            for i, (label, level, calls, forward, model) in enumerate(rows):
                if i and not model and not forward:
                    continue  # modules without counted ops (norms, embeddings)
                text = "  " * level + label
                lines.append(f"  {text:<56}{calls:>8}  {_format_flops(forward):>16}  "
                             f"{_format_flops(model):>16}  {100.0 * model / total_model:>7.2f}%")
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "active" if self._handle is not None else "idle"
        return (f"FlopCounter({state}, model_flops={self.model_flops:,}, "
                f"executed_flops={self.executed_flops:,}, causal_attention={self.causal_attention!r})")


# ---------------------------------------------------------------------------
# profile_flops
# ---------------------------------------------------------------------------

class FlopProfile(NamedTuple):
    """Counted FLOPs of one sample step (``flops, hfu_flops = ...``).

    Attributes:
        flops: model FLOPs (MFU numerator).
        hfu_flops: executed FLOPs (HFU numerator).
    """

    flops: int
    hfu_flops: int


def _normalize_batch(args: Any, kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    import torch

    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict of model inputs, not {type(kwargs).__name__}")
    kw = dict(kwargs or {})
    if args is None:
        return (), kw
    if isinstance(args, torch.Tensor):
        return (args,), kw
    if isinstance(args, (tuple, list)):
        return tuple(args), kw
    if isinstance(args, Mapping):
        if kwargs is not None:
            raise TypeError("give the batch as args or as kwargs, not a dict in both")
        return (), dict(args)
    raise TypeError("args must be a tensor, a tuple / list of inputs or a dict of model inputs, "
                    f"not {type(args).__name__}")


def _to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def _loss_of(output: Any) -> Any:
    import torch

    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    candidates: list[Any]
    if isinstance(output, torch.Tensor):
        candidates = [output]
    elif isinstance(output, Mapping):
        candidates = list(output.values())
    elif isinstance(output, (tuple, list)):
        candidates = list(output)
    else:
        to_tuple = getattr(output, "to_tuple", None)
        candidates = list(to_tuple()) if callable(to_tuple) else []
    for value in candidates:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.requires_grad:
            return value
    return None


def _model_device(model: Any) -> Any:
    import torch

    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return torch.device("cpu")


def _run_profile(model: Any, args: Any, kwargs: Any, with_backward: bool,
                 causal_attention: str, device: Any, modules: bool) -> FlopCounter:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    check_flag(with_backward, "with_backward")
    call_args, call_kwargs = _normalize_batch(args, kwargs)
    if device is not None:
        from ..._validate import check_device

        target = check_device(device)
    else:
        target = _model_device(model)
    run: Callable[[], Any]
    if target.type == "meta":
        call_args = _to_device(call_args, target)
        call_kwargs = _to_device(call_kwargs, target)
        if _model_device(model).type != "meta":
            # A meta twin of every parameter and buffer (no memory), same
            # requires_grad: the model itself is untouched.
            params = {n: torch.empty_like(p, device="meta").requires_grad_(p.requires_grad)
                      for n, p in model.named_parameters()}
            buffers = {n: torch.empty_like(b, device="meta")
                       for n, b in model.named_buffers()}
            state = {**params, **buffers}
            def run() -> Any:
                return torch.func.functional_call(model, state, call_args, call_kwargs)
        else:
            def run() -> Any:
                return model(*call_args, **call_kwargs)
    else:
        def run() -> Any:
            return model(*call_args, **call_kwargs)

    counter = FlopCounter(causal_attention=causal_attention, modules=modules)
    with counter:
        with torch.enable_grad() if with_backward else torch.no_grad():
            output = run()
        if with_backward:
            loss = _loss_of(output)
            if loss is not None:
                if loss.numel() != 1:
                    loss = loss.float().sum()
                # autograd.grad, not backward(): no .grad left on the model
                leaves = _grad_leaves(loss)
                if leaves:
                    torch.autograd.grad(loss, leaves, allow_unused=True)
    return counter


def _grad_leaves(loss: Any) -> list[Any]:
    """The leaf tensors requiring grad that `loss` depends on."""
    leaves: list[Any] = []
    seen: set[int] = set()
    todo = [loss.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if variable is not None:
            leaves.append(variable)
        todo.extend(next_fn for next_fn, _ in fn.next_functions)
    return leaves


def profile_flops(model: Any, args: Any = None, kwargs: Any = None, *,
                  with_backward: bool = True, causal_attention: str = "full",
                  device: Any = None) -> int:
    """Model FLOPs of one step of ``model`` on a sample batch (an int).

    Runs ``model(*args, **kwargs)`` under a :class:`FlopCounter` and, with
    ``with_backward``, a backward from its loss (``output.loss``, else the
    first float output that requires grad, summed) through
    ``torch.autograd.grad``, so no ``.grad`` is left behind.
    ``with_backward=True`` gives forward + backward model FLOPs (3x the
    forward when every weight trains; less for frozen weights);
    ``with_backward=False`` runs under ``no_grad`` and gives the forward.

    ``device="meta"`` (or a model already on ``meta``) counts without
    memory: parameters, buffers and inputs get ``meta`` twins (the model is
    untouched), so full-size models profile on any machine. Data-dependent
    ops (``.item()``, ``nonzero``) cannot run on ``meta``.

    Compatible with the pure-Python mfu-tracker's
    ``profile_flops(model, kwargs=sample, with_backward=True)``.

    Raises:
        TypeError: ``model`` is not an ``nn.Module``; the batch is not a
            tensor, a tuple / list or a dict.
    """
    counter = _run_profile(model, args, kwargs, with_backward, causal_attention, device, False)
    return counter.model_flops if with_backward else counter.forward_flops


def profile_flops_with_hfu(model: Any, args: Any = None, kwargs: Any = None, *,
                           with_backward: bool = True, causal_attention: str = "full",
                           device: Any = None) -> FlopProfile:
    """:func:`profile_flops` and the executed (HFU) FLOPs of the same run."""
    counter = _run_profile(model, args, kwargs, with_backward, causal_attention, device, False)
    flops = counter.model_flops if with_backward else counter.forward_flops
    return FlopProfile(flops=flops, hfu_flops=counter.executed_flops)
