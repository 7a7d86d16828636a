/*
 * test_family_hybrid.c -- the MLA family's and the hybrids' blocks
 * (family_mla.h, family_hybrid.h), their layouts in the count and their
 * validation; hand arithmetic beside every expected number. The equality
 * with transformers' own models is tests/flops/test_hf_hybrid.py's.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "families.h"
#include "family_hybrid.h"
#include "family_mla.h"
#include "transformer.h"

static void test_kda(void)
{
    mfu_transformer_dims d;
    const int64_t ten = 10;
    const mfu_batch b = {.lengths = &ten, .count = 1, .repeat = 3};
    mfu_scan_flops s;
    mfu_tally t;

    mfu_transformer_dims_init(&d);
    /* d 8, 2 heads of 3 (HD 6): q, k, v 3*8*6 = 144; f_a + f_b and g_a + g_b
     * 2*(8*3 + 3*6) = 84; b 8*2 = 16; o 6*8 = 48 -> 292; conv 18*4 = 72,
     * dt_bias 6, A_log 2, o_norm 3 -> 375 params */
    d.hidden_size = 8;
    d.linear_kind = MFU_LINEAR_KDA;
    d.linear_num_key_heads = d.linear_num_value_heads = 2;
    d.linear_key_head_dim = d.linear_value_head_dim = 3;
    d.linear_conv_kernel = 4;
    t = mfu_kda_tally(&d);
    CHECK(t.matmul == 292.0 && t.params == 375.0);
    t = mfu_linear_mixer_tally(&d);
    CHECK(t.matmul == 292.0);
    /* KDA's scan, by its own matmuls: chunk 4, s 10 -> 3 chunks per
     * sequence, 3 sequences; per head and chunk attn @ v_beta and attn @
     * k-decayed 2*16*3 + 2*16*3 = 192, q @ S and k_cumdecay @ S
     * 2 * 2*4*3*3 = 144, attn_intra @ v_new 2*16*3 = 96, the state update
     * 2*4*3*3 = 72: 504; x 9 chunks x 2 heads = 9,072. Model: 3x less 2
     * zero-state reads 4*4*3*3 = 144 and the last state update's backward
     * 2*(2*4*3*3) = 144 per head and sequence, no triangular solve:
     * 27,216 - 6 * 144 - 6 * 144 = 25,488. The gated DeltaNet's scan counts
     * that at d_k = d_v (family_mla.h), less its solves' backward. */
    d.linear_chunk_size = 4;
    CHECK(mfu_deltanet_scan(&d, &b, &s) == MFU_OK && s.forward == 9072.0);
    CHECK(s.model == 25488.0);
}

static void test_mamba1(void)
{
    mfu_transformer_dims d;
    const int64_t lens[2] = {7, 0};
    const mfu_batch b = {.lengths = lens, .count = 2, .repeat = 2};
    mfu_scan_flops s;
    mfu_tally t;

    mfu_transformer_dims_init(&d);
    /* d 8, I 16, N 3, R 2: in 8*32 = 256, x_proj 16*(2 + 6) = 128, dt_proj
     * 2*16 = 32, out 16*8 = 128 -> 544 */
    d.hidden_size = 8;
    d.ssm_kind = MFU_SSM_MAMBA1;
    d.ssm_intermediate_size = 16;
    d.ssm_state_size = 3;
    d.ssm_dt_rank = 2;
    d.ssm_conv_kernel = 4;
    t = mfu_mamba1_tally(&d);
    /* params: + conv 16*4 = 64, dt_proj bias 16, A_log 16*3 = 48, D 16 */
    CHECK(t.matmul == 544.0 && t.params == 544.0 + 64.0 + 16.0 + 48.0 + 16.0);
    d.ssm_conv_bias = d.ssm_proj_bias = d.ssm_out_proj_bias = d.ssm_inner_norms = 1;
    /* + conv bias 16, in_proj bias 32, out_proj bias 8, norms 2 + 3 + 3 */
    t = mfu_ssm_mixer_tally(&d);
    CHECK(t.params == 688.0 + 16.0 + 32.0 + 8.0 + 8.0);
    CHECK(mfu_ssm_mixer_conv_channels(&d) == 16.0);
    /* readout 2*I*N = 96 FLOPs per token, 14 tokens (the empty row none) */
    CHECK(mfu_mamba1_scan(&d, &b, &s) == MFU_OK && s.forward == 96.0 * 14.0);
    CHECK(s.model == 3.0 * 96.0 * 14.0);
    CHECK(mfu_ssm_mixer_scan(&d, &b, &s) == MFU_OK && s.forward == 96.0 * 14.0);
    /* Mamba-2's conv channels on the same dims: I + 2GN (heads 2 x 8, G 1) */
    d.ssm_kind = MFU_SSM_MAMBA2;
    d.ssm_num_heads = 2;
    d.ssm_head_dim = 8;
    d.ssm_num_groups = 1;
    CHECK(mfu_ssm_mixer_conv_channels(&d) == 16.0 + 6.0);
    /* Mamba-2 biases: in_proj [8 -> 16 + 22 + 2 = 40] and out_proj 8 apart,
     * and the gated norm (16) only with ssm_norm */
    d.ssm_conv_bias = d.ssm_proj_bias = d.ssm_out_proj_bias = 0;
    t = mfu_ssm_mixer_tally(&d);
    d.ssm_proj_bias = 1;
    CHECK(mfu_ssm_tally(&d).params - t.params == 40.0);
    d.ssm_proj_bias = 0;
    d.ssm_out_proj_bias = 1;
    CHECK(mfu_ssm_tally(&d).params - t.params == 8.0);
    d.ssm_out_proj_bias = 0;
    d.ssm_norm = 0;
    CHECK(t.params - mfu_ssm_tally(&d).params == 16.0);
}

