"""mfu_tracker: Model FLOPs Utilization for PyTorch training runs, with a C core.

The public API is a superset of the pure-Python ``mfu-tracker`` package's:
``track``, ``compute_mfu``, ``compute_mbu``, ``profile_flops``,
``flash_attn_flops``, ``param_bytes``, ``get_gpu_spec``, ``GPUSpec``,
``UtilizationResult`` -- plus the peak table lookup, analytic transformer
FLOPs and a measured peak for devices no datasheet covers.

Every name a public submodule lists in its ``__all__`` is exported here,
except the optional integrations (``mfu_tracker.integrations``: importing
them imports their framework).

Importing the package loads only torch-free modules; torch is imported when a
function needs it.

This module is the façade only: it re-exports, and no module of the package
imports from it (the layers reach the C core through ``mfu_tracker._native``).
"""
import importlib
import os as _os
from typing import Any

from ._checkout import installed_copy as _installed_copy, load_in_place as _load_in_place

# A checkout's unbuilt sources in front of the installed package (python run in the
# checkout's root): the installed copy is loaded in their place (_checkout.py); the
# rest of this file then binds names of the installed modules, unused.
_INSTALLED = _installed_copy(_os.path.dirname(_os.path.abspath(__file__)))
if _INSTALLED is not None:
    _load_in_place(__name__, _INSTALLED)

from ._install import check_single_install  # noqa: E402

check_single_install()  # this project and the peer in one directory: ImportError with the fix

from ._version import __version__  # noqa: E402
from . import _aliases  # noqa: E402
from . import agent as _agent  # noqa: E402
from . import distributed as _distributed  # noqa: E402
from . import flops as _flops  # noqa: E402
from . import peaks as _peaks  # noqa: E402
from . import timing as _timing  # noqa: E402
from . import tracker as _tracker  # noqa: E402
from .flops import counter as _counter  # noqa: E402
from .flops import presets as _presets  # noqa: E402
from .agent import *  # noqa: E402, F403
from .distributed import *  # noqa: E402, F403
from .flops import *  # noqa: E402, F403
from .flops.counter import *  # noqa: E402, F403
from .flops.presets import *  # noqa: E402, F403
from .peaks import *  # noqa: E402, F403
from .timing import *  # noqa: E402, F403
from .tracker import *  # noqa: E402, F403

# mfu_tracker.gpu, .counter, .utilization, .optim, .presets, .step: the
# compatibility paths, each a second name for the module that owns the code.
_aliases.install(__name__)

#: Everything the public submodules list in their ``__all__`` (so the two can
#: never disagree), and the lazily imported optimizer wrapper.
__all__ = [
    "__version__",
    "MFUOptimizerWrapper",
    *_timing.__all__,
    *_agent.__all__,
    *_tracker.__all__,
    *_counter.__all__,
    *_distributed.__all__,
    *_flops.__all__,
    *_peaks.__all__,
    *_presets.__all__,
]


def __getattr__(name: str) -> Any:
    # MFUOptimizerWrapper subclasses torch.optim.Optimizer: importing it
    # imports torch, which `import mfu_tracker` must not do.
    if name == "MFUOptimizerWrapper":
        from .integrations.optim import MFUOptimizerWrapper

        return MFUOptimizerWrapper
    if name in _aliases.ALIASES:  # mfu_tracker.gpu etc. without importing them first
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mfu_tracker' has no attribute {name!r}")
