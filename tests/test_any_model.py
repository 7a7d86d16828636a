"""Every model transformers can build gets a count from ``transformer_flops``.

* Every type of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``, at a
  tiny size (tests/_tiny_configs.py: the class defaults cut to a few layers,
  ``use_cache: false`` as training scripts save it), returns a count: the
  analytic formula where the type has one, else the exact meta-device count,
  which must equal the FlopCounter count of the same step run here through
  the public ``profile_flops`` (an independent path: no recipe ladder, no
  per-length cache, no summation). Each test records the path it took
  (``record_property("path", ...)``). A type is skipped only when
  transformers itself fails to build (or run) it, with transformers' own
  error in the skip reason.
* A packed batch is the sum of its sequences; counts are cached per
  (config, length); any failure of the meta count is one line naming the
  type and the cause, whatever transformers raised.
"""
from __future__ import annotations

import functools
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # noqa: E402

from _tiny_configs import tiny_config  # noqa: E402
from mfu_tracker import profile_flops, transformer_flops  # noqa: E402
from mfu_tracker.cli import main  # noqa: E402
from mfu_tracker.flops import _meta  # noqa: E402

S = 16  # tokens per sequence

# Fields a user of the type sets to train it as a causal LM (not sizes):
# Reformer as a decoder (axial positions that multiply to the length, as
# training asks); Bamba and Granite 4 with the attention layer their
# released configs have (the class defaults hold Mamba layers only).
USER_FIELDS = {
    "reformer": dict(is_decoder=True, axial_pos_shape=[4, 4]),
    "bamba": dict(attn_layer_indices=[1]),
    "granitemoehybrid": dict(layer_types=["linear_attention", "full_attention"]),
    "glm4_moe": dict(head_dim=128),  # GLM-4.5's (the class has none: 4096 / 96 heads)
}

# Types whose rules need more layers than two to keep their structure: Jamba's
# first attention layer is the 5th, Zamba ties its shared blocks across
# several hybrid layers, Gemma 3n shares KV into its last 15 layers.
MIN_LAYERS = {"jamba": 5, "zamba": 8, "gemma3n_text": 20}

# Types whose forward reads tensor values (an assert on a length, a
# data-dependent MoE dispatch, a tensor made on CPU), which the meta device
# cannot run: counted on CPU for real, which the count does only for small
# models, so they get small widths (vocabulary 512, width 64).
_SMALL = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_attention_heads=4)
CPU_SIZED = {
    "big_bird": dict(_SMALL),
    "megatron-bert": dict(_SMALL),
    "roformer": dict(_SMALL, embedding_size=64),
    "rembert": dict(_SMALL, input_embedding_size=32, output_embedding_size=64,
                    bos_token_id=3, eos_token_id=4),
    "xlm": dict(vocab_size=512, emb_dim=64, n_heads=4),
    "xlnet": dict(vocab_size=512, d_model=64, n_head=4, d_inner=128, d_head=16),
    "diffllama": dict(_SMALL, num_key_value_heads=4, head_dim=8),
    "jetmoe": dict(_SMALL, num_key_value_heads=2, kv_channels=16),
    "longcat_flash": dict(_SMALL, num_key_value_heads=4, ffn_hidden_size=128, q_lora_rank=32,
                          kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, head_dim=8,
                          v_head_dim=16, qk_head_dim=24, moe_topk=2, n_routed_experts=4,
                          zero_expert_num=2, expert_ffn_hidden_size=32),
}


# What a meta tensor cannot do (our limit, not transformers' error).
_META_LIMITS = ("meta tensors", "Cannot copy out of meta", "meta function", "device meta")


def _transformers_error(config) -> BaseException | None:
    """transformers' own error building, then running one step of, the
    type's model on the meta device with the plainest inputs (ids, a cache):
    None when it builds and runs, or fails only where a meta tensor cannot
    go."""
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation="eager", dtype=torch.bfloat16)
        model(input_ids=torch.zeros(1, S, dtype=torch.long, device="meta"), use_cache=True)
    except Exception as exc:  # noqa: BLE001 -- recorded as transformers' error
        if not any(limit in str(exc) for limit in _META_LIMITS):
            return exc
    return None


def _fields(model_type: str) -> dict:
    return {"use_cache": False, **USER_FIELDS.get(model_type, {}),
            **CPU_SIZED.get(model_type, {})}


@functools.lru_cache(maxsize=None)
def _tiny(model_type: str):
    return tiny_config(transformers, model_type, min_layers=MIN_LAYERS.get(model_type, 2),
                       **_fields(model_type))


