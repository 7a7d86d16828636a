"""Model FLOPs count the backward that ran: only what reaches the loss gets a
backward (docs/flops.md, "Only what reaches the loss gets a backward";
csrc/core/ops/ops.h "Reaching the loss"), and "half" says what it could not halve.

Each expected number is hand arithmetic written beside it, or
torch.utils.flop_counter.FlopCounterMode on the same run of a real tiny model
built from its transformers config (eager attention and experts, which
FlopCounterMode counts right): its total is every matmul that ran, so a
backward charged for something that never reached the loss shows up as a
difference.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from _backends import run_script

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch.utils.checkpoint as checkpoint  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from flops.test_hf_vlm import _image_tokens  # noqa: E402

from mfu_tracker import FlopCounter  # noqa: E402

TESTS = Path(__file__).resolve().parent

# x [64, 32] (no grad) @ w [32, 32]: 2 * 64 * 32 * 32 = 131,072 a matmul
MM = 2 * 64 * 32 * 32
assert MM == 131_072


def _fcm(run) -> FlopCounterMode:
    with FlopCounterMode(display=False) as mode:
        run()
    return mode


def _ours(run, **kwargs) -> FlopCounter:
    with FlopCounter(**kwargs) as fc:
        run()
    return fc


def _weights(n: int = 2) -> list:
    torch.manual_seed(0)
    return [torch.randn(32, 32, requires_grad=True) for _ in range(n)]


X = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))


# ---- the rule, by hand ---------------------------------------------------------------

def test_an_unused_matmul_gets_no_backward():
    w1, w2 = _weights()

    def step():
        y = X @ w1
        X @ w2  # never reaches the loss
        y.sum().backward()

    # forward 2 x 131,072; backward: w1's gradient only (X needs none) 131,072
    fc = _ours(step)
    assert fc.model_flops == fc.executed_flops == 3 * MM == 393_216
    assert _fcm(step).get_total_flops() == 393_216
    assert fc.forward_flops == 2 * MM and fc.backward_flops == MM


def test_a_count_without_a_backward_charges_the_backward_it_stands_for():
    w1, _ = _weights()
    with FlopCounter() as fc:
        y = X @ w1                       # forward under grad, no backward here
    assert fc.model_flops == 2 * MM      # 131,072 + w1's gradient 131,072
    y.sum().backward()                   # outside the counter: not seen
    assert fc.model_flops == 2 * MM and fc.backward_flops == 0
    y = X @ w1
    with FlopCounter() as fc:            # a backward only: what ran, as model work
        y.sum().backward()
    assert fc.model_flops == fc.executed_flops == fc.backward_flops == MM
    with torch.no_grad(), FlopCounter() as fc:
        X @ w1                           # inference: the forward only
    assert fc.model_flops == MM


def test_a_backward_in_a_later_block_of_the_counter_replaces_the_anticipated_one():
    w1, w2 = _weights()
    fc = FlopCounter()
    with fc:
        y = X @ w1
        X @ w2
    assert fc.model_flops == 4 * MM      # no backward yet: both anticipated
    with fc:
        y.sum().backward()
    assert fc.model_flops == 3 * MM      # the backward that ran
    fc.reset()
    assert fc.model_flops == 0


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointing_an_unused_output(reentrant):
    """The non-reentrant checkpoint runs the backward of what reaches the
    loss; the reentrant one (like a compiled region, docs/flops.md) hands
    its nested backward a gradient of zeros for an output the loss never
    reads, and that backward runs: x @ w2's, 2 x 131,072, counted as it
    ran."""
    w1, w2 = _weights()

    def block(x):
        return torch.relu(x @ w1), x @ w2  # the second never reaches the loss

    def step(ckpt):
        x = X.clone().requires_grad_(True)
        y, _ = checkpoint.checkpoint(block, x, use_reentrant=reentrant) if ckpt else block(x)
        y.sum().backward()

    plain, ckpt = _ours(lambda: step(False)), _ours(lambda: step(True))
    # forward 2 x 131,072; backward of x @ w1 for x and w1: 2 x 131,072
    assert plain.model_flops == 4 * MM == _fcm(lambda: step(False)).get_total_flops()
    zeros = 2 * MM if reentrant else 0
    assert ckpt.model_flops == 4 * MM + zeros
    # the recompute is executed only: the reentrant one runs the whole block
    # again, the other stops once x @ w1's saved tensors are back
    recompute = 2 * MM if reentrant else MM
    assert ckpt.recompute_flops == recompute
    assert ckpt.executed_flops == 4 * MM + zeros + recompute


def test_a_create_graph_backward_and_its_double_backward_count_as_they_run():
    w1, _ = _weights()

    def step():
        x = X.clone().requires_grad_(True)
        y = torch.tanh(x @ w1).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)  # a gradient penalty
        (g.pow(2).sum() + y).backward()

    fc = _ours(step)
    fcm = _fcm(step).get_total_flops()
    assert fc.model_flops == fc.executed_flops == fcm
    assert fc.recompute_flops == 0   # a backward, not a recompute
    assert fcm > 3 * MM              # the double backward ran more matmuls


# ---- ops whose backward holds matmuls --------------------------------------------------

N, K = 8, 4  # A [8, 8], B [8, 4]


def _lower():
    return (torch.tril(torch.randn(N, N)) + N * torch.eye(N)).requires_grad_(True)


def _spd():
    a = torch.randn(N, N)
    return (a @ a.T + N * torch.eye(N)).requires_grad_(True)


def _square():
    return (torch.randn(N, N) + N * torch.eye(N)).requires_grad_(True)


# name -> (A, f(A, B)): ops the table does not count (a solve, a factorization)
# whose backward calls matmuls; model FLOPs = executed = FlopCounterMode
BACKWARD_MATMULS = {
    "linalg.solve_triangular": (_lower, lambda a, b: torch.linalg.solve_triangular(a, b, upper=False)),
    "triangular_solve": (_lower, lambda a, b: torch.triangular_solve(b, a, upper=False).solution),
    "linalg.solve": (_square, torch.linalg.solve),
    "linalg.inv": (_square, lambda a, b: torch.linalg.inv(a)),
    "linalg.cholesky": (_spd, lambda a, b: torch.linalg.cholesky(a)),
    "cholesky_solve": (_spd, lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a))),
    "cholesky_inverse": (_spd, lambda a, b: torch.cholesky_inverse(torch.linalg.cholesky(a))),
    "linalg.qr": (_square, lambda a, b: torch.linalg.qr(a)[1]),
    "linalg.eigh": (_spd, lambda a, b: torch.linalg.eigh(a)[0]),
    "linalg.svd": (_square, lambda a, b: torch.linalg.svd(a)[1]),
    "linalg.lu": (_square, lambda a, b: torch.linalg.lu(a)[2]),
    "linalg.lu_solve": (_square, lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b)),
    "linalg.householder_product": (_square, lambda a, b: torch.linalg.householder_product(
        a, torch.linspace(0.1, 0.9, N))),
}


@pytest.mark.parametrize("name", sorted(BACKWARD_MATMULS))
def test_backward_matmuls_of_uncounted_ops_are_model_flops(name):
    make, fn = BACKWARD_MATMULS[name]
    torch.manual_seed(0)
    a, b = make(), torch.randn(N, K, requires_grad=True)

    def step():
        fn(a, b).sum().backward()

    fcm = _fcm(step).get_total_flops()
    fc = _ours(step)
    assert fcm > 0 and fc.forward_flops == 0    # the op itself is no matmul
    assert fc.model_flops == fc.executed_flops == fcm


def test_solve_triangular_hand_arithmetic():
    """X = A^-1 B, A [8, 8] lower, B [8, 4]: the backward solves for grad_B
    (no matmul) and forms grad_A = -(grad_B X^T).tril(): one mm
    2 * 8 * 4 * 8 = 512."""
    torch.manual_seed(0)
    a, b = _lower(), torch.randn(N, K, requires_grad=True)
    fc = _ours(lambda: torch.linalg.solve_triangular(a, b, upper=False).sum().backward())
    assert fc.model_flops == 2 * N * K * N == 512
    assert fc.by_op == {"aten::mm": (1, 512)}


def test_matmuls_inside_an_ops_own_kernel_count_where_flop_counter_mode_sees_none():
    """A deliberate difference (docs/flops.md): pinv's kernel multiplies its
    factors through the dispatcher -- one 8 x 8 x 8 mm, 2 * 8**3 = 1,024 --
    which FlopCounterMode, its mode off inside an op it sees, does not count;
    the backward's matmuls both count."""
    torch.manual_seed(0)
    a = _square()

    def step():
        torch.linalg.pinv(a).sum().backward()

    fcm, fc = _fcm(step).get_total_flops(), _ours(step)
    assert fc.forward_flops == 2 * N ** 3 == 1_024
    assert fc.executed_flops == fc.model_flops == fcm + 1_024
    # F.bilinear's _trilinear: x1 [8, 8] W [3, 8, 8] then x2: 2*8*8*3*8 +
    # 2*8*3*8 = 3,072 + 384 = 3,456 forward, all uncounted by FlopCounterMode
    w, x = torch.randn(3, N, N), a.detach()
    assert _fcm(lambda: torch.nn.functional.bilinear(x, x, w)).get_total_flops() == 0
    assert _ours(lambda: torch.nn.functional.bilinear(x, x, w)).forward_flops == 3_456


