"""Collectives seen through a TorchDispatchMode: the communication
observer's supported path when its dispatch key cannot be used
(docs/dispatch_keys.md).

While a tracker observes and the C++ observer's communication key is not
ours (another library took it, or the running torch lacks it), this mode
sits on the dispatch mode stack of the thread that created the first such
tracker (and its backward passes, which inherit it) and does in Python what
csrc/torch/comm.cpp does in C++: each c10d collective of the core's table
(``_C.comm_op_table()``) is recorded in every observing tracker at launch --
kind, payload bytes (nccl-tests' conventions, core/comm/comm.h), bus bytes, the
group's link -- and at completion (the Work's future); a functional
collective's ``wait_tensor`` is bracketed by its kind's phase. Work.wait,
the CUDA stream waits and the pipeline schedules stay observed as before
(they do not use the key).

Costs: every op of that thread passes through Python (about what
``FlopCounterMode`` costs); not seen: the waits DDP's reducer makes at the
end of a backward pass (its C++ autograd callbacks: they stay in the
backward phase), and collectives on other threads. Durations are host
times (the future's completion on the host).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._native import _C

__all__ = ["CommMode", "payload_bytes"]

_ROWS: Dict[str, Dict[str, Any]] = {row["name"]: row for row in _C.comm_op_table()}
_WAIT = "_c10d_functional::wait_tensor"


def payload_bytes(value: Any) -> Tuple[float, bool, bool]:
    """(bytes, real, host) of a Tensor, Tensor[] or Tensor[][]: real is False
    with a fake or meta tensor among them (not a real collective), host
    with every tensor on the CPU."""
    import torch

    total, real, host = 0.0, True, True
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, torch.Tensor):
            if type(item) is not torch.Tensor or item.is_meta:
                real = False
                continue
            host = host and item.is_cpu
            total += float(item.numel() * item.element_size())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
    return total, real, host


def _group(value: Any) -> Tuple[int, str]:
    try:
        return int(value.size()), str(value.group_name)
    except Exception:  # noqa: BLE001 -- not a group: no bus bytes, no link
        return 0, ""


class CommMode:
    """The mode and what it records into: ``sinks()`` gives the observing
    trackers' ``(tracker, link_of(group_name) -> bytes/s or None)``."""

    def __init__(self, sinks: Callable[[], List[Tuple[Any, Callable[[str], Optional[float]]]]]) -> None:
        self.sinks = sinks
        self.results: Dict[int, str] = {}  # data_ptr of a collective's result -> its kind
        self.lock = threading.Lock()
        self.mode = self._make_mode()

    def _launch(self, row: Dict[str, Any], args: Tuple[Any, ...]) -> Optional[List[Tuple[Any, int]]]:
        """Record a launch in every sink: [(tracker, token)], or None (not a
        real collective)."""
        payload = args[row["payload_arg"]] if 0 <= row["payload_arg"] < len(args) else None
        size, group = _group(args[row["group_arg"]]) if 0 <= row["group_arg"] < len(args) else (0, "")
        bytes_, real, host = payload_bytes(payload)
        if not real:
            return None
        factor = _C.comm_busbw_factor(row["kind"], size) if size > 0 else None
        bus = bytes_ * factor if factor is not None else float("nan")
        tokens = []
        for tracker, link_of in self.sinks():
            link = link_of(group) if size > 0 else None
            tokens.append((tracker, tracker._comm_begin(row["kind"], bytes_, bus,
                                                        float("nan") if link is None else link,
                                                        host)))
        return tokens

    def _remember(self, kind: str, out: Any) -> None:
        import torch

        todo = [out]
        with self.lock:
            while todo:
                item = todo.pop()
                if isinstance(item, torch.Tensor) and type(item) is torch.Tensor:
                    if len(self.results) >= 1024:
                        self.results.pop(next(iter(self.results)))
                    self.results[item.data_ptr()] = kind
                elif isinstance(item, (list, tuple)):
                    todo.extend(item)

    def _collective(self, row: Dict[str, Any], func: Any, args: Tuple[Any, ...],
                    kwargs: Dict[str, Any]) -> Any:
        tokens = self._launch(row, args)
        if tokens is None:
            return func(*args, **kwargs)
        phase = _C.comm_kind_phase(row["kind"])
        _C.comm_wait_begin(phase)  # the host time of the launch
        try:
            out = func(*args, **kwargs)
        finally:
            _C.comm_wait_end()
        work = out[-1] if isinstance(out, tuple) and out else None
        done = _completion(tokens)
        try:
            work.get_future().add_done_callback(done)
        except Exception:  # noqa: BLE001 -- no future: ends now (a blocking launch)
            done(None)
        if 0 <= row["result_arg"] < len(args):
            self._remember(row["kind"], args[row["result_arg"]])
        return out

    def _wait(self, func: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        tensor = args[0] if args else None
        kind = "other"
        try:
            with self.lock:
                kind = self.results.get(tensor.data_ptr(), "other")
        except Exception:  # noqa: BLE001 -- a fake tensor: its kind is unknown
            pass
        _C.comm_wait_begin(_C.comm_kind_phase(kind))
        try:
            return func(*args, **kwargs)
        finally:
            _C.comm_wait_end()

    def _make_mode(self) -> Any:
        from torch.utils._python_dispatch import TorchDispatchMode

        observer = self

        class _CommDispatchMode(TorchDispatchMode):
            @classmethod
            def ignore_compile_internals(cls) -> bool:
                return True  # torch.compile runs under it; its collectives still come here

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                name = getattr(getattr(func, "_schema", None), "name", "")
                row = _ROWS.get(name)
                if row is not None:
                    return observer._collective(row, func, args, kwargs)
                if name == _WAIT:
                    return observer._wait(func, args, kwargs)
                return func(*args, **kwargs)

        return _CommDispatchMode()


def _completion(tokens: List[Tuple[Any, int]]) -> Callable[[Any], None]:
    def done(_future: Any) -> None:
        for tracker, token in tokens:
            try:
                tracker._comm_end(token, 0)
            except Exception:  # noqa: BLE001 -- a closed tracker: nothing to end
                pass

    return done
