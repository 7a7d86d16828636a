/* families.c -- the model-family table (see families.h). Each row cites the
 * transformers (5.x) modeling file whose modules it describes. */
#include <string.h>

#include "families.h"

/* Fields every row shares unless it says otherwise: a pre-norm decoder of
 * GQA attention and a SwiGLU MLP with RMSNorm, no biases, untied. */
#define DECODER .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU, \
                .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2

static const mfu_family families[] = {
    /* gpt2/modeling_gpt2.py: GPT2Attention c_attn / c_proj (Conv1D, bias),
     * GPT2MLP c_fc / c_proj (bias), ln_1 / ln_2 LayerNorm, wpe; tied */
    {.model_type = "gpt2", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_GELU,
     .norm = MFU_NORM_LAYERNORM, .norms_per_layer = 2, .qkv_bias = 1,
     .attention_out_bias = 1, .mlp_bias = 1, .tie_word_embeddings = 1},
    /* llama/modeling_llama.py: LlamaAttention (attention_bias), LlamaMLP
     * (mlp_bias), input / post_attention RMSNorm */
    {.model_type = "llama", DECODER},
    /* mistral/modeling_mistral.py: Llama's layer, sliding_window on every layer */
    {.model_type = "mistral", DECODER},
    /* mixtral/modeling_mixtral.py: Mistral's attention, MixtralSparseMoeBlock */
    {.model_type = "mixtral", DECODER},
    /* phi3/modeling_phi3.py: fused qkv_proj and gate_up_proj (the same
     * matmuls as Llama's), sliding_window on every layer when set */
    {.model_type = "phi3", DECODER},
    /* qwen2/modeling_qwen2.py: Qwen2Attention q/k/v with bias, o without */
    {.model_type = "qwen2", DECODER, .qkv_bias = 1},
    /* qwen2_moe/modeling_qwen2_moe.py: Qwen2's attention, experts + a shared
     * expert with shared_expert_gate */
    {.model_type = "qwen2_moe", DECODER, .qkv_bias = 1, .shared_expert_gate = 1},
    /* qwen3/modeling_qwen3.py: Qwen3Attention q_norm / k_norm (head_dim) */
    {.model_type = "qwen3", DECODER, .qk_norm = MFU_QK_NORM_HEAD},
    /* qwen3_moe/modeling_qwen3_moe.py: Qwen3's attention, experts */
    {.model_type = "qwen3_moe", DECODER, .qk_norm = MFU_QK_NORM_HEAD},
    /* gemma2/modeling_gemma2.py: Gemma2DecoderLayer with input,
     * post_attention, pre_feedforward and post_feedforward RMSNorm; GeGLU
     * (3 matrices); tied; soft-capping has no matmul */
    {.model_type = "gemma2", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_SWIGLU,
     .norm = MFU_NORM_RMSNORM, .norms_per_layer = 4,
     .tie_word_embeddings = 1},
    /* gemma3/modeling_gemma3.py: Gemma 2's layer + q_norm / k_norm (head_dim) */
    {.model_type = "gemma3_text", .attention = MFU_ATTENTION_GQA,
     .mlp = MFU_MLP_SWIGLU, .norm = MFU_NORM_RMSNORM, .norms_per_layer = 4,
     .qk_norm = MFU_QK_NORM_HEAD, .tie_word_embeddings = 1},
    /* olmo2/modeling_olmo2.py: Olmo2Attention q_norm over H*Q, k_norm over
     * H_kv*Q; post_attention / post_feedforward RMSNorm */
    {.model_type = "olmo2", DECODER, .qk_norm = MFU_QK_NORM_PROJECTION},
    /* gpt_oss/modeling_gpt_oss.py: GptOssAttention (biases on q, k, v, o;
     * sinks), GptOssTopKRouter (bias), GptOssExperts (gate_up and down
     * biases) */
    {.model_type = "gpt_oss", DECODER, .qkv_bias = 1, .attention_out_bias = 1,
     .attention_sinks = 1, .mlp_bias = 1, .router_bias = 1},
    /* deepseek_v3/modeling_deepseek_v3.py: DeepseekV3Attention (MLA),
     * DeepseekV3MoE (routed + shared experts), first_k_dense_replace dense */
    {.model_type = "deepseek_v3", .attention = MFU_ATTENTION_MLA,
     .mlp = MFU_MLP_SWIGLU, .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2},
    /* glm4_moe/modeling_glm4_moe.py: Glm4MoeAttention (q/k/v bias from
     * attention_bias, o without; q/k norm with use_qk_norm), DeepSeek-style
     * MoE */
    {.model_type = "glm4_moe", DECODER},
    /* llama4/modeling_llama4.py: Llama4TextAttention (L2 q/k norm: no
     * parameters), Llama4TextMoe (router, experts, shared expert),
     * Llama4TextMLP (intermediate_size_mlp) on the dense layers */
    {.model_type = "llama4_text", DECODER},
    /* qwen3_next/modeling_qwen3_next.py: Qwen3NextAttention (q_proj with an
     * output gate, q/k norm), Qwen3NextGatedDeltaNet, Qwen3NextSparseMoeBlock
     * (shared expert with gate); the FLA / torch chunk is 64 */
    {.model_type = "qwen3_next", DECODER, .qk_norm = MFU_QK_NORM_HEAD,
     .attention_gate = 1, .shared_expert_gate = 1, .linear_chunk_size = 64},
    /* mamba2/modeling_mamba2.py: Mamba2Block = RMSNorm + Mamba2Mixer, no MLP */
    {.model_type = "mamba2", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_NONE,
     .norm = MFU_NORM_RMSNORM, .norms_per_layer = 1},
    /* qwen2_5_vl/modeling_qwen2_5_vl.py: Qwen2's decoder + the windowed
     * vision tower (vision.c) */
    {.model_type = "qwen2_5_vl", DECODER, .qkv_bias = 1,
     .vision = MFU_VISION_QWEN2_5_VL},
    /* qwen3_vl/modeling_qwen3_vl.py: Qwen3's decoder + the deepstack vision
     * tower (vision.c) */
    {.model_type = "qwen3_vl", DECODER, .qk_norm = MFU_QK_NORM_HEAD,
     .vision = MFU_VISION_QWEN3_VL},

    /* --- Qwen3.5, the MLA family and the Mamba / convolution hybrids
     * (family_mla.h, family_hybrid.h) --- */
    /* qwen3_5/modeling_qwen3_5.py: Qwen3-Next's attention and gated DeltaNet
     * (in_proj_qkv / in_proj_z / in_proj_b / in_proj_a: the same matmuls as
     * in_proj_qkvz + in_proj_ba), a dense Qwen3_5MLP; the Qwen3-VL tower less
     * the deepstack mergers */
    {.model_type = "qwen3_5", DECODER, .qk_norm = MFU_QK_NORM_HEAD,
     .attention_gate = 1, .linear_chunk_size = 64, .vision = MFU_VISION_QWEN3_VL},
    /* qwen3_5_moe/modeling_qwen3_5_moe.py: Qwen3.5's mixers,
     * Qwen3_5MoeSparseMoeBlock (experts + gated shared expert) on every layer */
    {.model_type = "qwen3_5_moe", DECODER, .qk_norm = MFU_QK_NORM_HEAD,
     .attention_gate = 1, .shared_expert_gate = 1, .linear_chunk_size = 64,
     .vision = MFU_VISION_QWEN3_VL},
    /* deepseek_v2/modeling_deepseek_v2.py: DeepseekV2Attention (MLA; biases on
     * q_a, kv_a and o with attention_bias), DeepseekV2Moe (routed + shared
     * experts) from first_k_dense_replace on */
    {.model_type = "deepseek_v2", .attention = MFU_ATTENTION_MLA,
     .mlp = MFU_MLP_SWIGLU, .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2},
    /* glm4_moe_lite/modeling_glm4_moe_lite.py: DeepseekV3Attention (MLA),
     * Glm4MoeLiteMoE (routed + shared experts) where mlp_layer_types says
     * "sparse" */
    {.model_type = "glm4_moe_lite", .attention = MFU_ATTENTION_MLA,
     .mlp = MFU_MLP_SWIGLU, .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2},
    /* kimi_linear/modeling_kimi_linear.py: KimiLinearAttention (MLA, no RoPE)
     * or KimiLinearDeltaAttention (KDA, chunk 64) per layer_types,
     * KimiLinearMoE (DeepSeek-V3's) where mlp_layer_types says "sparse" */
    {.model_type = "kimi_linear", .attention = MFU_ATTENTION_MLA,
     .mlp = MFU_MLP_SWIGLU, .norm = MFU_NORM_RMSNORM, .norms_per_layer = 2,
     .linear_chunk_size = 64, .linear_kind = MFU_LINEAR_KDA},
    /* granitemoehybrid/modeling_granitemoehybrid.py: GraniteMoeHybridMambaLayer
     * (BambaMixer: Mamba-2) or GraniteMoeHybridAttention, then shared_mlp
     * (SwiGLU) + block_sparse_moe (experts, router without bias) */
    {.model_type = "granitemoehybrid", DECODER},
    /* nemotron_h/modeling_nemotron_h.py: NemotronHBlock = one RMSNorm + one of
     * NemotronHMamba2Mixer, NemotronHAttention, NemotronHMLP (up, down:
     * relu2) or NemotronHMoE (non-gated experts without biases, shared
     * expert, optional latent projections) */
    {.model_type = "nemotron_h", .attention = MFU_ATTENTION_GQA, .mlp = MFU_MLP_GELU,
     .norm = MFU_NORM_RMSNORM, .norms_per_layer = 1, .unbiased_experts = 1},
    /* falcon_h1/modeling_falcon_h1.py: FalconH1DecoderLayer runs FalconH1Mixer
     * (Mamba-2; gated norm with mamba_rms_norm) and FalconH1Attention side by
     * side, then FalconH1MLP (SwiGLU) */
    {.model_type = "falcon_h1", DECODER, .ssm_parallel = 1},
    /* jamba/modeling_jamba.py: JambaAttentionDecoderLayer or
     * JambaMambaDecoderLayer (JambaMambaMixer: Mamba-1 with dt / B / C norms),
     * each with JambaMLP or JambaSparseMoeBlock */
    {.model_type = "jamba", DECODER, .ssm_kind = MFU_SSM_MAMBA1, .ssm_inner_norms = 1},
    /* lfm2/modeling_lfm2.py: Lfm2Attention (q / k layernorm per head, no
     * biases) or Lfm2ShortConv per layer_types, Lfm2MLP (SwiGLU); tied */
    {.model_type = "lfm2", DECODER, .qk_norm = MFU_QK_NORM_HEAD, .tie_word_embeddings = 1},
};

