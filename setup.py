"""Build of mfu_tracker's extensions.

* ``mfu_tracker._C``: the C core (``csrc/core``, pure C11) and its CPython
  bindings (``csrc/python``). Needs neither torch nor CUDA to build or import.
* ``mfu_tracker._torch``: the C++ libtorch op observer (``csrc/torch``), added
  by ``_torch_extensions()`` when torch is importable at build time.

Set ``MFU_TRACKER_WERROR=1`` to turn compiler warnings into errors (the
README's commands and CI do).
"""
from __future__ import annotations

import os
import sys
from glob import glob
from pathlib import Path

from setuptools import Extension, setup

ROOT = Path(__file__).parent.resolve()


def _version() -> str:
    for line in (ROOT / "mfu_tracker" / "_version.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    raise RuntimeError("mfu_tracker/_version.py has no __version__")


VERSION = _version()
WERROR = os.environ.get("MFU_TRACKER_WERROR") == "1"


def _c_extension() -> Extension:
    sources = sorted(glob("csrc/core/*.c")) + sorted(glob("csrc/python/*.c"))
    compile_args = ["-std=c11", "-Wall", "-Wextra", "-O2"]
    if WERROR:
        compile_args.append("-Werror")
    return Extension(
        "mfu_tracker._C",
        sources=sources,
        include_dirs=["csrc/core"],
        define_macros=[("MFU_TRACKER_VERSION", f'"{VERSION}"')],
        extra_compile_args=compile_args,
        # dlopen() of the GPU driver lives in the core; glibc < 2.34 needs -ldl.
        libraries=["dl"] if sys.platform.startswith("linux") else [],
    )


def _torch_extensions() -> list[Extension]:
    """The C++ op observer; empty until csrc/torch has sources."""
    return []


setup(
    version=VERSION,
    ext_modules=[_c_extension(), *_torch_extensions()],
)
