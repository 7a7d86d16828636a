"""GenerationCounter (mfu_tracker/flops/_generation_count.py): each forward
booked to the prefill or to decode by the cache it finds, its FLOPs as
FlopCounterMode counts the same forwards."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.flops._generation import generation_flops  # noqa: E402
from mfu_tracker.flops._generation_count import GenerationCount, GenerationCounter  # noqa: E402


class _Cache:
    def __init__(self, tokens: int) -> None:
        self.tokens = tokens

    def get_seq_length(self) -> int:
        return self.tokens


class _LM(torch.nn.Module):
    """ids [b, t] -> an embedding of width 8 -> Linear(8, 16): 2*8*16 = 256
    FLOPs per token."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.proj = torch.nn.Linear(8, 16, bias=False)

    def forward(self, input_ids, past_key_values=None):
        return self.proj(self.embed(input_ids))


def _generate(model, rows=2, prompt=5, new=3):
    """A prefill of rows x prompt tokens, then new - 1 one-token decodes."""
    with torch.no_grad():
        model(torch.zeros(rows, prompt, dtype=torch.long), past_key_values=_Cache(0))
        for step in range(new - 1):
            model(torch.zeros(rows, 1, dtype=torch.long), past_key_values=_Cache(prompt + step))


def test_prefill_and_decode_are_booked_apart_by_hand_and_by_flop_counter_mode():
    model = _LM()
    with GenerationCounter(model) as gen:
        _generate(model)
    count = gen.count
    assert isinstance(count, GenerationCount)
    assert (count.prefill_forwards, count.decode_forwards) == (1, 2)
    assert (count.prefill_tokens, count.decode_tokens, count.generated_tokens) == (10, 4, 6)
    assert count.prefill_flops == 10 * 256 and count.decode_flops == 4 * 256
    with FlopCounterMode(display=False) as mode:
        _generate(model)
    assert count.model_flops == mode.get_total_flops() == gen.model_flops
    assert count.prefill_s >= 0 and count.decode_s >= 0
    assert count.prefill_bytes is None and count.decode_bytes is None


def test_a_second_block_adds_up_and_a_legacy_tuple_cache_is_read():
    model = _LM()
    gen = GenerationCounter(model)
    with gen:
        _generate(model)
    with gen:
        with torch.no_grad():  # a legacy cache: per layer (key, value) [b, h, t, d]
            legacy = ((torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 4, 2)),)
            model(torch.zeros(1, 1, dtype=torch.long), past_key_values=legacy)
    assert gen.decode_forwards == 3 and gen.decode_flops == 5 * 256


def test_bytes_come_from_the_analytic_twin_and_bad_arguments_are_named():
    llama = dict(model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, vocab_size=100)
    analytic = generation_flops(llama, [5, 5], 3)
    count = GenerationCount(1, 2, 1, 2, 10, 4, 6, 0.1, 0.2).with_bytes(analytic)
    assert (count.prefill_bytes, count.decode_bytes) == (analytic.prefill_bytes,
                                                         analytic.decode_bytes)
    with pytest.raises(TypeError, match="with_bytes: analytic must carry prefill_bytes"):
        count.with_bytes(object())
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        GenerationCounter(object())
    with pytest.raises(ValueError, match="causal_attention"):
        GenerationCounter(_LM(), causal_attention="quarter")
    with pytest.raises(AttributeError):
        GenerationCounter(_LM()).not_a_field
