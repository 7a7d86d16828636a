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
marked. With a DDP communication hook attached (:mod:`mfu_tracker.distributed._comm_hook`)
the end of backward after the last bucket becomes ``communication``.

Under torch.compile: the hooks run eagerly, never compiled (torch.compile(model)
runs a model's hooks outside its graph; ours are marked so its frame
evaluation does not compile them either: no graph break). A hook traced
*inside* a compiled region (``module.compile()`` compiles ``_call_impl``,
hooks included) cannot mark without breaking the graph: it marks nothing,
and from then on no phase is marked (``traced``): no waterfall rather than
one that books the compiled forward to ``data``.
"""
from __future__ import annotations

from typing import Any, List


class AutoPhases:
    """The phase marks of one tracker driven by an integration's events."""

    __slots__ = ("_tracker", "_handles", "traced")

    def __init__(self, tracker: Any) -> None:
        self._tracker = tracker
        self._handles: List[Any] = []
        self.traced = False  # a hook was traced by torch.compile: no marks from then on

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
        if self._training(module) and not self.traced:
            self._tracker.switch_phase("forward")

    def _forward_ends(self, module: Any, args: Any, output: Any) -> None:
        import torch

        if torch.compiler.is_compiling():
            self.traced = True
            return
        if self._training(module) and not self.traced:
            self._tracker.switch_phase("backward")

    def data(self) -> None:
        """A step or micro-batch begins: waiting for its input."""
        if self.traced:
            self.end()
        else:
            self._tracker.switch_phase("data")

    def optimizer(self) -> None:
        if self.traced:
            self.end()
        else:
            self._tracker.switch_phase("optimizer")

    def end(self) -> None:
        """No phase runs (before a boundary, or while evaluating)."""
        tracker = self._tracker
        while tracker.phase_depth():
            tracker.end_phase()
