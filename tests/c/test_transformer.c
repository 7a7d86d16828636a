/*
 * test_transformer.c -- the analytic count (transformer.h) and its parts:
 * spans, scans, blocks, vision towers and the family table; hand arithmetic
 * beside every expected number.
 */
#include <stdint.h>
#include <string.h>

#include "blocks.h"
#include "check.h"
#include "families.h"
#include "spans.h"
#include "tiny_model.h"
#include "transformer.h"
#include "vision.h"

static int64_t len_storage[8];

/* `batch` sequences of `seq_len` tokens. */
static mfu_batch uniform(int64_t batch, int64_t seq_len)
{
    len_storage[0] = seq_len;
    return (mfu_batch){.lengths = len_storage, .count = 1, .repeat = batch};
}

/* Llama-3.1-8B dims. */
static mfu_transformer_dims llama8b(void)
{
    mfu_transformer_dims d;
    mfu_transformer_dims_init(&d);
    d.hidden_size = 4096;
    d.num_layers = 32;
    d.num_heads = 32;
    d.num_kv_heads = 8;
    d.head_dim = 128;
    d.intermediate_size = 14336;
    d.vocab_size = 128256;
    return d;
}

static void test_lambda_llama_8b(void)
{
    mfu_transformer_dims d = llama8b();
    mfu_transformer_options o;
    mfu_batch b = uniform(1, 8192);
    mfu_transformer_flops r;
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    /* N: layer = q 16,777,216 + k 4,194,304 + v 4,194,304 + o 16,777,216
     *   + mlp 3*4096*14336 = 176,160,768 + norms 8,192 = 218,112,000;
     *   32 layers 6,979,584,000 + final norm 4,096 + embed 525,336,576
     *   + lm_head 525,336,576 = 8,030,261,248 */
    CHECK(r.num_params == 8030261248.0);
    CHECK(r.num_embedding_params == 525336576.0); /* 128,256 * 4,096 */
    /* 6 * (8,030,261,248 - 525,336,576) = 45,029,548,032
     * + 12 * 32 * 32 * 128 * 8,192 = 12,884,901,888 -> 57,914,449,920
     * per token; the batch total is that * 8,192 tokens (exact: 2^13) */
    CHECK(r.model_flops == 57914449920.0 * 8192.0);
    CHECK(r.language_flops == r.model_flops && r.vision_flops == 0.0);
    CHECK(r.num_tokens == 8192.0);
    CHECK(r.hardware_flops == r.model_flops);
    /* forward: 2 * 7,504,924,672 + 4 * 32 * 32 * 128 * 8,192 */
    CHECK(r.forward_flops == (15009849344.0 + 4294967296.0) * 8192.0);

    /* HALF: the attention term 12,884,901,888 halves */
    o.causal = MFU_CAUSAL_HALF;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    CHECK(r.model_flops == (45029548032.0 + 6442450944.0) * 8192.0);

    /* 6N: no attention term */
    o.causal = MFU_CAUSAL_FULL;
    o.formula = MFU_FORMULA_6N;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    CHECK(r.model_flops == 45029548032.0 * 8192.0);
    CHECK(r.attention_flops == 0.0);
}

