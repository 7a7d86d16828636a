"""Exact FLOP counting of real runs: :class:`FlopCounter` and ``profile_flops``.

:mod:`._counter` is the public face; the C++ libtorch observer
(``mfu_tracker._torch``, built at first use by :mod:`._build`) or the
``TorchDispatchMode`` fallback (:mod:`._dispatch`) does the counting, both
through the C core's ``_C.op_count``; :mod:`._module_table` attributes counts
to modules; :mod:`._compiled` is torch.compile's side (the recomputed calls of
a compiled backward, frames compile must run eagerly).
"""
from ._counter import (
    FlopCounter,
    FlopProfile,
    ModuleFlops,
    counter_backend,
    profile_flops,
    profile_flops_with_hfu,
    register_flop_formula,
    unregister_flop_formula,
)

__all__ = [
    "FlopCounter",
    "FlopProfile",
    "ModuleFlops",
    "profile_flops",
    "profile_flops_with_hfu",
    "register_flop_formula",
    "unregister_flop_formula",
    "counter_backend",
]
