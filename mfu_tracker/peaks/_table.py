"""Device peaks: the datasheet table (in C), user and measured peaks.

Units: FLOP/s in ``peak_flops_by_dtype`` and :meth:`GPUSpec.peak_flops_per_sec`,
TFLOP/s (1e12 FLOP/s) in :meth:`GPUSpec.peak_tflops`, bytes/s in
``memory_bandwidth_bytes_per_sec``, TB/s (1e12 bytes/s) in
``peak_memory_bandwidth_tbs``, hertz in ``clock_rate_hz``, bytes in
``memory_bytes``. Every peak is dense (no 2:4 sparsity).

An unknown device never borrows another device's numbers: it gets a spec with
no peaks (``source == "unknown"``) and one warning per distinct name. The user
can give the peak as an argument (:func:`user_gpu_spec`), through the
environment variable ``MFU_TRACKER_PEAK_TFLOPS`` ("989.4" for every dtype, or
"bf16=989.4,fp8=1978.9"), or measure it (:func:`measured_gpu_spec`).

torch is imported only inside the functions that need it.
"""
from __future__ import annotations

import difflib
import functools
import os
import threading
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Optional, Union

from .._native import _C
from .._dtypes import DTYPE_NAMES, normalize_dtype
from .._validate import (
    check_device,
    check_int_pair,
    check_nonempty,
    check_optional_instance,
    check_positive_number,
    check_str,
)

__all__ = [
    "GPUSpec",
    "lookup_gpu_spec",
    "get_gpu_spec",
    "gpu_spec_table",
    "user_gpu_spec",
    "PEAK_ENV_VAR",
]

#: Environment variable overriding the peak (TFLOP/s).
PEAK_ENV_VAR = "MFU_TRACKER_PEAK_TFLOPS"
#: How to give a peak where none is known (every message that says so ends with it).
GIVE_A_PEAK = (f"give one with peak_tflops=<TFLOP/s> (or spec=user_gpu_spec(...)), "
               f"{PEAK_ENV_VAR}=<TFLOP/s>, or spec=measured_gpu_spec(dtype, device) "
               f"(a GEMM measured on this machine)")

_warned_lock = threading.Lock()
_warned: set[str] = set()


def _warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, UserWarning, stacklevel=stacklevel)


