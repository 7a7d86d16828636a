"""``mfu-tracker doctor``: check a machine, and prove the GPU path where a GPU exists.

:mod:`._run` runs the sections and prints the report, :mod:`._checks` holds
the checks, :mod:`._platform` what they run on (a torch GPU, the test suite's
fake driver, the CPU) and :mod:`._shim` the zero-synchronization check's
counting driver shim (``cuda_sync_counter.c``, shipped beside it).
"""
from ._report import SECTIONS, STATUSES, Check, Report
from ._run import add_parser, main_from_args, run, statuses

__all__ = ["run", "add_parser", "main_from_args", "statuses", "Check", "Report", "STATUSES",
           "SECTIONS"]
