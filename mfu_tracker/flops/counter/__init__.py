"""Exact FLOP counting of real runs: :class:`FlopCounter` and ``profile_flops``.

:mod:`._counter` is the public face (:class:`FlopCounter`; what each number
means); :mod:`._profile` counts one sample step (``profile_flops``);
:mod:`._formulas` takes formulas for custom ops. The counting itself is a
backend's (:mod:`._backend` picks one): the C++ libtorch observer
(``mfu_tracker._torch``, loaded by the foundation, ``mfu_tracker._native``)
with the Python kernels of the higher-order operators (:mod:`._hops`), or the
``TorchDispatchMode`` fallback (:mod:`._dispatch`, reading calls through
:mod:`._args` and sites through :mod:`._sites`), both through the C core's
``_C.op_count``. :mod:`._totals` adds a counter's blocks up,
:mod:`._module_table` attributes counts to modules, :mod:`._audit` lists what
a count did not cover, :mod:`._graphs` warns about CUDA graph replay and
:mod:`._compiled` is torch.compile's side (the recomputed calls of a compiled
backward, frames compile must run eagerly). Imports only the foundation.
"""
from ._audit import UncountedOp
from ._backend import counter_backend
from ._counter import FlopCounter, hold_counting_key
from ._formulas import register_flop_formula, unregister_flop_formula
from ._profile import FlopProfile, profile_flops, profile_flops_with_hfu
from ._totals import ModuleFlops

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