static void test_matmul_and_moe(void)
{
    /* tiny GQA SwiGLU: d 8, L 2, H 4, H_kv 2, Q 2, I 16, V 10 */
    mfu_transformer_dims d;
    mfu_transformer_options o;
    const int64_t lens[2] = {3, 5};
    const mfu_batch b = {.lengths = lens, .count = 2, .repeat = 1};
    mfu_transformer_flops r;
    const char *field = NULL;

    d = tiny_gqa_dims();
    mfu_transformer_options_init(&o);
    o.formula = MFU_FORMULA_MATMUL;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    /* per token per layer: q 8*8 = 64, k 8*4 = 32, v 32, o 64 -> 192;
     * mlp 3*8*16 = 384; 2 layers -> 1,152; lm_head 80 -> W = 1,232
     * T = 8: 2*1,232*8 = 19,712
     * attention: 4*4*2*(9 + 25) = 1,088 per layer, 2 layers 2,176
     * forward 21,888, model 3x = 65,664 */
    CHECK(r.forward_flops == 21888.0);
    CHECK(r.attention_flops == 2176.0);
    CHECK(r.model_flops == 65664.0);
    /* recompute: selective adds the attention forward, full adds the layers'
     * forward 2*1,152*8 + 2,176 = 20,608 */
    o.recompute = MFU_RECOMPUTE_SELECTIVE;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    CHECK(r.model_flops == 65664.0 && r.hardware_flops == 65664.0 + 2176.0);
    o.recompute = MFU_RECOMPUTE_FULL;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    CHECK(r.model_flops == 65664.0 && r.hardware_flops == 65664.0 + 20608.0);
    o.recompute = MFU_RECOMPUTE_NONE;

    /* MoE: 4 experts of width 4, 2 active: per layer router 8*4 = 32 +
     * 2 * 3*8*4 = 192 -> 224 active (all: 32 + 384 = 416) */
    d.num_experts = 4;
    d.experts_per_token = 2;
    d.moe_intermediate_size = 4;
    d.intermediate_size = 0;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    /* W = 2*(192 + 224) + 80 = 912; forward 2*912*8 + 2,176 = 16,768 */
    CHECK(r.forward_flops == 16768.0);
    /* N = 2*(192 + 2*8 norms + 416) + 8 + 80 embed + 80 head = 1,416 */
    CHECK(r.num_params == 1416.0);
    CHECK(r.num_active_params == 1416.0 - 2.0 * 192.0);

    /* one MTP layer (DeepSeek-V3): + eh_proj 2*8*8 = 128, + a MoE layer
     * 192 + 224 = 416, + a second lm_head 80 per token: W 912 + 624 = 1,536;
     * its attention is full: + 1,088 -> forward 2*1,536*8 + 3,264 = 27,840 */
    d.num_mtp_layers = 1;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    CHECK(r.forward_flops == 27840.0);
    /* params: + 128 + 192 + 416 (all experts) + (2 + 3) norms * 8 = 776 */
    CHECK(r.num_params == 1416.0 + 776.0);
}

static void test_lora(void)
{
    mfu_transformer_dims d = llama8b();
    mfu_transformer_options o;
    mfu_batch b = uniform(2, 64);
    mfu_transformer_flops full, lora;
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    o.formula = MFU_FORMULA_6N;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &full, &field) == MFU_OK);
    o.lora_rank = 8;
    o.lora_targets = MFU_LORA_Q | MFU_LORA_V;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &lora, &field) == MFU_OK);
    /* adapters per layer: q 8*(4096 + 4096) = 65,536, v 8*(4096 + 1024)
     * = 40,960 -> 106,496; 32 layers 3,407,872 */
    CHECK(lora.num_adapter_params == 3407872.0);
    /* 4 * W * T + 6 * N_a * T against 6 * W * T, W = 7,504,924,672, T = 128 */
    CHECK(lora.model_flops == 4.0 * 7504924672.0 * 128 + 6.0 * 3407872.0 * 128);
    CHECK(full.model_flops == 6.0 * 7504924672.0 * 128);
    CHECK_NEAR(lora.model_flops / full.model_flops, 2.0 / 3.0, 1e-3);
}

