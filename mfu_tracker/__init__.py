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
function needs it. The public names are bound at the first look at one
(``mfu_tracker.Tracker``, ``from mfu_tracker import track``, ``__all__``,
``dir()``), so a ``mfu-tracker`` command that reads a log imports only what
it uses.

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
# the C core, loaded here whatever is used later: a source tree without a build
# or a stale build is refused at `import mfu_tracker`, with the command that fixes it
from . import _native  # noqa: E402, F401

# mfu_tracker.gpu, .counter, .utilization, .optim, .presets, .step: the
# compatibility paths, each a second name for the module that owns the code.
_aliases.install(__name__)

#: The public submodules, in the order their names are bound here (a name two
#: of them export is the later one's). Imported at the first look at a public
#: name, not with the package: ``mfu-tracker`` commands import only what they
#: use (a log reader starts in 0.18 s of CPU instead of 0.25 s: benchmarks/README.md).
_PUBLIC = ("agent", "distributed", "flops", "flops.counter", "flops.presets", "peaks", "timing",
           "tracker")
#: Whose ``__all__`` makes up the package's, in this order.
_ALL_FROM = ("timing", "agent", "tracker", "flops.counter", "distributed", "flops", "peaks",
             "flops.presets")
_loaded = False


def _load() -> None:
    """Import the public submodules and bind every name their ``__all__``
    lists here, and ``__all__`` itself (once)."""
    global _loaded
    if _loaded:
        return
    here = globals()
    modules = {name: importlib.import_module(f".{name}", __name__) for name in _PUBLIC}
    for module in modules.values():
        for name in module.__all__:
            here[name] = getattr(module, name)
    here["__all__"] = ["__version__", "MFUOptimizerWrapper",
                       *(name for source in _ALL_FROM for name in modules[source].__all__)]
    _loaded = True


def __getattr__(name: str) -> Any:
    # MFUOptimizerWrapper subclasses torch.optim.Optimizer: importing it
    # imports torch, which `import mfu_tracker` must not do.
    if name == "MFUOptimizerWrapper":
        from .integrations.optim import MFUOptimizerWrapper

        return MFUOptimizerWrapper
    if name in _aliases.ALIASES:  # mfu_tracker.gpu etc. without importing them first
        return importlib.import_module(f".{name}", __name__)
    if name == "__all__" or not name.startswith("__"):
        _load()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module 'mfu_tracker' has no attribute {name!r}")


def __dir__() -> list:
    _load()
    return sorted(set(globals()) | set(globals()["__all__"]))   # and MFUOptimizerWrapper
