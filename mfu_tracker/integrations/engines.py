"""MFU and MBU of a vLLM or SGLang server, from the counters it publishes.

Both engines estimate, per forward, the FLOPs and the bytes each GPU moves,
and add them to Prometheus counters (TFLOP/s and GB/s in their own logs,
never a share of a peak: they have no peak table):

* vLLM (``--enable-mfu-metrics``): ``vllm:estimated_flops_per_gpu_total``,
  ``vllm:estimated_read_bytes_per_gpu_total``,
  ``vllm:estimated_write_bytes_per_gpu_total``, labels ``model_name`` and
  ``engine`` (vllm/v1/metrics/perf.py ``PerfMetricsProm`` @
  00cee63e04bf5b7dbaa5f08d6e4360f28777fdc3; its formulas: weights read once
  per step, the KV cache read over each request's context, activations).
* SGLang: ``sglang:estimated_flops_per_gpu_total``,
  ``sglang:estimated_read_bytes_per_gpu_total``,
  ``sglang:estimated_write_bytes_per_gpu_total``, labels ``model_name``,
  ``engine_type``, ``tp_rank``, ``pp_rank``, ``moe_ep_rank`` (and
  ``dp_rank``) (python/sglang/srt/observability/metrics_collector.py
  ``SchedulerMetricsCollector`` @ 016d8605e45876180312e29d6988e1de06562472).

Two scrapes of ``/metrics`` (or two saved expositions) give each series'
rates over the interval; each series is one GPU's share (the engines divide
by their tensor and pipeline parallel sizes), so its MFU is its FLOP/s over
the device's dense peak for ``dtype`` and its MBU its read + written bytes/s
over the device's memory bandwidth; the engine's figure is the mean over its
series. The arithmetic is the C core's (``stats.c``), the peak the one rule
(:func:`~mfu_tracker.peaks._resolve.resolve_peak`). A share above 1 warns
once and is kept; a counter that went down (a restart) or never moved (the
estimates are off) gives no figure, with a note saying which.

The text format parser is this module's own (no prometheus_client needed).
Units: FLOP/s, bytes/s, seconds, shares.
"""
from __future__ import annotations

import dataclasses
import math
import re
import time
import warnings
from typing import Any, Optional

from .._native import _C
from .._validate import check_positive_number
from ..peaks._resolve import resolve_peak
from ..peaks._table import GPUSpec

__all__ = ["EngineSeries", "EngineUtilization", "Scrape", "engine_utilization",
           "parse_exposition", "read_scrape"]

ENGINES = ("vllm", "sglang")
_FLOPS, _READ, _WRITE = ("estimated_flops_per_gpu_total", "estimated_read_bytes_per_gpu_total",
                         "estimated_write_bytes_per_gpu_total")
# name{labels} value [timestamp]: the text format's sample line
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

Labels = tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Scrape:
    """One exposition: ``samples`` maps (name, labels) to (value, timestamp
    in ms or None); ``time_s`` is the monotonic clock when it was fetched
    (None for a file)."""

    samples: dict[tuple[str, Labels], tuple[float, Optional[int]]]
    time_s: Optional[float]
    source: str


def _labels(text: str) -> Labels:
    inner, pos, out = text[1:-1], 0, []
    while pos < len(inner):
        match = _LABEL.match(inner, pos)
        if match is None:
            raise ValueError
        value = re.sub(r"\\[\\\"n]", lambda m: _UNESCAPE[m.group(0)], match.group(2))
        out.append((match.group(1), value))
        pos = match.end()
    return tuple(sorted(out))


