"""Exact FLOP counting of real runs: model, executed (HFU) and forward FLOPs.

:class:`FlopCounter` counts every matmul, convolution and attention kernel
that runs in its block, at C speed: kernels of ``mfu_tracker._torch``
(csrc/torch) on a dispatch key of their own, registered for the counted ops
only and active only inside a counter, hand each counted op's shapes to the C
core, whose op table and ``mfu_op_count`` (csrc/core/ops/ops.h) turn one call
into FLOPs; every other op costs nothing. It is cheap enough to count every
training step, so dynamic shapes (packed sequences, variable length,
changing batch) are exact::

    with FlopCounter() as fc:
        loss = model(**batch).loss
        loss.backward()
    fc.model_flops      # MFU numerator (docs/conventions.md)
    fc.executed_flops   # HFU numerator (= fc.hfu_flops)
    fc.flops_by_dtype   # {"bf16": ..., "fp8": ...}: model FLOPs by compute dtype
    print(fc.table())   # totals and ops; per module with FlopCounter(modules=True)

Numbers (FLOPs, one multiply-add = 2):

==================  ========================================================
``executed_flops``  every counted op that ran: forward, backward,
                    activation-checkpoint recompute, attention recompute in
                    backward kernels. Equals ``FlopCounterMode``'s total on
                    the same run except for the documented deviations below.
``forward_flops``   the counted ops run outside backward.
``model_flops``     every op run in forward (its FLOPs) and the backward
                    that ran (its FLOPs as it runs, attention backward at 2x
                    forward, the PaLM convention): only what reaches the
                    loss gets a backward, frozen inputs none, and the
                    matmuls in the backward of ops the table does not count
                    (``linalg.solve_triangular``, ``cholesky``, ``inv``)
                    count. A count in which no backward ran (a forward under
                    grad) adds the backward each forward op's grad-requiring
                    inputs would need instead (matmul / convolution: +1x per
                    such input; attention: +2x). Recompute never counts,
                    no_grad / inference_mode count forward only.
``backward_flops``  the counted ops run inside backward (executed).
``recompute_flops`` activation-checkpoint recompute (in executed only).
``overcompute_flops`` executed beyond the model convention, not recompute
                    (the math SDPA path under ``causal_attention="half"``).
==================  ========================================================

Where an op runs decides what it adds (csrc/core/ops/ops.h "Sites" and
"Reaching the loss"): in the forward, its FLOPs (and, for a count without a
backward, the backward its inputs would need); in a backward -- autograd's
own, a ``create_graph=True`` one, or a **custom autograd Function**'s
(Liger, Unsloth, flash-attn's Python API, Transformer Engine's Python
modules) -- its FLOPs as model FLOPs as they run, each at the model
convention (an attention backward kernel: 2x its forward); a Function whose
backward recomputes its forward by calling ops counts that recompute as
model FLOPs (what its kernels do is its own business: an attention kernel's
recompute is not). **Checkpointing** recomputes with grad mode on inside a
backward: executed only, recompute; the backward of the recomputed graph
counts where it runs. So model FLOPs with checkpointing (either mode) equal
those without, and executed FLOPs add the recompute. A custom formula
(:func:`register_flop_formula`) charges its declared backward at its forward:
the counter cannot see an opaque backward run. The module table attributes
each forward op's FLOPs and the backward its inputs need to its module.

**torch.compile**: a compiled region runs as one custom Function (AOTAutograd):
its forward counts, its backward counts as it runs, so model FLOPs equal the
eager model's when every output of the region that requires grad reaches the
loss (AOTAutograd runs the backward of an unused one with zero gradients:
counted, as it ran; computation compile removes as dead is not counted at
all); recompute the partitioner moved into the compiled backward
(checkpointing inside the region) is found from the backward graph
(``_compiled.py``) and stays HFU-only. The counter adds no graph break and
no graph: its dispatch key stays included on a thread from its first count
while a counter that counted there lives (torch.compile's guards hash the
included keys), and the module table's wrapper is transparent to tracing.
A model compiled *and run* before the first counter of its thread
recompiles once.

**FakeTensorMode**, entered around the counter or inside it: ops on fake
tensors count as real ones would (``profile_flops`` on a fake model;
``with FlopCounter(): with FakeTensorMode(): ...``) while no tracing (proxy)
mode is active and torch.compile is not compiling (its tracing runs on fake
tensors of its own). Cumulative sequence lengths of fake (or ``meta``)
tensors cannot be read: varlen attention then counts its worst case,
``max_seqlen`` per sequence (as FlopCounterMode does), ``approximate`` is
True and leaving the block says so once.

Causal attention counts the full s² by default (PaLM / torchtitan /
FlopCounterMode); ``causal_attention="half"`` halves the model FLOPs of
calls made with ``is_causal`` (Megatron / verl), forward and backward. The
executed FLOPs are what the kernel computes: the fused kernels (flash,
efficient, cudnn, varlen) about half, the math path the full square both
ways (its excess is ``overcompute_flops``; README "Causal attention").
What "half" cannot halve is said, never silent: a kernel given a mask
tensor (the count does not read its values: causal, padding and windows look
alike; :attr:`FlopCounter.mask_tensor_attention_calls`), and attention
written as plain matmuls (eager attention), which no op marks as attention;
both count whole and :meth:`FlopCounter.half_warning` (one warning per
counter) names them.

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
* matmuls an op's own kernel calls through the dispatcher
  (``linalg.matrix_exp``, ``linalg.pinv``, ``linalg.lstsq``'s backward,
  ``F.bilinear``'s ``_trilinear``): counted here, where they run;
  FlopCounterMode's mode is off inside an op it sees and counts none.

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
per-user cache (``mfu_tracker/_native/_build.py``; ahead of time:
``mfu-tracker build-ext``). If it can neither load nor build (no compiler,
built against another torch), or its dispatch key is not ours (another
library registered on it, a torch without it: docs/dispatch_keys.md),
counting falls back, with one warning naming the reason, to a
``TorchDispatchMode`` over the same C op table: same numbers, slower
(:mod:`._backend`). ``MFU_TRACKER_DISABLE_TORCH_EXT=1`` (read when
``mfu_tracker._native._observer`` is imported) forces the fallback.

Importing this module does not import torch.
"""
from __future__ import annotations