# ---- real models against FlopCounterMode -------------------------------------------------

SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=128, pad_token_id=0, eos_token_id=1,
             bos_token_id=2, head_dim=16)


def _causal_lm(model_type: str, attn: str = "eager", **fields):
    small = {k: v for k, v in SMALL.items() if not (model_type == "falcon" and k == "head_dim")}
    cfg = transformers.AutoConfig.for_model(model_type, **{**small, **fields})
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation=attn,
                                                         experts_implementation="eager")


def _text_step(model, s: int = 16):
    ids = torch.randint(3, 100, (1, s), generator=torch.Generator().manual_seed(0))
    return lambda: model(input_ids=ids, labels=ids, use_cache=False).loss.backward()


def test_minimax_last_cache_update_gets_no_backward():
    """MiniMax's lightning-attention layer updates its cache state after the
    last block; nothing reads it (the counter charged its backward: +32,768
    here)."""
    model = _causal_lm("minimax", num_local_experts=4, num_experts_per_tok=2, block_size=8,
                       layer_types=["linear_attention", "full_attention"])
    run = _text_step(model)
    fc = _ours(run)
    assert fc.model_flops == fc.executed_flops == _fcm(run).get_total_flops()


def test_olmo_hybrid_counts_the_solve_triangular_backward():
    """Gated DeltaNet (OLMo-hybrid; Qwen3-Next runs the same torch fallback)
    inverts its chunk's triangle with linalg.solve_triangular: its backward's
    matmuls count (the counter left out 1,671,168 here). FlopCounterMode
    counts a depthwise convolution's weight gradient `groups` times (a
    documented difference): its convolution_backward is taken for ours."""
    model = _causal_lm("olmo_hybrid", linear_key_head_dim=8, linear_value_head_dim=12,
                       linear_num_key_heads=2, linear_num_value_heads=4, num_hidden_layers=4)
    run = _text_step(model)
    mode, fc = _fcm(run), _ours(run)
    fcm_ops = {str(op): flops for op, flops in mode.get_flop_counts()["Global"].items()}
    fcm = mode.get_total_flops() - fcm_ops["aten.convolution_backward"] \
        + fc.by_op["aten::convolution_backward"][1]
    assert fc.model_flops == fc.executed_flops == fcm