def _reference(f, config) -> int:
    """The FlopCounter count of the step ``f`` describes (one sequence of S
    tokens), run here on the model ``profile_flops`` gets, with the inputs
    the recipe names."""
    exact = f.conventions["exact"]
    recipe = exact["recipe"]
    device = "cpu" if "on CPU" in recipe else "meta"
    attention = recipe.split(" ", 1)[0]
    dtype = torch.float32 if device == "cpu" or "float32" in recipe else torch.bfloat16
    torch.manual_seed(0)  # the count's seed: routing that reads values routes the same
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(
            config, attn_implementation=attention, dtype=getattr(config, "dtype", None) or dtype)
    model.train()
    if getattr(config, "languages", None) and getattr(config, "default_language", None) is None:
        model.set_default_language(list(config.languages)[0])  # X-MOD, as the count does
    kwargs = {"use_cache": "use_cache" in recipe}
    if "inputs_embeds" in recipe:
        width = model.get_input_embeddings().embedding_dim
        kwargs["inputs_embeds"] = torch.zeros(1, S, width, dtype=model.dtype)
    else:
        kwargs["input_ids"] = torch.zeros(1, S, dtype=torch.long)
    if "attention_mask" in recipe:
        kwargs["attention_mask"] = torch.ones(1, S, dtype=torch.long)
    return profile_flops(model, kwargs=kwargs, device=device)


def _count(model_type: str, record_property):
    """(config, count) at the tiny size, else at the type's default size
    (when the cut breaks a rule of the type); skips with transformers' own
    error when it cannot build the type."""
    first = None
    for config in (_tiny(model_type), "default"):
        if config == "default":
            config = tiny_config(transformers, model_type, min_layers=10**6,
                                 **_fields(model_type))
        if isinstance(config, Exception):
            record_property("path", "skipped")
            pytest.skip(f"transformers cannot configure {model_type}: "
                        f"{type(config).__name__}: {config}")
        try:
            return config, transformer_flops(config, seq_len=S)
        except ValueError as exc:
            first = first or exc
    own = _transformers_error(config)
    if own is not None:
        record_property("path", "skipped")
        pytest.skip(f"transformers cannot build or run {model_type}: "
                    f"{type(own).__name__}: {own}")
    raise AssertionError(f"{model_type}: {first}")


@pytest.mark.parametrize("model_type", sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES))
def test_every_causal_lm_type_is_counted(model_type, record_property):
    config, f = _count(model_type, record_property)
    path = f.conventions["formula"]
    record_property("path", "exact" if path == "exact" else "analytic")
    assert f.model_flops > 0 and f.num_tokens == S
    assert f.conventions["model_type"] in (model_type, config.model_type)
    if path == "exact":
        assert f.model_flops == _reference(f, config), f.conventions_str
        assert "exact count" in f.conventions_str


# ---------------------------------------------------------------------------
# The exact path: packed lengths, the cache, saved configs, one-line errors
# ---------------------------------------------------------------------------

def _exact_type(**over):
    """A tiny StableLM: a type no analytic formula covers (nor is planned to),
    so these tests keep exercising the exact path."""
    fields = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=96, vocab_size=128, bos_token_id=1,
                  eos_token_id=2, pad_token_id=0, use_cache=False)
    fields.update(over)
    return transformers.AutoConfig.for_model("stablelm", **fields)


def test_packed_batch_is_the_sum_of_its_sequences_counted_once_per_length(monkeypatch):
    from mfu_tracker.counter import FlopCounter

    config = _exact_type()
    _meta.clear_caches()
    runs = []
    real_run = _meta.run_counted
    monkeypatch.setattr(_meta, "run_counted", lambda *a, **k: runs.append(k["length"]) or
                        real_run(*a, **k))
    packed = transformer_flops(config, seq_lens=[10, 6, 10])
    assert sorted(runs) == [6, 10]                      # each distinct length once
    again = transformer_flops(config, cu_seqlens=[0, 10, 16, 26])
    assert again.model_flops == packed.model_flops and sorted(runs) == [6, 10]  # cached
    assert transformer_flops(config, seq_len=10, batch_size=3).model_flops == \
        3 * transformer_flops(config, seq_len=10).model_flops
    assert sorted(runs) == [6, 10]
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    counted = 0
    for n in (10, 6, 10):  # the packed sequences, each on its own (varlen attention)
        with FlopCounter() as fc:
            model(input_ids=torch.ones(1, n, dtype=torch.long)).logits.sum().backward()
        counted += fc.model_flops
    assert packed.model_flops == counted
    assert packed.num_tokens == 26 and packed.conventions["sequences"] == "seq_lens"


