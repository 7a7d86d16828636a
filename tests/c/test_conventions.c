/*
 * test_conventions.c -- other frameworks' presets (conventions.h), context
 * parallelism (context_parallel.h) and the fixed-resolution vision towers
 * (vision_tiles.h); hand arithmetic beside every expected number.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "context_parallel.h"
#include "conventions.h"
#include "transformer.h"
#include "vision.h"

static int64_t lens[4];

static mfu_batch one_sequence(int64_t s)
{
    lens[0] = s;
    return (mfu_batch){.lengths = lens, .count = 1, .repeat = 1};
}

/* d 64, 2 layers, 4 heads of 16 (2 kv heads), SwiGLU 96, vocab 128, untied */
static mfu_transformer_dims small(void)
{
    mfu_transformer_dims d;
    mfu_transformer_dims_init(&d);
    d.hidden_size = 64;
    d.num_layers = 2;
    d.num_heads = 4;
    d.num_kv_heads = 2;
    d.head_dim = 16;
    d.intermediate_size = 96;
    d.vocab_size = 128;
    return d;
}

static const int *choices_of(const char *name)
{
    const mfu_convention *c = mfu_convention_find(name);
    return c != NULL ? c->choice : NULL;
}

static void test_presets(void)
{
    mfu_transformer_dims d = small();
    mfu_batch b = one_sequence(16);
    mfu_convention_flops ours, verl;
    const char *field = NULL;
    double sum = 0.0;

    CHECK(mfu_convention_count() == 6);
    CHECK(strcmp(mfu_convention_at(0)->name, "mfu_tracker") == 0);
    CHECK(mfu_convention_find("deepspeed") == NULL && mfu_convention_find(NULL) == NULL);
    CHECK(strcmp(mfu_convention_value_name(MFU_CHOICE_WINDOWS, 2), "half_span") == 0);
    CHECK(mfu_convention_value_name(MFU_CHOICE_CAUSAL, 2) == NULL);
    CHECK(mfu_convention_choice_name(MFU_CONVENTION_CHOICES) == NULL);
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("mfu_tracker"), NULL, &ours, &field) ==
          MFU_OK);
    CHECK(ours.model_flops == ours.ours_model_flops);
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("verl"), NULL, &verl, &field) == MFU_OK);
    /* verl, per token: matmul weights 2 * (64 * (64 + 32 + 32 + 64) + 3 * 64 * 96)
     * = 2 * 30,720 = 61,440 + lm_head 8,192 + embedding 8,192 = 77,824, 6 per
     * weight, 16 tokens: 7,471,104; attention 6 * 16^2 * 16 * 4 * 2 layers =
     * 196,608 */
    CHECK(verl.model_flops == 7471104.0 + 196608.0);
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++)
        sum += verl.delta[i];
    CHECK(verl.ours_model_flops + sum == verl.model_flops);
    CHECK(verl.delta[MFU_CHOICE_EMBEDDING] == 6.0 * 8192.0 * 16.0);
}

static void test_preset_refusals(void)
{
    mfu_transformer_dims d = small();
    mfu_batch b = one_sequence(16);
    mfu_convention_flops r;
    int bad[MFU_CONVENTION_CHOICES];
    const char *field = NULL;

    memcpy(bad, choices_of("verl"), sizeof bad);
    bad[MFU_CHOICE_WINDOWS] = 4;
    CHECK(mfu_convention_compute(&d, &b, NULL, bad, NULL, &r, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "windows"));
    d.num_linear_layers = 1;
    d.linear_num_key_heads = 1;
    d.linear_key_head_dim = 8;
    d.linear_num_value_heads = 1;
    d.linear_value_head_dim = 8;
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("verl"), NULL, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_linear_layers"));
    CHECK(mfu_convention_compute(NULL, &b, NULL, bad, NULL, &r, &field) == MFU_ERR_INVALID_ARGUMENT);
}

/* Rules by model type: the catch-all last, a refusal for what a framework
 * has no formula for, no rule on our own "span" windows. */
