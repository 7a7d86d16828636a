"""The MoE load of a sampled step (Tracker(moe=), docs/moe.md): every figure
against hand arithmetic written beside it, through transformers' own MoE
models (eager loop and grouped GEMM) and through layers that align their
groups or drop at a capacity; the moe/* keys in the log, the report and
the key table; the advice's levers."""
from __future__ import annotations

import json
import math

import pytest
import torch
import transformers

from _moe_layers import AlignedExperts, CapacityExperts, MoEBlock, fix_router
from mfu_tracker import Tracker
from mfu_tracker.job import _advice as A
from mfu_tracker.job._advice import Advice, Evidence
from mfu_tracker.timing._metrics import FAMILIES, KEYS
from mfu_tracker.timing._moe_load import layer_load, model_load
from mfu_tracker.timing._moe_observer import MoEObserver, experts_modules

SKEWED = [0] * 12 + [1, 1, 2, 3]     # 3/4 of 16 tokens to expert 0: (12, 2, 1, 1)
BALANCED = [0, 1, 2, 3] * 4          # (4, 4, 4, 4)
SMALL = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
             num_attention_heads=2, num_key_value_heads=1)
CONFIGS = {
    "mixtral": lambda: transformers.MixtralConfig(**SMALL, num_local_experts=4,
                                                  num_experts_per_tok=1),
    "qwen3_moe": lambda: transformers.Qwen3MoeConfig(**SMALL, num_experts=4, head_dim=8,
                                                     num_experts_per_tok=1,
                                                     moe_intermediate_size=8),
    "olmoe": lambda: transformers.OlmoeConfig(**SMALL, num_experts=4, num_experts_per_tok=1),
    "deepseek_v3": lambda: transformers.DeepseekV3Config(
        **SMALL, n_routed_experts=4, num_experts_per_tok=1, moe_intermediate_size=8,
        first_k_dense_replace=0, n_group=1, topk_group=1, q_lora_rank=None, kv_lora_rank=8,
        qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8, n_shared_experts=1),
}
# FLOPs per row of each family's expert GEMMs (forward): 2 x K x N per weight
ROW_FLOPS = {"mixtral": 2 * 16 * 64 + 2 * 32 * 16,       # gate_up 16->2x32, down 32->16
             "qwen3_moe": 2 * 16 * 16 + 2 * 8 * 16,      # moe_intermediate_size 8
             "olmoe": 2 * 16 * 64 + 2 * 32 * 16,
             "deepseek_v3": 2 * 16 * 16 + 2 * 8 * 16}


def sample(model, run):
    """The MoE load of one sampled step running ``run()``."""
    observer = MoEObserver(model, 1)
    observer.boundary(0)           # arms step 1
    run()
    observer.boundary(1)           # reads it
    return observer


# ---- the arithmetic --------------------------------------------------------------

def test_layer_figures_by_hand():
    # routed (12, 2, 1, 1), groups aligned to 8: rows (16, 8, 8, 8)
    layer = layer_load("l", [12, 2, 1, 1], [16, 8, 8, 8], row_flops=100.0)
    assert layer.padded_rows == 4 + 6 + 7 + 7 and layer.dropped == 0
    assert layer.imbalance == 12 / 4 and layer.straggler == 0
    # capacity 6: rows (6, 6, 6, 6): 12 - 6 dropped, 0 + 4 + 5 + 5 padded
    capped = layer_load("l", [12, 2, 1, 1], [6, 6, 6, 6], row_flops=100.0)
    assert (capped.dropped, capped.padded_rows) == (6, 14)


def test_model_figures_by_hand():
    a = layer_load("a", [12, 2, 1, 1], [16, 8, 8, 8], row_flops=10.0)   # max 12, mean 4
    b = layer_load("b", [3, 5, 4, 4], None, row_flops=30.0)             # max 5, mean 4
    f = model_load(7, [a, b]).figures()
    assert f["moe_imbalance"] == pytest.approx((12 + 5) / (4 + 4))
    assert f["moe_imbalance_max"] == 3.0
    assert (f["moe_straggler_layer"], f["moe_straggler_expert"]) == (0, 0)   # 12 - 4 > 5 - 4
    assert f["moe_tokens_per_expert_mean"] == 32 / 8
    # padded FLOPs: 24 rows x 10 over (40 x 10 + 16 x 30) computed
    assert f["moe_padded_flops_share"] == pytest.approx(240 / (400 + 480))
    assert f["moe/layer_imbalance"] == {"a": 3.0, "b": 5 / 4}


@pytest.mark.parametrize("bad", [[], [-1, 2]])
def test_bad_counts(bad):
    with pytest.raises(ValueError, match="routed"):
        layer_load("l", bad)


# ---- transformers' MoE models, a fixed router ------------------------------------