import threading
import warnings
from typing import Any

from ..._native import _C
from ..._validate import check_causal_attention, check_flag
from ._audit import UncountedOp, heavy_message, uncounted_ops
from ._backend import KeyHold, fall_back, get_backend
from ._compiled import apply_deferred
from ._graphs import counting, watch_cuda_graphs
from ._half import half_note
from ._module_table import ModuleTable, module_rows, restore_if_unused, table_rows
from ._totals import CounterTotals, ModuleFlops, format_flops

__all__ = ["FlopCounter"]

_enter_lock = threading.Lock()
_NO_MODULES = ("not recorded; FlopCounter(modules=True) attributes FLOPs to modules "
               "(it costs more per step: docs/performance.md)")


class FlopCounter:
    """Count the FLOPs of the ops run in a ``with`` block (see the module
    docstring for what each number means).

    Args:
        causal_attention: ``"full"`` (default: the whole s² of causal
            attention, PaLM / FlopCounterMode) or ``"half"`` (Megatron).
        modules: also attribute FLOPs to the modules whose forward ran them
            (:attr:`by_module`, the module rows of :meth:`table`). Off by
            default: ``nn.Module.__call__`` is wrapped while such a counter
            lives (mfu_tracker/flops/counter/_module_table.py), which costs
            about 2.4% of a small eager training step and 1.6% of a compiled
            one (docs/performance.md), against under 1% for the totals
            alone. Turn it on to see where the FLOPs go, not on every step.
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

    def __init__(self, *, causal_attention: str = "full", modules: bool = False,
                 audit: bool = False) -> None:
        check_causal_attention(causal_attention)
        check_flag(modules, "modules")
        check_flag(audit, "audit")
        self.causal_attention = causal_attention
        self.audit = audit
        self._audit_warned = False
        self._totals = CounterTotals()
        self._handle: Any = None
        self._backend: Any = None
        self._thread: int | None = None
        self._table = ModuleTable() if modules else None
        self._holds: list[KeyHold] = []  # the counting key, per thread counted on
        self._approximate_warned = False
        self._half_warned = False

    # -- context manager -----------------------------------------------------

    def __enter__(self) -> FlopCounter:
        backend = self._checked_backend()
        watch_cuda_graphs()
        apply_deferred()  # torch.compile came into use: its frames skip ours
        with _enter_lock:  # two threads entering one counter: one wins, no observer slot lost
            if self._handle is not None:
                raise RuntimeError("this FlopCounter is already active; nest a new FlopCounter instead")
            self._backend = backend
            self._totals.bind(backend)
            self._handle = backend.start(self.causal_attention, self._table is not None)
            self._thread = threading.get_ident()
            if self.audit:
                try:
                    backend.audit(self._handle)
                except BaseException:
                    backend.stop(self._handle)
                    self._handle = None
                    raise
        counting.active = getattr(counting, "active", 0) + 1
        if self._table is not None:
            self._table.start(backend)
        else:
            restore_if_unused()  # a wrapper left by module tables that are gone
        return self

    def _checked_backend(self) -> Any:
        """The backend to count on now: the C++ observer while its key is
        ours (this counter holding the key on this thread), else the
        fallback (docs/dispatch_keys.md)."""
        backend = get_backend()
        if getattr(backend, "module", None) is None:
            return backend
        thread = threading.get_ident()
        if not any(hold.thread == thread for hold in self._holds):
            self._holds.append(KeyHold(backend.module))
        problem = backend.foreign()
        return backend if problem is None else fall_back(problem)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        self.stop()
        return False

    def stop(self, *, warn: bool = True) -> str | None:
        """End the active block (what leaving the ``with`` block does).

        Returns the message about the op calls of this block that could not
        be counted (None when every call was counted), and warns with it
        (``RuntimeWarning``) only when ``warn`` is true: an integration that
        opens a counter every step passes ``warn=False`` and warns once per
        run instead. With ``warn``, a block whose cumulative sequence
        lengths could not be read (meta or fake tensors) says once per
        counter that it counted their worst case (:attr:`approximate`).

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
        counting.active -= 1
        handle, self._handle = self._handle, None
        before = self._totals.read()
        self._totals.stop(handle)
        if self._table is not None and self._table.error is not None:
            self._totals.note_error(self._table.error)
            self._table.error = None
        foreign = getattr(self._backend, "foreign", None)
        problem = foreign() if foreign is not None else None
        if problem is not None:  # registered during the block: its calls may be missing
            self._totals.note_error(f"{problem}, while counting: calls of it may be missing")
            fall_back(problem)
        after = self._totals.read()
        if warn:
            self._warn_once(after["approximate_calls"] - before["approximate_calls"])
        return self._errors_message(after, after["errors"] - before["errors"], warn)

    def _warn_once(self, approximate: int) -> None:
        """The audit's FLOP-heavy ops, attention "half" could not halve, and
        calls counted at their worst case: one warning each per counter."""
        heavy = None if self._audit_warned or not self.audit else self.audit_warning()
        if heavy is not None:
            self._audit_warned = True
            warnings.warn(f"mfu_tracker.FlopCounter: {heavy}", RuntimeWarning, stacklevel=4)
        whole = None if self._half_warned else self.half_warning()
        if whole is not None:
            self._half_warned = True
            warnings.warn(f"mfu_tracker.FlopCounter: {whole}", RuntimeWarning, stacklevel=4)
        if approximate and not self._approximate_warned:
            self._approximate_warned = True
            warnings.warn(f"mfu_tracker.FlopCounter: {approximate} attention call(s) had "
                          "cumulative sequence lengths or a block mask that cannot be read "
                          "(meta or fake tensors): counted at the worst case (each sequence "
                          "at max_seqlen, as FlopCounterMode does; every block of the mask), "
                          "an upper bound; FlopCounter.approximate is True",
                          RuntimeWarning, stacklevel=4)

    @staticmethod
    def _errors_message(totals: dict[str, Any], new_errors: int, warn: bool) -> str | None:
        if not new_errors:
            return None
        message = (f"{new_errors} op call(s) could not be counted and are missing from the "
                   f"totals (first: {totals['first_error']})")
        if warn:
            warnings.warn(f"mfu_tracker.FlopCounter: {message}", RuntimeWarning, stacklevel=4)
        return message

    def reset(self) -> None:
        """Zero every count (also while active)."""
        self._totals.reset()
        if self._handle is not None:
            self._backend.reset(self._handle)

    # -- results ---------------------------------------------------------------

    def _current(self, tables: bool = False) -> dict[str, Any]:
        """The totals (with the active block's so far); the tables (ops,
        modules, uncounted) only with ``tables``."""
        return self._totals.read(self._handle, tables)

    @property
    def model_flops(self) -> int:
        """MFU numerator: forward ops + the backward that ran for their
        grad-requiring inputs (only what reaches the loss); a count without
        a backward: + the backward those inputs would need (module
        docstring)."""
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
        return uncounted_ops(self._current(True)["uncounted"])

    @property
    def mask_tensor_attention_calls(self) -> int:
        """Attention calls given a mask tensor and no causal flag, window or
        block mask: counted whole under either convention (whether the mask
        is causal, padding or a window is data the count does not read: on a
        GPU reading it would wait for the device). Under
        ``causal_attention="half"`` these are the calls it could not halve."""
        return int(self._current()["mask_tensor_calls"])

    @property
    def mask_tensor_attention_flops(self) -> int:
        """The executed forward FLOPs of :attr:`mask_tensor_attention_calls`
        (their model FLOPs are 3x that when q, k and v train)."""
        return int(self._current()["mask_tensor_flops"])

    def half_warning(self) -> str | None:
        """Under ``causal_attention="half"``, what the count could not halve
        (None when nothing, or under ``"full"``): attention calls given a
        mask tensor (:attr:`mask_tensor_attention_calls`), or -- when no
        attention call had a causal flag, a window or a block mask while
        batched matmuls ran -- attention written as plain matmuls (eager
        attention: matmul, mask, softmax, matmul), which no op marks as
        attention. Either is counted whole; leaving a block warns with it
        once per counter."""
        if self.causal_attention != "half":
            return None
        return half_note(self._current(), lambda: self._current(True)["ops"])

    def audit_warning(self) -> str | None:
        """The warning about the FLOP-heavy ops of :meth:`uncounted` (None
        when there are none); leaving a block warns with it once per
        counter."""
        return heavy_message(self.uncounted())

    @property
    def by_op(self) -> dict[str, tuple[int, int]]:
        """Op name -> (calls, executed FLOPs)."""
        return dict(self._current(True)["ops"])

    @property
    def by_module(self) -> dict[str, ModuleFlops]:
        """Module name (``Root.child.grandchild``) -> its forward calls' FLOPs,
        submodules included, in first-call order.

        Raises ``RuntimeError`` on a counter made without ``modules=True``
        (it attributed nothing: an empty table would read as "no module
        ran a counted op")."""
        if self._table is None:
            raise RuntimeError(f"FlopCounter.by_module: {_NO_MODULES}")
        return {name: ModuleFlops(*row)
                for name, row in module_rows(self._current(True)["modules"]).items()}

    @property
    def backend(self) -> str:
        """``"torch-ext"`` or ``"dispatch"`` (the fallback)."""
        return (self._backend or get_backend()).name

    @property
    def conventions(self) -> str:
        """How the numbers were counted, as one line."""
        causal = ("causal attention in full (PaLM / FlopCounterMode), windows whole per query"
                  if self.causal_attention == "full"
                  else "causal attention halved (Megatron), windows as the pairs they keep")
        text = (f"{causal}; block masks: the computed blocks; attention model backward = 2x "
                "forward; model FLOPs count the backward that ran (a count without one: 1x "
                "forward per grad-requiring matmul / conv input); recompute not in model FLOPs")
        t = self._current()
        if t["mask_tensor_calls"]:
            text += (f"; {t['mask_tensor_calls']} attention call(s) given a mask tensor "
                     "counted whole")
        if self.causal_attention == "half" and t["overcompute_flops"]:
            text += ("; the math SDPA kernel computes the full square both ways: executed "
                     "FLOPs hold the excess (overcompute_flops)")
        return text

    def table(self, depth: int | None = 3, *, collapse_repeats: bool = True) -> str:
        """A readable table: totals, per op, and per module (with
        ``modules=True``; without, one line says how to get the module rows).

        Args:
            depth: module levels shown (``None``: all).
            collapse_repeats: fold numbered siblings (``layers.0``,
                ``layers.1``, ...) into one ``layers.*`` row with their sum.
        """
        t = self._current(True)
        lines = [
            f"FLOPs ({self.conventions})",
            f"  model FLOPs (MFU):     {t['model_flops']:>28,}  {format_flops(t['model_flops'])}",
            f"  executed FLOPs (HFU):  {t['executed_flops']:>28,}  {format_flops(t['executed_flops'])}",
            f"    forward:             {t['forward_flops']:>28,}  {format_flops(t['forward_flops'])}",
            f"    backward:            {t['backward_flops']:>28,}  {format_flops(t['backward_flops'])}",
        ]
        for key, label in (("recompute_flops", "of which recompute"),
                           ("overcompute_flops", "over-compute (not model)")):
            if t[key]:
                lines.append(f"    {label + ':':<21}{t[key]:>28,}  {format_flops(t[key])}")
        if t["errors"]:
            lines.append(f"  uncounted op calls: {t['errors']} (first: {t['first_error']})")
        if t["approximate_calls"]:
            lines.append(f"  approximate (varlen lengths unknown on meta): {t['approximate_calls']} call(s)")
        if t["mask_tensor_calls"]:
            lines.append(f"  attention given a mask tensor, counted whole: {t['mask_tensor_calls']} "
                         f"call(s), {format_flops(t['mask_tensor_flops'])} forward")
        if t["ops"]:
            lines.append("")
            lines.append(f"  {'op':<56}{'calls':>8}  {'executed':>16}")
            for name, (calls, flops) in sorted(t["ops"].items(), key=lambda kv: -kv[1][1]):
                lines.append(f"  {name:<56}{calls:>8}  {format_flops(flops):>16}")
        if self._table is None:
            lines.append("")
            lines.append(f"  per module: {_NO_MODULES}")
            return "\n".join(lines)
        rows = table_rows(module_rows(t["modules"]), depth, collapse_repeats)
        if rows:
            total_model = t["model_flops"] or 1
            lines.append("")
            lines.append(f"  {'module':<56}{'calls':>8}  {'forward':>16}  {'model':>16}  {'% model':>8}")
            for i, (label, level, calls, forward, model) in enumerate(rows):
                if i and not model and not forward:
                    continue  # modules without counted ops (norms, embeddings)
                text = "  " * level + label
                lines.append(f"  {text:<56}{calls:>8}  {format_flops(forward):>16}  "
                             f"{format_flops(model):>16}  {100.0 * model / total_model:>7.2f}%")
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "active" if self._handle is not None else "idle"
        return (f"FlopCounter({state}, model_flops={self.model_flops:,}, "
                f"executed_flops={self.executed_flops:,}, causal_attention={self.causal_attention!r})")


def hold_counting_key() -> FlopCounter | None:
    """A counter that has counted once on this thread, for its caller to keep:
    while it lives the counting key stays included on the thread, so a model
    compiled afterwards is never recompiled for later counters (module
    docstring, "torch.compile"). None when no counter can run (the counter
    warned)."""
    try:
        holder = FlopCounter(modules=False)
        with holder:
            pass
        return holder
    except Exception:  # noqa: BLE001 -- counting warns itself when it fails
        return None