static void test_rules(void)
{
    const mfu_convention *verl = mfu_convention_find("verl");
    const mfu_convention_rule *r;

    for (size_t i = 0; i < mfu_convention_count(); i++) {
        const mfu_convention *c = mfu_convention_at(i);
        CHECK(c->num_rules >= 1 && c->rules[c->num_rules - 1].model_types == NULL);
        for (size_t j = 0; j < c->num_rules; j++) {
            CHECK(c->rules[j].windows != 0); /* span: ours only */
            CHECK(c->rules[j].refused == NULL || mfu_convention_rule_quirks(&c->rules[j]) == 0);
        }
    }
    r = mfu_convention_rule_for(verl, "qwen2_moe");
    CHECK(r != NULL && strcmp(r->function, "_estimate_qwen2_moe_flops") == 0);
    CHECK(mfu_convention_rule_quirks(r) ==
          ((1u << MFU_QUIRK_NO_SHARED_EXPERT) | (1u << MFU_QUIRK_ALL_MOE)));
    CHECK(r->quirk_line[MFU_QUIRK_NO_SHARED_EXPERT] == 335);
    /* "qwen2" is a word of a list, not a prefix of "qwen2_moe" */
    CHECK(strcmp(mfu_convention_rule_for(verl, "qwen2")->function, "_estimate_qwen2_flops") == 0);
    CHECK(mfu_convention_rule_for(verl, "mixtral")->refused != NULL);
    CHECK(mfu_convention_rule_for(verl, "") == &verl->rules[verl->num_rules - 1]);
    CHECK(mfu_convention_rule_for(NULL, "llama") == NULL);
    CHECK(strcmp(mfu_convention_quirk_name(MFU_QUIRK_PADDED_VOCAB), "padded_vocab") == 0);
    CHECK(mfu_convention_quirk_name(MFU_CONVENTION_QUIRKS) == NULL);
    CHECK(mfu_convention_quirk_text(-1) == NULL);
}

/* Each quirk's delta by hand on the small model: 16 tokens, 6 FLOPs a
 * weight a token. */
static void test_quirks(void)
{
    mfu_transformer_dims d = small();
    mfu_batch b = one_sequence(16);
    mfu_convention_quirks q = {(1u << MFU_QUIRK_PADDED_VOCAB) | (1u << MFU_QUIRK_QUICK_GEGLU),
                               100};
    mfu_convention_flops r;
    const char *field = NULL;
    double sum = 0.0;

    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("megatron"), &q, &r, &field) ==
          MFU_OK);
    /* vocab 128 -> 200: 72 rows of 64 */
    CHECK(r.quirk_delta[MFU_QUIRK_PADDED_VOCAB] == 6.0 * 72.0 * 64.0 * 16.0);
    /* one of three MLP matrices 64 x 96 on 2 layers */
    CHECK(r.quirk_delta[MFU_QUIRK_QUICK_GEGLU] == -6.0 * 64.0 * 96.0 * 2.0 * 16.0);
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++)
        sum += r.delta[i];
    for (int i = 0; i < MFU_CONVENTION_QUIRKS; i++)
        sum += r.quirk_delta[i];
    CHECK(r.ours_model_flops + sum == r.model_flops);
    /* head_dim 16 -> 64 / 4 = 16: nothing changes; with head_dim 32, the
     * projections 64 x (4 + 2 + 2 + 4) heads lose 16 each, and the core
     * (verl: half) 2 x 4 heads x 2 x 16 per pair, 16^2 / 2 pairs, 2 layers */
    d.head_dim = 32;
    q.bits = 1u << MFU_QUIRK_HIDDEN_HEAD_DIM;
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("verl"), &q, &r, &field) == MFU_OK);
    CHECK(r.quirk_delta[MFU_QUIRK_HIDDEN_HEAD_DIM] ==
          -(6.0 * 64.0 * 12.0 * 16.0 * 2.0 * 16.0 + 3.0 * 2.0 * 4.0 * 2.0 * 16.0 * 128.0 * 2.0));
    /* a MoE with a shared expert of 32 and its gate: verl leaves out both
     * (3 x 64 x 32 + 64 per layer), Megatron-LM the gate (64 per layer) */
    d = small();
    d.num_experts = 4;
    d.experts_per_token = 2;
    d.moe_intermediate_size = 32;
    d.shared_expert_intermediate_size = 32;
    d.shared_expert_gate = 1;
    q.bits = 1u << MFU_QUIRK_NO_SHARED_EXPERT;
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("verl"), &q, &r, &field) == MFU_OK);
    CHECK(r.quirk_delta[MFU_QUIRK_NO_SHARED_EXPERT] ==
          -6.0 * (3.0 * 64.0 * 32.0 + 64.0) * 2.0 * 16.0);
    q.bits = 1u << MFU_QUIRK_NO_SHARED_GATE;
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("megatron"), &q, &r, &field) ==
          MFU_OK);
    CHECK(r.quirk_delta[MFU_QUIRK_NO_SHARED_GATE] == -6.0 * 64.0 * 2.0 * 16.0);
    q.bits = 1u << MFU_CONVENTION_QUIRKS; /* no such quirk */
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("verl"), &q, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "quirks"));
    q = (mfu_convention_quirks){1u << MFU_QUIRK_PADDED_VOCAB, 0};
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("verl"), &q, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
}