VIS = dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=48,
           num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8,
           vision_use_head=True)
TEXT = dict(SMALL, vocab_size=160)
IMG = 150


def _vlm_case(kind: str):
    """(config, pixel inputs of one image): each leaves part of its tower
    unused -- LLaVA's last CLIP layer (vision_feature_layer=-2) and the
    SigLIP pooling head the others' projectors never read."""
    tile = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    tiles = {"pixel_values": torch.randn(1, 6, 3, 32, 32, generator=torch.Generator().manual_seed(1)),
             "image_sizes": torch.tensor([[40, 70]])}
    clip = dict(VIS, model_type="clip_vision_model", projection_dim=32)
    del clip["vision_use_head"]
    pins = [[32, 64], [64, 32], [64, 64]]
    if kind == "llava":
        return transformers.LlavaConfig(text_config=dict(TEXT, model_type="llama"),
                                        vision_config=clip, image_token_index=IMG), {"pixel_values": tile}
    if kind == "llava_next":
        return transformers.LlavaNextConfig(text_config=dict(TEXT, model_type="llama"),
                                            vision_config=clip, image_token_index=IMG,
                                            image_grid_pinpoints=pins), tiles
    if kind == "llava_onevision":
        return transformers.LlavaOnevisionConfig(text_config=dict(TEXT, model_type="qwen2"),
                                                 vision_config=VIS, image_token_index=IMG,
                                                 image_grid_pinpoints=pins), tiles
    if kind == "gemma3":
        return transformers.Gemma3Config(text_config=dict(TEXT, model_type="gemma3_text"),
                                         vision_config=VIS, mm_tokens_per_image=4,
                                         image_token_id=IMG, boi_token_id=151,
                                         eoi_token_id=152), {"pixel_values": tile}
    if kind == "paligemma":
        return transformers.PaliGemmaConfig(text_config=dict(TEXT, model_type="gemma"),
                                             vision_config=VIS, image_token_index=IMG,
                                             projection_dim=64), {"pixel_values": tile}
    assert kind == "aya_vision"
    return transformers.AyaVisionConfig(text_config=dict(TEXT, model_type="cohere2"),
                                        vision_config=VIS, image_token_index=IMG,
                                        downsample_factor=2), {"pixel_values": tile}


