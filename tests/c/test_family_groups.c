/*
 * test_family_groups.c -- the dense and MoE family groups (family_dense.c,
 * family_moe.c) joined into the family table, and the structure they add
 * to the analytic count (transformer.h: unbiased_experts,
 * attention_gate_proj, lm_head_bias, bidirectional, mlp_act_params); hand
 * arithmetic beside every expected number.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "families.h"
#include "tiny_model.h"
#include "transformer.h"

static const int64_t lens[2] = {3, 5}; /* T = 8; full pairs 9 + 25 = 34 */
static const mfu_batch batch = {.lengths = lens, .count = 2, .repeat = 1};

static mfu_transformer_flops count(const mfu_transformer_dims *d, mfu_flops_formula formula,
                                   mfu_causal causal)
{
    mfu_transformer_options o;
    mfu_transformer_flops r = {0};
    const char *field = NULL;
    mfu_transformer_options_init(&o);
    o.formula = formula;
    o.causal = causal;
    CHECK(mfu_transformer_flops_compute(d, &o, &batch, NULL, &r, &field) == MFU_OK);
    return r;
}

static void test_groups_join_the_table(void)
{
    static const char *const dense[] = {
        "smollm3", "olmo3", "ministral3", "seed_oss", "glm4", "gemma", "ernie4_5",
        "exaone4", "cohere2", "apertus", "arcee", "starcoder2"};
    static const char *const moe[] = {
        "olmoe", "minimax_m2", "phimoe", "ernie4_5_moe", "hunyuan_v1_moe", "dots1", "afmoe"};
    const size_t n = mfu_family_count();
    mfu_transformer_dims d;

    CHECK(mfu_families_dense_count == 12 && mfu_families_moe_count == 7);
    for (size_t i = 0; i < mfu_families_dense_count; i++)
        CHECK(mfu_family_find(dense[i]) == &mfu_families_dense[i]);
    for (size_t i = 0; i < mfu_families_moe_count; i++)
        CHECK(mfu_family_find(moe[i]) == &mfu_families_moe[i]);
    /* the groups follow the first table, in order, and end the table */
    CHECK(mfu_family_at(n - 1) == &mfu_families_moe[mfu_families_moe_count - 1]);
    CHECK(mfu_family_at(n - mfu_families_moe_count) == &mfu_families_moe[0]);
    CHECK(mfu_family_at(n - mfu_families_moe_count - 1) ==
          &mfu_families_dense[mfu_families_dense_count - 1]);
    CHECK(mfu_family_at(n) == NULL && mfu_family_find(NULL) == NULL);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            CHECK(strcmp(mfu_family_at(i)->model_type, mfu_family_at(j)->model_type) != 0);

    mfu_transformer_dims_init(&d);
    mfu_family_apply(mfu_family_find("afmoe"), &d);
    CHECK(d.attention_gate == 1 && d.attention_gate_proj == 1 && d.router_bias == 1 &&
          d.norms_per_layer == 4 && d.qk_norm == MFU_QK_NORM_HEAD);
    mfu_family_apply(mfu_family_find("ernie4_5_moe"), &d);
    CHECK(d.unbiased_experts == 1 && d.attention_gate_proj == 0 && d.tie_word_embeddings == 1);
    mfu_family_apply(mfu_family_find("cohere2"), &d);
    CHECK(d.norm == MFU_NORM_LAYERNORM_NOBIAS && d.norms_per_layer == 1 &&
          d.unbiased_experts == 0);
    mfu_family_apply(mfu_family_find("starcoder2"), &d);
    CHECK(d.mlp == MFU_MLP_GELU && d.norm == MFU_NORM_LAYERNORM && d.mlp_bias == 1 &&
          d.qkv_bias == 1 && d.attention_out_bias == 1);
}

