/*
 * transformer.h -- analytic FLOPs of a model from its dimensions (no model
 * needed): decoder layers of standard (GQA) or multi-head latent attention,
 * gated DeltaNet / Kimi delta linear attention, Mamba-2 / Mamba-1 SSM or
 * short-convolution mixers (alone, beside attention, or in MLP-free blocks);
 * dense, MoE and shared-expert MLPs; the lm_head and multi-token-prediction layers; a
 * vision tower (vision.h) in front.
 *
 * Units: FLOPs (one multiply-add = 2 FLOPs), in double (a run's total
 * easily exceeds 2^63). Each block's arithmetic, with its source, is in
 * blocks.h (decoder layers) and vision.h (vision towers); attention spans
 * under the two causal conventions in spans.h; which blocks each model
 * family uses in families.h.
 *
 * Conventions (docs/conventions.md):
 *  - model FLOPs (MFU numerator): forward + the backward that trainable
 *    weights and activations need. A weight matmul costs 2 FLOPs per weight
 *    per token forward, 4 backward (input and weight gradient); a frozen
 *    base under LoRA 2 backward (input gradient only). Attention's model
 *    backward is MFU_ATTENTION_MODEL_BACKWARD x its forward (PaLM).
 *  - hardware FLOPs (HFU numerator): model FLOPs + activation recompute.
 *  - causal attention: spans.h (full / half; sliding and chunked windows).
 */
#ifndef MFU_TRANSFORMER_H
#define MFU_TRANSFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "flops.h"
#include "mfu_status.h"
#include "spans.h"
#include "vision.h"

typedef enum mfu_mlp_kind {
    MFU_MLP_GELU = 0,   /* up, down: 2 matrices (GPT-2) */
    MFU_MLP_SWIGLU = 1, /* gate, up, down: 3 matrices (Llama; GeGLU alike) */
    MFU_MLP_NONE = 2    /* no MLP (Mamba-2 blocks) */
} mfu_mlp_kind;

typedef enum mfu_norm_kind {
    MFU_NORM_RMSNORM = 0,         /* weight only: hidden params */
    MFU_NORM_LAYERNORM = 1,       /* weight and bias: 2 * hidden params */
    MFU_NORM_LAYERNORM_NOBIAS = 2 /* weight only (nanoGPT bias=False) */
} mfu_norm_kind;

typedef enum mfu_qk_norm_kind {
    MFU_QK_NORM_NONE = 0,      /* none, or parameter-free (Llama 4's L2) */
    MFU_QK_NORM_HEAD = 1,      /* RMSNorm(head_dim) on q and on k (Qwen3) */
    MFU_QK_NORM_PROJECTION = 2 /* RMSNorm over all q / k heads (OLMo 2) */
} mfu_qk_norm_kind;

typedef enum mfu_attention_kind {
    MFU_ATTENTION_GQA = 0, /* q, k, v, o projections; GQA / MQA / MHA */
    MFU_ATTENTION_MLA = 1  /* DeepSeek multi-head latent attention */
} mfu_attention_kind;

/* The linear-attention mixer of the num_linear_layers (family_mla.h). */
typedef enum mfu_linear_kind {
    MFU_LINEAR_GATED_DELTANET = 0, /* Qwen3-Next / Qwen3.5 gated DeltaNet */
    MFU_LINEAR_KDA = 1             /* Kimi Linear's Kimi delta attention */
} mfu_linear_kind;

/* The state-space mixer of the num_ssm_layers (family_hybrid.h). */
typedef enum mfu_ssm_kind {
    MFU_SSM_MAMBA2 = 0, /* Mamba-2 SSD (Mamba2, Bamba, Granite 4, Nemotron-H, Falcon-H1) */
    MFU_SSM_MAMBA1 = 1  /* Mamba-1 selective scan (Jamba) */
} mfu_ssm_kind;

/* LoRA target bits (mfu_transformer_options.lora_targets). On a GELU MLP,
 * UP is the first matrix (GPT-2 c_fc) and DOWN the second (mlp.c_proj);
 * GATE does not exist there. On MoE layers the MLP bits adapt every expert
 * and the shared expert (as peft's name matching does). Q/K/V/O adapt the
 * GQA attention projections only. */
