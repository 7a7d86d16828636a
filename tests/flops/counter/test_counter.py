"""FlopCounter: hand arithmetic per op kind, model vs executed FLOPs, modules,
nesting, threads, bad input, failures, profile_flops, torch.compile."""
from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from mfu_tracker.counter import (  # noqa: E402
    FlopCounter,
    FlopProfile,
    profile_flops,
    profile_flops_with_hfu,
    register_flop_formula,
    unregister_flop_formula,
)
from mfu_tracker.flops.counter import _backend as counter_mod  # noqa: E402

nn = torch.nn


def _mlp(frozen_first: bool = False) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    if frozen_first:
        model[0].requires_grad_(False)
    return model


X = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
# forward: 2*4*16*32 + 2*4*32*8 = 4,096 + 2,048 = 6,144
FWD = 6_144


def test_linear_hand_arithmetic():
    model = _mlp()
    with FlopCounter() as fc:
        model(X).sum().backward()
    # layer 0: x does not require grad -> weight grad only (+4,096);
    # layer 1: its input requires grad -> input + weight grads (+2 * 2,048)
    assert fc.forward_flops == FWD
    assert fc.model_flops == FWD + 4_096 + 2 * 2_048 == 14_336
    assert fc.backward_flops == 4_096 + 2 * 2_048
    assert fc.executed_flops == fc.hfu_flops == 14_336
    assert fc.by_op == {"aten::addmm": (2, 6_144), "aten::mm": (3, 8_192)}
    assert fc.errors == 0 and not fc.approximate


def test_frozen_weights_cost_less():
    model = _mlp(frozen_first=True)
    with FlopCounter() as fc:
        model(X).sum().backward()
    # layer 0 frozen and its input needs no grad: forward only (4,096);
    # layer 1: input grad only? no - its weight trains and its input (from a
    # frozen layer) needs no grad: weight grad only (+2,048)
    assert fc.model_flops == FWD + 2_048
    assert fc.executed_flops == FWD + 2_048


@pytest.mark.parametrize("ctx", [torch.no_grad, torch.inference_mode])
def test_no_grad_and_inference_mode_count_forward_only(ctx):
    model = _mlp()
    with FlopCounter() as fc, ctx():
        model(X)
    assert fc.model_flops == fc.executed_flops == fc.forward_flops == FWD
    assert fc.backward_flops == 0


def test_model_flops_are_known_at_forward_time():
    # docs/conventions.md: the model count is decided in forward from requires_grad.
    model = _mlp()
    with FlopCounter() as fc:
        model(X)
    assert fc.model_flops == 14_336 and fc.executed_flops == FWD


def test_gradient_accumulation_adds_up():
    model = _mlp()
    fc = FlopCounter(modules=True)
    for _ in range(3):  # 3 micro-batches, one optimizer step
        with fc:
            model(X).sum().backward()
    assert fc.model_flops == 3 * 14_336
    fc.reset()
    assert fc.model_flops == 0 and fc.by_module == {}


def test_activation_checkpointing_recompute_is_executed_only():
    from torch.utils.checkpoint import checkpoint

    model = _mlp()

    def step(ckpt: bool):
        with FlopCounter() as fc:
            if ckpt:
                y = checkpoint(model, X, use_reentrant=False)
            else:
                y = model(X)
            y.sum().backward()
        return fc

    plain, ckpt = step(False), step(True)
    assert ckpt.model_flops == plain.model_flops == 14_336
    assert ckpt.forward_flops == plain.forward_flops == FWD
    # the recompute: non-reentrant checkpointing stops once every tensor
    # saved for backward is back, so the last Linear (whose output nothing
    # saved) is not re-run: + layer 0's 4,096 only
    assert ckpt.executed_flops == plain.executed_flops + 4_096


def test_hf_gradient_checkpointing():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=128, vocab_size=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="sdpa")
    ids = torch.randint(0, 128, (2, 16))

    def step():
        with FlopCounter(modules=True) as fc:
            model(input_ids=ids, labels=ids).loss.backward()
        return fc

    plain = step()
    model.train()
    model.gradient_checkpointing_enable()
    ckpt = step()
    layers_forward = plain.by_module["LlamaForCausalLM.model.layers.0"].forward_flops * 2
    # each layer's forward again, except down_proj (the recompute stops early:
    # its output is not saved): 2 * T * I * d = 2 * 32 * 128 * 64 = 524,288
    down_proj = 2 * 32 * 128 * 64
    assert ckpt.model_flops == plain.model_flops
    assert ckpt.executed_flops == plain.executed_flops + layers_forward - 2 * down_proj
    # module calls do not count the recompute
    assert ckpt.by_module["LlamaForCausalLM.model.layers.1"].calls == 1