def parse_exposition(text: str, source: str = "exposition") -> Scrape:
    """Prometheus' text exposition format into a :class:`Scrape` (comments
    and ``# HELP`` / ``# TYPE`` lines skipped; ``+Inf``, ``-Inf``, ``NaN``
    read as floats). ValueError naming the first malformed line."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    samples: dict[tuple[str, Labels], tuple[float, Optional[int]]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        try:
            if match is None:
                raise ValueError
            value = float(match.group(3))
            labels = _labels(match.group(2)) if match.group(2) else ()
        except ValueError:
            raise ValueError(f"{source}: line {number} is not a sample (name{{label=\"value\"}} "
                             f"value [timestamp]): {raw!r}") from None
        stamp = int(match.group(4)) if match.group(4) is not None else None
        samples[(match.group(1), labels)] = (value, stamp)
    return Scrape(samples, None, source)


def read_scrape(source: str, *, timeout_s: float = 10.0) -> Scrape:
    """An exposition from a URL (``http://host:8000/metrics``, fetched now,
    timed on the monotonic clock) or a file."""
    if source.startswith(("http://", "https://")):
        check_positive_number(timeout_s, "timeout_s")
        import urllib.request   # here: every mfu-tracker command imports this module

        with urllib.request.urlopen(source, timeout=timeout_s) as reply:  # noqa: S310 -- http(s) only
            text = reply.read().decode("utf-8", "replace")
        scrape = parse_exposition(text, source)
        return dataclasses.replace(scrape, time_s=time.monotonic())
    with open(source, encoding="utf-8") as handle:
        return parse_exposition(handle.read(), source)


@dataclasses.dataclass(frozen=True)
class EngineSeries:
    """One series of an engine's counters over the interval: one GPU's rates
    and shares (None where a counter is missing, reset or never moved)."""

    engine: str
    labels: dict[str, str]
    flops_per_sec: Optional[float]
    read_bytes_per_sec: Optional[float]
    write_bytes_per_sec: Optional[float]
    mfu: Optional[float]
    mbu: Optional[float]

    @property
    def bytes_per_sec(self) -> Optional[float]:
        """Read + written bytes/s (MBU's numerator)."""
        if self.read_bytes_per_sec is None or self.write_bytes_per_sec is None:
            return None
        return self.read_bytes_per_sec + self.write_bytes_per_sec


@dataclasses.dataclass(frozen=True)
class EngineUtilization:
    """The engines' figures between two scrapes: MBU (a rollout's decode is
    bound by memory) and MFU as the mean over the series, each series, the
    denominators, and notes on what gave no figure."""

    mbu: Optional[float]
    mfu: Optional[float]
    series: tuple[EngineSeries, ...]
    interval_s: float
    peak_flops_per_sec: Optional[float]
    peak_bytes_per_sec: Optional[float]
    dtype: str
    notes: tuple[str, ...]

    def __str__(self) -> str:
        def share(x: Optional[float]) -> str:
            return "n/a" if x is None else f"{x:.4g}"
        lines = [f"MBU {share(self.mbu)} · MFU {share(self.mfu)} over {self.interval_s:.4g} s "
                 f"({len(self.series)} series; peak "
                 + ("n/a" if self.peak_flops_per_sec is None
                    else f"{self.peak_flops_per_sec / 1e12:g} TFLOP/s {self.dtype}") + ", "
                 + ("n/a" if self.peak_bytes_per_sec is None
                    else f"{self.peak_bytes_per_sec / 1e12:g} TB/s") + " per GPU)"]
        for s in self.series:
            tags = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            rate = "n/a" if s.flops_per_sec is None else f"{s.flops_per_sec / 1e12:.4g} TFLOP/s"
            moved = "n/a" if s.bytes_per_sec is None else f"{s.bytes_per_sec / 1e9:.4g} GB/s"
            lines.append(f"  {s.engine}{{{tags}}}: MBU {share(s.mbu)} ({moved}) · "
                         f"MFU {share(s.mfu)} ({rate})")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _interval(first: Scrape, second: Scrape, interval_s: Optional[float]) -> float:
    if interval_s is not None:
        return check_positive_number(interval_s, "interval_s")
    if first.time_s is not None and second.time_s is not None and second.time_s > first.time_s:
        return second.time_s - first.time_s
    stamps = [(v[1], second.samples.get(k, (0, None))[1]) for k, v in first.samples.items()
              if k[0].endswith(_FLOPS)]
    if stamps and all(a is not None and b is not None and b > a for a, b in stamps):
        return (stamps[0][1] - stamps[0][0]) / 1e3
    raise ValueError("interval_s: the seconds between the two scrapes are not known (files "
                     "without timestamps): give interval_s")


def _rate(name: str, labels: Labels, first: Scrape, second: Scrape, dt: float,
          notes: list[str]) -> Optional[float]:
    a, b = first.samples.get((name, labels)), second.samples.get((name, labels))
    where = f"{name}{{{','.join(f'{k}={v}' for k, v in labels)}}}"
    if a is None or b is None:
        notes.append(f"{where}: not in both scrapes")
        return None
    if b[0] < a[0]:
        notes.append(f"{where}: went down ({a[0]:.6g} -> {b[0]:.6g}): the engine restarted "
                     "between the scrapes")
        return None
    if a[0] == 0.0 and b[0] == 0.0:
        notes.append(f"{where}: 0 in both scrapes: the engine does not estimate it (vLLM: "
                     "--enable-mfu-metrics), or served nothing yet")
        return None
    return (b[0] - a[0]) / dt


_warned: set[str] = set()


def _warn_above_one(name: str, value: Optional[float]) -> None:
    """One warning per figure and process (unclamped: the value is kept)."""
    if value is not None and value > 1.0 and name not in _warned:
        _warned.add(name)
        warnings.warn(f"mfu_tracker: engine {name} {value:.3f} > 1: the engine's estimate "
                      "exceeds the peak (a wrong peak or dtype, or an estimate too high); "
                      "reported unclamped", RuntimeWarning, stacklevel=3)


def _series(engine: str, labels: Labels, first: Scrape, second: Scrape, dt: float,
            peak: Any, notes: list[str]) -> EngineSeries:
    flops = _rate(f"{engine}:{_FLOPS}", labels, first, second, dt, notes)
    read = _rate(f"{engine}:{_READ}", labels, first, second, dt, notes)
    write = _rate(f"{engine}:{_WRITE}", labels, first, second, dt, notes)
    moved = None if read is None or write is None else (read + write) * dt
    ratios = _C.compute_metrics(0.0 if flops is None else flops * dt, dt, param_bytes=moved,
                                peak_flops_per_sec=peak.flops_per_sec,
                                peak_bytes_per_sec=peak.bytes_per_sec)
    return EngineSeries(engine, dict(labels), flops, read, write,
                        None if flops is None else ratios["mfu"], ratios["mbu"])


def _mean(values: list[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return math.fsum(known) / len(known) if known else None


def engine_utilization(
    first: Scrape,
    second: Scrape,
    *,
    interval_s: Optional[float] = None,
    dtype: Any = None,
    device: Any = None,
    spec: Optional[GPUSpec] = None,
    peak_tflops: Optional[float] = None,
) -> EngineUtilization:
    """MBU and MFU of the vLLM / SGLang series between two scrapes.

    Args:
        first, second: :func:`read_scrape` / :func:`parse_exposition` results,
            ``first`` earlier.
        interval_s: seconds between them (default: the fetch times of two URL
            scrapes, else the samples' timestamps; files without either need it).
        dtype: the dtype whose dense peak is the MFU denominator (the engine's
            compute dtype; None: bf16, or fp16 on a device without bf16;
            docs/conventions.md).
        device, spec, peak_tflops: the peak, as :func:`~mfu_tracker.compute_mfu`
            takes it (a spec from :func:`~mfu_tracker.lookup_gpu_spec` for the
            engine's GPU: this machine is rarely the server).
    """
    dt = _interval(first, second, interval_s)
    peak = resolve_peak(dtype, device=device, spec=spec, peak_tflops=peak_tflops)
    notes: list[str] = []
    keys = sorted({(name.split(":", 1)[0], labels) for name, labels in first.samples
                   if name in {f"{e}:{_FLOPS}" for e in ENGINES}})
    if not keys:
        raise ValueError(f"{first.source}: no vllm:{_FLOPS} or sglang:{_FLOPS} series: not a "
                         "vLLM / SGLang /metrics exposition, or one without the estimates")
    series = tuple(_series(engine, labels, first, second, dt, peak, notes)
                   for engine, labels in keys)
    mfu, mbu = _mean([s.mfu for s in series]), _mean([s.mbu for s in series])
    _warn_above_one("MBU", mbu)
    _warn_above_one("MFU", mfu)
    return EngineUtilization(mbu, mfu, series, dt, peak.flops_per_sec, peak.bytes_per_sec,
                             peak.dtype, tuple(notes))