enum {
    MFU_LORA_Q = 1u << 0,
    MFU_LORA_K = 1u << 1,
    MFU_LORA_V = 1u << 2,
    MFU_LORA_O = 1u << 3,
    MFU_LORA_GATE = 1u << 4,
    MFU_LORA_UP = 1u << 5,
    MFU_LORA_DOWN = 1u << 6,
    MFU_LORA_ALL = (1u << 7) - 1u,
    MFU_LORA_ATTENTION = MFU_LORA_Q | MFU_LORA_K | MFU_LORA_V | MFU_LORA_O
};

/*
 * A model by its dimensions. Field names are the Python keyword names, and
 * the validator reports a bad one by that name. Layers partition as
 *   L - num_mlp_only_layers = attention layers + num_linear_layers
 *                             + num_ssm_layers + num_short_conv_layers,
 *   attention layers = full + num_sliding_layers + num_chunked_layers,
 * (with ssm_parallel the SSM layers are attention layers that also run an
 * SSM: they leave the sum), and, for the MLP,
 *   L - num_mixer_only_layers = dense + MoE layers
 * (MoE = L - num_mixer_only_layers - num_dense_layers when num_experts > 0),
 * except with mlp "none". A plain decoder has no MLP-only or mixer-only
 * layers; Nemotron-H's blocks are one or the other.
 */
typedef struct mfu_transformer_dims {
    int64_t hidden_size;       /* d */
    int64_t num_layers;        /* L */
    int64_t vocab_size;        /* V */
    /* attention (GQA) */
    int64_t num_heads;         /* H: query heads (0 only without attention) */
    int64_t num_kv_heads;      /* H_kv: 1..H, divides H; 0 = H */
    int64_t head_dim;          /* Q; 0 = hidden_size / num_heads */
    mfu_attention_kind attention;
    int qkv_bias;              /* q, k, v (MLA: q_a, kv_a) have biases */
    int attention_out_bias;    /* o projection has a bias */
    mfu_qk_norm_kind qk_norm;
    int attention_gate;        /* q_proj also emits an output gate (2*H*Q) */
    int attention_sinks;       /* one learned sink logit per head (gpt-oss) */
    /* MLA (attention "mla"): q_lora_rank 0 = a direct q_proj */
    int64_t q_lora_rank, kv_lora_rank;
    int64_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    /* MLP */
    mfu_mlp_kind mlp;
    int64_t intermediate_size; /* dense MLP width (needed by dense layers) */
    int mlp_bias;              /* MLP (and expert) matrices have biases */
    /* norms */
    mfu_norm_kind norm;
    int64_t norms_per_layer;   /* 2 (pre-norm), 4 (Gemma), 1 (Mamba-2) */
    /* mixture of experts: 0 experts = every layer dense */
    int64_t num_experts;                     /* E */
    int64_t experts_per_token;               /* k active experts, 1..E */
    int64_t moe_intermediate_size;           /* each expert's width */
    int64_t shared_expert_intermediate_size; /* 0 = no shared expert */
    int shared_expert_gate; /* Linear(d, 1) on the shared expert (Qwen) */
    int router_bias;        /* E more router parameters: the router Linear's
                             * bias (gpt-oss) or a learned per-expert score
                             * bias (ERNIE 4.5 e_score_correction_bias,
                             * AFMoE expert_bias); no matmul */
    int64_t num_dense_layers; /* with experts: layers using the dense MLP */
    /* embeddings */
    int tie_word_embeddings;  /* lm_head shares the token embedding */
    int64_t num_positions;    /* learned position table rows (GPT-2); 0 = none */
    /* attention spans */
    int64_t sliding_window, num_sliding_layers;      /* 0 = none */
    int64_t attention_chunk_size, num_chunked_layers; /* 0 = none */
    /* gated DeltaNet linear-attention layers (Qwen3-Next) */
    int64_t num_linear_layers;
    int64_t linear_num_key_heads, linear_key_head_dim;
    int64_t linear_num_value_heads, linear_value_head_dim;
    int64_t linear_conv_kernel, linear_chunk_size;
    /* Mamba-2 SSM layers */
    int64_t num_ssm_layers;
    int64_t ssm_num_heads, ssm_head_dim, ssm_state_size, ssm_num_groups;
    int64_t ssm_conv_kernel, ssm_chunk_size;
    int ssm_conv_bias, ssm_proj_bias;
    /* multi-token prediction layers (DeepSeek-V3, GLM-4.5) */
    int64_t num_mtp_layers;
    /* hybrid mixers and layer layouts (family_mla.h, family_hybrid.h) */
    mfu_linear_kind linear_kind; /* KDA: key and value heads / dims equal */
    mfu_ssm_kind ssm_kind;
    int ssm_parallel;       /* SSM layers also run attention (Falcon-H1) */
    int ssm_norm;           /* Mamba-2 gated RMSNorm(I) (default 1) */
    int ssm_out_proj_bias;  /* out_proj bias (ssm_proj_bias: in_proj's) */
    int64_t ssm_intermediate_size, ssm_dt_rank; /* Mamba-1: I, dt rank */
    int ssm_inner_norms;    /* Mamba-1: dt / B / C RMSNorms (Jamba) */
    int64_t num_short_conv_layers, short_conv_kernel; /* LFM2 short conv */
    int short_conv_bias;    /* its in_proj, conv and out_proj biases */
    int64_t num_mlp_only_layers, num_mixer_only_layers; /* Nemotron-H blocks */
    int64_t moe_latent_size; /* experts run in a latent width (Nemotron-H) */
    int unbiased_experts;    /* routed experts carry no bias even with mlp_bias
                              * (NemotronHExperts, ERNIE 4.5 MoE's MixtralExperts) */
    /* structure a few dense / MoE families add (families.h: family_dense.c,
     * family_moe.c); each 0 = the layout above */
    int attention_gate_proj; /* the output gate is its own gate_proj [d ->
                              * H*Q] without bias (AFMoE), not q_proj's
                              * second half; needs attention_gate */
    int lm_head_bias;        /* the lm_head Linear has a bias (PhiMoE) */
    int bidirectional;       /* attention is not causal (Gemma's
                              * use_bidirectional_attention): "half" counts
                              * the full square; a sliding layer sees the
                              * sliding_window - 1 keys on each side
                              * (spans.h); no chunked layers */
    int64_t mlp_act_params;  /* learned scalars of each dense MLP's
                              * activation (xIELU's alpha_p, alpha_n: 2) */
} mfu_transformer_dims;