@pytest.mark.parametrize("kind", ["llava", "llava_next", "llava_onevision", "gemma3",
                                  "paligemma", "aya_vision"])
def test_an_unused_vision_layer_or_head_gets_no_backward(kind):
    """One image, one training step: model FLOPs = executed = FlopCounterMode
    (the counter charged the unused part's backward: LLaVA +561,408,
    LLaVA-NeXT +2,807,040, the SigLIP head +155,648 an image tile)."""
    cfg, inputs = _vlm_case(kind)
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(cfg, attn_implementation="eager")
    ids = torch.randint(3, 140, (1, 96), generator=torch.Generator().manual_seed(0))
    ids[0, 2:2 + _image_tokens(model, inputs)] = IMG
    kwargs = dict(inputs)
    if kind in ("gemma3", "paligemma"):
        kwargs["token_type_ids"] = (ids == IMG).long()

    def run():
        model(input_ids=ids, **kwargs).logits.float().sum().backward()

    fc = _ours(run)
    assert fc.errors == 0
    assert fc.model_flops == fc.executed_flops == _fcm(run).get_total_flops()


# ---- torch.compile: a region's unused output --------------------------------------------

class _TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Linear(32, 32, bias=False)
        self.b = torch.nn.Linear(32, 32, bias=False)

    def forward(self, x):
        return self.a(x), self.b(x)


def test_a_compiled_regions_unused_output_gets_its_backward_run():
    """Stated in docs/flops.md: AOTAutograd runs the backward of a region's
    output the loss never reads, with zero gradients; the count says what
    ran. Eager: 2 forward + a's weight gradient = 393,216; compiled: + b's
    weight gradient 131,072 = 524,288."""
    model = _TwoHeads()
    compiled = torch.compile(model)

    def step(m):
        y, _ = m(X)
        y.sum().backward()

    holder = FlopCounter()  # the counting key on before the first compiled call
    with holder:
        pass
    step(compiled)
    assert _ours(lambda: step(model)).model_flops == 3 * MM == 393_216
    fc = _ours(lambda: step(compiled))
    assert fc.model_flops == fc.executed_flops == 4 * MM == 524_288


# ---- "half" says what it could not halve --------------------------------------------------

def test_half_names_attention_given_a_mask_tensor():
    """Falcon builds its causal mask as a tensor and passes it to SDPA:
    counted whole, and said. Per layer q [1, 4, 40, 16]: 2 * 4 * 40 * 40 *
    (16 + 16) = 409,600 forward; 2 layers."""
    model = _causal_lm("falcon", attn="sdpa", num_kv_heads=2, new_decoder_architecture=True)
    run = _text_step(model, s=40)
    full, half = _ours(run), FlopCounter(causal_attention="half")
    with pytest.warns(RuntimeWarning, match="could not halve 2 attention call") as caught:
        with half:
            run()
    assert sum("could not halve" in str(w.message) for w in caught) == 1
    assert half.model_flops == full.model_flops
    assert half.mask_tensor_attention_calls == 2
    assert half.mask_tensor_attention_flops == 2 * 409_600
    assert "mask tensor counted whole" in half.conventions
    assert "attention given a mask tensor, counted whole: 2 call(s), 819.200 KFLOP forward" \
        in half.table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per counter
        with half:
            run()
    assert full.half_warning() is None  # "full" halves nothing by definition


