/*
 * test_generation.c -- the prefill and decode of a generation (generation.h)
 * on tiny_model.h's model, hand arithmetic beside every expected number.
 *
 * Per token: matmul weights 2 layers x (192 attention + 384 SwiGLU) = 1152;
 * lm_head 10 x 8 = 80; attention pair FLOPs 2 x H 4 x (2 + 2) = 32 per layer.
 * Parameters a forward reads: 1152 + norms 2 x 2 x 8 + final 8 = 1192, +
 * lm_head 80 = 1272. K and V: 2 x H_kv 2 x Q 2 = 8 elements per token and
 * layer.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "dtypes.h"
#include "generation.h"
#include "tiny_model.h"

static const mfu_generation_spec BF16 = {MFU_DTYPE_BF16, MFU_DTYPE_BF16, MFU_MLA_CACHE_LATENT};

static mfu_transformer_options matmul_options(void)
{
    mfu_transformer_options o;
    mfu_transformer_options_init(&o);
    o.formula = MFU_FORMULA_MATMUL;
    return o;
}

static void test_dense(void)
{
    const mfu_transformer_dims d = tiny_gqa_dims();
    const mfu_transformer_options o = matmul_options();
    const int64_t p[1] = {3}, n[1] = {4};
    mfu_generation_flops r;
    const char *field = NULL;

    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &r, &field) == MFU_OK);
    /* prefill: 2 x 1152 x 3 = 6912, attention 3^2 x 32 x 2 = 576, one lm_head 2 x 80 */
    CHECK(r.prefill_flops == 6912.0 + 576.0 + 160.0);
    CHECK(r.prefill_attention_flops == 576.0);
    /* decode: 3 tokens x 2 x (1152 + 80) = 7392; keys 4 + 5 + 6 = 15 x 32 x 2 = 960 */
    CHECK(r.decode_flops == 7392.0 + 960.0);
    CHECK(r.decode_attention_flops == 960.0);
    CHECK(r.prefill_tokens == 3.0 && r.decode_tokens == 3.0 && r.sequences == 1.0);
    CHECK(r.decode_forwards == 3.0);
    /* weights 1272 params x 2 bytes once per forward */
    CHECK(r.prefill_weight_bytes == 2544.0 && r.decode_weight_bytes == 3.0 * 2544.0);
    /* KV: 8 elements x 2 bytes = 16 per token and layer; read 15 keys x 2 layers */
    CHECK(r.decode_kv_read_bytes == 15.0 * 2.0 * 16.0);
    CHECK(r.decode_kv_write_bytes == 3.0 * 2.0 * 16.0);
    CHECK(r.prefill_kv_write_bytes == 3.0 * 2.0 * 16.0);
    CHECK(r.decode_state_bytes == 0.0 && r.prefill_state_bytes == 0.0);
}

static void test_windows_and_conventions(void)
{
    mfu_transformer_dims d = tiny_gqa_dims();
    mfu_transformer_options o = matmul_options();
    const int64_t p[1] = {3}, n[1] = {4};
    const mfu_generation_spec fp8 = {MFU_DTYPE_FP8, MFU_DTYPE_FP32, MFU_MLA_CACHE_LATENT};
    mfu_generation_flops full, half, w;
    const char *field = NULL;

    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &full, &field) == MFU_OK);
    o.causal = MFU_CAUSAL_HALF;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &fp8, &half, &field) == MFU_OK);
    /* the prefill's square halves (9 / 2 pairs x 64); decode is the same */
    CHECK(half.prefill_flops == full.prefill_flops - 4.5 * 64.0);
    CHECK(half.decode_flops == full.decode_flops);
    /* fp8 weights: 1272 bytes a forward; fp32 cache: 32 bytes per token and layer */
    CHECK(half.decode_weight_bytes == 3.0 * 1272.0);
    CHECK(half.decode_kv_read_bytes == 15.0 * 2.0 * 32.0);
    /* a sliding window of 4 on both layers: keys min(4, 4), min(5, 4), min(6, 4) */
    o.causal = MFU_CAUSAL_FULL;
    d.sliding_window = 4;
    d.num_sliding_layers = 2;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &w, &field) == MFU_OK);
    CHECK(w.decode_attention_flops == 12.0 * 32.0 * 2.0);
    CHECK(w.decode_kv_read_bytes == 12.0 * 2.0 * 16.0);
    CHECK(w.prefill_flops == full.prefill_flops); /* 3 <= 4: the whole prompt */
    /* MTP layers never run in generation */
    d = tiny_gqa_dims();
    d.num_mtp_layers = 1;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &w, &field) == MFU_OK);
    CHECK(w.prefill_flops == full.prefill_flops && w.decode_flops == full.decode_flops);
}