def test_lora_with_peft():
    peft = pytest.importorskip("peft")
    transformers = pytest.importorskip("transformers")
    from mfu_tracker.flops import transformer_flops

    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, intermediate_size=128, vocab_size=128)
    torch.manual_seed(0)
    base = transformers.LlamaForCausalLM._from_config(cfg, attn_implementation="eager")
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                      lora_dropout=0.0))
    ids = torch.randint(0, 128, (2, 16))
    with FlopCounter() as fc:
        model(input_ids=ids, labels=ids).loss.backward()
    analytic = transformer_flops(cfg, seq_len=16, batch_size=2, formula="matmul", lora_rank=4,
                                 lora_targets=["q_proj", "v_proj"])
    # NB (flops.h): the analytic count charges layer 0 input gradients that
    # autograd skips under LoRA (the embedding output and the frozen norm
    # need no grad, and k_proj has no adapter, so k needs none either),
    # with T = 32 tokens:
    #   q, k, v base projections: 2*32*64*(64 + 32 + 32)    = 524,288
    #   q, v adapters' A matrices: 2*32*64*4 * 2            =  32,768
    #   QK^T's grad w.r.t. k: 2*b*h*s*s*d = 2*2*4*16*16*16  =  65,536
    skipped = 2 * 32 * 64 * (64 + 32 + 32) + 2 * 32 * 64 * 4 * 2 + 2 * 2 * 4 * 16 * 16 * 16
    assert skipped == 622_592
    assert fc.model_flops == int(analytic.model_flops) - skipped
    # full training of the same model costs more
    with FlopCounter() as full:
        base.requires_grad_(True)
        base(input_ids=ids, labels=ids).loss.backward()
    assert full.model_flops > fc.model_flops


def test_frozen_tower():
    # a frozen "vision tower" feeding a trainable head: the tower gets no
    # backward at all (nothing upstream needs a gradient)
    torch.manual_seed(0)
    tower = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32)).requires_grad_(False)
    head = nn.Linear(32, 8)
    with FlopCounter() as fc:
        head(tower(X)).sum().backward()
    tower_fwd = 2 * 4 * 16 * 32 + 2 * 4 * 32 * 32   # 4,096 + 8,192
    head_fwd = 2 * 4 * 32 * 8                       # 2,048
    assert fc.model_flops == tower_fwd + 2 * head_fwd  # head: weight grad only
    assert fc.executed_flops == fc.model_flops


def test_conv_hand_arithmetic():
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    with FlopCounter() as fc:
        conv(x).sum().backward()
    # out [2, 4, 6, 6]: 2 * 2 * 36 * 4 * 3 * 9 = 15,552; input + weight grads
    assert fc.forward_flops == 15_552
    assert fc.model_flops == fc.executed_flops == 3 * 15_552


def test_attention_and_causal_convention():
    q = torch.randn(1, 2, 8, 4, requires_grad=True)
    k = torch.randn(1, 2, 8, 4, requires_grad=True)
    v = torch.randn(1, 2, 8, 4, requires_grad=True)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    # forward 2*b*h*s_q*s_kv*(d_qk + d_v) = 2*1*2*8*8*8 = 2,048
    with FlopCounter() as fc:
        sdpa(q, k, v, is_causal=True).sum().backward()
    assert fc.forward_flops == 2_048
    assert fc.model_flops == 3 * 2_048            # model backward = 2x forward
    assert fc.backward_flops == 2_048 * 5 // 2    # executed backward = 2.5x
    with FlopCounter(causal_attention="half") as half:
        sdpa(q, k, v, is_causal=True).sum().backward()
        sdpa(q, k, v, is_causal=False)            # not causal: counted in full
    assert half.forward_flops == 1_024 + 2_048
    assert "halved" in half.conventions


