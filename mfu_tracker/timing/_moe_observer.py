"""Reading a sampled step's expert load (``Tracker(moe=model, moe_every=N)``).

An MoE layer is a module with the experts interface of transformers' MoE
models: an integer ``num_experts`` and ``forward(hidden_states, top_k_index,
top_k_weights)`` (Mixtral, Qwen2/3-MoE, OLMoE, DeepSeek-V3, ...; a layer of
one's own that keeps this interface is read the same way).

On a sampled step only, each such layer gets a forward pre-hook and a
forward hook; no hook exists on any other step, so they cost nothing there.
During the layer's forward:

* the router's assignments per expert are counted on the device
  (``scatter_add_`` into ``num_experts + 1`` bins: the last one takes the
  sentinel index an expert-parallel layer gives tokens of other ranks;
  ``bincount`` is avoided, it synchronizes on CUDA to size its output);
* a dispatch mode sees the layer's GEMMs: ``aten._grouped_mm`` (its group
  offsets, kept on the device), an eager loop's per-expert ``mm`` / ``addmm``
  (the expert is the slice of the stacked weight the matmul reads: its
  storage offset over the weight's first stride) and ``bmm`` against the
  stacked weight (a capacity buffer: every expert computes its capacity).

Nothing is copied to the host during the step. The tracker's boundary after
the sampled step (after the step's work) copies the counts once and forms
:class:`~._moe_load.MoELoad` (docs/moe.md). A failure there is one warning
and no MoE figures for that step.
"""
from __future__ import annotations

import inspect
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._moe_load import LayerLoad, MoELoad, RankLoads, layer_load, model_load, rank_loads

__all__ = ["MoEObserver", "check_moe", "experts_modules"]

#: The default interval between sampled steps (docs/moe.md measures its cost).
MOE_EVERY_DEFAULT = 100


def _is_experts(module: Any) -> bool:
    experts = getattr(module, "num_experts", None)
    if isinstance(experts, bool) or not isinstance(experts, int) or experts < 1:
        return False
    try:
        params = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False
    return "top_k_index" in params


def experts_modules(model: Any) -> List[Tuple[str, Any]]:
    """``(name, module)`` of every MoE experts module of ``model``, in order."""
    return [(name, m) for name, m in model.named_modules() if _is_experts(m)]


def check_moe(moe: Any, moe_every: Any) -> Optional[int]:
    """``moe`` (None, or a module holding MoE experts) and ``moe_every``
    (steps between sampled steps); the interval, or None when off."""
    if moe is None:
        if moe_every is not None:
            raise ValueError("moe_every needs moe= (the model whose MoE layers to read)")
        return None
    import torch

    if not isinstance(moe, torch.nn.Module):
        raise TypeError(f"moe must be a torch.nn.Module (the model), not {type(moe).__name__}")
    if not experts_modules(moe):
        raise ValueError("moe: the model has no MoE experts module (a module with an int "
                         "num_experts and forward(hidden_states, top_k_index, top_k_weights))")
    if moe_every is None:
        return MOE_EVERY_DEFAULT
    if isinstance(moe_every, bool) or not isinstance(moe_every, int) or moe_every < 1:
        raise ValueError(f"moe_every must be a positive int (steps), got {moe_every!r}")
    return moe_every


class _LayerRecord:
    """What one layer's forward left on the device during a sampled step."""

    __slots__ = ("routed", "offs", "rows", "row_flops", "row_model_flops", "seen", "marks")

    def __init__(self) -> None:
        self.routed: Any = None             # device tensor, experts + 1 bins
        self.offs: Any = None               # the first grouped GEMM's offsets (device)
        self.rows: Dict[int, int] = {}      # expert -> rows (eager loop, bmm)
        self.row_flops = 0.0                # per row, over the GEMMs of one expert
        self.row_model_flops = 0.0          # the same with the backward that will run
        self.seen: set = set()              # (weight, kind) already charged in row_flops
        self.marks: List[Any] = []          # each forward's start, end (CUDA events or seconds)

    def elapsed_s(self) -> float:
        """Seconds the layer's forwards took (CUDA events: their elapsed time,
        read after the step; the host clock otherwise)."""
        total = 0.0
        for start, end in zip(self.marks[::2], self.marks[1::2]):
            total += start.elapsed_time(end) * 1e-3 if hasattr(start, "elapsed_time") else end - start
        return total


