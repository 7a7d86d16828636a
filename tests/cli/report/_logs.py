"""Metrics log lines written by hand, as the writer writes them
(mfu_tracker/job/_records.py's module docstring: a ``run`` record, metrics
lines with ``step``/``time`` and the metric keys)."""
from __future__ import annotations

P = "throughput"   # the metric prefix of every hand-written line here


def run_record(time=100.0, peak=100.0, source="datasheet", start_step=0, **extra):
    return {"record": "run", "time": time, "run_id": f"r{time:g}", "job": "j", "ranks": 1,
            "devices": 1, "process_start": time - 1.0, "start_step": start_step,
            "peak_tflops": peak, "peak_source": source, "dtype": "bf16", **extra}


def line(step, time=None, **values):
    """A metrics line: ``mfu=0.4`` is written ``throughput/mfu``; ``mfu_lost__data``
    (a double underscore for each slash) ``throughput/mfu_lost/data``."""
    return {"step": step, "time": 100.0 + step if time is None else time,
            **{f"{P}/{k.replace('__', '/')}": v for k, v in values.items()}}
