"""Automatic phase marks for the integrations (``MFUCallback``,
``MFUOptimizerWrapper``): the waterfall's phases from events the loop
already has, one ``switch_phase()`` mark per event (never a sync).

The events, in a step's order::

    boundary (step() ran)         -> data        (until the first forward)
    model forward pre-hook        -> forward     (training forwards only)
    model forward hook            -> backward    (loss, backward, grad clipping,
                                                  until the next event)
    end of a micro-batch          -> data        (the next micro-batch's input)
    before optimizer.step()       -> optimizer
    after optimizer.step()        -> no phase    (then the boundary)

Forwards run in eval mode or without grad (evaluation, generation) are not
marked. Exposed communication is marked by the tracker's communication
observer (:mod:`mfu_tracker.distributed._comm_observer`) around each wait,
inside whichever of these phases it falls in.

**Compile** (a badput phase, docs/goodput.md). For a compiled model (``torch.compile``: an
``_orig_mod``, a ``model.compile()``, Lightning's compiler context) the first
training step's forward and backward -- where torch compiles the graphs --
are marked ``compile`` instead, up to the optimizer (or the boundary), and
the tracker counts one compiled call (``Tracker._compile_call``): the job
ledger then takes one normal step's forward + backward back out of it, so
compile is the first compiled call's *excess*. Later recompilations are not
told apart.

Under torch.compile: the hooks run eagerly, never compiled (torch.compile(model)
runs a model's hooks outside its graph; ours are marked so its frame
evaluation does not compile them either: no graph break). A hook traced
*inside* a compiled region (``module.compile()`` compiles ``_call_impl``,
hooks included) cannot mark without breaking the graph: it marks nothing,
and from then on no phase is marked (``traced``): no waterfall rather than
one that books the compiled forward to ``data``.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from ..timing._waterfall import BADPUT_PHASES


class AutoPhases:
    """The phase marks of one tracker driven by an integration's events."""

    __slots__ = ("_tracker", "_handles", "_compile_first", "_compiling", "traced",
                 "before_first_forward")

    def __init__(self, tracker: Any) -> None:
        self._tracker = tracker
        self._handles: List[Any] = []
        # Called once, at the first training forward, before it is marked (the
        # optimizer wrapper starts its clock there when nothing started it yet).
        self.before_first_forward: Optional[Callable[[], None]] = None
        self._compile_first = False   # the model is compiled: its first step compiles
        self._compiling = False       # the first step's forward / backward run now
        self.traced = False  # a hook was traced by torch.compile: no marks from then on

    def compiled(self, model: Any, declared: bool = False) -> None:
        """Mark the first training step's forward and backward of ``model`` as
        ``compile`` when it is compiled, or ``declared`` so (the trainer
        compiles a wrapper the hooks do not see: HF ``torch_compile=True``)."""
        self._compile_first = declared or is_compiled(model)

    def switch(self, phase: str) -> None:
        """Phase ``phase`` starts now (forward and backward of the first
        compiled step become ``compile``; once a hook was traced, no step
        phase: the badput phases still leave the step)."""
        if self.traced and phase not in BADPUT_PHASES:
            self.end()
            return
        if self._compile_first and phase in ("forward", "backward"):
            if not self._compiling:
                self._compiling = True
                self._tracker._compile_call()
            phase = "compile"
        elif self._compiling and phase != "data":   # the optimizer: the call is over
            self._compiling = self._compile_first = False
        self._tracker.switch_phase(phase)

    def attach(self, model: Any) -> None:
        """Mark forward / backward from ``model``'s forward hooks."""
        from ..flops.counter._compiled import run_eagerly

        run_eagerly(AutoPhases._forward_begins, AutoPhases._forward_ends)
        self.detach()
        self._handles = [model.register_forward_pre_hook(self._forward_begins),
                         model.register_forward_hook(self._forward_ends)]

    def detach(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()

    @staticmethod
    def _training(module: Any) -> bool:
        import torch

        return bool(module.training) and torch.is_grad_enabled()

    def _forward_begins(self, module: Any, args: Any) -> None:
        import torch

        if torch.compiler.is_compiling():  # traced inside a compiled region
            self.traced = True  # (replayed by the compiled code)
            return
        if self._training(module):
            first, self.before_first_forward = self.before_first_forward, None
            if first is not None:
                first()
            self.switch("forward")

    def _forward_ends(self, module: Any, args: Any, output: Any) -> None:
        import torch

        if torch.compiler.is_compiling():
            self.traced = True
            return
        if self._training(module):
            self.switch("backward")

    def data(self) -> None:
        """A step or micro-batch begins: waiting for its input."""
        self.switch("data")

    def optimizer(self) -> None:
        self.switch("optimizer")

    def end(self) -> None:
        """No phase runs (before a boundary, or while evaluating)."""
        if self._compiling:
            self._compiling = self._compile_first = False
        tracker = self._tracker
        while tracker.phase_depth():
            tracker.end_phase()


def is_compiled(model: Any) -> bool:
    """Whether ``model`` runs compiled: a ``torch.compile`` wrapper
    (``_orig_mod``), a module compiled in place (``model.compile()``), or
    a LightningModule given compiled (its ``_compiler_ctx``)."""
    return (getattr(model, "_orig_mod", None) is not None
            or getattr(model, "_compiled_call_impl", None) is not None
            or getattr(model, "_compiler_ctx", None) is not None)