#undef DECODER

static const size_t families_count = sizeof families / sizeof families[0];

/* Every group, in table order. */
static const mfu_family_group groups[] = {
    {families, &families_count},
    /* dense and MoE decoders (family_dense.c, family_moe.c) */
    {mfu_families_dense, &mfu_families_dense_count},
    {mfu_families_moe, &mfu_families_moe_count},
};

size_t mfu_family_count(void)
{
    size_t n = 0;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        n += *groups[g].count;
    return n;
}

const mfu_family *mfu_family_at(size_t index)
{
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        if (index < *groups[g].count)
            return &groups[g].rows[index];
        index -= *groups[g].count;
    }
    return NULL;
}

const mfu_family *mfu_family_find(const char *model_type)
{
    const mfu_family *f;
    if (model_type == NULL)
        return NULL;
    for (size_t i = 0; (f = mfu_family_at(i)) != NULL; i++)
        if (strcmp(f->model_type, model_type) == 0)
            return f;
    return NULL;
}

void mfu_family_apply(const mfu_family *f, mfu_transformer_dims *d)
{
    d->attention = f->attention;
    d->mlp = f->mlp;
    d->norm = f->norm;
    d->norms_per_layer = f->norms_per_layer;
    d->qkv_bias = f->qkv_bias;
    d->attention_out_bias = f->attention_out_bias;
    d->qk_norm = f->qk_norm;
    d->attention_gate = f->attention_gate;
    d->attention_sinks = f->attention_sinks;
    d->mlp_bias = f->mlp_bias;
    d->shared_expert_gate = f->shared_expert_gate;
    d->router_bias = f->router_bias;
    d->tie_word_embeddings = f->tie_word_embeddings;
    if (f->linear_chunk_size > 0)
        d->linear_chunk_size = f->linear_chunk_size;
    d->linear_kind = f->linear_kind;
    d->ssm_kind = f->ssm_kind;
    d->ssm_parallel = f->ssm_parallel;
    d->ssm_inner_norms = f->ssm_inner_norms;
    d->unbiased_experts = f->unbiased_experts;
    d->attention_gate_proj = f->attention_gate_proj;
}
