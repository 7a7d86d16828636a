"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``): the
parser, each command registered by its own module.

    mfu-tracker gpus [--detect]
    mfu-tracker estimate --model llama-3.1-8b --gpu B200 --seq-len 8192 --tokens-per-sec 21111
    mfu-tracker estimate --params 7e9 --gpu "H100 SXM" --num-gpus 8 \\
        --batch-size 8 --seq-len 4096 --step-time 1.2
    mfu-tracker profile --model llama-3.1-8b --batch-size 1 --seq-len 8192
    mfu-tracker report LOG --out report.png
    mfu-tracker goodput LOG [--json OUT]
    mfu-tracker doctor [--device N] [--json FILE] [--quick]
    mfu-tracker build-ext [--force]
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import _build_ext, _estimate, _goodput, _gpus, _profile, report
from ._errors import CliError

# Nothing to import: ``main`` is the ``mfu-tracker`` console script's entry
# point (pyproject.toml), run as a program, not a library function.
__all__: List[str] = []


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import main_from_args

    return main_from_args(args)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mfu-tracker", description="Model FLOPs Utilization tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    _gpus.add_parser(sub)
    _estimate.add_parser(sub)
    _profile.add_parser(sub)
    report.add_parser(sub)
    _goodput.add_parser(sub)

    from .doctor import add_parser as add_doctor_parser

    add_doctor_parser(sub, _cmd_doctor)
    _build_ext.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 usage error)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed its usage line and error (--help: 0)
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        return int(args.func(args))
    except (CliError, ValueError, LookupError, FileNotFoundError) as exc:
        print(f"mfu-tracker {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
