/*
 * families.h -- which blocks each model family is built from: one row per
 * HuggingFace model_type, with the transformers modeling file it follows.
 *
 * A row fixes what the config does not say (a Gemma layer has four norms, a
 * Qwen2 attention biases q, k and v, gpt-oss has sinks and a router bias);
 * the numbers (widths, counts, windows) come from the config itself, read
 * by the Python layer (mfu_tracker/flops/_hf_config.py). Flags a config may
 * override (attention_bias, use_qk_norm, mlp_bias, tie_word_embeddings)
 * start from the row's value, the config class's default.
 */
#ifndef MFU_FAMILIES_H
#define MFU_FAMILIES_H

#include <stddef.h>
#include <stdint.h>

#include "transformer.h"
#include "vision.h"

typedef struct mfu_family {
    const char *model_type;
    mfu_attention_kind attention;
    mfu_mlp_kind mlp;
    mfu_norm_kind norm;
    int64_t norms_per_layer;
    int qkv_bias;
    int attention_out_bias;
    mfu_qk_norm_kind qk_norm;
    int attention_gate;
    int attention_sinks;
    int mlp_bias;
    int shared_expert_gate;
    int router_bias;
    int tie_word_embeddings;
    int64_t linear_chunk_size; /* gated DeltaNet chunk (the kernel's, fixed) */
    mfu_vision_kind vision;
    /* hybrid mixers (family_mla.h, family_hybrid.h) */
    mfu_linear_kind linear_kind;
    mfu_ssm_kind ssm_kind;
    int ssm_parallel;
    int ssm_inner_norms;
    int unbiased_experts;
    /* family_dense.c / family_moe.c */
    int attention_gate_proj;
} mfu_family;

/*
 * The rows live in one table per family group, each in its own file
 * (families.c: the first families; family_<group>.c: later groups), joined
 * in table order by families.c's group list.
 */
typedef struct mfu_family_group {
    const mfu_family *rows;
    const size_t *count;
} mfu_family_group;

/* family_dense.c: dense decoders (SmolLM3, OLMo 3, Ministral 3, Seed-OSS,
 * GLM-4, Gemma, ERNIE 4.5, EXAONE 4, Command R7B, and the two-matrix MLPs
 * of Apertus, Arcee, StarCoder2) */
extern const mfu_family mfu_families_dense[];
extern const size_t mfu_families_dense_count;
/* family_moe.c: mixture-of-experts decoders (OLMoE, MiniMax-M2, PhiMoE,
 * ERNIE 4.5 MoE, Hunyuan MoE, dots.llm1, AFMoE) */
extern const mfu_family mfu_families_moe[];
extern const size_t mfu_families_moe_count;

/* The row of `model_type`, or NULL. */
const mfu_family *mfu_family_find(const char *model_type);

/* Row i (0..mfu_family_count()-1), in table order. */
size_t mfu_family_count(void);
const mfu_family *mfu_family_at(size_t index);

/* The row's structural fields written over `dims` (the numbers untouched). */
void mfu_family_apply(const mfu_family *family, mfu_transformer_dims *dims);

#endif /* MFU_FAMILIES_H */
