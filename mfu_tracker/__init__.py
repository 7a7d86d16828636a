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
"""
from typing import Any

from ._install import check_single_install

check_single_install()  # this project and the peer in one directory: ImportError with the fix

from . import _C  # noqa: E402
from ._version import __version__  # noqa: E402

if getattr(_C, "__version__", None) != __version__:
    raise ImportError(
        f"mfu_tracker {__version__} found a stale C extension "
        f"(mfu_tracker._C {getattr(_C, '__version__', '?')}); rebuild it with "
        "`pip install --no-build-isolation -e .` or `make build`"
    )

from . import counter, distributed, flops, gpu, presets, tracker, utilization  # noqa: E402
# Each public name is listed once, in its module's __all__.
from .counter import *  # noqa: E402, F403
from .distributed import *  # noqa: E402, F403
from .flops import *  # noqa: E402, F403
from .gpu import *  # noqa: E402, F403
from .presets import *  # noqa: E402, F403
from .tracker import *  # noqa: E402, F403
from .utilization import *  # noqa: E402, F403

#: Everything the public submodules list in their ``__all__`` (so the two can
#: never disagree), and the lazily imported optimizer wrapper.
__all__ = [
    "__version__",
    "MFUOptimizerWrapper",
    *utilization.__all__,
    *tracker.__all__,
    *counter.__all__,
    *distributed.__all__,
    *flops.__all__,
    *gpu.__all__,
    *presets.__all__,
]


def __getattr__(name: str) -> Any:
    # MFUOptimizerWrapper subclasses torch.optim.Optimizer: importing it
    # imports torch, which `import mfu_tracker` must not do.
    if name == "MFUOptimizerWrapper":
        from .optim import MFUOptimizerWrapper

        return MFUOptimizerWrapper
    raise AttributeError(f"module 'mfu_tracker' has no attribute {name!r}")
