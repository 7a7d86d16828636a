"""``mfu-tracker run [options] -- COMMAND``: measure an unmodified training
script (``python train.py``, ``torchrun ...``, ``accelerate launch ...``).

The flags become the run's configuration (:class:`~mfu_tracker.agent._config.RunConfig`);
:mod:`._launch` runs the command with the agent in each of its Python
processes and returns its exit status. How steps, FLOPs, tokens, the dtype
and the peak are found, and what each flag replaces: docs/run.md.
"""
from __future__ import annotations

import argparse
import os
import re
import secrets
import time
from typing import Any, List, Optional

from ..agent._config import RunConfig
from ..job._records import job_name
from .view import add_budget_flags
from ._errors import CliError
from ._flag_types import int_at_least, port, positive_float
from ._beside import Beside, Page, write_passport
from ._launch import child_ended, command_line, exit_status, note, run_child

__all__: List[str] = []

#: The default log: under the working directory, one folder per job.
DEFAULT_LOG_DIR = "mfu-run"


def _dtype(text: str) -> str:
    from .._dtypes import normalize_dtype

    try:
        return normalize_dtype(text, "--dtype")
    except (TypeError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None


_dtype.__name__ = "dtype"   # argparse names the type in its messages


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run", help="measure an unmodified training script: mfu-tracker run -- python train.py",
        description="Run COMMAND with the agent in every Python process it starts: steps at "
                    "the optimizer's step, FLOPs counted, tokens from the model's inputs, the "
                    "peak looked up; the same metrics log as a Tracker (docs/run.md).")
    p.add_argument("--log", default=None, metavar="PATH",
                   help=f"the metrics log (default: ./{DEFAULT_LOG_DIR}/<job>/metrics.jsonl)")
    p.add_argument("--job", default=None, help="the job id of the run records (default: "
                   "MFU_TRACKER_JOB, TORCHELASTIC_RUN_ID or SLURM_JOB_ID, else a new one)")
    p.add_argument("--flops-per-step", type=positive_float, default=None, metavar="FLOPS",
                   help="model FLOPs per optimizer step (default: counted every step)")
    p.add_argument("--tokens-per-step", type=positive_float, default=None, metavar="N",
                   help="tokens per optimizer step (default: from the model's inputs)")
    p.add_argument("--dtype", type=_dtype, default=None,
                   help="the peak's dtype (default: autocast's, else the parameters')")
    p.add_argument("--peak-tflops", type=positive_float, default=None, metavar="TFLOPS",
                   help="per-device peak in TFLOP/s (default: the datasheet table)")
    p.add_argument("--measure-peak", action="store_true",
                   help="measure the peak with a GEMM when training starts (a device with no "
                        "datasheet peak, a CPU); it runs in the training process")
    p.add_argument("--log-every", type=int_at_least(1), default=10, metavar="STEPS",
                   help="optimizer steps per metrics line, and the window (default 10)")
    p.add_argument("--warmup", type=int_at_least(0), default=1, metavar="STEPS",
                   help="first optimizer steps left out of the figures (default 1)")
    p.add_argument("--count-every", type=int_at_least(0), default=1, metavar="STEPS",
                   help="count FLOPs on every N-th step, the others scaled by tokens (default 1)")
    p.add_argument("--no-view", dest="view", action="store_false",
                   help="serve no live page while the command runs (default: served on "
                        "127.0.0.1, its address printed)")
    p.add_argument("--port", type=port, default=0, metavar="N",
                   help="the live page's port (default: a free one)")
    add_budget_flags(p)
    p.add_argument("--no-passport", dest="passport", action="store_false",
                   help="write no passport beside the log at the end (default: passport.md "
                        "and passport.json)")
    # not dest "command": that is the subcommand's name, which an error line prints
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the command to measure, after --")
    p.set_defaults(func=main_from_args)


def job_id(given: Optional[str]) -> str:
    """The run's job: ``--job``, else the scheduler's (``job_name``'s
    variables), else a new one named by the date and time."""
    return job_name(f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}", given)


def default_log(job: str) -> str:
    """``./mfu-run/<job>/metrics.jsonl``, the job id made safe for a folder name."""
    folder = re.sub(r"[^A-Za-z0-9._-]", "_", job).strip(".") or "job"
    return os.path.join(".", DEFAULT_LOG_DIR, folder, "metrics.jsonl")


def config_of(args: argparse.Namespace) -> RunConfig:
    """The run's configuration from the parsed flags (errors name the value)."""
    job = job_id(args.job)
    return RunConfig.checked(
        log_path=args.log if args.log is not None else default_log(job), job=job,
        dtype=args.dtype, flops_per_step=args.flops_per_step,
        tokens_per_step=args.tokens_per_step, peak_tflops=args.peak_tflops,
        measure_peak=args.measure_peak, log_every=args.log_every, warmup=args.warmup,
        count_every=args.count_every)


def main_from_args(args: argparse.Namespace, *, die: bool = True) -> int:
    """Run the command; its exit status (``die``: a signal that ended it ends
    this process too, :func:`._launch.exit_status`)."""
    command = command_line(list(args.argv))
    config = config_of(args)
    beside = Beside(view=args.view, port=args.port, budget_tokens=args.budget_tokens,
                    budget_steps=args.budget_steps, passport=args.passport)
    note(f"job {config.job}, log {config.log_path}")
    page = Page(beside, config.log_path)
    try:
        returncode = run_child(config, command)
    finally:
        page.close()
    if child_ended(config, returncode) and beside.passport:
        write_passport(config.log_path)
    return exit_status(returncode, die=die)