static void test_context_parallel(void)
{
    mfu_transformer_dims d = small();
    mfu_transformer_options o;
    mfu_batch b = one_sequence(32);
    mfu_transformer_flops whole, r0, r1;
    mfu_context_parallel cp = {.degree = 2, .rank = 0, .mode = MFU_CP_RING};
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    o.formula = MFU_FORMULA_MATMUL;
    o.causal = MFU_CAUSAL_HALF;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &whole, &field) == MFU_OK);
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r0, &field) == MFU_OK);
    cp.rank = 1;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_OK);
    /* half: the ranks' blocks add up to the whole; rank 1 runs one 16 x 16
     * block more: 256 pairs * 4 heads * 2 * 32 FLOPs * 2 layers * 3 */
    CHECK(r0.model_flops + r1.model_flops == whole.model_flops);
    CHECK(r1.model_flops - r0.model_flops == 256.0 * 256.0 * 2.0 * 3.0);
    CHECK(r0.num_tokens == 16.0 && r1.num_tokens == 16.0);
    /* full recompute runs rank 1's extra block forward once more: 3 + 1
     * passes of 256 pairs * 4 heads * 2 * 32 FLOPs * 2 layers in hardware
     * FLOPs, and the ranks' hardware FLOPs add up to the whole's */
    o.recompute = MFU_RECOMPUTE_FULL;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &whole, &field) == MFU_OK);
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_OK);
    cp.rank = 0;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r0, &field) == MFU_OK);
    CHECK(r1.hardware_flops - r0.hardware_flops == 256.0 * 256.0 * 2.0 * 4.0);
    CHECK(r0.hardware_flops + r1.hardware_flops == whole.hardware_flops);
    o.recompute = MFU_RECOMPUTE_NONE;
    cp.rank = 1;
    cp.mode = MFU_CP_ULYSSES;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_OK);
    CHECK(r1.model_flops == whole.model_flops / 2.0 && r1.num_tokens == 16.0);
    b = one_sequence(31); /* 2 does not divide 31 */
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "context_parallel"));
    b = one_sequence(32);
    cp.rank = 2;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "cp_rank"));
    cp = (mfu_context_parallel){.degree = 2, .rank = 0, .mode = MFU_CP_RING};
    d.sliding_window = 8;
    d.num_sliding_layers = 1;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "context_parallel"));
}

/* A CLIP tower of 2 layers, D 32, I 48, 2 heads, 32-pixel tiles of 8-pixel
 * patches, under LLaVA's projector to d = 64. */
static mfu_vision_dims clip(void)
{
    mfu_vision_dims v;
    mfu_vision_dims_init(&v);
    v.kind = MFU_VISION_LLAVA_CLIP;
    v.depth = 2;
    v.hidden_size = 32;
    v.intermediate_size = 48;
    v.num_heads = 2;
    v.in_channels = 3;
    v.patch_size = 8;
    v.image_size = 32;
    v.out_hidden_size = 64;
    v.feature_layers = 1;
    v.projector_bias = 1;
    return v;
}