def test_length_one_sequences_count_alone_and_in_a_packed_batch():
    """Mutant: the packed-lengths loop's ``n > 0`` made ``n > 1``
    (flops/_exact.py, exact_transformer_flops): a packed [1, 7] loses the
    1-token sequence (1/8 of its tokens) and seq_len=1 has no sequence."""
    from mfu_tracker.counter import FlopCounter

    config = _exact_type()
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    real = {}
    for n in (1, 7):
        with FlopCounter() as fc:
            model(input_ids=torch.ones(1, n, dtype=torch.long)).logits.sum().backward()
        real[n] = fc.model_flops
    one = transformer_flops(config, seq_len=1)
    assert one.model_flops == real[1] > 0 and one.num_tokens == 1
    packed = transformer_flops(config, seq_lens=[1, 7])
    assert packed.model_flops == real[1] + real[7] and packed.num_tokens == 8
    assert transformer_flops(config, cu_seqlens=[0, 1, 8]).model_flops == packed.model_flops
    # empty rows of a padded batch hold no sequence: they cost nothing
    assert transformer_flops(config, seq_lens=[0, 1, 7]).model_flops == packed.model_flops


def test_each_causal_convention_is_counted_and_cached_on_its_own():
    config = _exact_type()
    full = transformer_flops(config, seq_len=16)
    half = transformer_flops(config, seq_len=16, causal_attention="half")
    # sdpa is_causal: the counter halves the 16^2 square of 4 heads of 16, 2
    # layers: 3 * (4 * 4 * 16) * 128 * 2 = 196,608 FLOPs fewer
    assert full.model_flops - half.model_flops == 3 * (4 * 4 * 16) * 128 * 2
    assert half.conventions["causal_attention"] == "half"


def test_exact_counts_refuse_what_the_built_model_cannot_show():
    config = _exact_type()
    for kwargs, match in ((dict(formula="palm"), "formula='palm' needs the analytic formula"),
                          (dict(lora_rank=8), "lora_rank=8 needs the analytic formula"),
                          (dict(activation_recompute="full"), "activation_recompute"),
                          (dict(bias=False), "bias=False needs the analytic formula"),
                          (dict(convention="verl"), "convention= and context_parallel=")):
        with pytest.raises(ValueError, match=match):
            transformer_flops(config, seq_len=8, **kwargs)
    with pytest.raises(TypeError, match="hidden_size apply to the analytic formula"):
        transformer_flops(config, seq_len=8, hidden_size=32)
    # what transformers builds has no MTP layer: num_mtp_layers=0 is its count
    assert transformer_flops(config, seq_len=8, num_mtp_layers=0).model_flops == \
        transformer_flops(config, seq_len=8, formula="matmul").model_flops


