/* family_dense.c -- dense decoder families (see families.h). Each row cites
 * the transformers (5.24) modeling file whose modules it describes; what a
 * config decides (biases from attention_bias / use_bias, windows from
 * layer_types, tied embeddings) is read by mfu_tracker/flops/_hf_config.py
 * starting from the row's value. */
#include "families.h"

/* A pre-norm decoder of GQA attention (q, k, v, o) and a SwiGLU MLP with
 * two RMSNorms per layer, no biases, untied. */
#define DECODER .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU, \
                .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2
/* The same with a two-matrix MLP: up_proj [d -> I], down_proj [I -> d]. */
#define TWO_MATRIX .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_GELU, \
                   .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2

const mfu_family mfu_families_dense[] = {
    /* smollm3/modeling_smollm3.py: SmolLM3Attention = LlamaAttention (RoPE
     * off on the no_rope_layers: no matmul either way), LlamaMLP; tied */
    {.model_type = "smollm3", DECODER, .tie_word_embeddings = 1},
    /* olmo3/modeling_olmo3.py: Olmo3Attention q_norm over H*Q, k_norm over
     * H_kv*Q (as OLMo 2); post_attention / post_feedforward RMSNorm */
    {.model_type = "olmo3", DECODER, .qk_norm = MFU_QK_NORM_PROJECTION},
    /* ministral3/modeling_ministral3.py: Ministral3Attention (no biases),
     * Ministral3MLP; sliding_window on every layer when set */
    {.model_type = "ministral3", DECODER},
    /* seed_oss/modeling_seed_oss.py: SeedOssAttention q/k/v bias
     * (attention_bias, default on), o bias (attention_out_bias) */
    {.model_type = "seed_oss", DECODER, .qkv_bias = 1},
    /* glm4/modeling_glm4.py: Glm4Attention q/k/v bias, o without;
     * Glm4MLP fused gate_up_proj; input, post_self_attn, post_attention and
     * post_mlp RMSNorm */
    {.model_type = "glm4", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU,
     .norm = MFU_NORM_RMSNORM, .norms_per_layer = 4, .qkv_bias = 1},
    /* gemma/modeling_gemma.py: GemmaAttention, GemmaMLP (GeGLU: 3
     * matrices), GemmaRMSNorm x 2; tied */
    {.model_type = "gemma", DECODER, .tie_word_embeddings = 1},
    /* ernie4_5/modeling_ernie4_5.py: Ernie4_5Attention and Ernie4_5MLP
     * (every projection biased with use_bias); tied */
    {.model_type = "ernie4_5", DECODER, .tie_word_embeddings = 1},
    /* exaone4/modeling_exaone4.py: Exaone4Attention q_norm / k_norm
     * (head_dim), post_attention / post_feedforward RMSNorm */
    {.model_type = "exaone4", DECODER, .qk_norm = MFU_QK_NORM_HEAD},
    /* cohere2/modeling_cohere2.py: Cohere2DecoderLayer runs attention and
     * MLP in parallel after one Cohere2LayerNorm (weight, no bias); tied */
    {.model_type = "cohere2", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU,
     .norm = MFU_NORM_LAYERNORM_NOBIAS, .norms_per_layer = 1, .tie_word_embeddings = 1},
    /* apertus/modeling_apertus.py: ApertusAttention q_norm / k_norm
     * (head_dim), ApertusMLP up / down with xIELU (mlp_act_params),
     * attention_layernorm / feedforward_layernorm */
    {.model_type = "apertus", TWO_MATRIX, .qk_norm = MFU_QK_NORM_HEAD},
    /* arcee/modeling_arcee.py: LlamaAttention, ArceeMLP up / down (ReLU^2) */
    {.model_type = "arcee", TWO_MATRIX},
    /* starcoder2/modeling_starcoder2.py: Starcoder2Attention and
     * Starcoder2MLP c_fc / c_proj (all biased with use_bias, default on),
     * LayerNorm with bias; tied */
    {.model_type = "starcoder2", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_GELU,
     .norm = MFU_NORM_LAYERNORM, .norms_per_layer = 2, .qkv_bias = 1,
     .attention_out_bias = 1, .mlp_bias = 1, .tie_word_embeddings = 1},
};

const size_t mfu_families_dense_count = sizeof mfu_families_dense / sizeof mfu_families_dense[0];

#undef DECODER
#undef TWO_MATRIX
