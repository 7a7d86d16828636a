"""MFU as the frameworks would report it for the same run.

The run's MFU is ours: its model FLOPs exactly as counted (or as given).
verl, VeOmni, Megatron-LM, torchtitan and nanoGPT count a step by their own
formulas (:func:`mfu_tracker.transformer_flops` with ``convention=``,
docs/framework-conventions.md), so for the same run -- the same step time,
the same peak -- each logs a different MFU:

    MFU_framework = (their FLOPs per token x tokens/s) / peak_tflops

with tokens/s and peak_tflops (the peak of every device) from the line that
gives our MFU, and their FLOPs per token counted for the run's model config
and sequence length (the run record's ``model``: ``Tracker(model_info=...)``,
:mod:`mfu_tracker.job._model_info`). The range is the lowest to the highest
of them. Without the config or the sequence length there is no range and
the page says which is missing; a framework without a formula for the model
type is listed with its reason (what it logs instead).

The counts depend on the run record only: they are computed once per run.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...job._records import Run
from ..report._model import number
from ._figure import DERIVED, Figure, Newest

__all__ = ["ConventionRange"]

NO_MODEL = ("no range: the run record has no model config and sequence length (give "
            "Tracker(model_info={'config': model.config, 'seq_len': S}); mfu-tracker run "
            "records them for a transformers model)")

Counts = Tuple[Optional[float], List[Dict[str, Any]], List[Dict[str, str]], Optional[str]]


def _counts(config: Any, seq_len: int) -> Counts:
    """(our analytic FLOPs per token, each framework's {name, framework,
    flops_per_token, source, function}, the refusals {name, why}, why there are
    none)."""
    from ...flops._analytic import transformer_flops
    from ...flops._conventions import convention_table

    if isinstance(config, str):
        from ...flops.presets import resolve_model_config

        config = resolve_model_config(config, argument="model_info['config']")
    try:
        ours = transformer_flops(config, seq_len=seq_len, batch_size=1).flops_per_token
    except (ValueError, TypeError, LookupError) as error:
        return None, [], [], f"no range: the model config cannot be counted ({error})"
    counted: List[Dict[str, Any]] = []
    refused: List[Dict[str, str]] = []
    for row in convention_table()[1:]:           # the first row is ours
        try:
            theirs = transformer_flops(config, seq_len=seq_len, batch_size=1,
                                       convention=row["name"])
        except (ValueError, TypeError, LookupError) as error:
            refused.append({"name": row["name"], "framework": row["framework"],
                            "why": str(error)})
            continue
        info = theirs.conventions["convention"]
        counted.append({"name": row["name"], "framework": row["framework"],
                        "flops_per_token": theirs.flops_per_token,
                        "source": info["source"], "function": info["function"]})
    return ours, counted, refused, None


class ConventionRange:
    """The frameworks' MFU for a run (module docstring), their counts cached per run."""

    def __init__(self) -> None:
        self._cache: Dict[Tuple[str, int], Counts] = {}

    def _of(self, run: Run) -> Optional[Counts]:
        model = run.get("model") if isinstance(run.get("model"), dict) else {}
        config, seq_len = model.get("config"), model.get("seq_len")
        if config is None or not isinstance(seq_len, int):
            return None
        key = (str(run.get("run_id")), run.line)
        if key not in self._cache:
            self._cache = {key: _counts(config, seq_len)}   # one run drawn at a time
        return self._cache[key]

    def state(self, run: Run, newest: Newest, mfu: Optional[float]) -> Dict[str, Any]:
        """The range (JSON): the chosen convention, each framework's MFU as a
        figure with its formula and inputs, the refusals, or why there is none."""
        model = run.get("model") if isinstance(run.get("model"), dict) else {}
        chosen = model.get("convention")
        out: Dict[str, Any] = {"convention": chosen or "mfu_tracker",
                               "ours": chosen is None}
        if chosen is not None:
            out["absent"] = (f"the run's FLOPs follow {chosen}'s convention (declared): its MFU "
                             f"is {chosen}'s, not ours, so no range is shown")
            return out
        counts = self._of(run)
        if counts is None:
            out["absent"] = NO_MODEL
            return out
        ours, counted, refused, why = counts
        if why is not None:
            out["absent"] = why
            return out
        tokens = newest.same_line("mfu", "tokens_per_sec")
        peak = newest.same_line("mfu", "peak_tflops")
        if mfu is None or tokens is None or not peak:
            out["absent"] = ("no range: it needs our MFU line's tokens/s and peak_tflops "
                             "(tokens per step and a peak)")
            return out
        figures = [self._figure(row, tokens, peak, newest) for row in counted]
        values = [f.value for f in figures if f.value is not None] + [mfu]
        out.update(range=[min(values), max(values)], frameworks=[f.to_json() for f in figures],
                   refused=refused, ours_analytic_flops_per_token=ours,
                   seq_len=model.get("seq_len"))
        return out

    @staticmethod
    def _figure(row: Dict[str, Any], tokens: float, peak: float, newest: Newest) -> Figure:
        per_token = row["flops_per_token"]
        inputs = [
            Figure("flops_per_token", f"{row['framework']}'s FLOPs per token", per_token,
                   "FLOP", DERIVED, formula=f"{row['source']}, {row['function']}, for the "
                   f"run's config and sequence length",
                   source="the run record's model (config, seq_len)"),
            newest.input("tokens_per_sec", "mfu", "tokens/s", "measured"),
            newest.input("peak_tflops", "mfu", "MFU's denominator", DERIVED),
        ]
        value = per_token * tokens / (peak * 1e12)
        return Figure(f"mfu_{row['name']}", f"MFU as {row['framework']} counts",
                      number(value), "ratio", DERIVED,
                      formula="their FLOPs per token x tokens/s / (peak_tflops x 1e12)",
                      inputs=inputs)
