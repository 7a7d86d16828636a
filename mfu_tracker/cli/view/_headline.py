"""The page's head: the run, MFU's denominator and the headline figures
(MFU, HFU, MBU, tokens/s, step time, model FLOPs per step), each with how it
was obtained and its formula (:mod:`._figure`)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...job._records import Run
from ...peaks._table import GIVE_A_PEAK
from ..report._model import number
from ._figure import COUNTED, DECLARED, DERIVED, MEASURED, PEAK_HOW, Figure, Newest

__all__ = ["flops_how", "headline", "peak_figure", "run_facts"]

#: How model FLOPs per step were obtained, in words (the run record's model.flops).
FLOPS_WORDS = {"counted": "counted (the FLOP counter, every counted op of the step)",
               "declared": "declared (a number given: flops_per_step= or --flops-per-step)",
               "analytic": "analytic (a formula from the model's config)"}
NOT_RECORDED = ("the run record does not say how (Tracker(model_info={'flops': 'counted'}) "
                "records it; mfu-tracker run does)")


def flops_how(run: Run) -> str:
    """How the run's model FLOPs were obtained: counted / declared / analytic
    ("" when the run record does not say)."""
    model = run.get("model") or {}
    how = model.get("flops") if isinstance(model, dict) else None
    return how if how in FLOPS_WORDS else ""


def _line(run: Run) -> str:
    return f"line {run.line} (run record)"


def run_facts(run: Run) -> Dict[str, Any]:
    """The run record's facts the page prints as they are."""
    model = run.get("model") if isinstance(run.get("model"), dict) else {}
    config = model.get("config")
    model_type = config.get("model_type") if isinstance(config, dict) else config
    return {"number": run.number, "line": run.line, "job": run.get("job"),
            "run_id": run.get("run_id"), "host": run.get("host"), "ranks": run.get("ranks"),
            "devices": run.get("devices"), "dtype": run.get("dtype"),
            "device": run.get("device"), "start_step": run.get("start_step"),
            "version": run.get("version"), "model_type": model_type,
            "seq_len": model.get("seq_len"), "flops": flops_how(run) or None,
            "convention": model.get("convention"), "ended": run.end is not None}


def peak_figure(run: Run) -> Figure:
    """The per-device peak, as the run record holds it."""
    peak = number(run.get("peak_tflops"))
    source = run.get("peak_source") or "unknown"
    device, dtype = run.get("device") or "the device", run.get("dtype") or "?"
    if peak is None:
        return Figure("peak_per_device", "peak per device", None, "TFLOP/s", "",
                      absent=f"no peak for {device} ({source}): {GIVE_A_PEAK}")
    how = PEAK_HOW.get(source, DECLARED)
    formula = {"datasheet": f"the peak table's row for {device}, dense {dtype}",
               "measured": f"a GEMM micro-benchmark on {device}, {dtype}",
               "user": "given (peak_tflops=, --peak-tflops or MFU_TRACKER_PEAK_TFLOPS)"}
    return Figure("peak_per_device", "peak per device", peak, "TFLOP/s", how,
                  formula=formula.get(source, source),
                  source=f"{_line(run)}: peak_tflops, peak_source={source!r}")


def _denominator(newest: Newest, run: Run) -> Figure:
    devices = number(run.get("devices"))
    peak = peak_figure(run)
    inputs = [peak, Figure("devices", "devices", devices, "devices", COUNTED,
                           formula="ranks x num_gpus", source=f"{_line(run)}: devices")]
    figure = newest.figure("peak_tflops", "MFU's denominator", DERIVED,
                           formula="peak per device x devices", inputs=inputs,
                           absent=peak.absent or "")
    if peak.value is not None and devices is not None:
        figure.check = peak.value * devices
    return figure