static void test_short_conv_and_latent_experts(void)
{
    mfu_transformer_dims d;
    mfu_transformer_options o;
    mfu_tally t, act, all;

    mfu_transformer_dims_init(&d);
    mfu_transformer_options_init(&o);
    /* d 8: in_proj 8*24 = 192, out 64 -> 256; conv 8*3 = 24; biases
     * 24 + 8 + 8 = 40 */
    d.hidden_size = 8;
    d.short_conv_kernel = 3;
    t = mfu_short_conv_tally(&d);
    CHECK(t.matmul == 256.0 && t.params == 280.0);
    d.short_conv_bias = 1;
    CHECK(mfu_short_conv_tally(&d).params == 320.0);
    /* latent experts: d 8, latent 4, I 6, E 3, k 2, GELU (2 matrices):
     * each 2*4*6 = 48; fc1 + fc2 2*8*4 = 64 (+ 4 + 8 with mlp_bias); router
     * 8*3 = 24; active 24 + 64 + 2*48 = 184, all 24 + 64 + 3*48 = 232 */
    d.mlp = MFU_MLP_GELU;
    d.num_experts = 3;
    d.experts_per_token = 2;
    d.moe_intermediate_size = 6;
    d.moe_latent_size = 4;
    CHECK(mfu_latent_expert_tally(&d).matmul == 48.0);
    CHECK(mfu_latent_projection_tally(&d).matmul == 64.0);
    mfu_moe_tally(&d, &o, &act, &all);
    CHECK(act.matmul == 184.0 && all.matmul == 232.0 && all.params == 232.0);
    d.mlp_bias = 1; /* the projections' biases; latent experts have none */
    mfu_moe_tally(&d, &o, &act, &all);
    CHECK(all.params == 232.0 + 12.0);
    /* full-width experts with mlp_bias: 2*8*6 = 96 weights + 6 + 8 biases
     * each, unless unbiased_experts (Nemotron-H) */
    d.moe_latent_size = 0;
    mfu_moe_tally(&d, &o, &act, &all);
    CHECK(all.params == 24.0 + 3.0 * (96.0 + 14.0));
    d.unbiased_experts = 1;
    mfu_moe_tally(&d, &o, &act, &all);
    CHECK(all.params == 24.0 + 3.0 * 96.0 && act.matmul == 24.0 + 2.0 * 96.0);
}

/* A small model of `layers` layers (GQA 2 heads of 4, d 8, SwiGLU 16, V 32). */
static mfu_transformer_dims small(int64_t layers)
{
    mfu_transformer_dims d;
    mfu_transformer_dims_init(&d);
    d.hidden_size = 8;
    d.num_layers = layers;
    d.num_heads = 2;
    d.vocab_size = 32;
    d.intermediate_size = 16;
    return d;
}

