"""The Prometheus endpoint: the latest ``metrics()`` values as gauges.

``Tracker(metrics_port=P)`` (or ``MFU_TRACKER_METRICS_PORT=P``) serves, on
rank 0, ``http://<host>:P/metrics`` in Prometheus' text format. Each key
``{prefix}/a/b`` of the last ``metrics(prefix)`` becomes the gauge
``mfu_tracker_a_b`` with the labels ``job`` (:func:`~._records.job_name`),
``rank`` (the serving rank, 0) and ``prefix``; its help text is the key's
meaning and unit from the one table (:mod:`mfu_tracker.timing._metrics`).
``mfu_tracker_step`` is the global step of those values.

**Every rank.** Under a process group, ``metrics()`` gathers every rank's
window figures (:mod:`mfu_tracker.distributed._figures`); rank 0 serves,
for each of :data:`RANK_GAUGES` (``mfu``, ``hfu``, ``step_time_s``,
``tokens_per_sec``, ``achieved_tflops``, ``power_w``, ``phase_s/<phase>``,
the interval step time), its quantiles over the ranks:
``mfu_tracker_ranks_<name>{job, rank, prefix, quantile}`` for
:data:`QUANTILES` (0 is the lowest rank's value, 1 the highest: quantile 1
of ``mfu`` is the logged ``mfu_rank_max``) -- a number of series that does
not grow with the job. One series per rank, ``mfu_tracker_rank_<name>{job,
rank, prefix}``, is opt-in (:data:`PER_RANK_ENV` ``=1``): at 1,024 ranks it
is ~13,000 series per scrape, rendered on the training process
(``docs/performance.md``). Scrape with ``honor_labels: true`` so the ``job``
label is this one, not the scrape config's.

The scrape runs on prometheus_client's server thread and reads the values
*cached* at the last ``metrics()``: it never calls ``metrics()``, never runs a
collective, and shares no lock with the training loop -- ``metrics()``
replaces the cache with one reference assignment, so a scrape sees either the
old values or the new ones, and a step never waits for a scrape.

One server per port per process: a second tracker on the same port (a
second ``trainer.train()``) takes the endpoint over; after ``close()`` the
last values stay served until the process exits (a daemon thread). Port 0 picks a free
port (``Tracker.metrics_port`` says which). ``prometheus_client`` is the
optional extra ``[prometheus]``; without it, asking for the endpoint raises
one ``ImportError`` that says so.
"""
from __future__ import annotations

import os
import re
import threading
import math
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Tuple

from .._install import extra_install
from .._validate import check_int
from ..timing._metrics import FAMILIES, KEYS

#: The environment variable that asks for the endpoint.
PORT_ENV = "MFU_TRACKER_METRICS_PORT"
#: The environment variable that asks for one series per rank (``1``; ``0``
#: or unset: the quantiles over ranks only).
PER_RANK_ENV = "MFU_TRACKER_METRICS_PER_RANK"
#: The quantiles over ranks served for each per-rank figure (0: the minimum, 1: the maximum).
QUANTILES: Tuple[float, ...] = (0.0, 0.1, 0.5, 0.9, 1.0)
#: Gauge names: this prefix, then the key after ``{prefix}/`` with every
#: character outside [A-Za-z0-9_] replaced by "_".
NAMESPACE = "mfu_tracker"
LABELS = ("job", "rank", "prefix")
_HELP = {key.name: f"{key.meaning} ({key.unit})" for key in KEYS}
_HELP.update({family: f"{meaning} ({unit})" for family, unit, meaning in FAMILIES})

