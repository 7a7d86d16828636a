"""Exact FLOP counting of real runs: :class:`FlopCounter` and ``profile_flops``.

:mod:`._counter` is the public face; the C++ libtorch observer
(``mfu_tracker._torch``, built at first use by :mod:`._build`) with the
Python kernels of the higher-order operators (:mod:`._hops`), or the
``TorchDispatchMode`` fallback (:mod:`._dispatch`) does the counting, both
through the C core's ``_C.op_count``; :mod:`._module_table` attributes counts
to modules; :mod:`._audit` lists what a count did not cover. Imports only
the foundation (``_C``, ``_validate``, ``_version``, ``_dtypes``).
"""
from ._counter import *  # noqa: F403 -- the names _counter.__all__ lists
from ._counter import __all__  # noqa: F401
