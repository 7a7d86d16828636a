"""``mfu-tracker gpus [--detect]``: the peak table, or the devices of this machine.

Each cell says which of three things it is: a dense peak (TFLOP/s), ``-``
(the device has no dense peak for that dtype: no unit for it, e.g. fp8 on
an A100) or ``n/a`` (the device computes it, or the figure exists, but no
source publishes it: B300 int8, its bandwidth and SM count). The rows'
sources follow the table.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Sequence

from .._dtypes import DTYPE_NAMES
from ..peaks._table import GPUSpec, get_gpu_spec, gpu_spec_table

__all__: List[str] = []

#: The dtype columns: every dtype of the core's table, in its order (what `estimate --dtype` takes).
TABLE_DTYPES = DTYPE_NAMES
#: A dtype the device has no dense peak for.
NONE = "-"
#: A figure that exists but no source publishes.
UNPUBLISHED = "n/a"

LEGEND = (f"Dense peak TFLOP/s per dtype, memory bandwidth (TB/s) and SM/CU count.\n"
          f"'{NONE}': the device has no dense peak for that dtype; "
          f"'{UNPUBLISHED}': it has one, but no source publishes the figure.")


def peak_cell(spec: GPUSpec, dtype: str) -> str:
    """One dtype's cell: the peak, NONE or UNPUBLISHED."""
    if spec.has_peak(dtype):
        return f"{spec.peak_tflops(dtype):g}"
    return UNPUBLISHED if dtype in spec.unpublished_dtypes else NONE


def print_table(specs: Sequence[GPUSpec]) -> None:
    """The legend, a header and one line per spec, to stdout."""
    out = sys.stdout  # looked up at call time, so redirection (capsys, contextlib) works
    print(LEGEND, file=out)
    print(f"{'device':<28}" + "".join(f"{d:>9}" for d in TABLE_DTYPES) + f"{'TB/s':>7}{'SMs':>6}",
          file=out)
    for spec in specs:
        bandwidth = (f"{spec.peak_memory_bandwidth_tbs:.2f}" if spec.memory_bandwidth_bytes_per_sec
                     else UNPUBLISHED)
        sms = str(spec.num_sms) if spec.num_sms else UNPUBLISHED
        print(f"{spec.name:<28}" + "".join(f"{peak_cell(spec, d):>9}" for d in TABLE_DTYPES)
              + f"{bandwidth:>7}{sms:>6}", file=out)


def _detect() -> int:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        print("no CUDA/ROCm device visible to torch: no datasheet peak applies here. "
              "`mfu-tracker estimate` takes the peak with --peak-tflops; the library takes "
              "MFU_TRACKER_PEAK_TFLOPS=<TFLOP/s> (or a peak it measures: see the README)")
        return 0
    for index in range(count):
        spec = get_gpu_spec(torch.device("cuda", index))
        props = torch.cuda.get_device_properties(index)
        print(f"cuda:{index}: {props.name} (SMs {props.multi_processor_count}, "
              f"{props.total_memory / 2**30:.1f} GiB) -> {spec.name} [{spec.source}]")
        if spec.peak_flops_by_dtype:
            print_table([spec])
    return 0


def run(args: argparse.Namespace) -> int:
    """The ``gpus`` command."""
    if args.detect:
        return _detect()
    specs = gpu_spec_table()
    print_table(specs)
    print("\nSources (one datasheet per row):")
    for spec in specs:
        print(f"  {spec.name}: {spec.citation}")
    return 0


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``gpus`` on the CLI's subparsers."""
    gpus = sub.add_parser("gpus", help="print the dense peak table, or what this machine has")
    gpus.add_argument("--detect", action="store_true", help="look up the GPUs torch sees here")
    gpus.set_defaults(func=run)
