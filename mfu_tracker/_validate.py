"""The one validation vocabulary of the Python layer.

Every public function and constructor checks its arguments with these
helpers, so a bad value gets the same kind of error everywhere, naming the
argument: ``TypeError`` for a wrong type, ``ValueError`` for a value out of
range. Bounds are the C core's (``csrc/core/base/mfu_limits.h``, exported as
``_C.LIMIT_*``); none is written here.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence, Tuple

from ._native import _C

#: Bounds shared with the C core (csrc/core/base/mfu_limits.h).
WINDOW_MAX: int = _C.LIMIT_WINDOW_MAX
WARMUP_MAX: int = _C.LIMIT_WARMUP_MAX
NUM_GPUS_MAX: int = _C.LIMIT_NUM_GPUS_MAX
PARALLEL_DEGREE_MAX: int = _C.LIMIT_PARALLEL_DEGREE_MAX
COUNTERS_MAX: int = _C.LIMIT_COUNTERS_MAX

#: Values of every ``clock`` argument (track(), Tracker, the integrations).
CLOCKS = ("auto", "cuda", "hip", "cpu")
#: Values of every ``causal_attention`` argument.
CAUSAL_ATTENTION = ("full", "half")


def check_optional_number(value: Any, argument: str, low: float) -> Optional[float]:
    """``value`` as a float (None passes through): a finite number >= ``low``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a number or None, not {type(value).__name__}")
    if not (math.isfinite(value) and value >= low):
        raise ValueError(f"{argument} must be a finite number >= {low:g}, got {value!r}")
    return float(value)


def check_optional_work(value: Any, argument: str, figure: str) -> Optional[float]:
    """``value``: None or a finite number > 0. Zero is refused, naming the
    figure it would make 0 by definition ("MFU", "MBU"): a count that is
    missing, never a measurement."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a number or None, not {type(value).__name__}")
    if value == 0:
        raise ValueError(f"{argument} must be a finite number > 0 or None, got {value!r}: 0 "
                         f"would make {figure} 0 by definition (a missing count, not a "
                         f"measurement)")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{argument} must be a finite number > 0 or None, got {value!r}")
    return float(value)


def check_int(value: Any, argument: str, low: int, high: Optional[int] = None) -> int:
    """``value``: an int (not a bool) >= ``low`` (and <= ``high`` if given)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__}")
    if high is not None and not low <= value <= high:
        raise ValueError(f"{argument} must be between {low} and {high}, got {value!r}")
    if value < low:
        raise ValueError(f"{argument} must be >= {low}, got {value!r}")
    return value


def check_whole_number(value: Any, argument: str, low: int, high: Optional[int] = None) -> int:
    """``value``: an int (not a bool), or a float holding a whole number (as
    JSON files sometimes write ints), >= ``low`` (and <= ``high``); as an int."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{argument} must be an int, not {type(value).__name__} ({value!r})")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ValueError(f"{argument} must be {bound}, got {value!r}")
    return value


def check_int_list(value: Any, argument: str, low: int = 0, high: Optional[int] = None) -> list:
    """``value``: a list / tuple / tensor of ints (each a whole number in
    [``low``, ``high``]), returned as a list of ints."""
    if hasattr(value, "tolist") and callable(value.tolist):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{argument} must be a list of ints, not {type(value).__name__} "
                        f"({value!r})")
    return [check_whole_number(v, argument, low, high) for v in value]


def check_given(value: Any, argument: str, detail: str = "") -> Any:
    """``value`` is not None (a required config key, say); ``ValueError``
    "``argument`` is missing``detail``" otherwise."""
    if value is None:
        raise ValueError(f"{argument} is missing{detail}")
    return value


def check_str_list(value: Any, argument: str) -> list:
    """``value``: a list / tuple of str (a single str is not a list)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{argument} must be a list of str, not {type(value).__name__} ({value!r})")
    for item in value:
        if not isinstance(item, str):
            raise TypeError(f"{argument} must hold str, got {item!r}")
    return list(value)