def test_varlen_attention_per_sequence():
    # q, k, v on meta with host cumulative lengths: the meta kernel runs and
    # the observer reads the real lengths (3 and 7).
    q = torch.empty(10, 4, 8, device="meta")
    k = torch.empty(10, 2, 8, device="meta")
    cu = torch.tensor([0, 3, 10], dtype=torch.int32)
    with FlopCounter() as fc:
        torch.ops.aten._flash_attention_forward(q, k, k, cu, cu, 7, 7, 0.0, True, False)
    # per sequence 2*1*4*s*s*(8 + 8) = 128*s^2: 128 * (9 + 49) = 7,424
    assert fc.executed_flops == 7_424 and not fc.approximate
    with FlopCounter() as meta:
        torch.ops.aten._flash_attention_forward(q, k, k, cu.to("meta"), cu.to("meta"), 7, 7, 0.0,
                                                True, False)
    # lengths unknown on meta: each of the 2 sequences counts max 7: 128 * 98
    assert meta.executed_flops == 12_544 and meta.approximate


def test_grouped_mm_direct():
    a = torch.randn(8, 16, requires_grad=True)
    b = torch.randn(4, 16, 8, requires_grad=True)
    offs = torch.tensor([2, 4, 6, 8], dtype=torch.int32)
    with FlopCounter() as fc:
        out = torch._grouped_mm(a, b, offs=offs)
        out.backward(torch.ones_like(out))  # a contiguous gradient
    # 2 * 8 rows * 16 * 8 = 2,048 forward; input and weight grads: 3x
    assert fc.forward_flops == 2_048
    assert fc.model_flops == fc.executed_flops == 3 * 2_048


def test_per_module_table():
    model = _mlp()
    with FlopCounter(modules=True) as fc:
        model(X).sum().backward()
    mods = fc.by_module
    assert list(mods) == ["Sequential", "Sequential.0", "Sequential.1", "Sequential.2"]
    assert mods["Sequential"].forward_flops == FWD
    assert mods["Sequential.0"].model_flops == 4_096 * 2
    assert mods["Sequential.2"].model_flops == 2_048 * 3
    text = fc.table()
    assert "model FLOPs (MFU)" in text and "14,336" in text and "aten::addmm" in text
    assert "% model" in text


def test_module_table_is_off_by_default_and_says_so():
    model = _mlp()
    with FlopCounter() as bare:  # the default: totals only, no Module.__call__ wrapper
        assert torch.nn.Module.__call__ is torch.nn.Module._wrapped_call_impl
        model(X).sum().backward()
    assert bare.model_flops == 14_336 and bare.forward_flops == FWD
    # never an empty table that reads as "no module ran a counted op"
    with pytest.raises(RuntimeError, match=r"by_module.*modules=True"):
        bare.by_module
    text = bare.table()
    assert "aten::addmm" in text and "14,336" in text
    assert "per module: not recorded; FlopCounter(modules=True)" in text
    assert "% model" not in text


def test_nested_counters_each_count_their_block():
    model = _mlp()
    with FlopCounter() as outer:
        model(X)
        with FlopCounter() as inner:
            model(X)
        with torch.no_grad():
            model(X)
    assert inner.forward_flops == FWD
    assert outer.forward_flops == 3 * FWD


def test_reentering_an_active_counter_raises():
    fc = FlopCounter()
    with fc:
        with pytest.raises(RuntimeError, match="already active"):
            fc.__enter__()


def test_too_many_counters_raise():
    import contextlib

    with contextlib.ExitStack() as stack:
        with pytest.raises(RuntimeError, match="too many|at most"):
            for _ in range(64):
                stack.enter_context(FlopCounter(modules=False))


def test_other_threads_are_not_counted():
    model = _mlp()
    with FlopCounter() as fc:
        t = threading.Thread(target=lambda: model(X))
        t.start()
        t.join()
        model(X)
    assert fc.forward_flops == FWD  # only this thread's forward


def test_counter_used_on_its_thread_from_another_thread():
    # a counter entered in a worker thread counts that thread only
    model = _mlp()
    result = {}

    def work():
        with FlopCounter() as fc:
            model(X)
        result["flops"] = fc.forward_flops

    t = threading.Thread(target=work)
    with FlopCounter() as main:
        t.start()
        t.join()
    assert result["flops"] == FWD and main.forward_flops == 0


