"""The ``mfu-tracker`` command line (also ``python -m mfu_tracker``): the
parser, each command registered by its own module.

    mfu-tracker gpus [--detect]
    mfu-tracker estimate --model llama-3.1-8b --gpu B200 --seq-len 8192 --tokens-per-sec 21111
    mfu-tracker estimate --params 7e9 --gpu "H100 SXM" --num-gpus 8 \\
        --batch-size 8 --seq-len 4096 --step-time 1.2
    mfu-tracker profile --model llama-3.1-8b --batch-size 1 --seq-len 8192
    mfu-tracker explain --model qwen2.5-7b --seq-len 4096 --convention verl --their-mfu 52
    mfu-tracker report LOG --out report.png
    mfu-tracker report A.jsonl B.jsonl --out compare.png
    mfu-tracker advise LOG
    mfu-tracker goodput LOG [--json OUT]
    mfu-tracker engine http://host:8000/metrics --gpu 'H100 SXM' [--interval 30]
    mfu-tracker view LOG [--port N] [--budget-tokens N | --budget-steps N]
    mfu-tracker passport LOG [--out CARD.md] [--json OUT]
    mfu-tracker doctor [--device N] [--json FILE] [--quick]
    mfu-tracker build-ext [--force]
    mfu-tracker run [--log PATH] [--peak-tflops T] ... -- python train.py [its arguments]
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import List, Optional

from . import (_advise, _build_ext, _engine, _estimate, _explain, _goodput, _gpus, _passport,
               _profile, _run, report, view)
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
    _explain.add_parser(sub)
    report.add_parser(sub)
    _advise.add_parser(sub)
    _goodput.add_parser(sub)
    _engine.add_parser(sub)
    view.add_parser(sub)
    _passport.add_parser(sub)

    from .doctor import add_parser as add_doctor_parser

    add_doctor_parser(sub, _cmd_doctor)
    _build_ext.add_parser(sub)
    _run.add_parser(sub)
    return parser


#: A flag's value that is a negative number ("-7e9", "-1.5", "-3"): argparse
#: reads "-7e9" (an exponent) as a flag of its own and says only "expected
#: one argument"; joined to its flag ("--params=-7e9") it reaches the flag's
#: check, whose error names the value.
_NEGATIVE_NUMBER = re.compile(r"-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _join_negative_values(argv: List[str]) -> List[str]:
    """``--flag -7e9`` as ``--flag=-7e9`` (see :data:`_NEGATIVE_NUMBER`); the
    words after ``--`` (``run``'s command) are left as they are."""
    out: List[str] = []
    cut = argv.index("--") if "--" in argv else len(argv)
    for arg in argv[:cut]:
        if (out and _NEGATIVE_NUMBER.fullmatch(arg) and out[-1].startswith("--")
                and "=" not in out[-1]):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out + argv[cut:]


def _quiet_broken_pipe() -> int:
    """The reader of our output went away (``mfu-tracker gpus | head -1``):
    not an error. Later writes (the interpreter's flush at exit) go nowhere,
    so no traceback follows."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 usage error)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(_join_negative_values(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_:  # argparse printed its usage line and error (--help: 0)
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        status = int(args.func(args))
        sys.stdout.flush()                  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except (CliError, ValueError, LookupError, FileNotFoundError) as exc:
        print(f"mfu-tracker {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
