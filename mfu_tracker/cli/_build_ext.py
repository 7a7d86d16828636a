"""``mfu-tracker build-ext``: build the C++ FLOP observer ahead of time (for
read-only home directories and compute nodes without a compiler)."""
from __future__ import annotations

import argparse
import sys
from typing import Any


def run(args: argparse.Namespace) -> int:
    """Build the C++ FLOP observer ahead of time into the per-user cache."""
    import torch

    from .._version import __version__
    from .._native import _build

    print(f"cache: {_build.cache_root()} (set {_build.CACHE_ENV} to move it; "
          "the training jobs need the same value)", file=sys.stdout)
    try:
        path = _build.ensure_built(__version__, force=args.force, retry=True)
    except _build.BuildError as exc:
        print(f"mfu-tracker build-ext: error: {exc}\n{exc.fix}.", file=sys.stderr)
        return 1
    print(f"built for torch {torch.__version__}: {path}", file=sys.stdout)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``build-ext`` on the command line's subparsers."""
    bext = sub.add_parser("build-ext", help="build the C++ FLOP counter now (for read-only home dirs)")
    bext.add_argument("--force", action="store_true", help="rebuild even if a build is cached")
    bext.set_defaults(func=run)
