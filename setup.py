"""Build of mfu_tracker's extensions.

* ``mfu_tracker._C``: the C core (``csrc/core``, pure C11) and its CPython
  bindings (``csrc/python``). Needs neither torch nor CUDA to build or import.
* ``mfu_tracker._torch``: the C++ libtorch op observer (``csrc/torch``), added
  by ``_torch_extensions()`` when torch is importable at build time -- for a
  checkout's own builds only (``build_ext --inplace``, an editable install).
  A wheel never carries it (``BuildExtForCheckout``, ``BuildPyWithSources``):
  a binary built against one torch is wrong for another, so an installed
  package compiles it at first use against the torch the user has
  (``mfu_tracker/_native/_build.py``), from the sources the wheel ships.

Set ``MFU_TRACKER_WERROR=1`` to turn compiler warnings into errors (the
README's commands and CI do).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent.resolve()


def _load_build_module():
    """mfu_tracker/_native/_build.py, by path (no package import): the observer's
    flags and the sources the wheel ships for its first-use build."""
    spec = importlib.util.spec_from_file_location("_mfu_build", ROOT / "mfu_tracker" / "_native" / "_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_BUILD = _load_build_module()


def _version() -> str:
    for line in (ROOT / "mfu_tracker" / "_version.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise RuntimeError("mfu_tracker/_version.py has no __version__")


VERSION = _version()
WERROR = os.environ.get("MFU_TRACKER_WERROR") == "1"


def _c_extension() -> Extension:
    sources = sorted(glob("csrc/core/*/*.c")) + sorted(glob("csrc/python/*.c"))
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-O2"]
    if WERROR:
        compile_args.append("-Werror")
    return Extension(
        "mfu_tracker._C",
        sources=sources,
        include_dirs=[str(d) for d in _BUILD.core_include_dirs(Path("csrc"))],
        define_macros=[("MFU_TRACKER_VERSION", f'"{VERSION}"')],
        extra_compile_args=compile_args,
        # dlopen() of the GPU driver lives in the core; glibc < 2.34 needs -ldl.
        libraries=["dl"] if sys.platform.startswith("linux") else [],
    )


def _torch_extensions() -> list[Extension]:
    """The C++ op observer ``mfu_tracker._torch`` (csrc/torch + the C core's
    FLOP formulas), built against the torch importable at build time.

    Without torch (or without csrc/torch sources) it returns [] with a note:
    ``_C`` still builds, and FLOP counting falls back to a TorchDispatchMode
    path until the first counter builds it (mfu_tracker/_native/_build.py) from the
    sources ``BuildPyWithSources`` ships. ``pip install --no-build-isolation``
    builds it here against the installed torch. ``MFU_TRACKER_NO_TORCH_EXT=1``
    skips it on purpose.
    """
    sources = sorted(glob("csrc/torch/*.cpp"))
    if not sources or os.environ.get("MFU_TRACKER_NO_TORCH_EXT") == "1":
        return []
    try:
        import torch
        from torch.utils.cpp_extension import CppExtension
    except Exception as exc:  # noqa: BLE001 - any import failure means "no torch"
        print(f"note: mfu_tracker._torch not built now (torch is not importable: {exc}); "
              "the first FlopCounter builds it (or run `mfu-tracker build-ext`).", file=sys.stderr)
        return []
    torch_lib = str(Path(torch.__file__).parent / "lib")
    # The C core's formulas are not compiled in again: _torch imports them
    # from _C as a function table (a PyCapsule; see csrc/core/ops/flops.h).
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    return [
        CppExtension(
            "mfu_tracker._torch",
            sources=sources,
            include_dirs=[*(str(d) for d in _BUILD.core_include_dirs(Path("csrc"))), "csrc/torch"],
            define_macros=_BUILD.define_macros(VERSION, torch.__version__, abi),
            extra_compile_args=_BUILD.compile_args(WERROR),
            runtime_library_dirs=[torch_lib] if sys.platform.startswith("linux") else [],
        )
    ]


TORCH_EXTENSION = "mfu_tracker._torch"


def _remove_torch_binaries(build_lib: str) -> None:
    """Delete any ``_torch`` binary under ``build_lib``/mfu_tracker: one left by
    an earlier build of the checkout would otherwise go into the wheel."""
    for stale in (Path(build_lib) / "mfu_tracker").glob("_torch*"):
        if stale.is_file():
            stale.unlink()


class BuildExtForCheckout(build_ext):
    """Builds ``_torch`` only in place (``build_ext --inplace``, ``make build``)
    or for an editable install; every other build (a wheel, a plain ``pip
    install``) leaves it out and removes a stale one from the build tree."""

    def run(self) -> None:
        if not (self.inplace or self.editable_mode):
            self.extensions = [e for e in self.extensions if e.name != TORCH_EXTENSION]
            _remove_torch_binaries(self.build_lib)
        super().run()


class BuildPyWithSources(build_py):
    """Also copies the observer's sources (``_build.SOURCE_PATTERNS`` under
    csrc/) into the package as ``mfu_tracker/_csrc``, for the first-use build,
    and never a ``_torch`` binary of the checkout."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            _remove_torch_binaries(self.build_lib)
        target = Path(self.build_lib) / "mfu_tracker" / "_csrc"
        for pattern in _BUILD.SOURCE_PATTERNS:
            for src in sorted((ROOT / "csrc").glob(pattern)):
                dest = target / src.relative_to(ROOT / "csrc")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)


setup(
    version=VERSION,
    ext_modules=[_c_extension(), *_torch_extensions()],
    cmdclass={"build_py": BuildPyWithSources, "build_ext": BuildExtForCheckout},
)
