"""mfu_tracker: Model FLOPs Utilization for PyTorch training runs, with a C core."""
from ._version import __version__
from . import _C

if getattr(_C, "__version__", None) != __version__:
    raise ImportError(
        f"mfu_tracker {__version__} found a stale C extension "
        f"(mfu_tracker._C {getattr(_C, '__version__', '?')}); rebuild it with "
        "`pip install --no-build-isolation -e .` or `make build`"
    )

__all__ = ["__version__"]