static void test_layouts(void)
{
    mfu_transformer_dims d = small(6);
    mfu_transformer_options o;
    const int64_t four = 4;
    const mfu_batch b = {.lengths = &four, .count = 1, .repeat = 1};
    mfu_transformer_flops plain, r;
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    o.formula = MFU_FORMULA_MATMUL;
    /* 6 layers, 1 MLP-only, 2 mixer-only: 5 attention layers, 4 MLPs */
    d.num_mlp_only_layers = 1;
    d.num_mixer_only_layers = 2;
    CHECK(mfu_attention_layer_count(&d) == 5);
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    d.num_mlp_only_layers = d.num_mixer_only_layers = 0;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &plain, &field) == MFU_OK);
    /* one attention layer (4*8*8 = 256 weights) and 2 MLPs (3*8*16 = 384
     * each) fewer, 4 tokens, 6 FLOPs a weight; one layer's attention core,
     * 2*2*2*4 = 32 FLOPs a pair, 16 pairs, 3x */
    CHECK(plain.model_flops - r.model_flops == 6.0 * 4.0 * (256.0 + 2.0 * 384.0) +
                                                   3.0 * 32.0 * 16.0);
    CHECK(plain.num_params - r.num_params == 256.0 + 2.0 * 384.0);
    /* short conv layers replace attention layers; SSM layers beside
     * attention (ssm_parallel) do not */
    d.num_short_conv_layers = 2;
    d.short_conv_kernel = 3;
    d.num_ssm_layers = 4;
    d.ssm_parallel = 1;
    CHECK(mfu_attention_layer_count(&d) == 4);
    d.ssm_parallel = 0;
    CHECK(mfu_attention_layer_count(&d) == 0);
    /* conv term: 2 layers x 2*3*8 FLOPs per position, 4 + 2 positions */
    d = small(2);
    d.num_short_conv_layers = 2;
    d.short_conv_kernel = 3;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    CHECK(r.attention_flops == 0.0);
    CHECK(r.forward_flops == 2.0 * 4.0 * (2.0 * (256.0 + 384.0) + 256.0) +
                                 2.0 * 2.0 * 3.0 * 8.0 * 6.0);
    /* a mixer conv of kernel 0: no conv term, not an error */
    d = small(2);
    d.mlp = MFU_MLP_NONE;
    d.intermediate_size = 0;
    d.num_ssm_layers = 2;
    d.ssm_num_heads = d.ssm_num_groups = 1;
    d.ssm_head_dim = d.ssm_state_size = 2;
    d.ssm_conv_kernel = 0;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    d.ssm_conv_kernel = 1; /* 1 * (2 + 2*2) = 6 channels, 4 positions: 2*6*4 = 48 */
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &plain, &field) == MFU_OK);
    CHECK(plain.forward_flops - r.forward_flops == 2.0 * 48.0);
}

static void expect_bad(const mfu_transformer_dims *d, const char *want)
{
    mfu_transformer_options o;
    const char *field = NULL;
    mfu_transformer_options_init(&o);
    CHECK(mfu_transformer_validate(d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, want));
    if (!field_is(field, want))
        fprintf(stderr, "  wanted %s, got %s\n", want, field ? field : "(null)");
}

