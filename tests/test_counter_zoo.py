"""FlopCounter against torch.utils.flop_counter.FlopCounterMode and the
analytic formula, on a zoo of tiny models built from transformers configs.

* executed FLOPs == FlopCounterMode's total, for every model, under the
  attention / experts implementations FlopCounterMode counts right (eager);
* model FLOPs == transformer_flops(formula="matmul") for the decoder configs;
* one test per documented deviation from FlopCounterMode.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from mfu_tracker.counter import FlopCounter  # noqa: E402
from mfu_tracker.flops import transformer_flops  # noqa: E402

B, S = 2, 16  # batch, sequence length of every text model


def _ids(vocab: int, b: int = B, s: int = S) -> "torch.Tensor":
    return torch.randint(0, vocab, (b, s), generator=torch.Generator().manual_seed(0))


def _step(model, batch):
    def run():
        out = model(**batch)
        out.loss.backward()
    return run


def _fcm(run) -> int:
    with FlopCounterMode(display=False) as mode:
        run()
    return mode.get_total_flops()


def _ours(run, **kwargs) -> FlopCounter:
    with FlopCounter(**kwargs) as fc:
        run()
    return fc


# ---------------------------------------------------------------------------
# The zoo: name -> (model, batch); tiny sizes, eager attention / experts.
# ---------------------------------------------------------------------------

def _decoder(name: str, attn: str = "eager", experts: str = "eager"):
    torch.manual_seed(0)
    common = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=128, vocab_size=128)
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=128,
                                      n_positions=64)
        model = transformers.GPT2LMHeadModel._from_config(cfg, attn_implementation=attn)
    elif name == "llama":  # GQA: 4 query heads, 2 kv heads
        cfg = transformers.LlamaConfig(**common)
        model = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation=attn)
    elif name == "mistral":
        cfg = transformers.MistralConfig(**common, sliding_window=4096)
        model = transformers.MistralForCausalLM._from_config(cfg, attn_implementation=attn)
    elif name == "qwen2":  # q/k/v biases
        cfg = transformers.Qwen2Config(**common)
        model = transformers.Qwen2ForCausalLM._from_config(cfg, attn_implementation=attn)
    elif name == "mixtral":  # 4 experts, top-2
        cfg = transformers.MixtralConfig(**common, num_local_experts=4, num_experts_per_tok=2)
        model = transformers.MixtralForCausalLM._from_config(
            cfg, attn_implementation=attn, experts_implementation=experts)
    else:
        raise AssertionError(name)
    ids = _ids(128)
    return model, cfg, {"input_ids": ids, "labels": ids}


def _bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=128, vocab_size=128, max_position_embeddings=64)
    model = transformers.BertForMaskedLM._from_config(cfg, attn_implementation="eager")
    ids = _ids(128)
    return model, {"input_ids": ids, "labels": ids}


def _t5():
    torch.manual_seed(0)
    cfg = transformers.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                                num_heads=4, vocab_size=128, decoder_start_token_id=0)
    model = transformers.T5ForConditionalGeneration._from_config(cfg, attn_implementation="eager")
    return model, {"input_ids": _ids(128), "labels": _ids(128, s=8)}


def _vit():
    torch.manual_seed(0)
    cfg = transformers.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=128, image_size=32, patch_size=8,
                                 num_labels=10)
    model = transformers.ViTForImageClassification._from_config(cfg, attn_implementation="eager")
    pixels = torch.randn(B, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    return model, {"pixel_values": pixels, "labels": torch.tensor([1, 2])}


class _CNN(torch.nn.Module):
    """conv2d, a grouped conv, a transposed conv, conv1d (groups=1 weight
    gradients only where FlopCounterMode is right; see the groups test)."""

    def __init__(self, groups: int = 1) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=groups)
        self.up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.c3 = torch.nn.Conv1d(4, 6, 5, dilation=2)
        self.head = torch.nn.Linear(6, 10)

    def forward(self, x, labels=None):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        x = self.up(x)                      # [b, 4, 16, 16]
        x = self.c3(x.flatten(2))           # [b, 6, 248]
        logits = self.head(x.mean(-1))
        loss = torch.nn.functional.cross_entropy(logits, labels)
        return transformers.modeling_outputs.SequenceClassifierOutput(loss=loss, logits=logits)


def _cnn(groups: int = 1):
    torch.manual_seed(0)
    x = torch.randn(B, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    return _CNN(groups), {"x": x, "labels": torch.tensor([1, 2])}


ZOO = {
    "gpt2": lambda: _decoder("gpt2")[::2],
    "llama": lambda: _decoder("llama")[::2],
    "mistral": lambda: _decoder("mistral")[::2],
    "qwen2": lambda: _decoder("qwen2")[::2],
    "mixtral": lambda: _decoder("mixtral")[::2],
    "bert": _bert,
    "t5": _t5,
    "vit": _vit,
    "cnn": _cnn,
}


@pytest.mark.parametrize("name", sorted(ZOO))
def test_executed_equals_flop_counter_mode(name):
    model, batch = ZOO[name]()
    run = _step(model, batch)
    expected = _fcm(run)
    fc = _ours(run)
    assert expected > 0
    assert fc.executed_flops == expected
    assert fc.errors == 0
    # forward + backward partition the executed count
    assert fc.forward_flops + fc.backward_flops == fc.executed_flops


@pytest.mark.parametrize("name", ["gpt2", "llama", "mistral", "qwen2", "mixtral"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_model_flops_equal_the_matmul_formula(name, attn):
    model, cfg, batch = _decoder(name, attn=attn)
    fc = _ours(_step(model, batch))
    analytic = transformer_flops(cfg, seq_len=S, batch_size=B, formula="matmul")
    # every weight trains and every activation needs a gradient: model = 3x
    # forward, attention included (its model backward is 2x forward).
    assert fc.model_flops == int(analytic.model_flops)
    assert fc.forward_flops == int(analytic.forward_flops)
    assert fc.model_flops == 3 * fc.forward_flops


def test_llama_hand_arithmetic():
    """Tiny Llama, b=2, s=16, d=64, h=4, h_kv=2, q=16, I=128, V=128, L=2."""
    model, _, batch = _decoder("llama")
    fc = _ours(_step(model, batch))
    t = B * S  # 32 tokens
    proj = 64 * 64 + 2 * 64 * 32 + 64 * 64          # q, k, v (GQA), o = 12,288
    mlp = 3 * 64 * 128                               # gate, up, down = 24,576
    attn = 2 * (2 * B * 4 * S * S * (16 + 16))       # QK^T + AV per layer, x2 layers
    forward = 2 * t * (2 * (proj + mlp) + 128 * 64) + attn
    assert forward == 2 * 32 * (2 * 36_864 + 8_192) + 262_144 == 5_505_024
    assert fc.forward_flops == forward
    assert fc.model_flops == 3 * forward == 16_515_072


# ---------------------------------------------------------------------------
# Deviations from FlopCounterMode (module docstring of mfu_tracker.counter)
# ---------------------------------------------------------------------------

def test_deviation_sdpa_on_cpu_is_counted():
    """FlopCounterMode has no formula for _scaled_dot_product_flash_attention_for_cpu."""
    model, _, batch = _decoder("llama", attn="sdpa")
    run = _step(model, batch)
    fcm = _fcm(run)
    fc = _ours(run)
    # per layer: forward 2*b*h*s*s*(d_qk + d_v) = 2*2*4*16*16*32 = 131,072,
    # backward 2*b*h*s*s*(3*d_qk + 2*d_v) = 2.5x = 327,680; 2 layers
    fwd = 2 * 131_072
    bwd = 2 * 327_680
    assert fc.by_op["aten::_scaled_dot_product_flash_attention_for_cpu"] == (2, fwd)
    assert fc.by_op["aten::_scaled_dot_product_flash_attention_for_cpu_backward"] == (2, bwd)
    assert fc.executed_flops == fcm + fwd + bwd
    # and the same as the eager (matmul) attention FlopCounterMode does count,
    # except that the flash backward recomputes the scores (+0.5x forward)
    eager = _ours(_step(*_decoder("llama", attn="eager")[::2]))
    assert fc.executed_flops == eager.executed_flops + fwd // 2


def test_deviation_grouped_mm_is_counted():
    """transformers' default MoE experts (torch._grouped_mm): FlopCounterMode counts 0."""
    model, _, batch = _decoder("mixtral", experts="grouped_mm")
    run = _step(model, batch)
    fcm = _fcm(run)
    fc = _ours(run)
    grouped_calls, grouped = fc.by_op["aten::_grouped_mm"]
    # per layer forward: gate_up [T*k, 64] x [E, 64, 256] + down [T*k, 128] x [E, 128, 64]
    # = 2*64*64*256 + 2*64*128*64 = 3,145,728 with T*k = 32*2 = 64 rows;
    # backward: grad input + grad weight of each = 2x -> 3x forward, 2 layers
    assert grouped == 2 * 3 * 3_145_728
    assert grouped_calls == 2 * 3 * 2
    assert fc.executed_flops == fcm + grouped
    # the eager experts loop runs the same matmuls, which both count
    eager = _ours(_step(*_decoder("mixtral", experts="eager")[::2]))
    assert fc.executed_flops == eager.executed_flops
    assert fc.model_flops == eager.model_flops


