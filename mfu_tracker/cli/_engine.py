"""``mfu-tracker engine SOURCE [SOURCE2]``: MBU and MFU of a vLLM or SGLang
server from the FLOP and byte counters it publishes
(:mod:`mfu_tracker.integrations.engines`).

    mfu-tracker engine http://host:8000/metrics --gpu 'H100 SXM' --interval 30
    mfu-tracker engine before.prom after.prom --interval 60 --gpu H200

One URL is scraped twice, ``--interval`` seconds apart (default 10); two
sources (URLs or saved expositions) are read once each, the interval between
them being their fetch times (URLs), the samples' timestamps, or
``--interval``. The peak is the per-GPU dense peak of ``--gpu`` for
``--dtype`` (or ``--peak-tflops``) and its memory bandwidth (or
``--memory-bandwidth-tbs``).
"""
from __future__ import annotations

import argparse
import time
from typing import Any, List

from .._dtypes import normalize_dtype
from ..integrations.engines import engine_utilization, read_scrape
from ..peaks._table import user_gpu_spec
from ._flag_types import positive_float
from ._peak_flags import resolve_peak_flags

__all__: List[str] = []


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _read(source: str) -> Any:
    try:
        return read_scrape(source)
    except OSError as exc:  # unreachable URL, missing file: one line, no traceback
        raise ValueError(f"{source}: {exc}") from None


def _scrapes(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(first, second, interval_s or None) from the sources."""
    if args.second is None:
        if not _is_url(args.source):
            raise ValueError(f"{args.source}: one source must be a URL (scraped twice); give "
                             "two saved expositions to compare files")
        first = _read(args.source)
        time.sleep(args.interval if args.interval is not None else 10.0)
        return first, _read(args.source), None
    return _read(args.source), _read(args.second), args.interval


def _spec(args: argparse.Namespace, dtype: str) -> Any:
    choice = resolve_peak_flags(args.gpu, args.peak_tflops, dtype)
    bandwidth = args.memory_bandwidth_tbs
    if bandwidth is None and choice.spec is not None and choice.spec.memory_bandwidth_bytes_per_sec:
        bandwidth = choice.spec.peak_memory_bandwidth_tbs
    for note in choice.notes:
        print(f"note: {note}")
    print(f"peak: {choice.text}; memory bandwidth: "
          + (f"{bandwidth:g} TB/s" if bandwidth else "unknown (no MBU; give "
             "--memory-bandwidth-tbs)"))
    return user_gpu_spec({dtype: choice.flops_per_sec / 1e12},
                         name=choice.spec.name if choice.spec is not None else "given peak",
                         memory_bandwidth_tbs=bandwidth)


def _cmd_engine(args: argparse.Namespace) -> int:
    dtype = normalize_dtype(args.dtype, "--dtype")
    spec = _spec(args, dtype)
    first, second, interval = _scrapes(args)
    print(engine_utilization(first, second, interval_s=interval, dtype=dtype, spec=spec))
    return 0


def add_parser(sub: Any) -> None:
    """Register ``engine`` on the command line's subparsers."""
    parser = sub.add_parser("engine", help="MBU and MFU of a vLLM / SGLang server from its "
                            "published FLOP and byte counters (two scrapes of /metrics)")
    parser.add_argument("source", help="a /metrics URL, or a saved exposition file")
    parser.add_argument("second", nargs="?", default=None,
                        help="a second source, later than the first (default: the URL again)")
    parser.add_argument("--interval", type=positive_float, default=None, metavar="SECONDS",
                        help="seconds between the two scrapes (one URL: the wait, default 10)")
    parser.add_argument("--gpu", help="the server's device as in `mfu-tracker gpus`")
    parser.add_argument("--dtype", default="bf16", help="the engine's compute dtype (MFU's peak)")
    parser.add_argument("--peak-tflops", type=positive_float, help="per-GPU peak, over the table")
    parser.add_argument("--memory-bandwidth-tbs", type=positive_float, metavar="TB/S",
                        help="per-GPU memory bandwidth, over the table (MBU's denominator)")
    parser.set_defaults(func=_cmd_engine)
