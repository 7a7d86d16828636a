"""The numerator: how many FLOPs a step does.

Owns two ways to the same numbers, both applying the C core's formulas
(``csrc/core/ops/flops_*.c``, ``ops.c``):

* analytic (:mod:`._analytic`, this package's public functions): transformer
  FLOPs from a HuggingFace config (:mod:`._hf_config`), sequence lengths of a
  packed batch (:mod:`._sequences`) and full-size presets (:mod:`.presets`);
* counted (:mod:`.counter`): the exact per-op count of a real run, with its
  module table, its dispatch fallback and the first-use build of its C++
  observer;
* generation (:mod:`._generation`, analytic; :mod:`._generation_count`, the
  exact count of a ``generate()``): prefill and decode FLOPs, decode bytes.

Layer 2 (peaks -> flops -> timing -> device -> breakdown -> distributed -> job
-> tracker -> integrations -> agent -> cli). May import: the foundation (``_C``,
``_validate``, ``_dtypes``, ``_version``, ``_install``) only; ``flops.counter``
may import ``flops``.
"""
# First: with the pure-Python peer's files written over ours, its __init__.py
# starts with `from .flops import ...`, which reaches this package (see _install).
from .._install import check_single_install

check_single_install()

from ._analytic import *  # noqa: E402, F403 -- the names _analytic.__all__ lists
from ._analytic import __all__ as _analytic_all  # noqa: E402
from ._generation import *  # noqa: E402, F403 -- generation_flops, GenerationFlops
from ._generation import __all__ as _generation_all  # noqa: E402
from ._generation_count import *  # noqa: E402, F403 -- GenerationCounter, GenerationCount
from ._generation_count import __all__ as _count_all  # noqa: E402

__all__ = [*_analytic_all, *_generation_all, *_count_all]
