"""``mfu_tracker.integrations.verl.FlopsCounter`` through verl's own call
shape, against verl's counter transcribed from its source (verl is not
installed: it pulls in Ray).

verl/utils/flops_counter.py @ b178a3cd56f58b2d502255daba591e92833930a7:
``FlopsCounter(config)`` (line 571) keeps the HF config; ``estimate_flops(
batch_seqlens, delta_time, **kargs)`` (line 582) returns ``(estimated,
promised)``: the model type's function of ``(config, sum(batch_seqlens),
batch_seqlens, delta_time)`` -- FLOPs / delta_time / 1e12 -- and
``get_device_flops()`` in "T" units (a substring match of the device name in
``_DEVICE_FLOPS``, line 21; ``inf`` when none matches). The worker
(verl/workers/fsdp_workers.py line 909) passes the global batch's lengths and
``images_seqlens=``, and logs ``estimated * ppo_epochs / promised /
world_size`` as ``perf/mfu/actor``.
"""
from __future__ import annotations

import math
import warnings

import pytest

transformers = pytest.importorskip("transformers")

import _framework_formulas as fw  # noqa: E402

from mfu_tracker import lookup_gpu_spec, transformer_flops, user_gpu_spec  # noqa: E402
from mfu_tracker.integrations.verl import FlopsCounter  # noqa: E402

QWEN2 = transformers.Qwen2Config(hidden_size=256, intermediate_size=704, num_hidden_layers=4,
                                 num_attention_heads=8, num_key_value_heads=2, vocab_size=1024)
SEQLENS = [1500, 700, 2048, 3000, 944]  # the global batch, packed lengths
DELTA = 0.75                            # seconds
H100 = "NVIDIA H100 80GB HBM3"


class VerlFlopsCounter:
    """verl's class as its source has it, for qwen2 (the transcribed
    _estimate_qwen2_flops, line 88) on an H100 (989e12, line 27)."""

    _DEVICE_FLOPS = {"CPU": 448e9, "H100": 989e12, "A100": 312e12}

    def __init__(self, config, device_name):
        self.config = config
        self.device_name = device_name

    def estimate_flops(self, batch_seqlens, delta_time, **kargs):
        estimated = fw.verl_qwen2(self.config, batch_seqlens) * (1.0 / delta_time) / 1e12
        promised = float("inf")
        for key, value in sorted(self._DEVICE_FLOPS.items(), reverse=True):
            if key in self.device_name:
                promised = value / 1e12
                break
        return estimated, promised


def actor_mfu(counter, ppo_epochs=1, world_size=8):
    """fsdp_workers.py's lines, as verl runs them after update_policy."""
    estimated_flops, promised_flops = counter.estimate_flops(SEQLENS, DELTA, images_seqlens=None)
    return estimated_flops * ppo_epochs / promised_flops / world_size


def test_the_call_shape_and_units():
    ours = FlopsCounter(QWEN2, spec=lookup_gpu_spec(H100))
    achieved, promised = ours.estimate_flops(SEQLENS, DELTA)
    model = transformer_flops(QWEN2, seq_lens=SEQLENS).model_flops
    assert achieved == pytest.approx(model / DELTA / 1e12, rel=1e-15)
    assert promised == pytest.approx(989.4, rel=1e-12)  # H100 SXM bf16 dense, TFLOP/s
    assert actor_mfu(ours, ppo_epochs=2) == pytest.approx(achieved * 2 / promised / 8)
    # a tensor of lengths, as verl's batch.meta_info may hold one
    torch = pytest.importorskip("torch")
    assert ours.estimate_flops(torch.tensor(SEQLENS), DELTA)[0] == achieved


def test_verl_convention_reproduces_verls_number():
    """convention="verl": verl's count, our peak (989.4 where verl says 989)."""
    verl = VerlFlopsCounter(QWEN2, H100)
    ours = FlopsCounter(QWEN2, spec=lookup_gpu_spec(H100), convention="verl")
    theirs_achieved, theirs_promised = verl.estimate_flops(SEQLENS, DELTA)
    achieved, promised = ours.estimate_flops(SEQLENS, DELTA)
    assert achieved == pytest.approx(theirs_achieved, rel=1e-13)
    assert (theirs_promised, promised) == (989.0, pytest.approx(989.4))
    assert actor_mfu(ours) == pytest.approx(actor_mfu(verl) * 989.0 / 989.4, rel=1e-12)


def test_the_difference_from_verl_is_itemized():
    """Our default minus verl's, in TFLOP/s, is the convention's itemized
    difference (formula, embedding, causal half) over the step time."""
    verl = VerlFlopsCounter(QWEN2, H100)
    ours = FlopsCounter(QWEN2, spec=lookup_gpu_spec(H100))
    items = transformer_flops(QWEN2, seq_lens=SEQLENS,
                              convention="verl").conventions["convention"]["difference"]
    delta = sum(item["delta_flops"] for item in items)  # verl - ours, FLOPs
    assert {i["item"] for i in items if i["delta_flops"]} == {"formula", "embedding", "causal"}
    difference = verl.estimate_flops(SEQLENS, DELTA)[0] - ours.estimate_flops(SEQLENS, DELTA)[0]
    assert difference == pytest.approx(delta / DELTA / 1e12, rel=1e-9)
    assert difference < 0  # verl halves causal attention: it logs less


def test_unknown_peak_is_nan_not_zero():
    """verl divides by inf for a device its table lacks (MFU 0); the drop-in
    gives nan (the peak lookup warns once): absent, not zero."""
    verl = VerlFlopsCounter(QWEN2, "NVIDIA RTX PRO 6000 Blackwell")
    assert verl.estimate_flops(SEQLENS, DELTA)[1] == math.inf and actor_mfu(verl) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no datasheet peak", once per process
        ours = FlopsCounter(QWEN2, device="cpu", dtype="fp32")
        achieved, promised = ours.estimate_flops(SEQLENS, DELTA)
    assert math.isnan(promised) and achieved > 0
    assert math.isnan(actor_mfu(ours))


def test_a_failing_step_warns_once_and_never_raises():
    ours = FlopsCounter(QWEN2, spec=user_gpu_spec(100.0))
    with pytest.warns(RuntimeWarning, match="no count for this step"):
        achieved, promised = ours.estimate_flops([100, -5], DELTA)
    assert math.isnan(achieved) and promised == 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(ours.estimate_flops(SEQLENS, 0.0)[0])
    with pytest.warns(RuntimeWarning, match="images_seqlens"):
        ours.estimate_flops(SEQLENS, DELTA, images_seqlens=[64, 64])


def test_configuration_errors_raise_at_construction():
    with pytest.raises(ValueError, match="convention"):
        FlopsCounter(QWEN2, convention="deepspeed")
    mixtral = transformers.MixtralConfig(hidden_size=64, intermediate_size=96,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, vocab_size=128)
    with pytest.raises(ValueError, match="verl has no formula"):
        FlopsCounter(mixtral, convention="verl")
