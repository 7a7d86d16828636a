"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``): the
parser, each command registered by its own module.

    mfu-tracker gpus [--detect]
    mfu-tracker estimate --model llama-3.1-8b --gpu B200 --seq-len 8192 --tokens-per-sec 21111
    mfu-tracker estimate --params 7e9 --gpu "H100 SXM" --num-gpus 8 \\
        --batch-size 8 --seq-len 4096 --step-time 1.2
    mfu-tracker profile --model llama-3.1-8b --batch-size 1 --seq-len 8192
    mfu-tracker report LOG --out report.png
    mfu-tracker report A.jsonl B.jsonl --out compare.png
    mfu-tracker advise LOG
    mfu-tracker goodput LOG [--json OUT]
    mfu-tracker doctor [--device N] [--json FILE] [--quick]
    mfu-tracker build-ext [--force]
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import _advise, _build_ext, _estimate, _goodput, _gpus, _profile
from ._errors import CliError

# Nothing to import: ``main`` is the ``mfu-tracker`` console script's entry
# point (pyproject.toml), run as a program, not a library function.
__all__: List[str] = []


def _cmd_report(args: argparse.Namespace) -> int:
    if len(args.paths) > 2:
        raise CliError(f"give one log, or two to compare (A B); got {len(args.paths)}")
    if len(args.paths) == 2:   # two runs side by side (the kernel breakdown's comparison)
        from ._report_compare import run as compare

        print(compare(args.paths, args.out, prefix=args.prefix, title=args.title or "",
                      which=args.run))
    else:
        from ._report import run

        print(run(args.paths[0], args.out, prefix=args.prefix, title=args.title or "",
                  which=args.run, epilogue=_advise.lines_for_report))
    print(f"wrote {args.out}")
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import main_from_args

    return main_from_args(args)


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mfu-tracker", description="Model FLOPs Utilization tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    _gpus.add_parser(sub)
    _estimate.add_parser(sub)
    _profile.add_parser(sub)
    rep = sub.add_parser("report", help="draw MFU, the waterfall and per-rank MFU from a metrics "
                         "log (JSONL from log_path=, or a TensorBoard log directory)")
    rep.add_argument("paths", nargs="+", metavar="path",
                     help="a JSONL metrics log, a TensorBoard log directory or event file; "
                          "two logs (A B) draw the two runs side by side")
    rep.add_argument("--out", required=True, help="the picture: FILE.png, or FILE.html (PNG + table)")
    rep.add_argument("--prefix", default=None,
                     help="metric key prefix (default: found from the <prefix>/mfu key)")
    rep.add_argument("--title", default=None, help="the picture's title")
    rep.add_argument("--run", default="last",
                     help="which run of the log to draw: the last (default), N (1 = the first), "
                          "or all (each run its own line, its start marked); with two logs, "
                          "the run of each")
    rep.set_defaults(func=_cmd_report)
    _advise.add_parser(sub)

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