@pytest.mark.parametrize("implementation", ["eager", "grouped_mm"])
@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_transformers_models_skewed(family, implementation):
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        CONFIGS[family](), experts_implementation=implementation)
    fix_router(model, SKEWED)
    ids = torch.randint(0, 64, (2, 8))
    observer = sample(model, lambda: model(ids).logits.sum().backward())
    layers = observer.last.layers
    assert [layer.name for layer in layers] == [n for n, _ in experts_modules(model)]
    for layer in layers:
        assert layer.routed == (12, 2, 1, 1)
        assert layer.rows == (12, 2, 1, 1)          # neither pads nor drops
        assert layer.row_flops == ROW_FLOPS[family]
    f = observer.figures()
    assert f["moe_imbalance"] == 12 / 4 == 3.0
    assert (f["moe_straggler_layer"], f["moe_straggler_expert"]) == (0, 0)
    assert (f["moe_tokens_per_expert_min"], f["moe_tokens_per_expert_max"]) == (1, 12)
    assert f["moe_padded_flops_share"] == 0.0 and f["moe_dropped_tokens"] == 0.0


def test_transformers_balanced_is_one():
    model = transformers.AutoModelForCausalLM.from_config(CONFIGS["mixtral"]())
    fix_router(model, BALANCED)
    observer = sample(model, lambda: model(torch.randint(0, 64, (2, 8))))
    assert observer.figures()["moe_imbalance"] == 1.0


def test_top_k_counts_each_assignment():
    # top-2 routing of a real router: 16 tokens x 2 = 32 assignments per layer
    cfg = CONFIGS["mixtral"]()
    cfg.num_experts_per_tok = 2
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    observer = sample(model, lambda: model(torch.randint(0, 64, (2, 8))))
    assert all(sum(layer.routed) == 32 and layer.rows == layer.routed
               for layer in observer.last.layers)


# ---- layers that pad or drop -----------------------------------------------------

def test_aligned_groups():
    block = MoEBlock(AlignedExperts(4, 16, 32, align=8), SKEWED)
    observer = sample(block, lambda: block(torch.randn(16, 16)))
    layer = observer.last.layers[0]
    assert layer.rows == (16, 8, 8, 8)                 # each group rounded up to 8
    assert layer.row_flops == 2 * 16 * 32 + 2 * 32 * 16
    f = observer.figures()
    assert f["moe_padded_rows"] == 24
    assert f["moe_padded_flops_share"] == pytest.approx(24 / 40)   # same FLOPs per row
    assert f["moe_dropped_tokens"] == 0


def test_capacity_drops():
    block = MoEBlock(CapacityExperts(4, 16, 32, capacity=6), SKEWED)
    observer = sample(block, lambda: block(torch.randn(16, 16)).sum().backward())
    f = observer.figures()
    assert observer.last.layers[0].rows == (6, 6, 6, 6)
    assert f["moe_dropped_tokens"] == 12 - 6 and f["moe_dropped_share"] == 6 / 16
    assert f["moe_padded_rows"] == 4 + 5 + 5
    assert f["moe_padded_flops_share"] == pytest.approx(14 / 24)


# ---- the sampled step only -------------------------------------------------------

def test_hooks_exist_only_on_the_sampled_step():
    block = MoEBlock(AlignedExperts(4, 16, 32, align=8), SKEWED)
    observer = MoEObserver(block, 3)
    experts = block.experts
    for step in range(7):
        observer.boundary(step)
        armed = bool(experts._forward_pre_hooks) or bool(experts._forward_hooks)
        assert armed == ((step + 1) % 3 == 0), step
        block(torch.randn(16, 16))
    assert observer.last.step == 6       # the last sampled step read


def test_bad_arguments():
    block = MoEBlock(AlignedExperts(4, 16, 32, align=8), SKEWED)
    with pytest.raises(TypeError, match="moe"):
        Tracker(clock="cpu", moe=object())
    with pytest.raises(ValueError, match="moe:"):
        Tracker(clock="cpu", moe=torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="moe_every"):
        Tracker(clock="cpu", moe=block, moe_every=0)
    with pytest.raises(ValueError, match="moe_every"):
        Tracker(clock="cpu", moe_every=5)


# ---- keys: the tracker, the log, the report; the advice ----------------------------

def _run(tmp_path, assignment):
    block = MoEBlock(AlignedExperts(4, 16, 32, align=8), assignment)
    log = tmp_path / "log.jsonl"
    with Tracker(flops_per_step=1e6, peak_tflops=1.0, clock="cpu", warmup=0, moe=block,
                 moe_every=2, log_path=str(log)) as tracker:
        for _ in range(5):
            tracker.step()
            block(torch.randn(16, 16))
        tracker.step()
        out = tracker.metrics(prefix="throughput")
    return out, log


