"""``mfu-tracker doctor``: check a machine, and prove the GPU path where a GPU exists.

    mfu-tracker doctor [--device N] [--json FILE] [--quick] [--only SECTION,...]

Runs the checks of :mod:`mfu_tracker.cli.doctor._checks` in six sections --
environment, device, timing, peak, counting, end to end -- and prints one
table row per check: PASS / WARN / FAIL / SKIP with the figure it measured,
then a line of detail for each check that did not pass. ``--json FILE``
writes the same rows (and their raw figures) as JSON. The exit status is 0
when no check FAILs, 1 when one does (2: a usage error).

``--quick`` runs each check on smaller work (a tiny GPT-2 instead of the
124M one, fewer GEMM iterations); the test suite runs it against the fake
driver. Where torch sees no GPU and the core's driver is not the fake, the
GPU checks are SKIPped with the reason and the CPU parts still run.
"""
from __future__ import annotations

import json
import os
import platform as _py_platform
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from ..._version import __version__
from ._checks import Doctor
from ._report import SECTIONS, Check, Report


def _run_section(report: Report, section: str, run: Callable[[], None]) -> None:
    """Run one section; an unexpected exception becomes one FAIL row naming it
    (the other sections still run)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the rows say what matters
            run()
    except Exception as exc:  # the doctor reports, it does not crash
        where = traceback.extract_tb(exc.__traceback__)[-1]
        report.add(section, "error", "FAIL", f"{type(exc).__name__}: {exc}",
                   f"unexpected error at {where.filename}:{where.lineno}")


def run(device: int = 0, json_path: Optional[str] = None, quick: bool = False,
        only: Optional[Sequence[str]] = None, out: Any = None) -> int:
    """Run the doctor; print the table to ``out`` (default stdout); the exit status.
    Bad arguments (``--only``, ``--json``) are ValueErrors before any check runs."""
    out = sys.stdout if out is None else out
    sections = list(SECTIONS if not only else only)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"--only: unknown section(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(SECTIONS)}")
    if json_path:
        check_json_path(json_path)
    started = time.perf_counter()
    report = Report()
    doctor = Doctor(report, device=device, quick=quick)
    timings: Dict[str, float] = {}
    for section in SECTIONS:
        if section in sections:
            begin = time.perf_counter()
            _run_section(report, section, getattr(doctor, section))
            timings[section] = round(time.perf_counter() - begin, 3)
    elapsed = time.perf_counter() - started
    header = {
        "mfu_tracker": __version__,
        "python": _py_platform.python_version(),
        "platform": doctor.platform_kind,
        "device": device,
        "quick": quick,
        "sections": sections,
        "elapsed_s": round(elapsed, 3),
        "section_s": timings,
    }
    print(f"mfu-tracker doctor {__version__}: platform {doctor.platform_kind}, device {device}"
          f"{', quick' if quick else ''} ({elapsed:.1f} s)", file=out)
    print(report.table(), file=out)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(report.to_json(header), fh, indent=2, default=str)
            fh.write("\n")
    return 1 if report.failed() else 0


def check_json_path(json_path: str) -> None:
    """``--json FILE`` must be writable: checked before the checks run (minutes
    on a GPU), not when the report is written at the end."""
    path = Path(json_path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ValueError(f"--json {json_path}: is a directory; give a file name")
    if not folder.is_dir():
        raise ValueError(f"--json {json_path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ValueError(f"--json {json_path}: not writable")


def parse_only(text: Optional[str]) -> Optional[List[str]]:
    """``--only a,b`` -> ["a", "b"] (None when not given)."""
    if text is None:
        return None
    return [part.strip().replace("-", "_") for part in text.split(",") if part.strip()]


def add_parser(sub: Any, func: Callable[..., int]) -> None:
    """Register ``doctor`` on the CLI's subparsers; ``func`` dispatches."""
    doc = sub.add_parser("doctor", help="check this machine: driver, device, timing, peak, "
                         "counting, end to end")
    doc.add_argument("--device", type=int, default=0, help="device index (default 0)")
    doc.add_argument("--json", metavar="FILE", help="also write the checks as JSON to FILE")
    doc.add_argument("--quick", action="store_true",
                     help="smaller work per check (a tiny GPT-2; seconds, not minutes)")
    doc.add_argument("--only", metavar="SECTIONS",
                     help="comma-separated sections to run: " + ",".join(SECTIONS))
    doc.set_defaults(func=func)


def main_from_args(args: Any) -> int:
    if args.device < 0:
        raise ValueError(f"--device must be >= 0, got {args.device}")
    return run(device=args.device, json_path=args.json, quick=args.quick,
               only=parse_only(args.only))


def statuses(checks: Iterable[Check]) -> Dict[str, str]:
    """{"section/name": status} (tests, scripts)."""
    return {f"{c.section}/{c.name}": c.status for c in checks}
