/* family_moe.c -- mixture-of-experts decoder families (see families.h). Each
 * row cites the transformers (5.24) modeling file whose modules it
 * describes; which layers hold experts, the widths and the shared experts
 * are read from the config by mfu_tracker/flops/_hf_config.py. Every router
 * is a bias-free Linear [d -> E]; router_bias counts the E learned score
 * biases some families keep beside it. */
#include "families.h"

/* A pre-norm decoder of GQA attention and SwiGLU experts with two RMSNorms
 * per layer, no biases, untied. */
#define DECODER .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU, \
                .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2

const mfu_family mfu_families_moe[] = {
    /* olmoe/modeling_olmoe.py: OlmoeAttention q_norm over H*Q, k_norm over
     * H_kv*Q; OlmoeSparseMoeBlock (OlmoeTopKRouter, OlmoeExperts of
     * intermediate_size) on every layer */
    {.model_type = "olmoe", DECODER, .qk_norm = MFU_QK_NORM_PROJECTION},
    /* minimax_m2/modeling_minimax_m2.py: MiniMaxM2Attention (no biases; q /
     * k norm over all heads), MiniMaxM2SparseMoeBlock (router, experts of
     * intermediate_size; e_score_correction_bias is a buffer) */
    {.model_type = "minimax_m2", DECODER, .qk_norm = MFU_QK_NORM_PROJECTION},
    /* phimoe/modeling_phimoe.py: PhimoeAttention, PhimoeSparseMoeBlock
     * (PhimoeTopKRouter, sparsemixer top-2, experts of intermediate_size),
     * LayerNorm with bias; lm_head bias with lm_head_bias */
    {.model_type = "phimoe", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU,
     .norm = MFU_NORM_LAYERNORM, .norms_per_layer = 2},
    /* ernie4_5_moe/modeling_ernie4_5_moe.py: Ernie4_5_MoeAttention (use_bias),
     * Ernie4_5_MoeSparseMoeBlock: Ernie4_5_MoeTopKRouter with the
     * e_score_correction_bias parameter, MixtralExperts (no biases),
     * shared_experts (use_bias); Ernie4_5_MoeMLP on the dense layers;
     * lm_head bias with use_bias; tied */
    {.model_type = "ernie4_5_moe", DECODER, .router_bias = 1, .tie_word_embeddings = 1,
     .unbiased_experts = 1},
    /* hunyuan_v1_moe/modeling_hunyuan_v1_moe.py: HunYuanMoEV1Attention
     * query_layernorm / key_layernorm (head_dim); HunYuanMoEV1Moe: gate.wg,
     * experts and shared_mlp, all of intermediate_size, on every layer */
    {.model_type = "hunyuan_v1_moe", DECODER, .qk_norm = MFU_QK_NORM_HEAD},
    /* dots1/modeling_dots1.py: Dots1Attention = Qwen3Attention (q/k norm per
     * head), Dots1MoE = DeepseekV3MoE (routed + shared experts) after
     * first_k_dense_replace dense layers */
    {.model_type = "dots1", DECODER, .qk_norm = MFU_QK_NORM_HEAD},
    /* afmoe/modeling_afmoe.py: AfmoeAttention q_norm / k_norm (head_dim) and
     * a sigmoid output gate from its own gate_proj; AfmoeSparseMoeBlock
     * (router, shared experts, experts, the expert_bias parameter) after
     * num_dense_layers dense layers; input, post_attention, pre_mlp and
     * post_mlp RMSNorm */
    {.model_type = "afmoe", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU,
     .norm = MFU_NORM_RMSNORM, .norms_per_layer = 4, .qk_norm = MFU_QK_NORM_HEAD,
     .attention_gate = 1, .router_bias = 1, .attention_gate_proj = 1},
};

const size_t mfu_families_moe_count = sizeof mfu_families_moe / sizeof mfu_families_moe[0];

#undef DECODER