typedef enum mfu_flops_formula {
    /* 6 * N_c * T: the parameter rule, no attention or scan term. */
    MFU_FORMULA_6N = 0,
    /* 6 * N_c * T + the attention term (PaLM, torchtitan) + the scans. */
    MFU_FORMULA_PALM = 1,
    /* Every matmul (and convolution) the model runs, each 2*m*n*k:
     * projections, MLP, router + active experts + shared expert, attention
     * QK^T and AV, the scans' matmuls, lm_head. Biases, norms, softmax,
     * embedding lookups: 0. */
    MFU_FORMULA_MATMUL = 2
} mfu_flops_formula;

typedef enum mfu_recompute {
    MFU_RECOMPUTE_NONE = 0,
    MFU_RECOMPUTE_FULL = 1,     /* each layer's forward runs again in backward */
    MFU_RECOMPUTE_SELECTIVE = 2 /* the attention core runs again (Megatron) */
} mfu_recompute;

typedef struct mfu_transformer_options {
    mfu_flops_formula formula;
    mfu_causal causal;
    int include_lm_head;   /* count the lm_head matmul (even when tied) */
    int include_embedding; /* count the embedding tables as if matmul weights */
    mfu_recompute recompute; /* hardware FLOPs only; model FLOPs never change */
    int64_t lora_rank;     /* 0 = full training */
    unsigned lora_targets; /* MFU_LORA_* bits; non-zero iff lora_rank > 0 */
} mfu_transformer_options;

typedef struct mfu_transformer_flops {
    double model_flops;     /* MFU numerator (language + vision) */
    double hardware_flops;  /* HFU numerator: model + activation recompute */
    double forward_flops;   /* one forward pass (inference cost) */
    double attention_flops; /* forward attention core (QK^T + AV), inside
                             * forward_flops; 0 for the 6N formula */
    double scan_flops;      /* forward matmuls of the chunked linear-attention
                             * / SSM scans, inside forward_flops */
    double language_flops;  /* model FLOPs of the language model */
    double vision_flops;    /* model FLOPs of the vision tower (0: no images) */
    double num_params;      /* N: every parameter once (tied counted once) */
    double num_embedding_params; /* N_emb: token (+ position) tables */
    double num_active_params; /* N with only the k active experts */
    double num_adapter_params; /* LoRA A and B matrices (all experts) */
    double num_tokens;        /* T: language tokens */
} mfu_transformer_flops;

