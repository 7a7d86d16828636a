"""The compiled extensions, loaded once and checked: the foundation every layer imports.

``_C`` is the C core's CPython extension (``csrc/core`` + ``csrc/python``),
built with the package and needing no torch. ``_torch``, the C++ op observer,
needs torch and may be built with the package or at first use. Every module of the package
reaches it here (``from .._native import _C``), never through the package
root, so importing a layer never imports the package's façade.

A ``_C`` left over from another version of the package (an in-place build
older than the sources) is refused at import with the command that fixes it;
a source tree without any build says so, with the same commands.

Foundation: imports nothing of the package but ``_version``.
"""
import importlib
import os
from types import ModuleType
from typing import Optional

from .._version import __version__

try:
    import mfu_tracker._C as _C
except ModuleNotFoundError as _missing:
    if _missing.name != "mfu_tracker._C":
        raise
    _tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    raise ImportError(
        f"mfu_tracker: the extension is not built: mfu_tracker._C (the C core) is missing from "
        f"{os.path.join(_tree, 'mfu_tracker')} (a source tree without a build). In the "
        f"checkout, run `pip install --no-build-isolation -e .` (or `make build`), or install "
        f"the package: `pip install {_tree}`"
    ) from None

if getattr(_C, "__version__", None) != __version__:
    raise ImportError(
        f"mfu_tracker {__version__} found a stale C extension "
        f"(mfu_tracker._C {getattr(_C, '__version__', '?')}); rebuild it with "
        "`pip install --no-build-isolation -e .` or `make build`"
    )

__all__ = ["_C", "packaged_torch_extension"]


def packaged_torch_extension() -> Optional[ModuleType]:
    """The C++ observer ``mfu_tracker._torch`` built with the package (an
    in-place or ``--no-build-isolation`` build), or None where none was:
    a wheel carries only its sources, built at first use (``_build``)."""
    try:
        return importlib.import_module("mfu_tracker._torch")
    except ImportError:
        return None