static void test_spans(void)
{
    const int64_t lens[2] = {10, 3};
    const mfu_batch b = {.lengths = lens, .count = 2, .repeat = 3};
    double p = -1.0, t = -1.0;
    mfu_chunking c;

    CHECK(mfu_batch_tokens(&b, &t) == MFU_OK && t == 39.0); /* 3 * 13 */
    /* full span: 3 * (100 + 9); half: exactly half */
    CHECK(mfu_span_pairs(&b, MFU_SPAN_FULL, 0, MFU_CAUSAL_FULL, &p) == MFU_OK && p == 327.0);
    CHECK(mfu_span_pairs(&b, MFU_SPAN_FULL, 0, MFU_CAUSAL_HALF, &p) == MFU_OK && p == 163.5);
    /* sliding w = 4, full: 10*min(10,4) + 3*3 = 49; x3 = 147 */
    CHECK(mfu_span_pairs(&b, MFU_SPAN_SLIDING, 4, MFU_CAUSAL_FULL, &p) == MFU_OK && p == 147.0);
    /* half: sum min(p+1, 4) over 10 queries = 1+2+3+4*7 = 34, over 3
     * queries 1+2+3 = 6 -> 40; x3 = 120 */
    CHECK(mfu_span_pairs(&b, MFU_SPAN_SLIDING, 4, MFU_CAUSAL_HALF, &p) == MFU_OK && p == 120.0);
    /* chunked c = 4: chunks of 10 are 4, 4, 2 -> 16+16+4 = 36, of 3: 9 ->
     * 45; x3 = 135. half: 10+10+3 + 6 = 29; x3 = 87 */
    CHECK(mfu_span_pairs(&b, MFU_SPAN_CHUNKED, 4, MFU_CAUSAL_FULL, &p) == MFU_OK && p == 135.0);
    CHECK(mfu_span_pairs(&b, MFU_SPAN_CHUNKED, 4, MFU_CAUSAL_HALF, &p) == MFU_OK && p == 87.0);
    /* a window at least the sequence: the full span's pairs (full) and
     * the unmasked pairs s(s+1)/2 (half) */
    CHECK(mfu_span_pairs(&b, MFU_SPAN_SLIDING, 64, MFU_CAUSAL_FULL, &p) == MFU_OK && p == 327.0);
    CHECK(mfu_span_pairs(&b, MFU_SPAN_SLIDING, 64, MFU_CAUSAL_HALF, &p) == MFU_OK &&
          p == 3.0 * (55.0 + 6.0));
    CHECK(mfu_span_pairs(&b, MFU_SPAN_SLIDING, 0, MFU_CAUSAL_FULL, &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_span_pairs(&b, (mfu_span_kind)7, 4, MFU_CAUSAL_FULL, &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_span_pairs(&b, MFU_SPAN_FULL, 0, (mfu_causal)3, &p) == MFU_ERR_INVALID_ARGUMENT);
    /* chunks of 4: ceil(10/4) = 3, ceil(3/4) = 1 -> 4, x3 = 12; (n+1)^2:
     * 16 + 4 = 20, x3 = 60; 6 non-empty sequences */
    CHECK(mfu_batch_chunking(&b, 4, &c) == MFU_OK && c.chunks == 12.0 &&
          c.chunks_sq == 60.0 && c.nonempty == 6.0);
    /* conv1d positions, pad 3: (13 + 6) * 3 = 57 */
    CHECK(mfu_batch_padded_tokens(&b, 3, &p) == MFU_OK && p == 57.0);
    {
        const int64_t bad[2] = {4, -1};
        const mfu_batch nb = {.lengths = bad, .count = 2, .repeat = 1};
        CHECK(mfu_batch_tokens(&nb, &t) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(mfu_batch_chunking(&b, 0, &c) == MFU_ERR_INVALID_ARGUMENT);
    }
}

static void test_scans(void)
{
    mfu_transformer_dims d;
    const int64_t ten = 10, twelve = 12;
    const mfu_batch b10 = {.lengths = &ten, .count = 1, .repeat = 1};
    const mfu_batch b12 = {.lengths = &twelve, .count = 1, .repeat = 1};
    mfu_scan_flops s;

    mfu_transformer_dims_init(&d);
    /* gated DeltaNet: H_v 2, d_k 4, d_v 6, chunk 8, s 10 -> 2 chunks; per
     * head and chunk 4*64*4 + 2*64*6 + 6*8*4*6 = 1,024 + 768 + 1,152 =
     * 2,944; x 2 chunks x 2 heads = 11,776 */
    d.linear_num_value_heads = 2;
    d.linear_key_head_dim = 4;
    d.linear_value_head_dim = 6;
    d.linear_chunk_size = 8;
    CHECK(mfu_deltanet_scan(&d, &b10, &s) == MFU_OK && s.forward == 11776.0);
    /* model: 3x, less the first chunk's two zero-state reads 2*(2*8*4*6)
     * = 768 per head, less the last chunk's state update's backward
     * 2*(2*8*4*6) = 768 per head, plus the two triangular solves' backward
     * 2*64*(4 + 6) = 1,280 per head and chunk:
     * 35,328 - 2 * 768 - 2 * 768 + 4 * 1,280 = 37,376 */
    CHECK(s.model == 37376.0);
    /* SSD: H 2, P 4, N 3, chunk 5, s 12 -> 3 chunks; per head and chunk
     * 2*25*3 + 2*25*4 + 4*5*4*3 = 590; x3 x2 = 3,540; state pass
     * 2*(3+1)^2*4*3 = 384 per head -> 768; forward 4,308, model 3x */
    d.ssm_num_heads = 2;
    d.ssm_head_dim = 4;
    d.ssm_state_size = 3;
    d.ssm_chunk_size = 5;
    CHECK(mfu_ssd_scan(&d, &b12, &s) == MFU_OK && s.forward == 4308.0);
    CHECK(s.model == 3.0 * 4308.0);
}

static void test_mla_and_hybrid_blocks(void)
{
    mfu_transformer_dims d;
    mfu_transformer_options o;
    mfu_tally t;

    mfu_transformer_dims_init(&d);
    mfu_transformer_options_init(&o);
    /* MLA: d 8, H 2, r_q 4, r_kv 3, nope 2, rope 1, d_v 2:
     * q_a 8*4 = 32, q_b 4*2*3 = 24, kv_a 8*(3+1) = 32, kv_b 3*2*(2+2) = 24,
     * o 2*2*8 = 32 -> 144; + norms 4 + 3 = 151 params */
    d.hidden_size = 8;
    d.num_heads = 2;
    d.attention = MFU_ATTENTION_MLA;
    d.q_lora_rank = 4;
    d.kv_lora_rank = 3;
    d.qk_nope_head_dim = 2;
    d.qk_rope_head_dim = 1;
    d.v_head_dim = 2;
    t = mfu_attention_tally(&d, &o);
    CHECK(t.matmul == 144.0 && t.params == 151.0);
    /* a pair: 2 * H * (d_qk + d_v) = 2*2*(3 + 2) = 20 */
    CHECK(mfu_attention_pair_flops(&d) == 20.0);
    /* gated DeltaNet: d 8, H_k 1 x d_k 2, H_v 2 x d_v 3: K 2, Vd 6:
     * qkvz 8*(4 + 12) = 128, ba 8*4 = 32, out 6*8 = 48 -> 208; conv
     * (4 + 6) * 4 = 40, dt / A 4, norm 3 -> 255 params */
    d.linear_num_key_heads = 1;
    d.linear_key_head_dim = 2;
    d.linear_num_value_heads = 2;
    d.linear_value_head_dim = 3;
    d.linear_conv_kernel = 4;
    t = mfu_linear_attention_tally(&d);
    CHECK(t.matmul == 208.0 && t.params == 255.0);
    /* Mamba-2: d 8, H_s 2 x P 4 (I 8), G 1, N 3: in 8*(8 + 14 + 2) = 192,
     * out 64 -> 256; conv 14*4 = 56 (+ 14 bias), dt / A / D 6, norm 8 */
    d.ssm_num_heads = 2;
    d.ssm_head_dim = 4;
    d.ssm_num_groups = 1;
    d.ssm_state_size = 3;
    d.ssm_conv_kernel = 4;
    d.ssm_conv_bias = 1;
    t = mfu_ssm_tally(&d);
    CHECK(t.matmul == 256.0 && t.params == 256.0 + 56.0 + 14.0 + 6.0 + 8.0);
}

static void test_vision(void)
{
    mfu_vision_input in;
    mfu_vision_flops v;
    const mfu_vision_grid g = {1, 6, 4};
    const char *field = NULL;

    mfu_vision_dims_init(&in.dims);
    in.dims = (mfu_vision_dims){.kind = MFU_VISION_QWEN2_5_VL, .depth = 2,
                                .hidden_size = 4, .intermediate_size = 6,
                                .num_heads = 2, .in_channels = 3, .patch_size = 2,
                                .temporal_patch_size = 2, .spatial_merge_size = 2,
                                .out_hidden_size = 5, .window_size = 8,
                                .num_full_blocks = 1};
    in.grids = &g;
    in.num_grids = 1;
    CHECK(mfu_vision_flops_compute(&in, 1, 1, &v, &field) == MFU_OK);
    /* P = 24 patches; patch 4*3*2*2*2 = 96 weights: 2*24*96 = 4,608
     * block 4*16 + 3*4*6 = 136: 2*24*136 = 6,528 x 2 blocks = 13,056
     * windows of 8/2/2 = 2 merged tokens on the 3 x 2 merged grid: rows
     * 2 + 1 -> 4 + 1 = 5, cols 2 -> 4; pairs 2^4 * 5 * 4 = 320; the full
     * block 24^2 = 576; attention 4*4*(576 + 320) = 14,336
     * merger 16*16 + 16*5 = 336 on 6 merged tokens: 4,032
     * forward 36,032; model 2*4,608 + 3*(36,032 - 4,608) = 103,488 */
    CHECK(v.attention_flops == 14336.0);
    CHECK(v.forward_flops == 36032.0);
    CHECK(v.model_flops == 103488.0);
    CHECK(v.num_patches == 24.0);
    CHECK(v.image_tokens == 6.0); /* the 6 merged tokens */
    /* params 96 + 2*(136 + 32 biases + 8 norms) + (336 + 16 + 5 + 4) = 809 */
    CHECK(v.num_params == 809.0);
    /* an odd grid side is refused, naming the argument */
    {
        const mfu_vision_grid odd = {1, 5, 4};
        in.grids = &odd;
        CHECK(mfu_vision_flops_compute(&in, 1, 1, &v, &field) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(field_is(field, "image_grid_thw"));
        in.grids = &g;
    }
    in.dims.window_size = 2; /* 2/2/2 = 0 merged tokens with windowed blocks */
    CHECK(mfu_vision_validate(&in.dims, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "vision.window_size"));
    in.dims.window_size = 8;
    in.dims.num_deepstack_mergers = 1; /* Qwen3-VL only */
    CHECK(mfu_vision_validate(&in.dims, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "vision.num_deepstack_mergers"));
}

static void test_vlm_total(void)
{
    mfu_transformer_dims d = llama8b();
    mfu_transformer_options o;
    mfu_batch b = uniform(1, 512);
    mfu_vision_input in = {.num_grids = 1};
    const mfu_vision_grid g = {1, 16, 16};
    mfu_transformer_flops text, vlm;
    mfu_vision_flops v;
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    in.dims = (mfu_vision_dims){.kind = MFU_VISION_QWEN3_VL, .depth = 4,
                                .hidden_size = 64, .intermediate_size = 128,
                                .num_heads = 4, .in_channels = 3, .patch_size = 16,
                                .temporal_patch_size = 2, .spatial_merge_size = 2,
                                .out_hidden_size = 4096, .num_deepstack_mergers = 1,
                                .num_position_embeddings = 256};
    in.grids = &g;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &text, &field) == MFU_OK);
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, &in, &vlm, &field) == MFU_OK);
    CHECK(mfu_vision_flops_compute(&in, 0, 1, &v, &field) == MFU_OK);
    CHECK(vlm.language_flops == text.model_flops);
    CHECK(vlm.vision_flops == v.model_flops && v.model_flops > 0.0);
    CHECK(vlm.model_flops == vlm.language_flops + vlm.vision_flops);
    CHECK(vlm.num_params == text.num_params + v.num_params);
    /* 16 x 16 patches merged 2 x 2: 64 image tokens; 63 tokens cannot
     * hold them */
    CHECK(v.image_tokens == 64.0);
    b = uniform(1, 63);
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, &in, &vlm, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "image_tokens"));
    b = uniform(1, 512);
    /* LoRA with a tower is refused: which tower weights train is unknown */
    o.lora_rank = 4;
    o.lora_targets = MFU_LORA_Q;
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, &in, &vlm, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "lora_rank"));
}