@dataclass(frozen=True)
class GPUSpec:
    """Peaks of one device.

    Fields compatible with the pure-Python ``mfu-tracker`` 0.3.0:
      - ``name``: device name.
      - ``compute_capability``: CUDA (major, minor); (0, 0) when not
        applicable (AMD rows of the table, CPUs).
      - ``num_sms``: SMs (NVIDIA) or CUs (AMD); a MIG slice's own count;
        0 when not known.
      - ``clock_rate_hz``: boost clock in Hz; 0.0 when not known.
      - ``memory_bandwidth_bytes_per_sec``: bytes/s; 0.0 when not known.
      - ``peak_flops_by_dtype``: dense peak FLOP/s per canonical dtype name,
        only the dtypes the device has.

    Beyond it:
      - ``source``: "datasheet", "measured", "user", or "unknown" (no peak).
      - ``citation``: the datasheet (title + URL), or how the peak was obtained.
      - ``vendor``, ``architecture``: "NVIDIA"/"AMD", "Hopper"/"CDNA 3"...
      - ``memory_bytes``: device memory in bytes (datasheet size, decimal GB).
      - ``mig_fraction``: share of the device's SMs (1.0 for a whole device;
        slice SMs / device SMs for a MIG slice or AMD compute partition;
        peaks and bandwidth are already scaled by it).
      - ``unpublished_dtypes``: dtypes the device computes but no source
        publishes a dense peak for (B300 int8); absent from
        ``peak_flops_by_dtype`` like a dtype it has no peak for at all.
      - ``candidates``: for a name that fits several rows of the table
        ("A100": four rows), those rows; the spec then holds only what all
        of them have -- the peaks they share and, when it agrees too, the
        memory bandwidth (csrc/core/peaks/gpu_lookup.h, rule 3). ``match_note``
        says so in words. Empty for a single row.
    """

    name: str
    compute_capability: tuple[int, int] = (0, 0)
    num_sms: int = 0
    clock_rate_hz: float = 0.0
    memory_bandwidth_bytes_per_sec: float = 0.0
    peak_flops_by_dtype: dict[str, float] = field(default_factory=dict)
    source: str = "datasheet"
    citation: str = ""
    vendor: str = ""
    architecture: str = ""
    memory_bytes: int = 0
    mig_fraction: float = 1.0
    unpublished_dtypes: tuple[str, ...] = ()
    candidates: tuple["GPUSpec", ...] = field(default=(), repr=False)

    @property
    def peak_memory_bandwidth_tbs(self) -> float:
        """Peak memory bandwidth in TB/s (1e12 bytes/s); 0.0 when not known."""
        return self.memory_bandwidth_bytes_per_sec / 1e12

    @property
    def match_note(self) -> str:
        """For a name that fits several rows (``candidates``): which rows, and
        that their shared peaks are used; MBU only when their bandwidths agree.
        "" for a single row."""
        if not self.candidates:
            return ""
        return candidates_note(self, f"{self.name!r}",
                               f"the peaks they share are used ({_peak_list(self)})")

    def has_peak(self, dtype: Any = "fp16") -> bool:
        """Whether this device has a dense peak for ``dtype`` (name or torch dtype)."""
        return normalize_dtype(dtype) in self.peak_flops_by_dtype

    def peak_flops_per_sec(self, dtype: Any = "fp16") -> float:
        """Dense peak for ``dtype`` in FLOP/s.

        Raises ``ValueError`` listing the dtypes the device has when it lacks
        ``dtype`` (or has no peak at all).
        """
        name = normalize_dtype(dtype)
        try:
            return self.peak_flops_by_dtype[name]
        except KeyError:
            if any(c.has_peak(name) for c in self.candidates):
                raise ValueError(
                    f"dtype: {self.name!r} fits {len(self.candidates)} rows of the peak table "
                    f"with different dense {name} peaks (TFLOP/s): {candidate_list(self.candidates, name)}; "
                    f"name one of them, e.g. {self.candidates[0].name!r}"
                ) from None
            have = [d for d in DTYPE_NAMES if d in self.peak_flops_by_dtype]
            if not have:
                raise ValueError(
                    f"dtype: no peak is known for {self.name!r} (source {self.source!r}); "
                    f"give one with user_gpu_spec(), {PEAK_ENV_VAR} or measured_gpu_spec()"
                ) from None
            if name in self.unpublished_dtypes:
                raise ValueError(
                    f"dtype: {self.name!r} computes {name}, but no source publishes its dense "
                    f"{name} peak (it has: {', '.join(have)}); give one with user_gpu_spec() "
                    f"or {PEAK_ENV_VAR}"
                ) from None
            raise ValueError(
                f"dtype: {self.name!r} has no dense {name} peak; it has: {', '.join(have)}"
            ) from None

    def peak_tflops(self, dtype: Any = "fp16") -> float:
        """Dense peak for ``dtype`` in TFLOP/s (see :meth:`peak_flops_per_sec`)."""
        return self.peak_flops_per_sec(dtype) / 1e12


# ---- the table ---------------------------------------------------------------


def check_spec(spec: Any) -> Optional[GPUSpec]:
    """``spec``: None or a :class:`GPUSpec`."""
    return check_optional_instance(spec, "spec", GPUSpec)


def _spec_from_row(row: dict[str, Any]) -> GPUSpec:
    peaks = {d: float(t) * 1e12 for d, t in row["peak_tflops"].items()}
    cc = row["compute_capability"]
    return GPUSpec(
        name=row["name"],
        compute_capability=tuple(cc) if cc is not None else (0, 0),
        num_sms=int(row["num_sms"]),
        clock_rate_hz=float(row["clock_rate_hz"]),
        memory_bandwidth_bytes_per_sec=float(row["memory_bandwidth_bytes_per_sec"]),
        peak_flops_by_dtype=peaks,
        source="datasheet" if peaks else "unknown",
        citation=row["citation"],
        vendor=row["vendor"],
        architecture=row["architecture"],
        memory_bytes=int(row["memory_bytes"]),
        mig_fraction=float(row["mig_fraction"]),
        unpublished_dtypes=tuple(row["unpublished_dtypes"]),
    )