def test_exit_on_another_thread_raises():
    fc = FlopCounter()
    fc.__enter__()
    errors = []

    def exit_elsewhere():
        try:
            fc.__exit__(None, None, None)
        except RuntimeError as exc:
            errors.append(str(exc))

    t = threading.Thread(target=exit_elsewhere)
    t.start()
    t.join()
    fc.__exit__(None, None, None)  # the right thread still can
    assert errors and "thread" in errors[0]


def test_exceptions_in_the_block_propagate_and_counts_survive():
    model = _mlp()
    fc = FlopCounter()
    with pytest.raises(ZeroDivisionError):
        with fc:
            model(X)
            1 / 0
    assert fc.forward_flops == FWD


def test_bad_arguments():
    with pytest.raises(ValueError, match="causal_attention"):
        FlopCounter(causal_attention="quarter")
    with pytest.raises(TypeError, match="causal_attention"):
        FlopCounter(causal_attention=1)
    with pytest.raises(TypeError, match="modules"):
        FlopCounter(modules="yes")
    with pytest.raises(RuntimeError, match="not active"):
        FlopCounter().__exit__(None, None, None)


def test_custom_op_formula_and_a_failing_one_never_raise():
    lib = "mfu_test"

    @torch.library.custom_op(f"{lib}::scaled_mm2", mutates_args=())
    def scaled_mm2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a @ b) * 2

    register_flop_formula(f"{lib}::scaled_mm2", lambda a, b: 2 * a[0] * a[1] * b[1])
    try:
        a, b = torch.randn(4, 5), torch.randn(5, 6)
        with FlopCounter() as fc:
            scaled_mm2(a, b)
        # 2 * 4 * 5 * 6 = 240; the inner a @ b is not counted again
        assert fc.executed_flops == 240
        assert fc.by_op == {f"{lib}::scaled_mm2": (1, 240)}
        with pytest.raises(ValueError, match="already"):
            register_flop_formula(f"{lib}::scaled_mm2", lambda a, b: 0)
        with pytest.raises(ValueError, match="built-in"):
            register_flop_formula("aten::mm", lambda a, b: 0)
        with pytest.raises(ValueError, match="qualified"):
            register_flop_formula("mm", lambda a, b: 0)
        with pytest.raises(TypeError, match="callable"):
            register_flop_formula(f"{lib}::other", 3)
    finally:
        unregister_flop_formula(f"{lib}::scaled_mm2")

    def broken(a, b):
        raise RuntimeError("boom")

    register_flop_formula(f"{lib}::scaled_mm2", broken)
    try:
        model = _mlp()
        with pytest.warns(RuntimeWarning, match="could not be counted.*boom"):
            with FlopCounter() as fc:  # a training step that keeps going
                scaled_mm2(a, b)
                model(X).sum().backward()
        assert fc.errors == 1 and fc.model_flops == 14_336
    finally:
        unregister_flop_formula(f"{lib}::scaled_mm2")
    with pytest.raises(KeyError):
        unregister_flop_formula(f"{lib}::scaled_mm2")


def test_registering_while_another_thread_counts():
    """The one registry (in _C) is read by counters on other threads while
    formulas come and go: every call of the op is counted once, by the
    formula it found (240 or 480 FLOPs) or, while none is registered, as the
    aten::mm inside it (240) -- never an error, never twice."""
    @torch.library.custom_op("mfu_test::threaded_mm", mutates_args=())
    def threaded_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    a, b = torch.randn(4, 5), torch.randn(5, 6)
    done = threading.Event()
    result = {}

    def count() -> None:
        n = 0
        with FlopCounter(modules=False) as fc:
            while not done.is_set() or n < 100:
                threaded_mm(a, b)
                n += 1
        result["fc"], result["n"] = fc, n

    worker = threading.Thread(target=count)
    worker.start()
    try:
        for i in range(200):
            flops = 240 if i % 2 else 480  # 2 * 4 * 6 * 5 = 240, or twice that
            register_flop_formula("mfu_test::threaded_mm", lambda a, b, f=flops: f)
            unregister_flop_formula("mfu_test::threaded_mm")
    finally:
        done.set()
        worker.join(timeout=60)
    fc = result["fc"]
    calls, executed = fc.by_op.get("mfu_test::threaded_mm", (0, 0))
    inner_calls, inner = fc.by_op.get("aten::mm", (0, 0))
    assert fc.errors == 0
    if fc.backend == "torch-ext":
        assert calls + inner_calls == result["n"]  # each call counted once
    else:
        # NB (_dispatch_counter): the fallback runs an op without a formula
        # outside its mode, so it does not see the mm inside
        assert inner_calls == 0 and calls <= result["n"]
    assert inner == 240 * inner_calls  # 2 * 4 * 6 * 5
    assert executed % 240 == 0 and 240 * calls <= executed <= 480 * calls
    assert fc.executed_flops == executed + inner