static void test_tiled_tower(void)
{
    const mfu_vision_grid grid = {.t = 1, .h = 4, .w = 4};
    mfu_vision_input in = {.dims = clip(), .grids = &grid, .num_grids = 1};
    mfu_vision_flops v;
    const char *field = NULL;

    CHECK(mfu_vision_flops_compute(&in, 1, 1, &v, &field) == MFU_OK);
    /* 16 patches + CLS = 17 tokens. patch 2 * 16 * (3 * 64 * 32) = 196,608
     * (model 2x); layers 2 * 2 * 17 * (4 * 32^2 + 2 * 32 * 48) = 487,424;
     * attention 2 * 4 * 32 * 17^2 = 73,984; projector on the 16 patches
     * 2 * 16 * (32 * 64 + 64 * 64) = 196,608 */
    CHECK(v.attention_flops == 73984.0);
    CHECK(v.model_flops == 2.0 * 196608.0 + 3.0 * (487424.0 + 73984.0 + 196608.0));
    CHECK(v.num_patches == 16.0);
    CHECK(v.image_tokens == 16.0); /* one per patch, CLS dropped */
    in.dims.keep_cls = 1; /* the "full" strategy projects the CLS token too */
    CHECK(mfu_vision_flops_compute(&in, 1, 1, &v, &field) == MFU_OK);
    CHECK(v.model_flops == 2.0 * 196608.0 +
                               3.0 * (487424.0 + 73984.0 + 196608.0 / 16.0 * 17.0));
    in.dims.keep_cls = 0;
    /* vision_feature_layer -2: the top layer runs, forward only (half of
     * 487,424 + 73,984 = 280,704), nothing above it */
    in.dims.unused_layers = 1;
    CHECK(mfu_vision_flops_compute(&in, 1, 1, &v, &field) == MFU_OK);
    CHECK(v.model_flops == 2.0 * 196608.0 + 280704.0 + 3.0 * (280704.0 + 196608.0));
    CHECK(v.blocks_forward == 280704.0); /* never recomputed either */
    in.dims.unused_layers = 3; /* more than the depth */
    CHECK(mfu_vision_validate(&in.dims, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "vision.unused_layers"));
    in.dims.unused_layers = 0;
    {
        const mfu_vision_grid wrong = {.t = 1, .h = 4, .w = 2};
        in.grids = &wrong;
        CHECK(mfu_vision_flops_compute(&in, 1, 1, &v, &field) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(field_is(field, "pixel_values"));
        in.grids = &grid;
    }
    in.dims.use_head = 1; /* CLIP has no pooling head */
    CHECK(mfu_vision_validate(&in.dims, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "vision.use_head"));
    in.dims = clip();
    in.dims.spatial_merge_size = 2; /* a Qwen field on a tiled tower */
    CHECK(mfu_vision_validate(&in.dims, &field) == MFU_ERR_INVALID_ARGUMENT);
    in.dims = clip();
    in.dims.kind = MFU_VISION_QWEN3_VL; /* a tiled field on a Qwen tower */
    CHECK(mfu_vision_validate(&in.dims, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "vision.image_size"));
}

/* A layer without attention (Nemotron-H's MLP-only block) beside two
 * attention layers: "ours" is the core's count and the ring's extra blocks
 * run in the attention layers only, so the ranks add up to the whole. A
 * short-conv layer (LFM2) needs the previous chunk's tokens: the ring
 * refuses it, as it refuses linear and SSM layers. */
static void test_layers_without_attention(void)
{
    mfu_transformer_dims d = small();
    mfu_transformer_options o;
    mfu_batch b = one_sequence(32);
    mfu_transformer_flops whole, r0, r1;
    mfu_convention_flops ours;
    mfu_context_parallel cp = {.degree = 2, .rank = 0, .mode = MFU_CP_RING};
    const char *field = NULL;

    d.num_layers = 3;
    d.num_mlp_only_layers = 1;
    mfu_transformer_options_init(&o);
    o.formula = MFU_FORMULA_PALM;
    o.causal = MFU_CAUSAL_FULL;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &whole, &field) == MFU_OK);
    CHECK(mfu_convention_compute(&d, &b, NULL, choices_of("mfu_tracker"), NULL, &ours, &field) ==
          MFU_OK);
    CHECK(ours.model_flops == whole.model_flops);
    o.formula = MFU_FORMULA_MATMUL;
    o.causal = MFU_CAUSAL_HALF;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &whole, &field) == MFU_OK);
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r0, &field) == MFU_OK);
    cp.rank = 1;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_OK);
    CHECK(r0.model_flops + r1.model_flops == whole.model_flops);
    /* one 16 x 16 block more on rank 1, in the 2 attention layers only */
    CHECK(r1.model_flops - r0.model_flops == 256.0 * 256.0 * 2.0 * 3.0);
    d.num_mlp_only_layers = 0;
    d.num_short_conv_layers = 1;
    d.short_conv_kernel = 3;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "context_parallel"));
    d.num_short_conv_layers = 0; /* bidirectional: every rank needs every block */
    d.bidirectional = 1;
    CHECK(mfu_context_parallel_flops(&d, &o, &b, &cp, &r1, &field) == MFU_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    test_presets();
    test_preset_refusals();
    test_rules();
    test_quirks();
    test_context_parallel();
    test_layers_without_attention();
    test_tiled_tower();
    return check_summary("test_conventions");
}