def _compact(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


@functools.lru_cache(maxsize=1)
def _table_words() -> tuple[frozenset[str], dict[str, str]]:
    """Every word the lookup reads (the rows' display names, normalized, and
    their lookup tokens), and each row's display name by its compact form."""
    words: set[str] = set()
    names: dict[str, str] = {}
    for row in _C.gpu_spec_table():
        words.update(_C.normalize_gpu_name(row["name"]).split())
        words.update(row["tokens"].split())
        names.setdefault(_compact(row["name"]), row["name"])
    return frozenset(words), names


def misspelled_words(name: str) -> list[str]:
    """Words of ``name`` the lookup does not know but that nearly spell one it
    does ("smx" for "sxm", "80bg" for "80gb"): the lookup skips unknown words,
    so a misspelt one would silently widen the match."""
    words, _ = _table_words()
    try:
        tokens = _C.normalize_gpu_name(name).split()
    except ValueError:
        return []
    return [t for t in tokens if t not in words and difflib.get_close_matches(t, words, n=1,
                                                                              cutoff=0.6)]


def did_you_mean(name: str, limit: int = 3) -> list[str]:
    """Display names of the rows closest to ``name`` (letters and digits
    compared, case and separators aside: "h100sxm" -> "H100 SXM")."""
    _, names = _table_words()
    close = difflib.get_close_matches(_compact(name), list(names), n=limit, cutoff=0.6)
    return [names[key] for key in close]


def did_you_mean_text(name: str) -> str:
    """``"; did you mean 'H100 SXM'?"`` (empty when nothing is close)."""
    close = did_you_mean(name)
    return f"; did you mean {' or '.join(repr(n) for n in close)}?" if close else ""


def candidates_note(spec: GPUSpec, subject: str, shared: str) -> str:
    """"<subject> fits N rows (<rows>); <shared>; <their bandwidth>": the one
    wording of a name that fits several rows (``spec.candidates``), for the
    Python API and the command line alike."""
    rows = ", ".join(c.name for c in spec.candidates)
    note = f"{subject} fits {len(spec.candidates)} rows ({rows}); {shared}"
    if spec.memory_bandwidth_bytes_per_sec:
        return note + f"; their memory bandwidth is the same, {spec.peak_memory_bandwidth_tbs:g} TB/s"
    return note + "; " + bandwidth_reason(spec.candidates)


def _peak_list(spec: GPUSpec) -> str:
    """"bf16 312, fp16 312, ..." TFLOP/s, in the core's dtype order."""
    return ", ".join(f"{d} {spec.peak_flops_by_dtype[d] / 1e12:g}"
                     for d in DTYPE_NAMES if d in spec.peak_flops_by_dtype) or "none"


def candidate_list(candidates: tuple[GPUSpec, ...], dtype: str) -> str:
    """"H100 SXM (989.4), H100 PCIe (756.5)": each row's dense ``dtype`` peak
    in TFLOP/s ("no <dtype>" where it has none)."""
    return ", ".join(f"{c.name} ({c.peak_tflops(dtype):g})" if c.has_peak(dtype)
                     else f"{c.name} (no {dtype})" for c in candidates)


def bandwidth_reason(candidates: tuple[GPUSpec, ...]) -> str:
    """Why rows that share their peaks give no MBU: their bandwidths differ."""
    figures = sorted({c.peak_memory_bandwidth_tbs for c in candidates})
    known = ", ".join(f"{tbs:g}" for tbs in figures if tbs > 0)
    if 0.0 in figures:
        known = (known + ", " if known else "") + "unknown"
    return f"their memory bandwidths differ ({known} TB/s), so MBU is unavailable"


def gpu_spec_table() -> list[GPUSpec]:
    """Every row of the datasheet table, in table order."""
    return [_spec_from_row(row) for row in _C.gpu_spec_table()]


class DeviceMatch(NamedTuple):
    """What a device name (and its hints) is in the peak table.

    ``spec``: the row; for a name that fits several rows, the spec of what
    they share (``spec.candidates``), or None when they share no peak;
    None for an unknown name. ``candidates``: those rows (listed up to
    ``_C.LIMIT_GPU_CANDIDATES_MAX``; ``num_candidates`` counts them all).
    """

    spec: Optional[GPUSpec]
    candidates: tuple[GPUSpec, ...]
    num_candidates: int


def _shared_spec(name: str, rows: tuple[GPUSpec, ...], shared: dict[str, Any]) -> GPUSpec:
    """One spec for the rows an ambiguous name fits: the peaks every row has
    (from the C rule), their bandwidth when it agrees, each row's datasheet."""
    first = rows[0]
    same = {field_name: getattr(first, field_name) if all(
        getattr(r, field_name) == getattr(first, field_name) for r in rows) else default
        for field_name, default in (("compute_capability", (0, 0)), ("num_sms", 0),
                                    ("clock_rate_hz", 0.0), ("memory_bytes", 0),
                                    ("vendor", ""), ("architecture", ""), ("mig_fraction", 1.0))}
    citations = list(dict.fromkeys(r.citation for r in rows))
    return GPUSpec(
        name=name.strip(),
        memory_bandwidth_bytes_per_sec=float(shared["memory_bandwidth_bytes_per_sec"]),
        peak_flops_by_dtype={d: float(t) * 1e12 for d, t in shared["peak_tflops"].items()},
        source="datasheet",
        citation="; ".join(citations),
        candidates=rows,
        **same,
    )


def match_device_name(name: str, *, compute_capability: Any = None, num_sms: Any = None,
                      total_memory_bytes: Any = None) -> DeviceMatch:
    """The C lookup (every rule, display names and rule 3 for ambiguous
    names included, lives in csrc/core/peaks/gpu_lookup.c) as a :class:`DeviceMatch`;
    no warning. The C binding checks ``name``, ``num_sms`` and
    ``total_memory_bytes``."""
    cc = check_int_pair(compute_capability, "compute_capability")
    cc_major, cc_minor = (None, None) if cc is None else cc
    row = _C.lookup_gpu_spec(name, cc_major, cc_minor, num_sms, total_memory_bytes)
    if row is not None:
        return DeviceMatch(_spec_from_row(row), (), 1)
    tied = _C.gpu_candidates(name, cc_major, cc_minor, num_sms, total_memory_bytes)
    if tied is None:
        return DeviceMatch(None, (), 0)
    rows = tuple(_spec_from_row(r) for r in tied["rows"])
    spec = _shared_spec(name, rows, tied) if tied["peak_tflops"] else None
    return DeviceMatch(spec, rows, int(tied["num_candidates"]))


def _warn_match(name: str, match: DeviceMatch) -> None:
    """One warning per name when the name did not give one row with peaks:
    the rows it fits and whose peaks are used, or why none; unknown."""
    if match.spec is not None and match.candidates:
        _warn_once(f"shared:{name}", f"mfu_tracker: {match.spec.match_note}.", stacklevel=5)
    elif match.candidates:
        _warn_ambiguous(name, match)
    elif match.spec is None or not match.spec.peak_flops_by_dtype:
        _warn_unknown(name)


def _warn_ambiguous(name: str, match: DeviceMatch) -> None:
    rows = match.candidates
    dtype = next((d for d in ("bf16", "fp16", "fp32") if any(r.has_peak(d) for r in rows)), "bf16")
    shown = "" if match.num_candidates <= len(rows) else f" (the first {len(rows)} of {match.num_candidates})"
    _warn_once(
        f"unknown:{name}",
        f"mfu_tracker: device name {name!r} fits {match.num_candidates} rows of the peak table "
        f"with different peaks{shown}: {candidate_list(rows, dtype)} TFLOP/s dense {dtype}; MFU is "
        f"unavailable. Name one row (e.g. lookup_gpu_spec({rows[0].name!r})), give num_sms / "
        f"total_memory_bytes, or give the peak with user_gpu_spec() or {PEAK_ENV_VAR}=<TFLOP/s>.",
        stacklevel=5,
    )


def _warn_unknown(name: str) -> None:
    _warn_once(
        f"unknown:{name}",
        f"mfu_tracker: no datasheet peak for device {name!r} (unknown, or a row without "
        f"sourced peaks){did_you_mean_text(name) or ';'} MFU is unavailable: {GIVE_A_PEAK}.",
        stacklevel=5,
    )


def lookup_gpu_spec(
    name: str,
    *,
    compute_capability: Optional[tuple[int, int]] = None,
    num_sms: Optional[int] = None,
    total_memory_bytes: Optional[int] = None,
) -> Optional[GPUSpec]:
    """The datasheet spec for a device name, without needing the device.

    ``name`` as ``torch.cuda.get_device_name()`` prints it ("NVIDIA H100 80GB
    HBM3", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "AMD Instinct MI300X") or a
    table name ("H100 SXM"). The hints (``compute_capability``, ``num_sms`` --
    a MIG slice's own SM count --, ``total_memory_bytes``) disambiguate
    variants; see csrc/core/peaks/gpu_lookup.h for the rules.

    A name that fits several rows ("A100", "H100") gives, when the rows
    share peaks, a spec of what they share (``spec.candidates`` lists them,
    ``spec.match_note`` says so; one warning per name), else ``None`` after
    one warning naming them with their peaks. An unknown name gives ``None``
    (one warning per name); a known row without sourced peaks (A10G) also
    warns and has ``source == "unknown"``.
    """
    match = match_device_name(name, compute_capability=compute_capability, num_sms=num_sms,
                              total_memory_bytes=total_memory_bytes)
    _warn_match(name, match)
    return match.spec


# ---- MFU_TRACKER_PEAK_TFLOPS ---------------------------------------------------


def _env_override() -> Optional[dict[str, float]]:
    """The override as {dtype: FLOP/s}, None when unset. Malformed -> ValueError."""
    text = os.environ.get(PEAK_ENV_VAR)
    if text is None or text.strip() == "":
        return None
    peaks: dict[str, float] = {}
    for dtype in DTYPE_NAMES:
        tflops = _C.parse_peak_override(text, dtype)  # ValueError names the variable
        if tflops is not None:
            peaks[dtype] = tflops * 1e12
    return peaks


def _apply_env_override(spec: GPUSpec) -> GPUSpec:
    override = _env_override()
    if override is None:
        return spec
    peaks = dict(spec.peak_flops_by_dtype)
    peaks.update(override)
    return replace(
        spec,
        peak_flops_by_dtype=peaks,
        source="user",
        citation=f"{PEAK_ENV_VAR}={os.environ.get(PEAK_ENV_VAR, '')!r}"
        + (f" over {spec.citation}" if spec.citation else ""),
    )


# ---- the current device --------------------------------------------------------


def _unknown_spec(name: str, **kwargs: Any) -> GPUSpec:
    return GPUSpec(name=name, source="unknown", peak_flops_by_dtype={}, **kwargs)


def get_gpu_spec(device: Any = None) -> GPUSpec:
    """The spec of ``device`` (default: the current CUDA/ROCm device, else the CPU).

    For a GPU, reads ``torch.cuda.get_device_properties``: name, compute
    capability, ``multi_processor_count``, ``total_memory``, and looks them
    up in the datasheet table. A CPU or an unknown GPU gives a spec with no
    peaks and ``source == "unknown"`` after one warning -- never another
    device's numbers. ``MFU_TRACKER_PEAK_TFLOPS``, when set, overrides the
    peaks (``source == "user"``); malformed text raises ``ValueError``.
    """
    import torch

    if device is None:
        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    else:
        device = check_device(device)

    if device.type != "cuda":
        spec = _unknown_spec(f"{device.type} device", citation="no datasheet peak for this device type")
        if os.environ.get(PEAK_ENV_VAR, "").strip() == "":
            _warn_once(
                f"device:{device.type}",
                f"mfu_tracker: no datasheet peak for a {device.type} device; MFU is unavailable: "
                f"{GIVE_A_PEAK}.",
            )
        return _apply_env_override(spec)

    props = torch.cuda.get_device_properties(device)
    name = props.name
    hints = dict(compute_capability=(int(props.major), int(props.minor)),
                 num_sms=int(props.multi_processor_count) or None,
                 total_memory_bytes=int(props.total_memory) or None)
    match = match_device_name(name, **hints)
    spec = match.spec
    if os.environ.get(PEAK_ENV_VAR, "").strip() == "":
        _warn_match(name, match)
    if spec is None:
        gfx = getattr(props, "gcnArchName", "") or ""
        spec = _unknown_spec(
            name,
            compute_capability=(int(props.major), int(props.minor)),
            num_sms=int(props.multi_processor_count),
            memory_bytes=int(props.total_memory),
            vendor="AMD" if gfx else "",
            citation="not in the datasheet table" + (f" ({gfx})" if gfx else ""),
        )
    return _apply_env_override(spec)


# ---- user and measured peaks ---------------------------------------------------


def user_gpu_spec(
    peak_tflops: Union[float, dict[Any, float]],
    *,
    name: str = "user-specified peak",
    memory_bandwidth_tbs: Optional[float] = None,
) -> GPUSpec:
    """A spec from the user's own peak (``source == "user"``).

    ``peak_tflops``: TFLOP/s, one number for every dtype or a mapping
    {dtype: TFLOP/s}. ``memory_bandwidth_tbs``: TB/s, optional.
    Non-finite or non-positive values raise ``ValueError`` naming the argument.
    """
    check_str(name, "name")
    if isinstance(peak_tflops, dict):
        check_nonempty(peak_tflops, "peak_tflops")
        peaks = {}
        for key, value in peak_tflops.items():
            dtype = normalize_dtype(key, "peak_tflops")
            peaks[dtype] = check_positive_number(value, f"peak_tflops[{key!r}]") * 1e12
    else:
        value = check_positive_number(peak_tflops, "peak_tflops") * 1e12
        peaks = {dtype: value for dtype in DTYPE_NAMES}
    bandwidth = 0.0
    if memory_bandwidth_tbs is not None:
        bandwidth = check_positive_number(memory_bandwidth_tbs, "memory_bandwidth_tbs") * 1e12
    return GPUSpec(name=name, memory_bandwidth_bytes_per_sec=bandwidth,
                   peak_flops_by_dtype=peaks, source="user",
                   citation="given by the user")

