"""Progress and ETA against a budget (``--budget-tokens``, ``--budget-steps``).

From the newest metrics line of the drawn run:

* steps done: its ``step`` (the global step: the job's steps, earlier runs'
  included);
* tokens per step: ``tokens_per_sec x step_time_s`` of that line (the
  window's mean: exact when every step has the same tokens);
* tokens done: steps done x tokens per step (the same assumption, said);
* the fraction done against the budget, and the steps left;
* ETA: the steps left x the wall seconds per step so far in this run (from
  its first step boundary, ``ledger.first_boundary``, to the line's
  ``time``, over the steps in between): checkpoints, evaluation and logging
  included, as the run's own pace.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...job._records import Run
from ..report._model import Record, number
from ._figure import COUNTED, DECLARED, DERIVED, MEASURED, Figure, Newest

__all__ = ["progress"]

NO_BUDGET = ("no budget: give --budget-tokens N or --budget-steps N (mfu-tracker view, "
             "mfu-tracker run) for progress and an ETA")


def _newest(records: List[Record]) -> Optional[Record]:
    return max(records, key=lambda r: r["_line"]) if records else None


def _tokens_per_step(newest: Newest) -> Figure:
    tokens = newest.input("tokens_per_sec", "tokens_per_sec", "tokens/s", MEASURED)
    step_time = newest.input("step_time_s", "tokens_per_sec", "step time", MEASURED)
    figure = Figure("tokens_per_step", "tokens per step", None, "tokens", DERIVED,
                    formula="tokens_per_sec x step_time_s (the window's mean tokens per step)",
                    inputs=[tokens, step_time],
                    absent="needs tokens/s and the step time in one line (tokens per step: "
                           "num_tokens=, the integrations, or --tokens-per-step)")
    if tokens.value is not None and step_time.value is not None:
        figure.value, figure.absent = tokens.value * step_time.value, None
    return figure


def _eta(run: Run, record: Record, left_steps: Optional[float]) -> Figure:
    figure = Figure("eta_s", "ETA", None, "s", DERIVED,
                    formula="steps left x (the newest line's time - the run's first step "
                            "boundary) / the steps between them")
    if run.end is not None:
        figure.absent = "the run has ended"
        return figure
    ledger = record.get("ledger") if isinstance(record.get("ledger"), dict) else {}
    first = number(ledger.get("first_boundary"))
    when = number(record.get("time"))
    steps = record["step"] - int(run.get("start_step") or 0)
    if left_steps is None or first is None or when is None or steps <= 0 or when <= first:
        figure.absent = "needs a budget, the run's first step boundary and a step since it"
        return figure
    pace = (when - first) / steps
    figure.value = max(0.0, left_steps) * pace
    figure.inputs = [Figure("pace_s", "wall seconds per step", pace, "s", MEASURED,
                            source=f"line {record['_line']}: time, ledger.first_boundary, "
                                   f"step")]
    return figure


def progress(run: Run, records: List[Record], newest: Newest, budget_tokens: Optional[float],
             budget_steps: Optional[int]) -> Dict[str, Any]:
    """Progress (JSON): figures for steps and tokens done, the fraction, the
    steps left and the ETA; ``absent`` without a budget or a line."""
    record = _newest(records)
    if budget_tokens is None and budget_steps is None:
        return {"absent": NO_BUDGET}
    if record is None:
        return {"absent": "no metrics line yet"}
    done = Figure("steps_done", "steps done", float(record["step"]), "steps", COUNTED,
                  formula="the global step of the newest line (start_step + steps closed)",
                  source=f"line {record['_line']}: step")
    per_step = _tokens_per_step(newest)
    tokens_done = Figure("tokens_done", "tokens done", None, "tokens", DERIVED,
                         formula="steps done x tokens per step (every step assumed to hold "
                                 "the window's mean)", inputs=[done, per_step],
                         absent=per_step.absent)
    if per_step.value is not None:
        tokens_done.value = done.value * per_step.value      # type: ignore[operator]
    figures = [done, per_step, tokens_done]
    if budget_steps is not None:
        budget = Figure("budget_steps", "budget", float(budget_steps), "steps", DECLARED,
                        source="--budget-steps")
        fraction, left = done.value / budget_steps, budget_steps - done.value  # type: ignore[operator]
    else:
        budget = Figure("budget_tokens", "budget", float(budget_tokens), "tokens",  # type: ignore[arg-type]
                        DECLARED, source="--budget-tokens")
        fraction = None if tokens_done.value is None else tokens_done.value / budget.value  # type: ignore[operator]
        left = None if per_step.value in (None, 0.0) else \
            (budget.value - tokens_done.value) / per_step.value  # type: ignore[operator]
    done_figure = Figure("fraction_done", "done", fraction, "ratio", DERIVED,
                         formula=f"{'steps' if budget_steps is not None else 'tokens'} done / "
                                 f"budget", inputs=[budget],
                         absent=None if fraction is not None else per_step.absent)
    left_figure = Figure("steps_left", "steps left", left, "steps", DERIVED,
                         formula="budget left / tokens per step" if budget_steps is None
                         else "budget - steps done",
                         absent=None if left is not None else per_step.absent)
    figures += [budget, done_figure, left_figure, _eta(run, record, left)]
    return {"figures": [f.to_json() for f in figures]}