def test_keys_in_the_table_the_metrics_and_the_log(tmp_path):
    out, log = _run(tmp_path, SKEWED)
    table = {f"throughput/{key.name}" for key in KEYS if key.name.startswith("moe/")}
    assert table <= set(out)                       # every moe/* key is logged
    assert out["throughput/moe/imbalance"] == 3.0
    assert out["throughput/moe/padded_flops_share"] == pytest.approx(24 / 40)
    assert out["throughput/moe/sampled_step"] == 4
    assert out["throughput/moe/layer_imbalance/experts"] == 3.0
    assert "moe/layer_imbalance" in {family for family, _, _ in FAMILIES}
    line = [json.loads(x) for x in log.read_text().splitlines() if '"step"' in x][-2]
    assert line["throughput/moe/imbalance"] == 3.0
    from mfu_tracker.tracker._doc import TRACKER_DOC
    assert "moe/imbalance" in TRACKER_DOC


def test_report_panel_and_advise(tmp_path, capsys):
    from _cli import run_cli
    from mfu_tracker.cli.report.panels import PANELS
    from mfu_tracker.cli.report.panels.moe import PANEL

    assert PANEL in PANELS
    _, log = _run(tmp_path, SKEWED)
    status, out, _ = run_cli(capsys, "report", str(log), "--out", str(tmp_path / "r.png"))
    assert status == 0
    assert ("expert load at step 5 (sampled step 4): imbalance 3.000, straggler expert 0 of "
            "MoE layer 0, padded 0.600 of the expert FLOPs") in out
    status, out, _ = run_cli(capsys, "report", str(log), "--out", str(tmp_path / "r.png"),
                             "--numbers")
    assert "throughput/moe/imbalance=3.0" in out
    status, out, _ = run_cli(capsys, "advise", str(log))
    assert "the router's balancing" in out and "(throughput/moe/imbalance)" in out


def _evidence(out):
    return Evidence(prefix="throughput", metrics={"step": 5, **out})


def test_advice_skewed_names_balancing(tmp_path):
    out, _ = _run(tmp_path, SKEWED)
    advice, _ = A.advise(_evidence(out))
    by_rule = {a.rule: a for a in advice}
    balancing = by_rule["moe_balancing"]
    assert isinstance(balancing, Advice)
    assert balancing.bound == pytest.approx(1 - 1 / 3.0)
    assert "imbalance 3.000 (throughput/moe/imbalance)" in balancing.evidence
    assert "straggler expert 0 of MoE layer 0" in balancing.evidence
    assert by_rule["moe_padding"].bound == pytest.approx(0.6)    # aligned to 8
    assert "moe_capacity" not in by_rule                         # nothing dropped


def test_advice_balanced_no_lever(tmp_path):
    block_out, _ = _run(tmp_path, BALANCED)
    assert block_out["throughput/moe/imbalance"] == 1.0
    # (4, 4, 4, 4) aligned to 8: each group pads 4 rows
    assert block_out["throughput/moe/padded_flops_share"] == pytest.approx(16 / 32)
    advice, _ = A.advise(_evidence(block_out))
    assert "moe_balancing" not in {a.rule for a in advice}


def test_advice_capacity_bound_is_of_tokens():
    ev = Evidence(prefix="p", metrics={"p/moe/dropped_share": 0.25, "p/moe/dropped_tokens": 4})
    advice = A.RULES[[r.name for r in A.RULES].index("moe_capacity")].check(
        ev, {r.name: r for r in A.RULES}["moe_capacity"])
    assert advice.bound == 0.25 and advice.of.startswith("of the routed tokens")


# ---- expert parallelism: the wait as a waterfall cause -----------------------------

def test_the_wait_is_carved_out_of_communication_by_hand():
    from mfu_tracker._native import _C

    def lost(communication_s, wait_s):
        # mfu 0.3 of a 1 s step; forward 0.4 s
        r = _C.form_figures({"model_flops": 0.3}, 1.0, peak_flops_per_sec=1.0, step_s=1.0,
                            phase_s={"communication": communication_s, "forward": 0.4},
                            per_step={"moe_wait_s": wait_s})
        assert math.fsum([r["mfu"], *r["mfu_lost"].values()]) == 1.0
        return r["mfu_lost"]

    shares = lost(0.25, 0.1)
    assert shares["moe_imbalance"] == 0.1 and shares["communication"] == pytest.approx(0.15)
    assert shares["other"] == pytest.approx(1 - 0.3 - 0.25 - (0.4 - 0.3))   # untouched
    # a sampled wait above the window's exposed communication: at most all of it
    shares = lost(0.05, 0.1)
    assert shares["moe_imbalance"] == 0.05 and shares["communication"] == 0.0


def test_one_process_has_no_wait_and_rank_zero(tmp_path):
    out, _ = _run(tmp_path, SKEWED)
    assert out["throughput/moe/straggler_rank"] == 0
    assert "throughput/moe_wait_s" not in out
    assert "throughput/mfu_lost/moe_imbalance" not in out
