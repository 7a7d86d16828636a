"""The Prometheus endpoint: the latest ``metrics()`` values as gauges.

``Tracker(metrics_port=P)`` (or ``MFU_TRACKER_METRICS_PORT=P``) serves, on
rank 0, ``http://<host>:P/metrics`` in Prometheus' text format. Each key
``{prefix}/a/b`` of the last ``metrics(prefix)`` becomes the gauge
``mfu_tracker_a_b`` with the labels ``job`` (:func:`~._records.job_name`),
``rank`` and ``prefix``; its help text is the key's meaning and unit from
the one table (:mod:`mfu_tracker.timing._metrics`). ``mfu_tracker_step`` is
the global step of those values.

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
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from .._install import DISTRIBUTION
from .._validate import check_int
from ..timing._metrics import FAMILIES, KEYS

#: The environment variable that asks for the endpoint.
PORT_ENV = "MFU_TRACKER_METRICS_PORT"
#: Gauge names: this prefix, then the key after ``{prefix}/`` with every
#: character outside [A-Za-z0-9_] replaced by "_".
NAMESPACE = "mfu_tracker"
LABELS = ("job", "rank", "prefix")
_HELP = {key.name: f"{key.meaning} ({key.unit})" for key in KEYS}
_HELP.update({family: f"{meaning} ({unit})" for family, unit, meaning in FAMILIES})

_SERVERS: Dict[int, "Endpoint"] = {}
_SERVERS_LOCK = threading.Lock()


def metrics_port(port: Any) -> Optional[int]:
    """The port asked for: ``port`` (checked, naming ``metrics_port``), else
    :data:`PORT_ENV` (checked, naming it), else None. Asked for without
    prometheus_client: ImportError (on every rank, so all of them stop)."""
    if port is not None:
        port = check_int(port, "metrics_port", 0, 65535)
        _client()
        return port
    text = os.environ.get(PORT_ENV, "").strip()
    if not text:
        return None
    _client()
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{PORT_ENV}={text!r} is not a port number (0 .. 65535)") from None
    if not 0 <= value <= 65535:
        raise ValueError(f"{PORT_ENV}={text!r} is not a port number (0 .. 65535)")
    return value


def gauge_name(name: str) -> str:
    """``a/b`` (a key without its prefix) -> ``mfu_tracker_a_b``."""
    return f"{NAMESPACE}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def _help(name: str) -> str:
    return _HELP.get(name, _HELP.get(name.split("/")[0], name))


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ImportError("Tracker(metrics_port=...) / MFU_TRACKER_METRICS_PORT needs "
                          "prometheus_client, the optional extra [prometheus]: "
                          f"pip install '{DISTRIBUTION}[prometheus]'") from None
    return prometheus_client


class Endpoint:
    """One port's gauges: the values of each prefix cached at the last
    ``metrics()`` (:meth:`update`), read by the scrape thread (:meth:`collect`)."""

    def __init__(self, port: int) -> None:
        client = _client()
        from prometheus_client.registry import CollectorRegistry

        # prefix -> (values without the prefix, step), and the labels
        self._cache: Tuple[Dict[str, Tuple[Dict[str, float], int]], Tuple[str, str]] = ({}, ("", "0"))
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        try:
            self.server, self.thread = client.start_http_server(port, registry=self.registry)
        except OSError as error:
            raise ValueError(f"metrics_port {port}: cannot serve the Prometheus endpoint "
                             f"({error})") from None
        self.port: int = int(self.server.server_port)

    def update(self, metrics: Mapping[str, float], *, prefix: str, step: int, job: str,
               rank: int) -> None:
        """Cache ``metrics`` (one ``metrics(prefix)`` dict): one assignment, no lock."""
        cut = len(prefix) + 1 if prefix else 0
        values = {key[cut:]: float(value) for key, value in metrics.items()}
        by_prefix, _ = self._cache
        self._cache = ({**by_prefix, prefix: (values, int(step))}, (job, str(rank)))

    def collect(self) -> Iterator[Any]:
        """The gauges (prometheus_client's collector protocol; the scrape thread)."""
        from prometheus_client.core import GaugeMetricFamily

        by_prefix, (job, rank) = self._cache   # one read of the reference
        families: Dict[str, Any] = {}
        for prefix, (values, step) in by_prefix.items():
            for name, value in (*values.items(), ("step", float(step))):
                gauge = gauge_name(name)
                family = families.get(gauge)
                if family is None:
                    help_text = "the global step of the values" if name == "step" else _help(name)
                    family = families[gauge] = GaugeMetricFamily(gauge, help_text,
                                                                 labels=LABELS)
                family.add_metric([job, rank, prefix], value)
        yield from families.values()

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
