"""The exact count of a generation, prefill apart from decode: :class:`GenerationCounter`.

``with GenerationCounter(model) as gen: model.generate(...)`` counts every op
of the block with a :class:`~mfu_tracker.FlopCounter` (the KV cache's
attention included: a decode step's query against every cached key) and
books each forward of ``model`` to the prefill or to decode by the cache it
finds: a forward that finds no cache, or an empty one, is a prefill; one
that finds cached tokens is a decode step. Its analytic twin is
:func:`~mfu_tracker.generation_flops` (docs/generation.md).

Units: FLOPs (generation runs no backward: model FLOPs are forward FLOPs),
tokens (as the forwards took them in, padding included), seconds.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Optional

from .._validate import check_causal_attention
from .counter import FlopCounter

__all__ = ["GenerationCount", "GenerationCounter"]

# The cache keyword of a causal LM's forward: transformers >= 5.x calls it
# `cache` (deprecating `past_key_values`, still taken until 5.40).
_CACHE_KWARGS = ("cache", "past_key_values")


@dataclasses.dataclass(frozen=True)
class GenerationCount:
    """What :class:`GenerationCounter` counted (FLOPs, tokens, seconds).

    Attributes:
        prefill_flops, decode_flops: the counted FLOPs of the prefill
            forwards and of the decode forwards (model FLOPs: forward only).
        prefill_forwards, decode_forwards: forwards of each kind.
        prefill_tokens, decode_tokens: tokens those forwards took in, padded
            rows and positions included (what the ops computed).
        generated_tokens: decode_tokens plus one per row the prefills took
            in (each row's first token): the tokens generated when the
            forwards are the steps of one batch.
        prefill_s, decode_s: wall time from each forward's start to the next
            forward's (the last: to the end of the block), by the forward's
            kind: generate() picks each token on the device and waits for it
            before the next forward, so on a GPU the boundaries are where
            the device was. The time before the first forward is in neither.
        prefill_bytes, decode_bytes: None -- a counter sees FLOPs, not
            memory traffic; :func:`~mfu_tracker.generation_flops` gives them
            (:meth:`with_bytes` carries them here).
    """

    prefill_flops: int
    decode_flops: int
    prefill_forwards: int
    decode_forwards: int
    prefill_tokens: int
    decode_tokens: int
    generated_tokens: int
    prefill_s: float
    decode_s: float
    prefill_bytes: Optional[float] = None
    decode_bytes: Optional[float] = None

    @property
    def model_flops(self) -> int:
        """Prefill + decode FLOPs."""
        return self.prefill_flops + self.decode_flops

    def with_bytes(self, analytic: Any) -> GenerationCount:
        """This count with the bytes of ``analytic`` (the
        :class:`~mfu_tracker.GenerationFlops` of the same generation): exact
        FLOPs and times, analytic bytes, for decode MBU."""
        for name in ("prefill_bytes", "decode_bytes"):
            if not isinstance(getattr(analytic, name, None), (int, float)):
                raise TypeError(f"with_bytes: analytic must carry {name} (a GenerationFlops), "
                                f"not {type(analytic).__name__}")
        return dataclasses.replace(self, prefill_bytes=analytic.prefill_bytes,
                                   decode_bytes=analytic.decode_bytes)



def _cache_length(kwargs: dict[str, Any]) -> int:
    """Tokens in the cache a forward was given (0: none, or empty)."""
    for name in _CACHE_KWARGS:
        cache = kwargs.get(name)
        if cache is None:
            continue
        length = getattr(cache, "get_seq_length", None)
        if length is not None:
            return int(length())
        try:  # a legacy tuple of per-layer (key, value) tensors
            return int(cache[0][0].shape[-2])
        except (TypeError, IndexError, AttributeError):
            return 0
    return 0


def _tokens(args: tuple, kwargs: dict[str, Any]) -> tuple[int, int]:
    """(rows, tokens) of a forward's input ids (or embeddings)."""
    ids = kwargs.get("input_ids", args[0] if args else None)
    if ids is None:
        ids = kwargs.get("inputs_embeds")
        shape = tuple(ids.shape[:2]) if ids is not None else (0, 0)
    else:
        shape = tuple(ids.shape) if ids.dim() == 2 else (1, int(ids.numel()))
    return int(shape[0]), int(shape[0]) * int(shape[1])


class GenerationCounter:
    """Count ``model.generate()`` (or any loop of forwards over a KV cache)
    exactly, the prefill apart from decode.

    Args:
        model: the module whose forwards make the generation (the causal
            LM ``generate()`` is called on); its forwards are hooked while
            the block runs.
        causal_attention: the counter's convention for the prefill's causal
            attention, ``"full"`` (default) or ``"half"``; a decode step's
            single query counts its cached keys under both.

    The :class:`~mfu_tracker.FlopCounter` of the block is ``counter`` (its
    ``by_op``, ``table()``); counts read after the block are in ``count``.
    Entered again, the counts add up.
    """

    def __init__(self, model: Any, *, causal_attention: str = "full") -> None:
        check_causal_attention(causal_attention)
        for hook in ("register_forward_pre_hook", "register_forward_hook"):
            if not callable(getattr(model, hook, None)):
                raise TypeError("GenerationCounter: model must be a torch.nn.Module (the model "
                                f"generate() runs), not {type(model).__name__}")
        self.model = model
        self.counter = FlopCounter(causal_attention=causal_attention)
        self._handles: list[Any] = []
        self._totals = {"prefill": [0, 0, 0, 0.0], "decode": [0, 0, 0, 0.0]}  # flops, fwd, tok, s
        self._rows = 0
        self._open: list[Any] = []  # [kind, flops at entry] per open forward
        self._last: tuple[str, float] | None = None  # (kind, start) of the forward being timed

    def __enter__(self) -> GenerationCounter:
        self._handles = [
            self.model.register_forward_pre_hook(self._before, with_kwargs=True),
            self.model.register_forward_hook(self._after, with_kwargs=True, always_call=True)]
        try:
            self.counter.__enter__()
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        try:
            self._close_interval(time.perf_counter())
            self.counter.__exit__(exc_type, exc, tb)
        finally:
            self._remove()
            self._open.clear()
        return False

    def _remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _close_interval(self, now: float) -> None:
        if self._last is not None:
            kind, start = self._last
            self._totals[kind][3] += now - start
            self._last = None

    def _before(self, module: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        now = time.perf_counter()
        kind = "decode" if _cache_length(kwargs) > 0 else "prefill"
        rows, tokens = _tokens(args, kwargs)
        if not self._open:  # a nested call of the same module is part of its caller
            self._close_interval(now)
            self._last = (kind, now)
            self._totals[kind][1] += 1
            self._totals[kind][2] += tokens
            if kind == "prefill":
                self._rows += rows
        self._open.append((kind, self.counter.model_flops))

    def _after(self, module: Any, args: tuple, kwargs: dict[str, Any], output: Any) -> None:
        if not self._open:
            return
        kind, before = self._open.pop()
        if not self._open:
            self._totals[kind][0] += self.counter.model_flops - before

    @property
    def count(self) -> GenerationCount:
        """The counts so far (FLOPs, forwards, tokens, seconds by kind)."""
        p, d = self._totals["prefill"], self._totals["decode"]
        return GenerationCount(prefill_flops=p[0], decode_flops=d[0], prefill_forwards=p[1],
                               decode_forwards=d[1], prefill_tokens=p[2], decode_tokens=d[2],
                               generated_tokens=d[2] + self._rows, prefill_s=p[3],
                               decode_s=d[3])

    def __getattr__(self, name: str) -> Any:
        # gen.prefill_flops etc.: the count's fields on the counter itself
        if name.startswith("_") or (name not in GenerationCount.__dataclass_fields__ and
                                    name != "model_flops"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.count, name)
