"""Exposed communication under DDP through a communication hook
(``Tracker.attach_ddp``).

A tracker that observes the process's communication
(:mod:`mfu_tracker.distributed._comm_observer`, the default under a process
group) needs no hook: the observer times DDP's waits itself. ``attach_ddp``
then only registers the communication it is given (a compression hook, say)
and marks nothing, so no collective is counted twice.

Without the observer (``Tracker(comm=False)``, or no C++ observer), the hook
wraps DDP's gradient all-reduce and marks the moment the *last* bucket is
handed over. Until that mark the backward pass computes (the earlier
buckets' all-reduces overlap it); after it, what remains of backward is
waiting for the last all-reduce to finish -- on a GPU clock the mark is an
event on the compute stream, and DDP makes that stream wait for the
all-reduce before backward returns, so the interval is exactly the GPU time
held up by communication; on the CPU clock (gloo) it is the host's wait in
DDP's finalization. The rest of backward is switched to the
``communication`` phase, which the waterfall reports as
``mfu_lost/communication``. Needs the backward phase marked (by hand, or by
``MFUCallback`` / ``MFUOptimizerWrapper``): without an open phase the mark is
skipped (nothing bounds the wait) and exposed communication stays in
``other``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from .._validate import check_callable, check_instance

__all__ = ["attach_ddp", "attach_ddp_or_warn"]


def attach_ddp(tracker: Any, model: Any, hook: Optional[Callable[..., Any]] = None,
               state: Any = None, *, mark: bool = True) -> None:
    """Register the communication hook on DDP ``model``: ``hook`` itself when
    ``mark`` is False (the tracker's observer times the waits), else the
    marking hook around it.

    ``hook(state, bucket) -> Future`` is the communication to run (default:
    DDP's own all-reduce, ``default_hooks.allreduce_hook``; pass e.g.
    ``fp16_compress_hook`` to keep a compression hook); ``state`` is given to
    it (default: the process group, None = the default group). DDP accepts
    one hook per model, registered before the first backward.
    """
    import torch
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    check_instance(model, "model", torch.nn.parallel.DistributedDataParallel,
                   "a torch.nn.parallel.DistributedDataParallel")
    check_callable(hook, "hook")
    communicate = hook if hook is not None else default_hooks.allreduce_hook
    if not mark:
        if hook is not None:  # DDP's own all-reduce needs no hook at all
            model.register_comm_hook(state, hook)
        return

    # No annotations: DDP checks them (bucket: dist.GradBucket, return: Future),
    # and under `from __future__ import annotations` they would be strings.
    def marking_hook(hook_state, bucket):  # type: ignore[no-untyped-def]
        future = communicate(hook_state, bucket)
        if bucket.is_last() and tracker.phase_depth():
            tracker.switch_phase("communication")
        return future

    model.register_comm_hook(state, marking_hook)


def attach_ddp_or_warn(tracker: Any, model: Any, warn: Callable[[str], None], fix: str) -> bool:
    """:func:`attach_ddp` for the integrations, which must never raise: a
    model that already has a communication hook (DDP takes one) keeps it, and
    ``warn`` gets one message ending with ``fix``. True when attached (or
    not needed: the tracker observes its communication)."""
    if getattr(tracker, "observes_communication", False):
        return True
    try:
        attach_ddp(tracker, model)
    except Exception as error:  # noqa: BLE001 -- DDP takes one hook per model
        warn(f"exposed communication is not separated from backward: the DDP communication "
             f"hook could not be registered ({error!r}); {fix}")
        return False
    return True