def test_deviation_grouped_conv_weight_gradient():
    """FlopCounterMode counts a grouped conv's weight gradient `groups` times."""
    groups = 4
    model, batch = _cnn(groups=groups)
    run = _step(model, batch)
    fcm = _fcm(run)
    fc = _ours(run)
    # c2: x [2, 8, 8, 8], w [8, 2, 3, 3], out [2, 8, 8, 8]:
    # true weight gradient 2 * n * c_in * c_out * out_points * k / groups
    #   = 2 * 2 * 8 * 8 * 64 * 9 / 4 = 36,864; FlopCounterMode: x4 = 147,456
    true_wgrad = 2 * 2 * 8 * 8 * 64 * 9 // groups
    assert true_wgrad == 36_864
    assert fcm - fc.executed_flops == (groups - 1) * true_wgrad
    # with groups=1 nothing differs (the zoo test)


def test_causal_half_halves_only_causal_kernels():
    model, cfg, batch = _decoder("llama", attn="sdpa")
    full = _ours(_step(model, batch))
    half = _ours(_step(model, batch), causal_attention="half")
    analytic = transformer_flops(cfg, seq_len=S, batch_size=B, formula="matmul",
                                 causal_attention="half")
    attn_fwd = 262_144  # see test_deviation_sdpa_on_cpu_is_counted
    assert full.forward_flops - half.forward_flops == attn_fwd // 2
    assert half.model_flops == int(analytic.model_flops)
    # eager (mask-based) attention cannot be told causal: counted in full
    eager_model, _, eager_batch = _decoder("llama", attn="eager")
    e_full = _ours(_step(eager_model, eager_batch))
    e_half = _ours(_step(eager_model, eager_batch), causal_attention="half")
    assert e_full.executed_flops == e_half.executed_flops