def _flops_per_step(newest: Newest, how: str) -> Figure:
    achieved = newest.input("achieved_tflops", "mfu", "achieved TFLOP/s (model FLOP/s, every "
                            "device)", DERIVED)
    step_time = newest.input("step_time_s", "mfu", "step time", MEASURED)
    record = newest.line("mfu")
    words = FLOPS_WORDS.get(how, NOT_RECORDED)
    figure = Figure("model_flops_per_step", "model FLOPs per step", None, "FLOP", how or DERIVED,
                    formula=f"achieved_tflops x 1e12 x step_time_s (the window's mean, every "
                            f"device); the FLOPs were {words}", inputs=[achieved, step_time])
    if achieved.value is None or step_time.value is None or record is None:
        figure.absent = ("needs the model FLOPs of the steps (flops_per_step=, a step's "
                         "model_flops, or the FLOP counter), a step time and a peak")
    else:
        figure.value = achieved.value * 1e12 * step_time.value
        figure.source = (f"line {record['_line']} (step {record['step']}): "
                         f"{newest.key('achieved_tflops')} x {newest.key('step_time_s')}")
    return figure


def _mfu(newest: Newest, denominator: Figure, flops: Figure) -> Figure:
    step_time = newest.input("step_time_s", "mfu", "step time", MEASURED)
    figure = newest.figure(
        "mfu", "MFU", DERIVED,
        formula="model FLOPs per step / step time / MFU's denominator (peak per device x "
                "devices)", inputs=[flops, step_time, denominator],
        absent=f"no MFU: {denominator.absent}" if denominator.absent else
        "no MFU value in the log (needs the model FLOPs per step and a peak)")
    if None not in (figure.value, flops.value, step_time.value, denominator.value) and \
            step_time.value and denominator.value:
        figure.check = flops.value / step_time.value / (denominator.value * 1e12)  # type: ignore[operator]
    return figure


def _ratios(newest: Newest) -> List[Figure]:
    """HFU, MBU, tokens/s, step time and the other MFUs, when logged."""
    out = [
        newest.figure("hfu", "HFU", DERIVED,
                      formula="executed FLOPs (recompute included) / step time / peak",
                      absent="needs the executed FLOPs (executed_flops_per_step=, or the FLOP "
                             "counter) and a peak"),
        newest.figure("mbu", "MBU", DERIVED,
                      formula="parameter bytes per step / step time / peak bandwidth",
                      absent="needs param_bytes= and the device's memory bandwidth"),
        newest.figure("tokens_per_sec", "tokens/s", MEASURED,
                      formula="tokens of the window's steps / the window's seconds",
                      absent="needs the tokens per step (num_tokens=, the integrations, or "
                             "--tokens-per-step)"),
        newest.figure("step_time_s", "step time", MEASURED,
                      formula="the mean step period over the window (boundary to boundary, "
                              "on the step clock)"),
    ]
    for name, label, formula in (
            ("mfu_mixed", "MFU, mixed precision", "sum over dtypes of FLOPs / that dtype's "
             "peak, over time"),
            ("mfu_language", "MFU, language model only", "language-model FLOPs / time / peak"),
            ("mfu_vs_measured", "MFU vs the measured peak", "model FLOPs / time / the "
             "measured GEMM peak")):
        figure = newest.figure(name, label, DERIVED, formula=formula)
        if figure.value is not None:
            out.append(figure)
    return out


def headline(newest: Newest, run: Run, no_mfu: Optional[str]) -> Dict[str, Any]:
    """The head's figures (JSON): the denominator, MFU with its model FLOPs per
    step, and the other ratios."""
    how = flops_how(run)
    denominator = _denominator(newest, run)
    flops = _flops_per_step(newest, how)
    mfu = _mfu(newest, denominator, flops)
    if mfu.value is None and no_mfu:
        mfu.absent = no_mfu
    figures = [mfu, denominator, flops, *_ratios(newest)]
    return {"figures": [f.to_json() for f in figures],
            "flops": FLOPS_WORDS.get(how, NOT_RECORDED), "flops_how": how or None}
