"""verl's ``FlopsCounter``, backed by this package's count and peak table.

verl (and any loop written the same way: OpenRLHF has no counter class of
its own) builds ``FlopsCounter(hf_config)`` once and, after each update,
calls ``estimate_flops(batch_seqlens, delta_time)``: the batch's sequence
lengths (every data-parallel rank's) and the step's seconds. It gets back
``(achieved, promised)`` in TFLOP/s and logs ``achieved / promised /
world_size`` (x ``ppo_epochs``) as MFU (verl/workers/fsdp_workers.py,
verl/workers/engine_workers.py; verl/utils/flops_counter.py ``FlopsCounter``,
line 561, @ b178a3cd56f58b2d502255daba591e92833930a7). Swapping the class::

    from mfu_tracker.integrations.verl import FlopsCounter

gives the same call shape with :func:`~mfu_tracker.transformer_flops`'
model FLOPs (causal attention in full, windows, packed lengths, the shared
expert, ...; ``convention="verl"`` reproduces verl's own count) and the
datasheet peak of the device for ``dtype`` (dense, per device). Where verl
would divide by ``inf`` for a device its table lacks (MFU 0), this returns
``nan`` with one warning: the figure is absent, not zero. A count that
fails mid-run warns once and returns ``nan`` achieved; it never raises into
the training loop. docs/generation.md has the differences, item by item.

Units: TFLOP/s (1e12 FLOP/s), as verl's.
"""
from __future__ import annotations

import math
import threading
import warnings
from typing import Any, Optional

from ..flops import transformer_flops
from ..flops._hf_config import dims_from_config, is_supported
from ..peaks._resolve import resolve_peak
from ..peaks._table import GPUSpec

__all__ = ["FlopsCounter"]


class FlopsCounter:
    """Drop-in for ``verl.utils.flops_counter.FlopsCounter``.

    Args:
        config: the HuggingFace config verl passes (``PretrainedConfig``),
            or anything :func:`~mfu_tracker.transformer_flops` takes.
        dtype: the dtype whose dense peak is ``promised`` (default None: bf16, or fp16 on a device without bf16;
            docs/conventions.md).
        device, spec, peak_tflops: the peak, as :func:`~mfu_tracker.compute_mfu`
            takes it (default: the current device's datasheet row).
        convention: count as another framework does (``"verl"``: verl's
            own formula, so only the peak differs); default ours.
        causal_attention: ``"full"`` (default) or ``"half"``.
    """

    def __init__(self, config: Any, *, dtype: Any = None, device: Any = None,
                 spec: Optional[GPUSpec] = None, peak_tflops: Optional[float] = None,
                 convention: Any = None, causal_attention: Optional[str] = None) -> None:
        self.config = config
        # read once: every step counts with the same dims (a type without an
        # analytic formula keeps its config and is counted exactly, cached
        # per length)
        self._model = dims_from_config(config) if is_supported(config) else config
        self._options = {"convention": convention, "causal_attention": causal_attention}
        transformer_flops(self._model, seq_lens=[1], **self._options)  # errors now, not mid-run
        self._peak_args = {"dtype": dtype, "device": device, "spec": spec,
                           "peak_tflops": peak_tflops}
        self._promised: Optional[float] = None
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def _warn_once(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        warnings.warn(f"mfu_tracker FlopsCounter: {message}", RuntimeWarning, stacklevel=3)

    def promised_tflops(self) -> float:
        """The device's dense peak for ``dtype``, TFLOP/s; nan when unknown."""
        if self._promised is None:
            peak = resolve_peak(**self._peak_args)
            self._promised = (peak.flops_per_sec / 1e12 if peak.flops_per_sec is not None
                              else math.nan)
        return self._promised

    def estimate_flops(self, batch_seqlens: Any, delta_time: float,
                       **kwargs: Any) -> tuple[float, float]:
        """(achieved, promised) TFLOP/s: the batch's model FLOPs (forward and
        backward) over ``delta_time`` seconds, and the device's peak.

        ``batch_seqlens``: the real length of every sequence of the step (a
        list, or a tensor). ``image_grid_thw=`` adds a VLM's tower;
        ``images_seqlens`` (verl's per-frame patch counts) cannot place the
        patches on a grid: the tower is then left out, with one warning.
        """
        promised = self.promised_tflops()
        try:
            grids = kwargs.get("image_grid_thw")
            if kwargs.get("images_seqlens") is not None and grids is None:
                self._warn_once("images", "images_seqlens gives each frame's patch count, not "
                                "its grid: the vision tower is not counted (pass "
                                "image_grid_thw= to count it)")
            lengths = batch_seqlens.tolist() if hasattr(batch_seqlens, "tolist") \
                else list(batch_seqlens)
            flops = transformer_flops(self._model, seq_lens=lengths, image_grid_thw=grids,
                                      **self._options).model_flops
            if not delta_time > 0:
                raise ValueError(f"delta_time must be > 0 seconds, got {delta_time!r}")
            return flops / delta_time / 1e12, promised
        except (ValueError, TypeError) as exc:
            self._warn_once("count", f"no count for this step ({exc}); achieved is nan")
            return math.nan, promised