/* Defaults: a dense SwiGLU/RMSNorm GQA layout, 2 norms per layer, the
 * Mamba-2 gated norm on (ssm_norm), the scan chunks (linear 64, SSM 256),
 * everything else zero; options PALM, FULL, lm_head included, embedding excluded, no
 * recompute, no LoRA. */
void mfu_transformer_dims_init(mfu_transformer_dims *dims);
void mfu_transformer_options_init(mfu_transformer_options *options);

/* Check dims and options; on error set *bad_field to the offending field's
 * (Python keyword) name and return MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_transformer_validate(const mfu_transformer_dims *dims,
                                    const mfu_transformer_options *options,
                                    const char **bad_field);

/*
 * The analytic count of one batch (`batch`, T > 0 else bad field
 * "seq_lens"), with an optional vision tower (`vision` NULL or
 * vision->dims.kind NONE: none; else bad fields are vision.h's). A tower
 * counts its parameters even for a batch without images (no grids); with
 * images, LoRA is refused (bad field "lora_rank": which tower weights train
 * is not known). Let W be
 * the weights a token meets (blocks.h; N_c for 6N / PALM: the active
 * parameters of the layers, final norm and MTP layers, + V*d per lm_head
 * application when included, + N_emb when the embedding is included; the
 * matmul weights only for MATMUL), A the attention core forward (spans.h),
 * S the scans' forward matmuls and C the convolutions (MATMUL only):
 *   forward  = 2*W*T + 2*N_adapter*T + A + S + C
 *   model    = 6*W*T + 6*N_adapter*T + 3*A + S_model + 3*C    (full training)
 *            = 4*W*T + ...                  (LoRA: frozen W, no weight grad)
 *   hardware = model (+ A with selective recompute, + the layers' forward
 *              with full recompute)
 * plus the vision tower's (vision.h); language_flops + vision_flops =
 * model_flops. NB: the PaLM term 12*L*H*Q*S per token is 3*A/T for uniform
 * sequences of length S. NB (LoRA): the first layer's frozen projections
 * whose input does not require grad skip their input gradient in autograd;
 * this count still includes it (<= 2 * their params per token).
 */
mfu_status mfu_transformer_flops_compute(const mfu_transformer_dims *dims,
                                         const mfu_transformer_options *options,
                                         const mfu_batch *batch,
                                         const mfu_vision_input *vision,
                                         mfu_transformer_flops *out,
                                         const char **bad_field);

/* ------------------------------------------------------------------------
 * The parts of the count, for the counts built on it (generation.h)
 * ------------------------------------------------------------------------ */

/* Layers by kind (MTP layers apart: they are not in num_layers). */
typedef struct mfu_layer_mix {
    double layers, full, sliding, chunked, linear, ssm, conv, dense, moe, mtp;
} mfu_layer_mix;

/* The model's weights: per token (matmul view and parameter view, active
 * experts), every parameter, adapters. Excludes embeddings and lm_head;
 * includes the final norm (parameter view) and the MTP layers. */
typedef struct mfu_model_tally {
    double matmul, params_active, params_all, lora_active, lora_all;
} mfu_model_tally;

/* Of validated dims (mfu_transformer_validate). */
mfu_layer_mix mfu_layer_mix_of(const mfu_transformer_dims *d);
mfu_model_tally mfu_model_tally_of(const mfu_transformer_dims *d,
                                   const mfu_transformer_options *o, const mfu_layer_mix *m);

/* The weights a token meets in the layers under the formula's view: the
 * matmul weights (MATMUL) or the active parameters (6N, PALM). */
double mfu_layer_weights(const mfu_transformer_options *o, const mfu_model_tally *t);

/* One lm_head application's weights under the formula's view: V*d, + its
 * bias (a parameter, not a matmul) for 6N and PALM. */
double mfu_lm_head_weights(const mfu_transformer_dims *d, const mfu_transformer_options *o);

/* The 6N rule on a bare parameter count `num_params` (> 0, finite) over
 * `num_tokens` (>= 0): model = 6*N*T (forward 2*N*T + backward 4*N*T), or
 * with `lora` 4*N*T (a frozen base: forward + input gradient; adapters not
 * counted). INVALID for a bad count or flag. */
mfu_status mfu_params_flops(double num_params, double num_tokens, int lora,
                            double *model_flops, double *forward_flops);

#endif /* MFU_TRANSFORMER_H */