def test_a_refused_config_is_one_line_naming_type_cause_and_alternatives(tmp_path, capsys):
    config = _exact_type(pad_token_id=500)  # outside the vocabulary: nn.Embedding asserts
    with pytest.raises(ValueError) as info:
        transformer_flops(config, seq_len=8)
    message = str(info.value)
    assert "model_type 'stablelm'" in message and "AssertionError" in message
    assert "mfu_tracker.FlopCounter" in message and 'profile_flops(model, batch, device="meta")' \
        in message
    assert "\n" not in message
    config.save_pretrained(tmp_path)
    for command in (["estimate", "--gpu", "H100 SXM", "--tokens-per-sec", "1e6"], ["profile"]):
        assert main([*command, "--model", str(tmp_path), "--seq-len", "8"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "AssertionError" in err and "stablelm" in err



def test_a_config_saved_with_use_cache_false_runs_on_meta_without_a_fallback():
    # the step passes use_cache=True whatever the config saved: transformers
    # then skips reading the position ids (a meta tensor has no values), so
    # the first recipe runs (plain ids, sdpa) and no mask or eager fallback
    _meta.clear_caches()
    f = transformer_flops(_exact_type(use_cache=False), seq_len=8)
    assert f.conventions["exact"]["recipe"] == str(_meta.RECIPES[0])
    assert str(_meta.RECIPES[0]) == "sdpa attention, input_ids, use_cache, on meta"


def test_the_cause_reported_is_the_first_that_is_not_a_fallbacks_reason():
    meta = RuntimeError("Tensor.item() cannot be called on meta tensors")
    sdpa = ValueError("does not support an attention implementation through "
                      "torch.nn.functional.scaled_dot_product_attention yet")
    telling = TypeError("forward() got an unexpected keyword argument 'use_cache'")
    assert _meta._cause([meta, sdpa, telling, KeyError("later")]) is telling
    assert _meta._cause([meta, sdpa]) is sdpa  # nothing better: the last

ISSUE_TYPES = ["smollm3", "olmo3", "olmoe", "exaone4", "starcoder2", "stablelm"]


@pytest.mark.parametrize("model_type", ISSUE_TYPES)
def test_configs_saved_with_use_cache_false_work_in_estimate_and_profile(model_type, tmp_path,
                                                                         capsys):
    fields = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=96, vocab_size=128, bos_token_id=1,
                  eos_token_id=2, pad_token_id=0, use_cache=False)
    if model_type == "olmoe":
        fields.update(num_experts=4, num_experts_per_tok=2)
    config = transformers.AutoConfig.for_model(model_type, **fields)
    config.save_pretrained(tmp_path)
    assert '"use_cache": false' in (tmp_path / "config.json").read_text()
    assert main(["estimate", "--model", str(tmp_path), "--gpu", "H100 SXM", "--seq-len", "16",
                 "--tokens-per-sec", "1e6"]) == 0
    out = capsys.readouterr().out
    f = transformer_flops(config, seq_len=16)
    assert f"MFU:                   {100 * f.flops_per_token * 1e6 / 989.4e12:.2f}%" in out
    assert main(["profile", "--model", str(tmp_path), "--seq-len", "16"]) == 0
    out = capsys.readouterr().out
    # profile counts the step exactly: the matmul count (analytic where the
    # type has a formula, equal to the exact one; else the exact count)
    exact = transformer_flops(config, seq_len=16, formula="matmul")
    assert f"model FLOPs (MFU):     {int(exact.model_flops):,}" in out


# ---------------------------------------------------------------------------
# Token-by-token scans run batched on meta: the same count, not per token
# ---------------------------------------------------------------------------

def _mamba_one(model_type: str):
    """A small model of a type whose torch Mamba-1 scan walks the tokens."""
    fields = dict(hidden_size=64, num_hidden_layers=2, vocab_size=128, pad_token_id=0,
                  use_cache=False)
    if model_type == "jamba":  # layer 1 attention, layer 0 Mamba; experts off
        fields.update(num_attention_heads=4, num_key_value_heads=2, intermediate_size=96,
                      attn_layer_period=2, attn_layer_offset=1, num_experts=1)
    if model_type == "zamba":  # its shared attention block ties across 6 hybrid layers
        fields.update(num_attention_heads=4, num_key_value_heads=4, intermediate_size=96,
                      attention_hidden_size=128, num_hidden_layers=8, mamba_expand=2)
    return transformers.AutoConfig.for_model(model_type, **fields)


@pytest.mark.parametrize("model_type", ["mamba", "falcon_mamba", "jamba", "zamba"])
def test_token_by_token_mamba_scans_run_batched_with_the_same_count(model_type, monkeypatch):
    from mfu_tracker.counter import FlopCounter
    from mfu_tracker.flops import _meta_scans

    config = _mamba_one(model_type)
    _meta.clear_caches()
    batched = transformer_flops(config, seq_len=S, formula="exact")
    assert "its token-by-token Mamba scan run as one batched matmul" in \
        batched.conventions["exact"]["recipe"]
    # transformers' own token loop on meta: the same FLOPs, every kind
    _meta.clear_caches()
    monkeypatch.setattr(_meta_scans, "MODULES", ())
    loop = transformer_flops(config, seq_len=S, formula="exact")
    assert "batched" not in loop.conventions["exact"]["recipe"]
    assert (loop.model_flops, loop.hardware_flops, loop.forward_flops) == \
        (batched.model_flops, batched.hardware_flops, batched.forward_flops)
    _meta.clear_caches()
    # and a real training step on CPU, whose scan is transformers' loop
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with FlopCounter() as fc:
        model(input_ids=torch.ones(1, S, dtype=torch.long)).logits.float().sum().backward()
    assert batched.model_flops == fc.model_flops


@pytest.mark.parametrize("model_type", ["mamba", "falcon_mamba", "zamba"])
def test_sequences_shorter_than_the_convolution_count_as_a_training_step(model_type):
    # the cache a model makes for itself pads a prefill shorter than its
    # convolution kernel (4) to the kernel; a training step has no cache:
    # 1 and 3 tokens convolve 1 + 3 and 3 + 3 positions, not 4 + 3
    from mfu_tracker.counter import FlopCounter

    config = _mamba_one(model_type)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    for n in (1, 3):
        with FlopCounter() as fc:
            model(input_ids=torch.ones(1, n, dtype=torch.long),
                  use_cache=False).logits.float().sum().backward()
        model.zero_grad(set_to_none=True)
        assert transformer_flops(config, seq_len=n).model_flops == fc.model_flops


def test_a_batched_scan_makes_as_many_op_calls_at_any_length():
    # the count's cost no longer grows with the tokens: the ops a layer
    # dispatches are the same at 8 tokens and at 512 (token by token: 64x
    # the scan's matmuls)
    config = _meta.exact_config(_mamba_one("mamba"))
    calls = {}
    for length in (8, 512):
        fc, _, recipe = _meta.run_counted(config, batch_size=1, length=length, causal="full")
        assert recipe.batched_scan
        calls[length] = {op: n for op, (n, _) in fc.by_op.items()}
    assert calls[8] == calls[512]

