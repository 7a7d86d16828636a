"""The measured peak: a square-GEMM micro-benchmark for devices no datasheet
covers (a CPU, an unknown GPU) and for checking one that does
(:func:`measure_peak_flops`, :func:`measured_gpu_spec`).

A GEMM timed while other work holds the cores reads low, and MFU against it
high, so on a CPU every timed matmul is checked against the CPU time its
threads got (:mod:`._cpu_share`): only matmuls whose threads were each on a
CPU for at least :data:`CPU_SHARE_MIN` of the wall time count. The CPU
matmul's size follows torch's thread count, never a timing, so an idle and a
busy machine measure the same size. When too few matmuls got their CPU, the measurement refuses
(:class:`PeakMeasurementError`) rather than return a figure it cannot stand
behind. docs/conventions.md ("A measured peak") states the rules.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, List, Optional

from .._dtypes import normalize_dtype
from .._native import _C
from .._validate import check_at_most, check_choice, check_device, check_positive_number
from ._cpu_share import CPU_SHARE_MIN, CpuClocks, cpu_threads
from ._table import PEAK_ENV_VAR, GPUSpec, _warn_once

__all__ = ["PEAK_DISAGREEMENT", "PeakMeasurementError", "how_far_off", "measure_peak_flops",
           "measured_gpu_spec", "peak_disagrees"]

_TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "float32",
                 "fp16": "float16", "bf16": "bfloat16"}

#: Two measurements of one peak that differ by more than this factor mean
#: something slowed one of them: the best is kept, and it must be confirmed
#: by a second matmul within this factor of it.
PEAK_DISAGREEMENT = 1.25
#: Rounds a measurement may take beyond the first two while fewer than two
#: matmuls got their CPU, or while the best is unconfirmed.
REMEASURE_MAX = 6
#: A CPU matmul's size: the smallest of the sizes with at least this many
#: FLOPs per thread (2^27: 512 x 512 on one or two threads, 2048 x 2048 on 64).
#: Chosen from the thread count, never timed, so an idle and a busy machine
#: measure the same size; about 1 ms per thread on a core doing 100 GFLOP/s,
#: short enough to fit between another process's time slices.
CPU_FLOPS_PER_THREAD = 2 ** 27
#: On a GPU the search stops at the first size whose matmul takes this long (s).
SEARCH_GPU_S = 5e-3
#: Matmuls timed per size during the search (the cheapest one counts).
SEARCH_TRIES = 3


class PeakMeasurementError(RuntimeError):
    """The peak could not be measured: the machine did not give the GEMM the
    CPU it asked for. ``str()`` says what was seen and how to give a peak."""


def _square_gemm_sizes(device_type: str) -> list[int]:
    if device_type == "cpu":
        return [256, 384, 512, 640, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096]
    return [1024, 2048, 4096, 8192]


def cpu_gemm_size(threads: int, sizes: List[int]) -> int:
    """The CPU matmul's n for ``threads`` intra-op threads: the smallest of
    ``sizes`` with ``2 n^3 >= threads * CPU_FLOPS_PER_THREAD`` (else the largest)."""
    return next((n for n in sizes if 2 * n ** 3 >= threads * CPU_FLOPS_PER_THREAD), sizes[-1])


def peak_disagrees(first: Optional[float], again: Optional[float]) -> bool:
    """Whether two measurements of one peak differ by more than
    :data:`PEAK_DISAGREEMENT` (a busy machine during one of them)."""
    if not first or not again or first <= 0 or again <= 0:
        return False
    return max(first, again) > PEAK_DISAGREEMENT * min(first, again)


def how_far_off(factor: float) -> str:
    """Words for a figure that reads ``factor`` times what it should: "1.8×
    too high", "56× too low", "" within 5% of right (or not a finite
    positive factor)."""
    if not factor or factor != factor or factor <= 0 or factor == float("inf"):
        return ""
    if 1 / 1.05 < factor < 1.05:
        return ""
    size = max(factor, 1 / factor)
    shown = f"{size:.0f}" if size >= 9.95 else f"{size:.2g}"
    return f"{shown}× too {'high' if factor > 1 else 'low'}"


@dataclass
class _Timing:
    """One timed matmul: wall seconds, and the share of them its threads
    were on a CPU (1.0 on a GPU)."""

    wall_s: float
    cpu_share: float


class _Bench:
    """Times ``a @ b`` for square ``n x n`` operands on one device."""

    def __init__(self, dev: Any, torch_dtype: Any) -> None:
        import torch

        self.torch = torch
        self.dev = dev
        self.torch_dtype = torch_dtype
        self.is_cuda = dev.type == "cuda"
        self.clocks = None if self.is_cuda else CpuClocks()
        self.n = 0
        self.a: Any = None
        self.b: Any = None

    def use_size(self, n: int) -> None:
        """Operands of size ``n``, warmed up (kernel selection, allocation,
        thread pool)."""
        torch = self.torch
        self.n = n
        self.a = torch.randn(n, n, device=self.dev).to(self.torch_dtype)
        self.b = torch.randn(n, n, device=self.dev).to(self.torch_dtype)
        torch.matmul(self.a, self.b)
        self._sync()

    @property
    def flops(self) -> float:
        return float(_C.mm_flop(self.n, self.n, self.n))  # the core's GEMM rule

    def _sync(self) -> None:
        if self.is_cuda:
            self.torch.cuda.synchronize(self.dev)

    def time_one(self) -> _Timing:
        if self.clocks is None:
            start = time.perf_counter()
            self.torch.matmul(self.a, self.b)
            self._sync()
            return _Timing(time.perf_counter() - start, 1.0)
        before = self.clocks.read()
        start = time.perf_counter()
        self.torch.matmul(self.a, self.b)
        wall = time.perf_counter() - start
        return _Timing(wall, self.clocks.share_since(before, wall))


def _search_size(bench: Any, sizes: List[int]) -> None:
    """Settle ``bench`` on its size: on a CPU :func:`cpu_gemm_size`; on a GPU
    the smallest size whose fastest of :data:`SEARCH_TRIES` matmuls takes at
    least :data:`SEARCH_GPU_S` (or the largest size)."""
    if not bench.is_cuda:
        bench.use_size(cpu_gemm_size(cpu_threads(), sizes))
        return
    for n in sizes:
        bench.use_size(n)
        if min(bench.time_one().wall_s for _ in range(SEARCH_TRIES)) >= SEARCH_GPU_S:
            return


@dataclass
class _Rounds:
    """What the rounds saw: the rate (FLOP/s) of each matmul that got its
    CPU, and of every matmul, the share of CPU its threads got."""

    rates: List[float] = field(default_factory=list)
    shares: List[float] = field(default_factory=list)
    rounds: int = 0
    elapsed_s: float = 0.0

    def confirmed(self) -> bool:
        """At least two matmuls got their CPU, and the best is within
        :data:`PEAK_DISAGREEMENT` of the second best."""
        if len(self.rates) < 2:
            return False
        best, second = sorted(self.rates)[-1], sorted(self.rates)[-2]
        return not peak_disagrees(second, best)


def _run_rounds(bench: Any, round_s: float) -> _Rounds:
    """Rounds of about ``round_s`` seconds (at least 3 matmuls each): two, then
    up to :data:`REMEASURE_MAX` more until :meth:`_Rounds.confirmed`."""
    seen = _Rounds()
    flops = bench.flops
    started = time.perf_counter()
    while seen.rounds < 2 or (not seen.confirmed() and seen.rounds < 2 + REMEASURE_MAX):
        deadline = time.perf_counter() + round_s
        count = 0
        while count < 3 or (time.perf_counter() < deadline and count < 10000):
            timing = bench.time_one()
            count += 1
            seen.shares.append(timing.cpu_share)
            if timing.cpu_share >= CPU_SHARE_MIN and timing.wall_s > 0:
                seen.rates.append(flops / timing.wall_s)
        seen.rounds += 1
    seen.elapsed_s = time.perf_counter() - started
    return seen


def _refusal(what: str, n: int, seen: _Rounds) -> PeakMeasurementError:
    shares = sorted(seen.shares)
    median = shares[len(shares) // 2] if shares else 0.0
    return PeakMeasurementError(
        f"mfu_tracker: the {what} GEMM peak was not measured: the machine is busy. In "
        f"{seen.elapsed_s:.1f} s, {len(seen.rates)} of {len(shares)} {n}x{n} matmuls had their "
        f"threads on a CPU for {CPU_SHARE_MIN:.0%} of their time (the median one: {median:.0%}; "
        f"other processes hold the cores), and a GEMM that waits for a core reads low, which "
        f"would make MFU read high. Measure again when the machine is idle, or give the peak: "
        f"peak_tflops=<TFLOP/s> (or {PEAK_ENV_VAR}=<TFLOP/s>)")


def measure_peak_flops(dtype: Any = "fp32", device: Any = "cpu", *, duration_s: float = 0.3) -> float:
    """Measured dense matmul peak of ``device`` for ``dtype``, in FLOP/s.

    A square-GEMM micro-benchmark of ``n x n @ n x n`` matmuls (2 n^3 FLOPs
    each): on a CPU n follows torch's thread count (:func:`cpu_gemm_size`,
    about 1 ms per thread), on a GPU n grows until one matmul takes 5 ms.
    Matmuls are timed in rounds of about ``duration_s / 2`` seconds, and the
    best single-matmul rate is the peak.

    On a CPU a matmul counts only when each thread that worked on it was on
    a CPU for at least 90% of its wall time (per-thread CPU clocks; else the
    process's CPU time against the wall time and torch's threads): a matmul
    that waited for a core reads low. The best must be confirmed by a second
    counted matmul within 25% of it; until it is, up to
    :data:`REMEASURE_MAX` more rounds run (one warning when the counted ones
    never agree). Supports fp64, fp32, tf32 (CUDA), fp16 and bf16.

    Raises:
        PeakMeasurementError: fewer than two matmuls got their CPU (a busy
            machine): the message says what was seen and how to give a peak.
    """
    import torch

    name = check_choice(normalize_dtype(dtype), "dtype", tuple(_TORCH_DTYPES),
                        supported_by="measure_peak_flops")
    duration = check_at_most(check_positive_number(duration_s, "duration_s"), "duration_s", 60,
                             "seconds")
    dev = check_device(device)
    if name == "tf32" and dev.type != "cuda":
        raise ValueError("dtype: tf32 is measured on CUDA devices only")
    is_cuda = dev.type == "cuda"
    old_tf32 = torch.backends.cuda.matmul.allow_tf32 if is_cuda else None
    if is_cuda:
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    try:
        with torch.no_grad():
            return _measure(_Bench(dev, getattr(torch, _TORCH_DTYPES[name])),
                            _square_gemm_sizes(dev.type), duration / 2, f"{name} {dev}")
    finally:
        if is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = old_tf32


def _measure(bench: Any, sizes: List[int], round_s: float, what: str) -> float:
    """The size search, then the rounds: the confirmed best rate (FLOP/s)."""
    _search_size(bench, sizes)
    seen = _run_rounds(bench, round_s)
    if len(seen.rates) < 2:
        raise _refusal(what, bench.n, seen)
    if not seen.confirmed():
        _warn_once(f"busy:{what}", f"mfu_tracker: the measured {what} GEMM peak varied from "
                   f"{min(seen.rates) / 1e12:.4g} to {max(seen.rates) / 1e12:.4g} TFLOP/s over "
                   f"{seen.rounds} rounds, though each matmul counted had its CPU (a busy "
                   f"machine: a process on a sibling hyperthread, or the hypervisor, slows a "
                   f"core without taking it); the best is used, and MFU against it may still "
                   f"read high", stacklevel=4)
    return max(seen.rates)


def measured_gpu_spec(dtype: Any = "fp32", device: Any = "cpu") -> GPUSpec:
    """A spec whose only peak is measured by :func:`measure_peak_flops`
    (``source == "measured"``, the name says it was measured).

    When the machine is too busy to measure (:class:`PeakMeasurementError`),
    one warning says why and how to give a peak, and the spec has no peak
    (``source == "unknown"``): MFU against it is unavailable (None), never a
    figure against a peak that read low.
    """
    import torch

    name = normalize_dtype(dtype)
    dev = check_device(device)
    label = torch.cuda.get_device_name(dev) if dev.type == "cuda" else dev.type
    try:
        rate = measure_peak_flops(name, dev)
    except PeakMeasurementError as refused:
        warnings.warn(str(refused), UserWarning, stacklevel=2)
        return GPUSpec(name=f"{label} ({name} GEMM peak not measured: a busy machine)",
                       source="unknown", citation=str(refused))
    return GPUSpec(
        name=f"{label} (measured {name} GEMM peak)",
        peak_flops_by_dtype={name: rate},
        source="measured",
        citation=f"measured by mfu_tracker.measure_peak_flops({name!r}, {str(dev)!r}): "
                 "best square-GEMM rate",
    )