def test_profile_flops_peer_compatible():
    model = _mlp()
    flops = profile_flops(model, X, with_backward=True)
    assert isinstance(flops, int) and flops == 14_336
    assert profile_flops(model, X, with_backward=False) == FWD
    assert all(p.grad is None for p in model.parameters())  # no side effects
    prof = profile_flops_with_hfu(model, (X,))
    assert isinstance(prof, FlopProfile) and prof == (14_336, 14_336)


def test_profile_flops_hf_kwargs_and_meta():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=128, n_positions=64)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel._from_config(cfg, attn_implementation="eager")
    sample = {"input_ids": torch.randint(0, 128, (1, 16))}
    on_cpu = profile_flops(model, kwargs=sample, with_backward=True)
    on_meta = profile_flops(model, kwargs=sample, with_backward=True, device="meta")
    # d 64, L 2, 16 tokens, V 128, MLP 256: per layer c_attn 64*192 + c_proj 64*64
    # + MLP 2*64*256 = 49,152 weights, x2 layers + lm_head 128*64 = 106,496;
    # 2 FLOPs each x 16 tokens = 3,407,872; attention 2 layers x 2*4*16*16*(16 + 16)
    # = 131,072 -> forward 3,538,944; every input needs a gradient: model = 3x
    assert on_cpu == on_meta == 3 * (2 * 16 * 106_496 + 131_072) == 10_616_832
    assert profile_flops(model, kwargs=sample, with_backward=False) == 3_538_944
    assert all(p.device.type == "cpu" for p in model.parameters())
    with torch.device("meta"):
        meta_model = transformers.GPT2LMHeadModel._from_config(cfg, attn_implementation="eager")
    assert profile_flops(meta_model, kwargs=sample) == on_cpu


@pytest.mark.parametrize("bad_args, bad_kwargs, match", [
    (3, None, "args must be"),
    ("text", None, "args must be"),
    (None, [1, 2], "kwargs must be"),
    ({"x": 1}, {"y": 2}, "not a dict in both"),
])
def test_profile_flops_bad_batch(bad_args, bad_kwargs, match):
    with pytest.raises(TypeError, match=match):
        profile_flops(_mlp(), bad_args, bad_kwargs)


def test_profile_flops_bad_model():
    with pytest.raises(TypeError, match="nn.Module"):
        profile_flops(lambda x: x, X)
    with pytest.raises(TypeError, match="with_backward"):
        profile_flops(_mlp(), X, with_backward="yes")


def test_module_does_not_import_torch_at_import():
    import subprocess
    import sys

    code = ("import sys, mfu_tracker.counter; "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _compile_works() -> bool:
    try:
        torch.compile(lambda x: x + 1)(torch.ones(2))
        return True
    except Exception:  # noqa: BLE001
        return False


def test_torch_compile_executed_flops():
    # Probed here, not in a skipif at import: an inductor compile takes ~5-20 s,
    # which every collection of this file (the fallback suite's subprocess
    # run with -k "not torch_compile" included) would otherwise pay.
    if not _compile_works():
        pytest.skip("torch.compile (inductor) unavailable here")
    torch._dynamo.reset()
    model = _mlp()
    compiled = torch.compile(model)
    compiled(X).sum().backward()  # compile outside the counter
    with FlopCounter(modules=False) as fc:
        compiled(X).sum().backward()
    assert fc.executed_flops == 14_336
    # the compiled backward counts as it runs (a custom Function's backward):
    # model FLOPs equal the eager model's (x does not require grad: 14,336)
    assert fc.forward_flops == FWD and fc.model_flops == 14_336


@pytest.mark.skipif(counter_mod.DISABLED, reason="the fallback is forced")
def test_backend_is_the_extension():
    assert counter_mod.counter_backend() == "torch-ext"
    with FlopCounter() as fc:
        pass
    assert fc.backend == "torch-ext"
    assert fc.model_flops == 0
    assert "FlopCounter(idle" in repr(fc)