static void test_windows_in_the_count(void)
{
    mfu_transformer_dims d = llama8b();
    mfu_transformer_options o;
    const int64_t lens[2] = {8192, 1000};
    const mfu_batch b = {.lengths = lens, .count = 2, .repeat = 1};
    mfu_transformer_flops r;
    const char *field = NULL;

    d.sliding_window = 4096;
    d.num_sliding_layers = 16;
    d.attention_chunk_size = 2048;
    d.num_chunked_layers = 8;
    mfu_transformer_options_init(&o);
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) == MFU_OK);
    /* 8 full layers: 8192^2 + 1000^2 = 68,108,864; 16 sliding:
     * 8192*4096 + 1000^2 = 34,554,432; 8 chunked: 4 * 2048^2 + 1000^2 =
     * 17,777,216; each pair 4 * 32 * 128 = 16,384 FLOPs */
    CHECK(r.attention_flops ==
          16384.0 * (8 * 68108864.0 + 16 * 34554432.0 + 8 * 17777216.0));
}

static void test_validation(void)
{
    mfu_transformer_dims d;
    mfu_transformer_options o;
    mfu_batch b = uniform(0, 16);
    mfu_transformer_flops r;
    const char *field = NULL;

    mfu_transformer_options_init(&o);
    d = llama8b();
    d.hidden_size = 0;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "hidden_size"));
    d = llama8b();
    d.num_kv_heads = 5; /* 32 % 5 != 0 */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_kv_heads"));
    d = llama8b();
    d.num_kv_heads = -1;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_kv_heads"));
    d = llama8b();
    d.num_kv_heads = 0; /* = num_heads: valid */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_OK);
    d = llama8b();
    d.head_dim = 0;
    d.num_heads = 24; /* 4096 % 24 != 0 */
    d.num_kv_heads = 8;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_heads"));
    d = llama8b();
    d.num_experts = 4;
    d.experts_per_token = 5;
    d.moe_intermediate_size = 8;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "experts_per_token"));
    d = llama8b();
    d.num_layers = -2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_layers"));
    d = llama8b();
    d.intermediate_size = 0;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "intermediate_size"));
    d = llama8b();
    d.num_sliding_layers = 4; /* no window */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_sliding_layers"));
    d = llama8b();
    d.num_linear_layers = 30;
    d.num_ssm_layers = 3; /* 33 mixers in 32 layers */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "num_ssm_layers"));
    d = llama8b();
    d.num_ssm_layers = 32; /* no attention layers left: heads need not be set, */
    d.num_heads = 0;       /* but the SSM's dims must */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "ssm_num_heads"));
    d = llama8b();
    d.attention = MFU_ATTENTION_MLA; /* without a kv rank */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "kv_lora_rank"));
    d = llama8b();
    d.mlp = MFU_MLP_NONE; /* with a dense width */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "intermediate_size"));
    d = llama8b();
    d.norm = (mfu_norm_kind)3;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "norm"));
    d = llama8b();
    d.mlp = MFU_MLP_GELU;
    o.lora_rank = 4;
    o.lora_targets = MFU_LORA_GATE;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "lora_targets"));
    o.lora_targets = 0; /* rank without targets */
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "lora_targets"));
    mfu_transformer_options_init(&o);
    o.formula = (mfu_flops_formula)9;
    d = llama8b();
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "formula"));
    mfu_transformer_options_init(&o);

    /* no tokens, a negative length */
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(field_is(field, "seq_lens"));
    b = uniform(1, -1);
    CHECK(mfu_transformer_flops_compute(&d, &o, &b, NULL, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_transformer_flops_compute(&d, &o, NULL, NULL, &r, &field) ==
          MFU_ERR_INVALID_ARGUMENT);
}