/* 4 experts of 3 x 8 x 16 = 384, 1 per token, router 8 x 4 = 32: a forward
 * reads 2 x (192 + 16 + 32) + 8 + 80 = 568 parameters besides the experts,
 * and min(b x 1, 4) experts of every MoE layer, 2 x 384 = 768 each. */
static void test_moe_lockstep(void)
{
    mfu_transformer_dims d = tiny_gqa_dims();
    const mfu_transformer_options o = matmul_options();
    const int64_t p[2] = {3, 3}, n[2] = {4, 2};
    mfu_generation_flops r;
    const char *field = NULL;

    d.num_experts = 4;
    d.experts_per_token = 1;
    d.moe_intermediate_size = 16;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 2, &BF16, &r, &field) == MFU_OK);
    /* decode steps 3 and 1: forward 1 carries 2 tokens (2 experts), 2 and 3 one */
    CHECK(r.decode_forwards == 3.0 && r.decode_tokens == 4.0);
    CHECK(r.decode_weight_bytes == 2.0 * ((568.0 + 2.0 * 768.0) + 2.0 * (568.0 + 768.0)));
    /* the prefill's 6 tokens pick every expert: min(6, 4) */
    CHECK(r.prefill_weight_bytes == 2.0 * (568.0 + 4.0 * 768.0));
    /* FLOPs: router 32 + 1 expert 384 per layer instead of the 384 MLP */
    CHECK(r.decode_flops == 4.0 * 2.0 * (2.0 * (192.0 + 32.0 + 384.0) + 80.0) +
                                ((4.0 + 5.0 + 6.0) + 4.0) * 64.0);
}

static void test_refusals(void)
{
    mfu_transformer_dims d = tiny_gqa_dims();
    mfu_transformer_options o = matmul_options();
    mfu_generation_spec spec = BF16;
    int64_t p[1] = {3}, n[1] = {4};
    mfu_generation_flops r;
    const char *field = NULL;

    p[0] = 0;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "prompt_lens") == 0);
    p[0] = 3;
    n[0] = 0;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "output_lens") == 0);
    n[0] = 4;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 0, &BF16, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "prompt_lens") == 0);
    spec.cache_dtype = MFU_DTYPE_COUNT;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &spec, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "cache_dtype") == 0);
    spec = BF16;
    spec.mla_cache = (mfu_mla_cache)7;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &spec, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "mla_cache") == 0);
    o.recompute = MFU_RECOMPUTE_FULL;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "activation_recompute") == 0);
    o = matmul_options();
    d.num_ssm_layers = 1;
    d.ssm_num_heads = 2, d.ssm_head_dim = 4, d.ssm_state_size = 4, d.ssm_num_groups = 1;
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "num_ssm_layers") == 0);
    d = tiny_gqa_dims();
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, NULL, &r, &field) ==
              MFU_ERR_INVALID_ARGUMENT && strcmp(field, "weight_dtype") == 0);
    CHECK(mfu_generation_flops_compute(&d, &o, p, n, 1, &BF16, NULL, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_generation_flops_compute(NULL, &o, p, n, 1, &BF16, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
}

static void test_dtype_bytes(void)
{
    CHECK(mfu_dtype_bytes(MFU_DTYPE_FP64) == 8.0 && mfu_dtype_bytes(MFU_DTYPE_TF32) == 4.0);
    CHECK(mfu_dtype_bytes(MFU_DTYPE_BF16) == 2.0 && mfu_dtype_bytes(MFU_DTYPE_FP8) == 1.0);
    CHECK(mfu_dtype_bytes(MFU_DTYPE_FP4) == 0.5 && mfu_dtype_bytes(MFU_DTYPE_INT4) == 0.5);
    CHECK(mfu_dtype_bytes(MFU_DTYPE_COUNT) == 0.0 && mfu_dtype_bytes((mfu_dtype)-1) == 0.0);
}

int main(void)
{
    test_dense();
    test_windows_and_conventions();
    test_moe_lockstep();
    test_refusals();
    test_dtype_bytes();
    return check_summary("test_generation");
}
