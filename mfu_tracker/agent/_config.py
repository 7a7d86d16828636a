"""What ``mfu-tracker run`` tells the agent: one JSON object in one environment
variable, :data:`ENV_VAR`, checked on both sides.

The launcher builds a :class:`RunConfig` from its flags and puts
:meth:`RunConfig.to_env` into the child's environment, with the startup hook's
directory (:data:`BOOT_DIR`) first on ``PYTHONPATH``; every Python interpreter
the command starts (torchrun's workers included) inherits both, and the hook
arms the agent only where the variable is set. Values given on the command
line replace what the agent would detect; None means "detect it".

Units: FLOPs and tokens per optimizer step, TFLOP/s per device.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

from .._dtypes import normalize_dtype
from .._validate import (
    WARMUP_MAX,
    WINDOW_MAX,
    check_flag,
    check_int,
    check_job,
    check_log_path,
    check_optional_work,
    check_peak_tflops,
)

#: The environment variable holding the run's configuration (JSON). The
#: startup hook does nothing in an interpreter that lacks it.
ENV_VAR = "MFU_TRACKER_RUN"
#: The directory the launcher puts first on ``PYTHONPATH``: it holds only the
#: startup hook, ``sitecustomize.py``.
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_boot")


@dataclass(frozen=True)
class RunConfig:
    """One run's settings (module docstring); :meth:`checked` is the only way
    to build one, so every field holds a checked value.

    Attributes:
        log_path: the metrics log the run writes (the Tracker's ``log_path``).
        job: the job id of its run records (None: the Tracker's default).
        dtype: the peak's dtype, None to detect it.
        flops_per_step: model FLOPs per optimizer step, None to count them.
        tokens_per_step: tokens per optimizer step, None to read the inputs.
        peak_tflops: the per-device peak, None to look it up.
        measure_peak: measure a GEMM peak when the run starts (changes the run).
        log_every: optimizer steps between two metrics lines (and the window).
        warmup: first optimizer steps left out of the figures.
        count_every: count FLOPs on every N-th step (the others are scaled).
    """

    log_path: str
    job: Optional[str] = None
    dtype: Optional[str] = None
    flops_per_step: Optional[float] = None
    tokens_per_step: Optional[float] = None
    peak_tflops: Optional[float] = None
    measure_peak: bool = False
    log_every: int = 10
    warmup: int = 1
    count_every: int = 1

    @classmethod
    def checked(cls, **values: Any) -> "RunConfig":
        """A config from keyword values; ``TypeError`` / ``ValueError`` name a bad one."""
        config = cls(**values)
        log_path = check_log_path(config.log_path, "log_path")
        if log_path is None:
            raise ValueError("log_path must name the metrics log, got None")
        return cls(
            log_path=log_path,
            job=check_job(config.job),
            dtype=None if config.dtype is None else normalize_dtype(config.dtype),
            flops_per_step=check_optional_work(config.flops_per_step, "flops_per_step", "MFU"),
            tokens_per_step=check_optional_work(config.tokens_per_step, "tokens_per_step",
                                                "tokens/s"),
            peak_tflops=None if config.peak_tflops is None else check_peak_tflops(config.peak_tflops),
            measure_peak=check_flag(config.measure_peak, "measure_peak"),
            log_every=check_int(config.log_every, "log_every", 1, WINDOW_MAX),
            warmup=check_int(config.warmup, "warmup", 0, WARMUP_MAX),
            count_every=check_int(config.count_every, "count_every", 0),
        )

    def to_env(self) -> str:
        """The value of :data:`ENV_VAR` for this config."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> Optional["RunConfig"]:
        """The config in ``environ`` (default ``os.environ``); None when the
        variable is not set. A value that is not a config raises ``ValueError``."""
        text = (os.environ if environ is None else environ).get(ENV_VAR)
        if text is None:
            return None
        try:
            values = json.loads(text)
        except ValueError as error:
            raise ValueError(f"{ENV_VAR} is not JSON ({error})") from None
        if not isinstance(values, dict):
            raise ValueError(f"{ENV_VAR} must hold a JSON object, got {type(values).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{ENV_VAR} has unknown settings {unknown} (a launcher of "
                             "another version?)")
        return cls.checked(**values)