def test_half_names_attention_written_as_matmuls():
    run = _text_step(_causal_lm("llama"))
    with pytest.warns(RuntimeWarning, match="halved nothing.*aten::bmm"):
        half = _ours(run, causal_attention="half")
    assert half.model_flops == _ours(run).model_flops
    assert half.mask_tensor_attention_calls == 0


def test_half_is_silent_where_it_halved():
    """SDPA without a mask (is_causal=True) on CPU: halved, nothing to say.
    Per layer 2 * 2 * 4 * 16 * 16 * 32 / 2 = 65,536 forward halved, 2 layers,
    x3 with the backward (tests/test_counter_zoo.py's Llama)."""
    run = _text_step(_causal_lm("llama", attn="sdpa"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half = _ours(run, causal_attention="half")
    full = _ours(run)
    assert half.half_warning() is None
    attn_forward = 2 * 1 * 4 * 16 * 16 * 32  # one sequence of 16, per layer
    assert full.model_flops - half.model_flops == 2 * 3 * attn_forward // 2


def test_the_math_kernel_says_its_executed_flops_are_not_halved():
    """q, k, v [1, 2, 16, 8] on the math path under "half": F = 16,384 the
    full forward; model 1.5F, executed 3F, the excess 1.5F is over-compute,
    and the result says so."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.randn(1, 2, 16, 8, requires_grad=True)
    with sdpa_kernel(SDPBackend.MATH):
        fc = _ours(lambda: torch.nn.functional.scaled_dot_product_attention(
            q, q, q, is_causal=True).sum().backward(), causal_attention="half")
    if fc.backend != "torch-ext":
        pytest.skip("the fallback sees the composite math path as its bmms (op_table.c)")
    assert (fc.model_flops, fc.executed_flops, fc.overcompute_flops) == (24_576, 49_152, 24_576)
    assert fc.executed_flops - fc.overcompute_flops == 24_576  # the halved count
    assert "full square both ways" in fc.conventions


def test_the_integrations_warn_once_per_run():
    from mfu_tracker.integrations._step_counter import StepCounter

    notes: list[tuple[str, str]] = []

    class Policy:
        causal_attention = "half"
        audited = True

        def warn_once(self, key, message):
            if key not in {k for k, _ in notes}:
                notes.append((key, message))

    run = _text_step(_causal_lm("llama"))
    policy = Policy()
    for _ in range(2):  # two counted steps
        counter = StepCounter(policy)
        counter.start()
        run()
        assert counter.stop() is not None
    assert [k for k, _ in notes] == ["half"] and "halved nothing" in notes[0][1]


# ---- both backends ------------------------------------------------------------------------

_BOTH = """
import json, sys
sys.path.insert(0, %(tests)r)
import test_counter_reach as t
from mfu_tracker.counter import counter_backend
out = {"backend": counter_backend()}
w1, w2 = t._weights()
def unused():
    y = t.X @ w1
    t.X @ w2
    y.sum().backward()
out["unused"] = t._ours(unused).model_flops
with t.FlopCounter() as fc:
    t.X @ w1
out["no_backward"] = fc.model_flops
make, fn = t.BACKWARD_MATMULS["linalg.solve_triangular"]
a, b = make(), t.torch.randn(t.N, t.K, requires_grad=True)
out["solve_triangular"] = t._ours(lambda: fn(a, b).sum().backward()).model_flops
print(json.dumps(out))
"""


def _both(disable: bool) -> dict:
    return run_script(_BOTH % {"tests": str(TESTS)}, disable)


def test_both_backends_count_what_reaches_the_loss():
    ext, fallback = _both(False), _both(True)
    assert (ext.pop("backend"), fallback.pop("backend")) == ("torch-ext", "dispatch")
    assert ext == fallback == {"unused": 3 * MM, "no_backward": 2 * MM,
                               "solve_triangular": 512}