static void test_families(void)
{
    const size_t n = mfu_family_count();
    const mfu_family *gemma = mfu_family_find("gemma3_text");
    const mfu_family *ds = mfu_family_find("deepseek_v3");
    mfu_transformer_dims d;

    CHECK(n >= 20);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            CHECK(strcmp(mfu_family_at(i)->model_type, mfu_family_at(j)->model_type) != 0);
    CHECK(mfu_family_at(n) == NULL && mfu_family_find("bert") == NULL);
    CHECK(gemma != NULL && gemma->norms_per_layer == 4 && gemma->qk_norm == MFU_QK_NORM_HEAD &&
          gemma->tie_word_embeddings == 1);
    CHECK(ds != NULL && ds->attention == MFU_ATTENTION_MLA);
    mfu_transformer_dims_init(&d);
    mfu_family_apply(mfu_family_find("qwen3_next"), &d);
    CHECK(d.attention_gate == 1 && d.shared_expert_gate == 1 && d.linear_chunk_size == 64);
    mfu_family_apply(mfu_family_find("mamba2"), &d);
    CHECK(d.mlp == MFU_MLP_NONE && d.norms_per_layer == 1);
}

static void test_params_flops(void)
{
    double model = -1.0, forward = -1.0;
    /* 6 * 7e9 * 4096 and 2 * 7e9 * 4096 */
    CHECK(mfu_params_flops(7e9, 4096.0, 0, &model, &forward) == MFU_OK);
    CHECK(model == 6.0 * 7e9 * 4096.0 && forward == 2.0 * 7e9 * 4096.0);
    /* LoRA: the frozen base costs 4N per token */
    CHECK(mfu_params_flops(7e9, 4096.0, 1, &model, &forward) == MFU_OK);
    CHECK(model == 4.0 * 7e9 * 4096.0);
    CHECK(mfu_params_flops(0.0, 1.0, 0, &model, &forward) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_params_flops(1.0, -1.0, 0, &model, &forward) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_params_flops(1.0, 1.0, 2, &model, &forward) == MFU_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    test_lambda_llama_8b();
    test_matmul_and_moe();
    test_lora();
    test_spans();
    test_scans();
    test_mla_and_hybrid_blocks();
    test_vision();
    test_vlm_total();
    test_windows_in_the_count();
    test_validation();
    test_families();
    test_params_flops();
    return check_summary("test_transformer");
}
