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
"""
from __future__ import annotations

from typing import Any, List


class AutoPhases:
    """The phase marks of one tracker driven by an integration's events."""

    __slots__ = ("_tracker", "_handles")

    def __init__(self, tracker: Any) -> None:
        self._tracker = tracker
        self._handles: List[Any] = []

    def attach(self, model: Any) -> None:
        """Mark forward / backward from ``model``'s forward hooks."""
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
        if self._training(module):
            self._tracker.switch_phase("forward")

    def _forward_ends(self, module: Any, args: Any, output: Any) -> None:
        if self._training(module):
            self._tracker.switch_phase("backward")

    def data(self) -> None:
        """A step or micro-batch begins: waiting for its input."""
        self._tracker.switch_phase("data")

    def optimizer(self) -> None:
        self._tracker.switch_phase("optimizer")

    def end(self) -> None:
        """No phase runs (before a boundary, or while evaluating)."""
        tracker = self._tracker
        while tracker.phase_depth():
            tracker.end_phase()