#: The per-rank gauges (``mfu_tracker_rank_<name>``): a rank row's figure by
#: the metric table's name, read from :class:`~mfu_tracker.distributed._figures.RankFigures`
#: and the ratios it forms (``RankFigures.figures()``, formed once per row).
RANK_GAUGES: Tuple[Tuple[str, Callable[[Any, Mapping[str, Any]], Optional[float]]], ...] = (
    ("mfu", lambda r, f: f["mfu"]),
    ("hfu", lambda r, f: f["hfu"]),
    ("step_time_s", lambda r, f: r.step_time_s),
    ("step_time_interval_s", lambda r, f: r.interval_step_time_s),
    ("tokens_per_sec", lambda r, f: f["tokens_per_sec"]),
    ("achieved_tflops", lambda r, f: None if f["achieved_flops_per_sec"] is None
     else f["achieved_flops_per_sec"] * 1e-12),
    ("power_w", lambda r, f: r.power_w),
)
RANK_NAMESPACE = f"{NAMESPACE}_rank"
QUANTILE_NAMESPACE = f"{NAMESPACE}_ranks"

_SERVERS: Dict[int, "Endpoint"] = {}
_SERVERS_LOCK = threading.Lock()


def metrics_port(port: Any) -> Optional[int]:
    """The port asked for: ``port`` (checked, naming ``metrics_port``), else
    :data:`PORT_ENV` (checked, naming it), else None; :data:`PER_RANK_ENV`
    checked with it. Asked for without prometheus_client: ImportError (on
    every rank, so all of them stop)."""
    if port is not None:
        port = check_int(port, "metrics_port", 0, 65535)
        _client()
        per_rank_series()
        return port
    text = os.environ.get(PORT_ENV, "").strip()
    if not text:
        return None
    _client()
    per_rank_series()
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{PORT_ENV}={text!r} is not a port number (0 .. 65535)") from None
    if not 0 <= value <= 65535:
        raise ValueError(f"{PORT_ENV}={text!r} is not a port number (0 .. 65535)")
    return value


def gauge_name(name: str, namespace: str = NAMESPACE) -> str:
    """``a/b`` (a key without its prefix) -> ``mfu_tracker_a_b``."""
    return f"{namespace}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def _rank_help(name: str) -> str:
    if name == "step_time_interval_s":
        return "host seconds per step since the previous aggregation (s)"
    return _help(name)


def _help(name: str) -> str:
    return _HELP.get(name, _HELP.get(name.split("/")[0], name))


def per_rank_series() -> bool:
    """Whether :data:`PER_RANK_ENV` asks for one series per rank (``1`` /
    ``0`` / unset; anything else: ValueError naming it)."""
    text = os.environ.get(PER_RANK_ENV, "").strip()
    if text not in ("", "0", "1"):
        raise ValueError(f"{PER_RANK_ENV}={text!r}: give 1 (one series per rank) or 0 "
                         f"(the quantiles over ranks only)")
    return text == "1"


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ascending ``ordered`` values: linear between the
    order statistics at ``(n - 1) q`` (numpy's default, type 7 of Hyndman and
    Fan), so 0 is the minimum and 1 the maximum exactly."""
    at = (len(ordered) - 1) * q
    low = math.floor(at)
    if low + 1 >= len(ordered):
        return float(ordered[-1])
    return float(ordered[low] + (at - low) * (ordered[low + 1] - ordered[low]))


def rank_quantiles(per_rank: Mapping[int, Mapping[str, float]]) -> Dict[str, Dict[float, float]]:
    """``{name: {q: value}}`` over the ranks that have the figure (:data:`QUANTILES`)."""
    by_name: Dict[str, list] = {}
    for values in per_rank.values():
        for name, value in values.items():
            by_name.setdefault(name, []).append(value)
    return {name: {q: quantile(sorted(values), q) for q in QUANTILES}
            for name, values in by_name.items()}


def rank_values(rows: Sequence[Any]) -> Dict[int, Dict[str, float]]:
    """Each rank's gauges (:data:`RANK_GAUGES` and its ``phase_s/<phase>``)
    from the aggregation's rows; a figure a rank lacks is left out."""
    out: Dict[int, Dict[str, float]] = {}
    for row in rows:
        formed = row.figures()
        values = {name: get(row, formed) for name, get in RANK_GAUGES}
        values.update({f"phase_s/{name}": v for name, v in row.phase_s.items()})
        out[int(row.rank)] = {k: float(v) for k, v in values.items()
                              if v is not None and math.isfinite(v)}
    return out


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ImportError("Tracker(metrics_port=...) / MFU_TRACKER_METRICS_PORT needs "
                          "prometheus_client, the optional extra [prometheus]: "
                          f"{extra_install('prometheus')}") from None
    return prometheus_client


