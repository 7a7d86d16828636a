"""The passport as Markdown: the compute section of a model card
(:mod:`._passport` builds its data)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

__all__ = ["markdown"]


def _value(figure: Dict[str, Any]) -> Any:
    return figure.get("value")


def _listed(values: Optional[List[Any]]) -> str:
    return ", ".join(str(v) for v in values) if values else "not recorded"


def _si(value: float, unit: str) -> str:
    """``value`` with an SI prefix: 4.56e18 FLOP -> "4.56 EFLOP"."""
    for factor, prefix in ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"),
                           (1e9, "G"), (1e6, "M")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def _pct(value: Optional[float]) -> str:
    return "not available" if value is None else f"{value * 100:.2f}%"


def _hardware_row(data: Dict[str, Any]) -> str:
    hw = data["hardware"]
    devices = _value(hw["devices"])
    count = _listed(devices) if devices else "?"
    return (f"{count} x {_listed(_value(hw['device']))} ({_listed(_value(hw['dtype']))}); "
            f"{_listed(_value(hw['ranks']))} process(es); host {_listed(_value(hw['hosts']))}")


def _mfu_row(data: Dict[str, Any]) -> str:
    mfu = data["mfu"]
    peak, source = _value(mfu["peak_per_device"]), _value(mfu["peak_source"])
    denominator = _value(mfu["denominator"])
    convention = _value(mfu["convention"])
    obtained = _value(mfu["flops_obtained"]) or "FLOPs source not recorded"
    against = ("no peak: MFU not available" if peak is None else
               f"vs {peak:.4g} TFLOP/s per device ({source}) = {denominator:.4g} TFLOP/s")
    return (f"{_pct(_value(mfu['job_mfu']))} over the job (job MFU), "
            f"{_pct(_value(mfu['last_window_mfu']))} in the last logged window; convention "
            f"{convention}, model FLOPs {obtained}; {against}")


def _energy_row(data: Dict[str, Any]) -> str:
    energy = data["energy"]
    joules = _value(energy["energy_j"])
    if joules is None:
        return "not measured (no power readings in the log)"
    return (f"{_value(energy['energy_kwh']):.4g} kWh ({joules:.4g} J) measured by NVML, "
            f"{energy['lines_with_power']['from']}")


def markdown(data: Dict[str, Any]) -> str:
    """The Markdown section of the passport ``data`` (:func:`._passport.passport_of_log`)."""
    hours = _value(data["device_hours"])
    flops = _value(data["model_flops"])
    wall = _value(data["job_wall_s"])
    rows = [
        ("Hardware", _hardware_row(data)),
        ("Device-hours", "not available (a run without its devices)" if hours is None
         else f"{hours:.4g} device-hours (GPU-hours on GPUs) over {wall / 3600:.4g} h of wall "
              f"time"),
        ("Training compute", "not available (the log lacks some steps' model FLOPs)"
         if flops is None else f"{_si(flops, 'FLOP')} model FLOPs ({flops:.6g})"),
        ("MFU", _mfu_row(data)),
        ("Goodput", f"{_pct(_value(data['goodput']))} of the job's wall time"),
        ("Energy", _energy_row(data)),
    ]
    runs = data["runs"]
    lines = ["## Compute", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {text} |" for name, text in rows]
    lines += ["", f"Measured by mfu-tracker {data.get('version') or ''} from `{data['log']}` "
              f"(job {data['job_id']}, run{'s' if len(runs) > 1 else ''} "
              f"{', '.join(map(str, runs))}); each figure with the records it came from: "
              f"`mfu-tracker passport --json`."]
    return "\n".join(lines)
