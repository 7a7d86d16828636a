"""Hand-written metrics-log lines for the job tests (the record layout of
docs/ and mfu_tracker/job/_records.py's docstring): one run record, metrics
lines carrying their ledger interval, a run end."""
from __future__ import annotations

import json

P = "throughput"


def run_record(time, *, process_start, start_step=0, run_id="r1", job=None, devices=1,
               peak_tflops=100.0):
    return {"record": "run", "time": time, "run_id": run_id, "job": job or run_id, "host": "h",
            "pid": 1, "ranks": devices, "devices": devices, "process_start": process_start,
            "start_step": start_step, "peak_tflops": peak_tflops, "peak_source": "user",
            "dtype": "bf16", "version": "0"}


def metrics_line(step, time, *, steps, step_s, data_s, first_boundary, flops_per_step=1e12,
                 phases=None, mfu=0.5):
    """A metrics line closing ``steps`` steps (``step - steps`` <= s < ``step``)
    of ``step_s`` seconds each, ``data_s`` of each in the data phase."""
    phase_s = {"data": data_s * steps, "forward": (step_s - data_s) * steps}
    phase_s.update(phases or {})
    return {"step": step, "time": time, f"{P}/mfu": mfu, f"{P}/step_time_s": step_s,
            "ledger": {"from_step": step - steps, "to_step": step, "step_s": step_s * steps,
                       "phase_s": phase_s, "own_s": 0.0, "dropped": 0,
                       "model_flops": None if flops_per_step is None else flops_per_step * steps,
                       "flops_steps": steps if flops_per_step is not None else 0,
                       "flops_ranks": 1, "compile_calls": 0, "first_boundary": first_boundary,
                       "first_step_s": step_s}}


def write(path, lines):
    """``lines`` (dicts as JSON, strings as they are) into ``path``, one a line."""
    path.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n"
                            for line in lines))
    return path
