"""A source checkout in front of the installed package.

``python`` started in a checkout's root puts the working directory first on
``sys.path``, so ``import mfu_tracker`` finds ``./mfu_tracker``: the
sources, without the compiled core unless they were built in place. After
the README's ``pip install .`` the built copy is in site-packages, behind it.
:func:`installed_copy` finds that copy, and the package root loads it in
place of the sources (:func:`load_in_place`), so the quick start runs where
the README says to run it (docs/install.md). A tree built in place (``make
build``, an editable install) is used as it is.

Foundation: imports nothing of the package.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Optional

__all__ = ["installed_copy", "load_in_place"]


def is_built(package_dir: str) -> bool:
    """Whether ``package_dir`` holds the compiled core (``_C.*.so``/``.pyd``)."""
    try:
        names = os.listdir(package_dir)
    except OSError:
        return False
    return any(n.startswith("_C.") and n.endswith((".so", ".pyd")) for n in names)


def installed_copy(package_dir: str) -> Optional[str]:
    """The directory of another, built ``mfu_tracker`` on ``sys.path`` when
    ``package_dir`` (this package's) is a source tree without a build; None
    when this one is built or no other copy is."""
    if is_built(package_dir):
        return None
    here = os.path.realpath(package_dir)
    for entry in sys.path:
        candidate = os.path.join(entry or os.getcwd(), "mfu_tracker")
        if os.path.realpath(candidate) == here:
            continue
        if os.path.isfile(os.path.join(candidate, "__init__.py")) and is_built(candidate):
            return candidate
    return None


def load_in_place(name: str, directory: str) -> None:
    """Import the package ``name`` from ``directory`` and make it
    ``sys.modules[name]``: the import in progress returns it (the import
    system reads the module back from ``sys.modules`` when a package's
    ``__init__`` ends), and every relative import after this call resolves
    through its ``__path__``."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(directory, "__init__.py"), submodule_search_locations=[directory])
    if spec is None or spec.loader is None:
        raise ImportError(f"mfu_tracker: cannot load the installed copy in {directory}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