static void test_validation(void)
{
    mfu_transformer_dims d = small(4);
    mfu_transformer_options o;
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    d.linear_kind = (mfu_linear_kind)2;
    expect_bad(&d, "linear_kind");
    d = small(4);
    d.ssm_kind = (mfu_ssm_kind)2;
    expect_bad(&d, "ssm_kind");
    d = small(4);
    d.ssm_norm = 2;
    expect_bad(&d, "ssm_norm");
    d = small(4);
    d.unbiased_experts = -1;
    expect_bad(&d, "unbiased_experts");
    d = small(4);
    d.moe_latent_size = -1;
    expect_bad(&d, "moe_latent_size");
    d.moe_latent_size = 4; /* without experts */
    expect_bad(&d, "moe_latent_size");
    d = small(4);
    d.num_linear_layers = 1;
    d.linear_kind = MFU_LINEAR_KDA;
    d.linear_num_key_heads = 1;
    d.linear_num_value_heads = 2;
    d.linear_key_head_dim = d.linear_value_head_dim = 4;
    expect_bad(&d, "linear_num_value_heads");
    d.linear_num_value_heads = 1;
    d.linear_value_head_dim = 5;
    expect_bad(&d, "linear_value_head_dim");
    d.linear_value_head_dim = 4;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    d = small(4);
    d.num_ssm_layers = 1;
    d.ssm_kind = MFU_SSM_MAMBA1;
    expect_bad(&d, "ssm_intermediate_size");
    d.ssm_intermediate_size = 8;
    expect_bad(&d, "ssm_dt_rank");
    d.ssm_dt_rank = 1;
    expect_bad(&d, "ssm_state_size");
    d.ssm_state_size = 2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK); /* no heads needed */
    d = small(4);
    d.num_short_conv_layers = 1;
    expect_bad(&d, "short_conv_kernel");
    d.short_conv_kernel = 2;
    d.num_short_conv_layers = 5;
    expect_bad(&d, "num_short_conv_layers");
    d = small(4);
    d.num_mlp_only_layers = 5;
    expect_bad(&d, "num_mlp_only_layers");
    d.num_mlp_only_layers = 2;
    d.num_mixer_only_layers = 3;
    expect_bad(&d, "num_mixer_only_layers");
    d.num_mixer_only_layers = 2;
    d.num_dense_layers = 4; /* 2 layers have an MLP */
    expect_bad(&d, "num_dense_layers");
    d.num_dense_layers = 2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    d.num_linear_layers = 3; /* 2 mixer layers */
    expect_bad(&d, "num_linear_layers");
    /* with experts: at most the 2 MLP layers dense */
    d.num_linear_layers = 0;
    d.num_experts = 4;
    d.experts_per_token = 2;
    d.moe_intermediate_size = 8;
    d.num_dense_layers = 3;
    expect_bad(&d, "num_dense_layers");
    d.num_dense_layers = 2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    /* short-conv layers take what the linear and SSM layers leave */
    d = small(4);
    d.num_linear_layers = 2;
    d.linear_num_key_heads = d.linear_num_value_heads = 1;
    d.linear_key_head_dim = d.linear_value_head_dim = 2;
    d.num_short_conv_layers = 3;
    d.short_conv_kernel = 2;
    expect_bad(&d, "num_short_conv_layers");
    d.num_short_conv_layers = 2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    d = small(4);
    d.mlp = MFU_MLP_NONE;
    d.intermediate_size = 0;
    d.num_mlp_only_layers = 1;
    expect_bad(&d, "num_mlp_only_layers");
    d = small(4);
    d.ssm_parallel = 1;
    d.num_ssm_layers = 4;
    d.ssm_num_heads = d.ssm_num_groups = 1;
    d.ssm_head_dim = d.ssm_state_size = 2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    d.num_short_conv_layers = 1; /* 3 attention layers for 4 SSMs beside them */
    d.short_conv_kernel = 2;
    expect_bad(&d, "num_ssm_layers");
    /* LoRA: adapters are counted on GQA and MLP layers only */
    d = small(4);
    d.num_short_conv_layers = 1;
    d.short_conv_kernel = 2;
    o.lora_rank = 4;
    o.lora_targets = MFU_LORA_Q;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT &&
          field_is(field, "lora_rank"));
}

static void test_rows(void)
{
    const mfu_family *nemotron = mfu_family_find("nemotron_h");
    const mfu_family *falcon = mfu_family_find("falcon_h1");
    const mfu_family *jamba = mfu_family_find("jamba");
    const mfu_family *kimi = mfu_family_find("kimi_linear");
    const mfu_family *qwen = mfu_family_find("qwen3_5_moe");
    mfu_transformer_dims d;

    CHECK(nemotron != NULL && nemotron->mlp == MFU_MLP_GELU && nemotron->norms_per_layer == 1 &&
          nemotron->unbiased_experts == 1);
    CHECK(falcon != NULL && falcon->ssm_parallel == 1 && falcon->ssm_kind == MFU_SSM_MAMBA2);
    CHECK(jamba != NULL && jamba->ssm_kind == MFU_SSM_MAMBA1 && jamba->ssm_inner_norms == 1);
    CHECK(kimi != NULL && kimi->attention == MFU_ATTENTION_MLA &&
          kimi->linear_kind == MFU_LINEAR_KDA && kimi->linear_chunk_size == 64);
    CHECK(qwen != NULL && qwen->attention_gate == 1 && qwen->shared_expert_gate == 1 &&
          qwen->vision == MFU_VISION_QWEN3_VL);
    CHECK(mfu_family_find("lfm2") != NULL && mfu_family_find("lfm2")->tie_word_embeddings == 1);
    mfu_transformer_dims_init(&d);
    mfu_family_apply(jamba, &d);
    CHECK(d.ssm_kind == MFU_SSM_MAMBA1 && d.ssm_inner_norms == 1 && d.ssm_norm == 1);
    mfu_family_apply(kimi, &d); /* every row writes the hybrid fields */
    CHECK(d.ssm_kind == MFU_SSM_MAMBA2 && d.ssm_inner_norms == 0 &&
          d.linear_kind == MFU_LINEAR_KDA);
    mfu_family_apply(nemotron, &d);
    CHECK(d.unbiased_experts == 1 && d.linear_kind == MFU_LINEAR_GATED_DELTANET);
    mfu_family_apply(falcon, &d);
    CHECK(d.ssm_parallel == 1 && d.unbiased_experts == 0);
}

int main(void)
{
    test_kda();
    test_mamba1();
    test_short_conv_and_latent_experts();
    test_layouts();
    test_validation();
    test_rows();
    return check_summary("test_family_hybrid");
}
