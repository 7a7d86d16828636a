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
} mfu_family;

/* The row of `model_type`, or NULL. */
const mfu_family *mfu_family_find(const char *model_type);

/* Row i (0..mfu_family_count()-1), in table order. */
size_t mfu_family_count(void);
const mfu_family *mfu_family_at(size_t index);

/* The row's structural fields written over `dims` (the numbers untouched). */
void mfu_family_apply(const mfu_family *family, mfu_transformer_dims *dims);

#endif /* MFU_FAMILIES_H */
