"""The peer-compatible helpers (mfu_tracker/flops/_peer.py): the 6N rule,
FlashAttention FLOPs and a model's parameters, by hand arithmetic and
against FlopCounterMode."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.flops._peer import (  # noqa: E402
    flash_attn_flops,
    num_params,
    param_bytes,
    params_flops,
)


def test_6n_and_the_lora_4n_rule():
    full = params_flops(1e9, num_tokens=10)
    assert full.model_flops == 6 * 1e9 * 10 and full.forward_flops == 2 * 1e9 * 10
    assert full.flops_per_token == 6e9
    lora = params_flops(1e9, num_tokens=10, lora=True)
    assert lora.model_flops == 4 * 1e9 * 10  # frozen base: forward + input gradient
    assert lora.conventions["lora"] == {"rank": None, "targets": None}
    with pytest.raises(ValueError, match="num_params"):
        params_flops(0)
    with pytest.raises(ValueError, match="num_tokens"):
        params_flops(1e9, num_tokens=0)


def test_flash_attention_matches_flop_counter_mode():
    b, s, h, d = 2, 128, 4, 64
    assert flash_attn_flops(b, s, h, d) == 4 * b * s * s * h * d  # QK^T and AV
    q = torch.randn(b, h, s, d, device="meta")  # CPU's fused kernel has no FlopCounterMode entry
    with FlopCounterMode(display=False) as mode:
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert flash_attn_flops(b, s, h, d, causal=True) == mode.get_total_flops()
    assert flash_attn_flops(batch_size=b, seq_len=s, num_heads=h, head_dim=d,
                            with_backward=True) == 3 * 4 * b * s * s * h * d
    half = flash_attn_flops(b, s, h, d, causal_attention="half")
    assert half < 4 * b * s * s * h * d
    # causal=False is always the full count
    assert flash_attn_flops(b, s, h, d, causal=False, causal_attention="half") == \
        4 * b * s * s * h * d


def test_flash_attention_arguments_are_named():
    with pytest.raises(TypeError, match="batch or batch_size, not both"):
        flash_attn_flops(1, 8, 1, 8, batch_size=1)
    with pytest.raises(TypeError, match="'head_dim'"):
        flash_attn_flops(1, 8, 1)
    with pytest.raises(ValueError, match="causal_attention"):
        flash_attn_flops(1, 8, 1, 8, causal_attention="quarter")


def test_parameters_counted_once_and_by_bytes():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight  # tied: 40 parameters, not 80
    model.append(torch.nn.Linear(4, 3).to(torch.bfloat16))  # 12 + 3 in bf16
    assert num_params(model) == 40 + 15
    assert param_bytes(model) == 40 * 4 + 15 * 2
    model[0].weight.requires_grad_(False)
    assert num_params(model, trainable_only=True) == 15
    assert param_bytes(model, trainable_only=True) == 30
    with pytest.raises(ValueError, match="no parameters"):
        param_bytes(torch.nn.ReLU())
    with pytest.raises(TypeError, match="torch.nn.Module"):
        num_params(object())
