"""``--gpu``, ``--peak-tflops`` and ``--dtype``: the per-GPU peak an ``estimate`` uses.

Every rule is the peak table's (``csrc/core/peaks/gpu_lookup.h``, through
:func:`mfu_tracker.peaks._table.match_device_name`); this module only words
the outcome for a command line, naming flags rather than Python functions:

- a row ("H100 SXM", "B200"): its dense peak for ``--dtype``;
- a name that fits several rows ("A100"): when every row has the same peak
  for ``--dtype``, that peak, and a note naming the rows (and why there is
  no MBU when their memory bandwidths differ); otherwise an error listing
  the rows with their peaks and how to pick one (``--gpu 'H100 SXM'``);
- ``--peak-tflops``: the user's figure, whatever ``--gpu`` says.
"""
from __future__ import annotations

import math
from typing import List, NamedTuple, Optional

from .._dtypes import DTYPE_NAMES
from ..peaks._table import (
    GPUSpec,
    candidate_list,
    candidates_note,
    did_you_mean_text,
    match_device_name,
    misspelled_words,
)

__all__: List[str] = []


class FlagError(ValueError):
    """A bad flag value: printed as one ``mfu-tracker CMD: error:`` line."""


class PeakChoice(NamedTuple):
    """The per-GPU peak (FLOP/s), where it came from, and notes to print."""

    spec: Optional[GPUSpec]
    flops_per_sec: float
    text: str
    notes: List[str]


def _no_dtype(spec: GPUSpec, dtype: str) -> FlagError:
    have = ", ".join(d for d in spec.peak_flops_by_dtype) or "none"
    if dtype in spec.unpublished_dtypes:
        return FlagError(f"--dtype {dtype}: {spec.name} computes {dtype}, but no source publishes "
                         f"its dense {dtype} peak (the table has: {have}); give it with --peak-tflops")
    return FlagError(f"--dtype {dtype}: {spec.name} has no dense {dtype} peak in the table "
                     f"(it has: {have}); choose another --dtype, or give --peak-tflops")


def _ambiguous(gpu: str, rows: tuple[GPUSpec, ...], total: int, dtype: str) -> FlagError:
    if not any(r.has_peak(dtype) for r in rows):
        have = [d for d in DTYPE_NAMES if any(r.has_peak(d) for r in rows)]
        return FlagError(f"--dtype {dtype}: no row that --gpu {gpu!r} fits has a dense {dtype} "
                         f"peak (they have: {', '.join(have) or 'none'}); choose another --dtype, "
                         "or give --peak-tflops")
    listed = "" if total <= len(rows) else f" (the first {len(rows)} of {total})"
    return FlagError(
        f"--gpu {gpu!r} fits {total} rows of the peak table with different dense {dtype} peaks"
        f"{listed}, in TFLOP/s: {candidate_list(rows, dtype)}; choose one, e.g. "
        f"--gpu '{rows[0].name}' (`mfu-tracker gpus` lists every row), or give --peak-tflops")


def _shared_note(gpu: str, spec: GPUSpec, dtype: str) -> str:
    return candidates_note(spec, f"--gpu {gpu!r}",
                           f"each has {spec.peak_tflops(dtype):g} TFLOP/s dense {dtype}, "
                           "so that peak is used")


def _check_spelling(gpu: str) -> None:
    """A word of ``--gpu`` that nearly spells a table word is an error, not a
    word the lookup silently skips ("H100 SMX" is not "H100")."""
    wrong = misspelled_words(gpu)
    if wrong:
        words = ", ".join(repr(w) for w in wrong)
        raise FlagError(f"--gpu {gpu!r}: {words} is in no row's name{did_you_mean_text(gpu)} "
                        "(`mfu-tracker gpus` lists every row)")


def resolve_peak_flags(gpu: Optional[str], peak_tflops: Optional[float], dtype: str) -> PeakChoice:
    """The per-GPU peak of ``--gpu`` / ``--peak-tflops`` for ``dtype``
    (already a canonical name); :class:`FlagError` naming the flag when
    there is none to use."""
    if peak_tflops is not None and not (math.isfinite(peak_tflops) and peak_tflops > 0):
        raise FlagError(f"--peak-tflops must be a finite number > 0, got {peak_tflops}")
    match = match_device_name(gpu) if gpu else None
    if gpu and match is not None and (match.spec is None or match.candidates):
        _check_spelling(gpu)    # not one row: a misspelt word may be why
    if peak_tflops is not None:
        return PeakChoice(None if match is None else match.spec, peak_tflops * 1e12,
                          f"{peak_tflops:g} TFLOP/s {dtype} (given by --peak-tflops)", [])
    if match is None:
        raise FlagError("give --gpu NAME (`mfu-tracker gpus` lists them) or --peak-tflops "
                        "to set the MFU denominator")
    spec = match.spec
    if match.candidates and (spec is None or not spec.has_peak(dtype)):
        raise _ambiguous(gpu or "", match.candidates, match.num_candidates, dtype)
    if spec is None:
        raise FlagError(f"--gpu {gpu!r}: not in the peak table{did_you_mean_text(gpu or '')} "
                        "(`mfu-tracker gpus` lists every row); give a row's name, or the peak "
                        "with --peak-tflops")
    if not spec.peak_flops_by_dtype:
        raise FlagError(f"--gpu {gpu!r}: {spec.name} has no published peak ({spec.citation}); "
                        "give it with --peak-tflops")
    if not spec.has_peak(dtype):
        raise _no_dtype(spec, dtype)
    notes = [_shared_note(gpu or "", spec, dtype)] if spec.candidates else []
    where = f"each row {gpu!r} fits" if spec.candidates else spec.name
    return PeakChoice(spec, spec.peak_flops_per_sec(dtype),
                      f"{spec.peak_tflops(dtype):g} TFLOP/s dense {dtype}, {where} "
                      f"(datasheet: {spec.citation})", notes)