def _stacked(module: Any) -> Dict[int, Any]:
    """The module's stacked (3-D) weights by storage address."""
    return {p.untyped_storage().data_ptr(): p for p in module.parameters(recurse=False)
            if p.dim() == 3}


class _GemmMode:
    """A dispatch mode that records an experts module's GEMMs (module docstring)."""

    def __new__(cls, record: _LayerRecord, stacked: Dict[int, Any]) -> Any:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        aten = torch.ops.aten

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                if func is aten._grouped_mm.default:
                    _grouped(record, args, kwargs)
                elif func in (aten.mm.default, aten.addmm.default):
                    _expert_mm(record, stacked, *(args[1:3] if func is aten.addmm.default
                                                  else args[:2]))
                elif func is aten.bmm.default:
                    _expert_bmm(record, stacked, args[0], args[1])
                return func(*args, **kwargs)

        return Mode()


def _grouped(record: _LayerRecord, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
    a, b = args[0], args[1]
    offs = args[2] if len(args) > 2 else kwargs.get("offs")
    if offs is None or a.dim() != 2 or b.dim() != 3:
        return
    if record.offs is None:
        record.offs = offs.detach().clone()
    _charge(record, 2.0 * b.shape[1] * b.shape[2], a, b)


def _charge(record: _LayerRecord, flops: float, a: Any, b: Any) -> None:
    """One row's FLOPs through one GEMM: forward, and with the backward the
    model convention charges it (+1x per input that needs a gradient,
    docs/flops.md), where autograd records it."""
    import torch

    grads = int(a.requires_grad) + int(b.requires_grad) if torch.is_grad_enabled() else 0
    record.row_flops += flops
    record.row_model_flops += flops * (1 + grads)


def _expert_of(stacked: Dict[int, Any], weight: Any) -> Optional[Tuple[int, Any]]:
    param = stacked.get(weight.untyped_storage().data_ptr())
    if param is None:
        return None
    return (weight.storage_offset() - param.storage_offset()) // param.stride(0), param


def _expert_mm(record: _LayerRecord, stacked: Dict[int, Any], x: Any, w: Any) -> None:
    found = _expert_of(stacked, w)
    if found is None or x.dim() != 2:
        return
    expert, param = found
    if param is next(iter(stacked.values())):   # rows: the first weight's GEMM
        record.rows[expert] = record.rows.get(expert, 0) + x.shape[0]
    if id(param) not in record.seen:     # one row's FLOPs through this weight, once
        record.seen.add(id(param))
        _charge(record, 2.0 * w.shape[0] * w.shape[1], x, w)


def _expert_bmm(record: _LayerRecord, stacked: Dict[int, Any], x: Any, w: Any) -> None:
    found = _expert_of(stacked, w)
    if found is None or w.shape[0] != found[1].shape[0]:
        return
    if found[1] is next(iter(stacked.values())):
        for expert in range(w.shape[0]):
            record.rows[expert] = record.rows.get(expert, 0) + x.shape[1]
    if id(found[1]) not in record.seen:
        record.seen.add(id(found[1]))
        _charge(record, 2.0 * w.shape[1] * w.shape[2], x, w)


class MoEObserver:
    """Samples every ``every``-th step's expert load (module docstring)."""

    def __init__(self, model: Any, every: int) -> None:
        self.every = every
        # Expert parallelism: every rank's row by rank (``Aggregator.gather_floats``;
        # None: one process), and this rank's index.
        self.gather: Optional[Callable[[List[float], str], Optional[List[List[float]]]]] = None
        self.rank = 0
        self.layers = experts_modules(model)
        self.last: Optional[MoELoad] = None
        self._records: Optional[List[_LayerRecord]] = None
        self._handles: List[Any] = []
        self._step: Optional[int] = None

    # ---- the sampled step ------------------------------------------------------

    def boundary(self, step: int) -> None:
        """After the ``step()`` that closed global step ``step``: read the
        step just sampled, and arm the next one when it is due. Never raises."""
        try:
            if self._records is not None:
                self._read(step)
            if (step + 1) % self.every == 0:
                self._arm(step + 1)
        except Exception as exc:  # noqa: BLE001 -- the tracker never takes a run down
            self._disarm()
            warnings.warn(f"mfu_tracker: the MoE load of step {step} was not read ({exc})",
                          RuntimeWarning, stacklevel=3)

    def _arm(self, step: int) -> None:
        self._records = [_LayerRecord() for _ in self.layers]
        self._step = step
        for (_, module), record in zip(self.layers, self._records):
            mode_box: List[Any] = []
            stacked = _stacked(module)
            self._handles.append(module.register_forward_pre_hook(
                _pre_hook(record, module.num_experts, stacked, mode_box), with_kwargs=True))
            self._handles.append(module.register_forward_hook(
                _post_hook(record, mode_box), always_call=True))

    def _disarm(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._records = None

    def _read(self, step: int) -> None:
        records = self._records
        self._disarm()
        assert records is not None
        layers = [_layer_of(name, module.num_experts, record)
                  for (name, module), record in zip(self.layers, records)]
        loads = [layer for layer in layers if layer is not None]
        if loads:
            ranks = self._exchange(records, layers)
            self.last = model_load(self._step if self._step is not None else step, loads,
                                   ranks=ranks)

    def _exchange(self, records: List[_LayerRecord],
                  layers: List[Optional[LayerLoad]]) -> Optional[RankLoads]:
        """Every expert-parallel rank's experts' seconds and busiest expert
        per layer (one all-gather, on the sampled step's boundary), or None
        on one process."""
        if self.gather is None:
            return None
        row = [float(len(records))]
        for record, layer in zip(records, layers):
            row += [record.elapsed_s(), 0.0 if layer is None else float(max(layer.routed))]
        rows = self.gather(row, "the MoE load's exchange")
        if rows is None or any(r[0] != row[0] for r in rows):
            return None
        return rank_loads(self.rank, [r[1::2] for r in rows], [r[2::2] for r in rows])

    def figures(self) -> Dict[str, Any]:
        """The last sampled step's figures (``{}`` before one)."""
        return {} if self.last is None else self.last.figures()

    def close(self) -> None:
        self._disarm()


def _pre_hook(record: _LayerRecord, experts: int, stacked: Dict[int, Any],
              mode_box: List[Any]) -> Any:
    def hook(module: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
        import torch

        index = args[1] if len(args) > 1 else kwargs.get("top_k_index")
        if index is not None:
            flat = index.detach().reshape(-1).long().clamp(0, experts)
            counts = torch.zeros(experts + 1, dtype=torch.long, device=flat.device)
            counts.scatter_add_(0, flat, torch.ones_like(flat))
            record.routed = counts if record.routed is None else record.routed + counts
        mode = _GemmMode(record, stacked)
        mode.__enter__()
        mode_box.append(mode)
        record.marks.append(_mark(args[0] if args else kwargs.get("hidden_states")))
    return hook


def _post_hook(record: _LayerRecord, mode_box: List[Any]) -> Any:
    def hook(module: Any, args: Tuple[Any, ...], output: Any) -> None:
        if mode_box:
            mode_box.pop().__exit__(None, None, None)
            record.marks.append(_mark(args[0] if args else None, cuda=hasattr(
                record.marks[-1], "elapsed_time")))
    return hook


def _mark(tensor: Any, cuda: Optional[bool] = None) -> Any:
    """A point in time on the tensor's device: a recorded CUDA event (no
    synchronization), or the host clock's seconds."""
    import torch

    if cuda is None:
        cuda = tensor is not None and getattr(tensor, "is_cuda", False)
    if cuda:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event
    return time.perf_counter()


def _layer_of(name: str, experts: int, record: _LayerRecord) -> Optional[LayerLoad]:
    """The layer's load from its record: the one copy to the host."""
    if record.routed is None:
        return None   # the layer did not run on the sampled step
    routed = record.routed.tolist()[:experts]
    rows: Optional[List[int]] = None
    if record.offs is not None:
        ends = [int(v) for v in record.offs.tolist()][:experts]
        rows = [end - start for start, end in zip([0, *ends[:-1]], ends)]
        rows += [0] * (experts - len(rows))
    elif record.rows:
        rows = [record.rows.get(e, 0) for e in range(experts)]
    return layer_load(name, routed, rows, record.row_flops, record.row_model_flops)