class Gauges:
    """The gauges of one endpoint: the values of each prefix cached at the
    last ``metrics()`` (:meth:`update`), read by the scrape thread
    (:meth:`collect`, prometheus_client's collector protocol). ``per_rank``:
    one series per rank beside the quantiles (default: :data:`PER_RANK_ENV`)."""

    def __init__(self, per_rank: Optional[bool] = None) -> None:
        self.per_rank = per_rank_series() if per_rank is None else bool(per_rank)
        # prefix -> (values without the prefix, step, quantiles, each rank's values), labels
        self._cache: Tuple[Dict[str, Tuple[Dict[str, float], int, Dict[str, Dict[float, float]],
                                           Dict[int, Dict[str, float]]]],
                           Tuple[str, str]] = ({}, ("", "0"))

    def update(self, metrics: Mapping[str, float], *, prefix: str, step: int, job: str,
               rank: int, ranks: Optional[Sequence[Any]] = None) -> None:
        """Cache ``metrics`` (one ``metrics(prefix)`` dict) and the
        aggregation's rank rows (``ranks``; None: not distributed): one
        assignment, no lock."""
        cut = len(prefix) + 1 if prefix else 0
        values = {key[cut:]: float(value) for key, value in metrics.items()}
        per_rank = rank_values(ranks) if ranks else {}
        quantiles = rank_quantiles(per_rank)
        by_prefix, _ = self._cache
        entry = (values, int(step), quantiles, per_rank if self.per_rank else {})
        self._cache = ({**by_prefix, prefix: entry}, (job, str(rank)))

    def collect(self) -> Iterator[Any]:
        """The gauges (prometheus_client's collector protocol; the scrape thread)."""
        from prometheus_client.core import GaugeMetricFamily

        by_prefix, (job, rank) = self._cache   # one read of the reference
        families: Dict[str, Any] = {}

        def add(gauge: str, help_text: str, labels: Sequence[str], value: float,
                names: Sequence[str] = LABELS) -> None:
            family = families.get(gauge)
            if family is None:
                family = families[gauge] = GaugeMetricFamily(gauge, help_text, labels=names)
            family.add_metric(list(labels), value)

        for prefix, (values, step, quantiles, per_rank) in by_prefix.items():
            for name, value in (*values.items(), ("step", float(step))):
                help_text = "the global step of the values" if name == "step" else _help(name)
                add(gauge_name(name), help_text, (job, rank, prefix), value)
            for name, by_q in quantiles.items():
                for q, value in by_q.items():
                    add(gauge_name(name, QUANTILE_NAMESPACE),
                        f"quantiles over ranks of each rank's: {_rank_help(name)}",
                        (job, rank, prefix, f"{q:g}"), value, (*LABELS, "quantile"))
            for row_rank, row in per_rank.items():
                for name, value in row.items():
                    add(gauge_name(name, RANK_NAMESPACE), f"this rank's: {_rank_help(name)}",
                        (job, str(row_rank), prefix), value)
        yield from families.values()


class Endpoint(Gauges):
    """One port's :class:`Gauges`, served over HTTP by prometheus_client."""

    def __init__(self, port: int) -> None:
        client = _client()
        from prometheus_client.registry import CollectorRegistry

        super().__init__()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        try:
            self.server, self.thread = client.start_http_server(port, registry=self.registry)
        except OSError as error:
            raise ValueError(f"metrics_port {port}: cannot serve the Prometheus endpoint "
                             f"({error})") from None
        self.port: int = int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(port: int) -> Endpoint:
    """The endpoint on ``port`` in this process (started now, or the one already
    serving there). Raises ImportError without prometheus_client, ValueError
    when the port cannot be bound."""
    with _SERVERS_LOCK:
        endpoint = _SERVERS.get(port) if port else None
        if endpoint is None:
            endpoint = Endpoint(port)
            _SERVERS[endpoint.port] = endpoint
        return endpoint