static void test_biases_and_activation_params(void)
{
    mfu_transformer_dims d = tiny_gqa_dims();
    const mfu_transformer_dims plain = tiny_gqa_dims();
    const mfu_transformer_flops base = count(&d, MFU_FORMULA_PALM, MFU_CAUSAL_FULL);
    mfu_transformer_flops r;

    /* lm_head bias: V = 10 more parameters; PaLM counts them with the head
     * (6 * 10 * 8 tokens = 480); matmul FLOPs never count a bias */
    d.lm_head_bias = 1;
    r = count(&d, MFU_FORMULA_PALM, MFU_CAUSAL_FULL);
    CHECK(r.num_params == base.num_params + 10.0);
    CHECK(r.num_active_params == base.num_active_params + 10.0);
    CHECK(r.model_flops == base.model_flops + 480.0);
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).model_flops ==
          count(&plain, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).model_flops);
    d.lm_head_bias = 0;

    /* xIELU: 2 scalars per dense MLP, 2 layers: + 4 params, PaLM + 6*4*8 */
    d.mlp_act_params = 2;
    r = count(&d, MFU_FORMULA_PALM, MFU_CAUSAL_FULL);
    CHECK(r.num_params == base.num_params + 4.0);
    CHECK(r.model_flops == base.model_flops + 192.0);
    d.mlp_act_params = 0;

    /* MoE with mlp_bias, 4 experts of width 4, a shared expert of width 4,
     * layer 0 dense: the experts carry 2*4 + 8 = 16 bias params each (64 a
     * layer) unless unbiased_experts; the dense (2*16 + 8 = 40) and shared
     * (16) MLP biases stay */
    d.num_experts = 4;
    d.experts_per_token = 2;
    d.moe_intermediate_size = 4;
    d.shared_expert_intermediate_size = 4;
    d.num_dense_layers = 1;
    d.mlp_bias = 1;
    r = count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL);
    d.unbiased_experts = 1;
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).num_params == r.num_params - 64.0);
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).model_flops == r.model_flops);
    d.mlp_bias = 0;
    /* no biases at all: 64 + 40 + 16 = 120 fewer than with mlp_bias */
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).num_params == r.num_params - 120.0);
}

static void test_gate_proj_and_bidirectional(void)
{
    mfu_transformer_dims d = tiny_gqa_dims();
    mfu_transformer_flops fused, separate, half;
    mfu_transformer_options o;
    const char *field = NULL;

    /* an output gate [d -> H*Q] = 8*8 = 64 weights a layer either way; with
     * qkv_bias q_proj's half carries 8 bias terms (Qwen3-Next) a separate
     * gate_proj none (AFMoE): 2 layers -> 16 fewer parameters */
    d.attention_gate = 1;
    d.qkv_bias = 1;
    fused = count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL);
    d.attention_gate_proj = 1;
    separate = count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL);
    CHECK(separate.model_flops == fused.model_flops);
    CHECK(separate.num_params == fused.num_params - 16.0);
    /* LoRA adapters on a separate gate_proj are not counted: refused */
    mfu_transformer_options_init(&o);
    o.lora_rank = 4;
    o.lora_targets = MFU_LORA_Q;
    CHECK(mfu_transformer_flops_compute(&d, &o, &batch, NULL, &separate, &field) ==
          MFU_ERR_INVALID_ARGUMENT && field_is(field, "lora_rank"));
    d.attention_gate = 0;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT &&
          field_is(field, "attention_gate_proj"));

    /* bidirectional: "half" keeps the full square, 2*4*2*2 = 32 FLOPs a
     * pair, 34 pairs, 2 layers = 2,176 forward; causal "half" 1,088 */
    d = tiny_gqa_dims();
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_HALF).attention_flops == 1088.0);
    d.bidirectional = 1;
    half = count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_HALF);
    CHECK(half.attention_flops == 2176.0);
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).attention_flops == 2176.0);
    /* a bidirectional window of 2 on one of the 2 layers (EmbeddingGemma):
     * |query - key| < 2, a key each side; "half" keeps those pairs, 2 + 3 +
     * 2 = 7 (s = 3) and 2 + 3 + 3 + 3 + 2 = 13 (s = 5); "full" charges each
     * query the 3 keys of its span, 3 * 3 + 5 * 3 = 24; the full layer 34
     * pairs either way: (34 + 20) * 32 = 1,728 and (34 + 24) * 32 = 1,856 */
    d.sliding_window = 2;
    d.num_sliding_layers = 1;
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_HALF).attention_flops == 1728.0);
    CHECK(count(&d, MFU_FORMULA_MATMUL, MFU_CAUSAL_FULL).attention_flops == 1856.0);
    /* a chunk has no bidirectional span: refused */
    d.sliding_window = 0;
    d.num_sliding_layers = 0;
    d.attention_chunk_size = 2;
    d.num_chunked_layers = 1;
    mfu_transformer_options_init(&o);
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT &&
          field_is(field, "bidirectional"));
    /* flags are 0 / 1 */
    d = tiny_gqa_dims();
    d.lm_head_bias = 2;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT &&
          field_is(field, "lm_head_bias"));
    d = tiny_gqa_dims();
    d.mlp_act_params = -1;
    CHECK(mfu_transformer_validate(&d, &o, &field) == MFU_ERR_INVALID_ARGUMENT &&
          field_is(field, "mlp_act_params"));
}

int main(void)
{
    test_groups_join_the_table();
    test_biases_and_activation_params();
    test_gate_proj_and_bidirectional();
    return check_summary("test_family_groups");
}