def check_non_decreasing(values: Sequence[int], argument: str) -> Sequence[int]:
    """``values`` (ints) never decrease."""
    if any(b < a for a, b in zip(values, values[1:])):
        raise ValueError(f"{argument} must be non-decreasing, got {list(values)}")
    return values


def _nested_lists(value: Any, argument: str) -> Any:
    """A tensor / array / nested sequence as nested Python lists."""
    if hasattr(value, "tolist") and callable(value.tolist):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", None) == "meta":
            raise ValueError(f"{argument} is on the meta device: its values are unknown")
        return value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{argument} must be a tensor or a sequence, not {type(value).__name__}")
    return [v if isinstance(v, (int, float, bool)) else _nested_lists(v, argument) for v in value]


def check_int_rows(value: Any, argument: str) -> list:
    """A 1-D or 2-D int tensor / sequence (bools read as 0 / 1) as a list of
    rows of ints; a 1-D value is one row. Ranges are the caller's."""
    data = _nested_lists(value, argument)
    if not isinstance(data, list):
        raise TypeError(f"{argument} must be 1-D or 2-D, got a scalar")
    rows = data if data and isinstance(data[0], list) else [data]
    if any(not isinstance(r, list) or (r and isinstance(r[0], list)) for r in rows):
        raise ValueError(f"{argument} must be 1-D or 2-D")
    return [check_int_list([int(v) if isinstance(v, bool) else v for v in r], argument,
                           -(2 ** 63)) for r in rows]


def check_exactly_one(argument_values: Sequence[tuple], hint: str) -> str:
    """The name of the one (name, value) pair whose value is not None;
    ``TypeError`` ("give exactly one of ...; ``hint``") otherwise."""
    given = [name for name, value in argument_values if value is not None]
    if len(given) != 1:
        names = ", ".join(name for name, _ in argument_values)
        raise TypeError(f"give exactly one of {names}{hint}; got {given or 'none'}")
    return given[0]


def check_device(device: Any, argument: str = "device") -> Any:
    """``device`` (a torch.device, "cuda:1"-style str or CUDA index) as a
    torch.device; TypeError / ValueError naming ``argument`` otherwise --
    also for a CUDA device this process does not have (checked here, before
    any work, rather than surfacing as torch's "Found no NVIDIA driver")."""
    import torch

    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, bool) or not isinstance(device, (str, int)):
        raise TypeError(f"{argument} must be a torch.device, str, int or None, not {type(device).__name__}")
    else:
        try:
            dev = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        except (RuntimeError, ValueError) as exc:  # torch's message does not name the argument
            raise ValueError(f"{argument}: not a device: {device!r} ({exc})") from None
    if dev.type == "cuda":
        _check_cuda_present(torch, dev, device, argument)
    return dev


def _check_cuda_present(torch: Any, dev: Any, given: Any, argument: str) -> None:
    try:
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 -- a broken CUDA install is "no device" here
        count = 0
    if count == 0:
        why = ("this torch is a CPU-only build" if torch.version.cuda is None
               and getattr(torch.version, "hip", None) is None
               else "torch sees no CUDA/ROCm device: no driver, or CUDA_VISIBLE_DEVICES hides them")
        raise ValueError(f"{argument}={given!r}: no CUDA device is available ({why}); leave "
                         f"{argument} unset (or pass 'cpu') to measure on the CPU")
    if dev.index is not None and dev.index >= count:
        raise ValueError(f"{argument}={given!r}: torch sees {count} CUDA device(s), "
                         f"cuda:0 .. cuda:{count - 1}")


