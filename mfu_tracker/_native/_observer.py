"""The C++ observer ``mfu_tracker._torch``, loaded once for the two parts that use it.

The FLOP counter (``flops/counter``) counts ops with its kernels and the
communication observer (``distributed/_comm_observer``) sees collectives with
others; neither imports the other: both ask here (:func:`observer_module`).

Where it comes from, in order:

1. the build made with the package (an in-place or ``--no-build-isolation``
   build, ``make build``): :func:`~mfu_tracker._native.packaged_torch_extension`;
2. the per-user cache, built there at first use if need be (:mod:`._build`;
   ahead of time: ``mfu-tracker build-ext``).

It is refused, and :func:`observer_module` is None with the reason in
:func:`observer_problem`, when it was built against another torch or another
version of the package, when it can neither load nor build, or when
``MFU_TRACKER_DISABLE_TORCH_EXT=1`` (read when this module is imported).
Each user then takes its supported path and warns once in its own words.

Its dispatch keys are checked here too, once, when it loads
(:func:`key_problem`, docs/dispatch_keys.md): a key the running torch does
not have, or has elsewhere in the dispatch order, or on which another library
registered a fallback or kernels first, is not used.

Foundation: imports nothing of the package but ``_version`` and ``_build``.
Importing it does not import torch.
"""
from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any, Optional

from .._version import __version__

__all__ = ["DISABLE_ENV", "DISABLED", "key_problem", "observer_module", "observer_problem"]

DISABLE_ENV = "MFU_TRACKER_DISABLE_TORCH_EXT"
DISABLED = os.environ.get(DISABLE_ENV) == "1"

# The observer's two dispatch keys, by the attribute names of their values in
# the module and torch's names for them: "count" carries the FLOP counter's
# kernels, "comm" the communication observer's (csrc/torch/kernels.cpp,
# comm.cpp).
KEYS = {"count": ("COUNT_KEY", "COUNT_KEY_NAME"), "comm": ("COMM_KEY", "COMM_KEY_NAME")}
# Dispatch keys the observer's keys must sit above: an op is seen as the user
# called it (grad mode, requires_grad, the dtype before autocast).
_ABOVE = ("AutogradOther", "AutogradFunctionality", "AutogradNestedTensor", "Tracer",
          "AutocastCPU", "AutocastCUDA", "AutocastXPU", "AutocastMPS", "AutocastHPU",
          "AutocastPrivateUse1")


class _Loaded:
    def __init__(self) -> None:
        self.done = False
        self.module: Optional[ModuleType] = None
        self.problem: Optional[str] = None
        self.keys: dict[str, Optional[str]] = {}


_lock = threading.Lock()
_state = _Loaded()


def _stale(module: Any, torch_version: str) -> Optional[str]:
    """Why a loaded ``_torch`` must not be used (another torch, another
    package version), or None."""
    if module.torch_version != torch_version:
        return (f"mfu_tracker._torch was built against torch {module.torch_version} "
                f"but torch {torch_version} is installed")
    if module.__version__ != __version__:
        return f"mfu_tracker._torch is a stale build ({module.__version__}, package {__version__})"
    return None


def _load() -> tuple[Optional[ModuleType], Optional[str]]:
    import torch

    from . import _build, packaged_torch_extension

    if DISABLED:
        return None, f"disabled by {DISABLE_ENV}=1"
    module = packaged_torch_extension()
    if module is not None and _stale(module, torch.__version__) is None:
        return module, None
    try:
        module = _build.load(_build.ensure_built(__version__))
    except _build.BuildError as exc:
        return None, f"mfu_tracker._torch could not be built ({exc}). {exc.fix}"
    except ImportError as exc:
        return None, f"mfu_tracker._torch could not be loaded ({exc})"
    problem = _stale(module, torch.__version__)
    if problem is not None:
        return None, problem + ". Rebuild it with `mfu-tracker build-ext --force`"
    return module, None


def check_key(torch: Any, module: Any, which: str) -> Optional[str]:
    """Why the observer's key ``which`` ("count" or "comm") cannot be used in
    this process, or None: the running torch has no key of that name, or has
    it at another value (the module was built against other headers), or
    below autograd / autocast (then ops would not be seen as called); or
    another library registered a fallback or kernels on it before the
    observer did. (That the counting key sits above the communication key
    is checked when the observer compiles: csrc/torch/comm.cpp.)"""
    value_attr, name_attr = KEYS[which]
    value, name = getattr(module, value_attr), getattr(module, name_attr)
    key = torch._C._parse_dispatch_key(name)
    if key is None:
        return f"torch {torch.__version__} has no dispatch key {name}"
    if key.value != value:
        return (f"torch {torch.__version__} has the dispatch key {name} at {key.value}, "
                f"not at {value} where mfu_tracker._torch was built to find it")
    for other in _ABOVE:
        below = torch._C._parse_dispatch_key(other)
        if below is not None and below.value >= value:
            return f"the dispatch key {name} is not above {other} in torch {torch.__version__}"
    if torch._C._dispatch_has_backend_fallback(key):
        return f"another library registered a fallback on the dispatch key {name} first"
    taken = torch._C._dispatch_get_registrations_for_dispatch_key(name)
    if taken:
        shown = ", ".join(sorted(taken)[:3]) + (", ..." if len(taken) > 3 else "")
        return f"another library registered kernels on the dispatch key {name} ({shown})"
    return None


def _ensure() -> _Loaded:
    if not _state.done:
        with _lock:
            if not _state.done:
                module, problem = _load()
                if module is not None:
                    import torch

                    for which in KEYS:
                        try:
                            _state.keys[which] = check_key(torch, module, which)
                        except Exception as exc:  # noqa: BLE001 -- an odd torch: not used
                            _state.keys[which] = f"its dispatch key cannot be checked ({exc})"
                _state.module, _state.problem = module, problem
                _state.done = True
    return _state


def observer_module() -> Optional[ModuleType]:
    """The C++ observer ``mfu_tracker._torch`` (loaded, or built at first
    use), or None when it cannot be used (:func:`observer_problem` says
    why). Imports torch. Thread-safe; loads once per process."""
    return _ensure().module


def observer_problem() -> Optional[str]:
    """Why :func:`observer_module` is None (None when it is not)."""
    return _ensure().problem


def key_problem(which: str) -> Optional[str]:
    """Why the observer's dispatch key ``which`` -- ``"count"`` (the FLOP
    counter's) or ``"comm"`` (the communication observer's) -- must not be
    used, or None; the reason :func:`observer_module` is None when it is."""
    state = _ensure()
    if state.module is None:
        return state.problem
    return state.keys.get(which)
