"""The package's compatibility import paths, declared in one table.

Each alias is a second name for a module that lives elsewhere in the house:
``import mfu_tracker.gpu`` gives the very module object
``mfu_tracker.peaks`` is, so every object has one identity whichever path a
user imports it by. These are the paths the pure-Python ``mfu-tracker``
package and earlier releases documented; new code imports from the package
root (``from mfu_tracker import ...``) or from the module that owns a name.

An alias resolves when it is first imported, not with the package: ``optim``
imports torch, which ``import mfu_tracker`` must not.

Foundation: imports nothing of the package; the targets are imported only
when their alias is.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Mapping, Optional, Sequence

#: alias (under ``mfu_tracker.``) -> the module it names (under ``mfu_tracker.``)
ALIASES: Mapping[str, str] = {
    "gpu": "peaks",                     # the peak table's front
    "counter": "flops.counter",         # the exact FLOP counter
    "utilization": "timing",            # track() and the one-shot arithmetic
    "optim": "integrations.optim",      # MFUOptimizerWrapper (imports torch)
    "presets": "flops.presets",         # the full-size model configurations
    "step": "tracker",                  # Tracker, the examples' old path
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # The import system keeps the target's own __name__ and __spec__ (it
        # fills only what a module lacks) and files it under the alias too.
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        pass  # the target ran when it was imported


class _AliasFinder(importlib.abc.MetaPathFinder):
    def __init__(self, package: str) -> None:
        self.targets = {f"{package}.{alias}": f"{package}.{target}"
                        for alias, target in ALIASES.items()}

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        real = self.targets.get(fullname)
        if real is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))


def install(package: str) -> None:
    """Make ``package.<alias>`` importable for every row of :data:`ALIASES` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        # first: a stale gpu.py etc. left by an older install must not shadow the table
        sys.meta_path.insert(0, _AliasFinder(package))