def check_choice(value: Any, argument: str, choices: Sequence[str], *,
                 ignore_case: bool = False, type_error: bool = True,
                 supported_by: str = "") -> str:
    """``value``: one of ``choices`` (a str; with ``ignore_case`` compared, and
    returned, lower-cased). ``TypeError`` for a non-str (``ValueError`` with
    ``type_error=False``, where a caller's documented behaviour says so),
    ``ValueError`` listing the choices for any other value (as "what
    ``supported_by`` supports" when given)."""
    if not isinstance(value, str):
        if type_error:
            raise TypeError(f"{argument} must be a str ({', '.join(choices)}), "
                            f"not {type(value).__name__}")
        raise ValueError(f"{argument} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    key = value.lower() if ignore_case else value
    if key not in choices and supported_by:
        raise ValueError(f"{argument}: {supported_by} supports {', '.join(choices)}, not {value}")
    if key not in choices:
        raise ValueError(f"{argument} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return key


def check_flag(value: Any, argument: str) -> bool:
    """``value``: a bool (not an int standing for one)."""
    if not isinstance(value, bool):
        raise TypeError(f"{argument} must be a bool, not {type(value).__name__}")
    return value


def check_positive_number(value: Any, argument: str, unit: str = "") -> float:
    """``value`` as a float: a finite number > 0 (``unit`` names it in the error)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{argument} must be a number, not {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        unit_text = f" ({unit})" if unit else ""
        raise ValueError(f"{argument} must be a finite number > 0{unit_text}, got {value!r}")
    return float(value)


def check_callable(value: Any, argument: str) -> Any:
    """``argument``: None or a callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{argument} must be callable, not {type(value).__name__}")
    return value


def check_at_most(value: float, argument: str, high: float, unit: str = "") -> float:
    """``value`` (already a number) <= ``high``."""
    if value > high:
        raise ValueError(f"{argument} must be <= {high:g}{' ' + unit if unit else ''}, "
                         f"got {value!r}")
    return value


def check_peak_tflops(peak_tflops: Any) -> float:
    """A user's per-device peak: a finite number of TFLOP/s > 0."""
    return check_positive_number(peak_tflops, "peak_tflops", "TFLOP/s")


def check_clock(clock: Any) -> str:
    """``clock``: one of :data:`CLOCKS`."""
    return check_choice(clock, "clock", CLOCKS)


def check_causal_attention(value: Any, *, type_error: bool = True) -> str:
    """``causal_attention``: "full" (PaLM, the default) or "half" (Megatron)."""
    return check_choice(value, "causal_attention", CAUSAL_ATTENTION, type_error=type_error)


def check_str(value: Any, argument: str) -> str:
    """``argument``: a str."""
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be a str, not {type(value).__name__}")
    return value


def check_instance(value: Any, argument: str, cls: Any, what: str = "") -> Any:
    """``argument``: an instance of ``cls`` (a type or tuple of types), named
    ``what`` in the error (default: the class name)."""
    if not isinstance(value, cls):
        raise TypeError(f"{argument} must be {what or 'a ' + cls.__name__}, "
                        f"not {type(value).__name__}")
    return value


def check_int_pair(value: Any, argument: str) -> Optional[Tuple[int, int]]:
    """None, or a (major, minor)-like pair of ints (a tuple or a list)."""
    if value is None:
        return None
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        raise TypeError(f"{argument} must be a (major, minor) pair of ints or None")
    return (value[0], value[1])


def check_nonempty(value: Any, argument: str) -> Any:
    """A mapping or sequence with at least one entry."""
    if not value:
        raise ValueError(f"{argument}: the mapping is empty")
    return value


def check_parallel_degrees(num_gpus: Any, degrees: Dict[str, Any]) -> Tuple[int, int]:
    """``num_gpus`` and the model-parallel ``degrees`` ({argument: value}):
    (num_gpus, the degrees' product), each in range and their product at
    most ``_C.LIMIT_NUM_GPUS_MAX``."""
    devices = check_int(num_gpus, "num_gpus", 1, NUM_GPUS_MAX)
    model_parallel = 1
    for argument, value in degrees.items():
        model_parallel *= check_int(value, argument, 1, PARALLEL_DEGREE_MAX)
    if devices * model_parallel > NUM_GPUS_MAX:
        raise ValueError(f"num_gpus x the parallel degrees must be at most {NUM_GPUS_MAX}, "
                         f"got {devices * model_parallel}")
    return devices, model_parallel


def check_log_path(path: Any, argument: str = "log_path") -> Optional[str]:
    """``path`` (a str or os.PathLike naming a file, or None) as a str."""
    import os

    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{argument} must be a str or os.PathLike path, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{argument} must be a text path, got {type(text).__name__}")
    if not text or "\0" in text:
        raise ValueError(f"{argument} must be a non-empty file name without NUL bytes, got {text!r}")
    if os.path.isdir(text):
        raise ValueError(f"{argument} {text!r} is a directory; give a file name (e.g. metrics.jsonl)")
    return text


def check_job(job: Any, argument: str = "job") -> Optional[str]:
    """``job``: None or a non-empty job id (a str of printable characters)."""
    if job is None:
        return None
    if not isinstance(job, str):
        raise TypeError(f"{argument} must be a str job id or None, got {type(job).__name__}")
    if not job.strip() or not job.isprintable():
        raise ValueError(f"{argument} must be a non-empty printable job id, got {job!r}")
    return job


def check_optional_instance(value: Any, argument: str, cls: type) -> Any:
    """``argument``: None or an instance of ``cls`` (named in the error)."""
    if value is not None and not isinstance(value, cls):
        raise TypeError(f"{argument} must be a {cls.__name__}, not {type(value).__name__}")
    return value


def check_prefix(prefix: Any, argument: str = "prefix") -> str:
    """A metric key prefix: a str ("" for bare keys)."""
    if not isinstance(prefix, str):
        raise TypeError(f"{argument} must be a str, not {type(prefix).__name__}")
    return prefix


def check_stream(stream: Any) -> int:
    """The raw handle of ``stream``: a torch stream (its ``cuda_stream``, also
    on ROCm) or an int handle. ``None`` is resolved by the caller; the range
    (a pointer) is checked in C, where the handle is used."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        handle = stream
    else:
        handle = getattr(stream, "cuda_stream", None)
        if not isinstance(handle, int) or isinstance(handle, bool):
            raise TypeError(
                "stream must be a torch.cuda.Stream, a raw stream handle (int) or None, "
                f"not {type(stream).__name__}"
            )
    return handle


def check_optional_flag(value: Any, argument: str) -> Optional[bool]:
    """None, True or False."""
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{argument} must be None, True or False, not {type(value).__name__}")
    return value


def check_hfu_factor(hfu_backward_factor: Any, backward_factor: Any) -> Optional[float]:
    """The peer's two spellings of the HFU knob as one factor: executed FLOPs
    = forward FLOPs x factor. ``hfu_backward_factor`` f gives 1 + f (>= 0: the
    backward costs f forwards), ``backward_factor`` F gives F (>= 1); not both.
    None: executed FLOPs as counted."""
    extra = check_optional_number(hfu_backward_factor, "hfu_backward_factor", 0.0)
    total = check_optional_number(backward_factor, "backward_factor", 1.0)
    if extra is not None and total is not None:
        raise ValueError("give hfu_backward_factor or backward_factor, not both")
    return 1.0 + extra if extra is not None else total


def check_sample_batch(batch: Any, argument: str = "sample_batch") -> Any:
    """A sample batch for a profile: None, a dict of model inputs, a tensor, or
    a tuple / list of positional inputs holding at least one tensor."""
    if batch is None:
        return None
    from collections.abc import Mapping

    if isinstance(batch, Mapping):
        return batch
    torch = _torch_if_loaded()
    if torch is not None:
        if isinstance(batch, torch.Tensor):
            return batch
        if isinstance(batch, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in batch):
            return batch
    raise TypeError(f"{argument} must be a dict of model inputs, a tensor, a tuple / list of "
                    f"inputs (tensors) or None, not {type(batch).__name__}")


def _torch_if_loaded() -> Any:
    import sys

    return sys.modules.get("torch")
