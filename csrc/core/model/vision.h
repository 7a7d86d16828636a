/*
 * vision.h -- analytic FLOPs of a VLM's vision tower for the images and
 * videos of one batch, each given by its grid of patches (t, h, w): the
 * `image_grid_thw` / `video_grid_thw` rows transformers' Qwen-VL processors
 * emit.
 *
 * One tower per kind; the tables in vision.c give each kind's layout with
 * its source (transformers' modeling file):
 *
 *   patch embed   Conv3d(C_in -> D, kernel = stride = (tp, p, p)) per patch:
 *                 2 * P * D * C_in*tp*p^2 forward; model 2x forward (the
 *                 pixels need no gradient: weight gradient only)
 *   blocks        depth x [qkv D->3D, proj D->D, MLP (SwiGLU 3*D*I or
 *                 GELU 2*D*I)] on P patches, 2 FLOPs per weight per patch
 *   attention     bidirectional (never halved), 2 * 2D FLOPs per (query,
 *                 key) pair: full blocks attend within each frame, sum
 *                 t * (h*w)^2; Qwen2.5-VL's windowed blocks within windows
 *                 of ws x ws merged tokens (ws = window_size / merge /
 *                 patch), per frame m^4 * sum_i r_i^2 * sum_j c_j^2 over the
 *                 window rows r_i and columns c_j of the (h/m) x (w/m) grid
 *   merger        P/m^2 merged tokens x [D m^2 -> D m^2 -> out]; Qwen3-VL's
 *                 deepstack mergers the same, each
 * model = 3x forward except the patch embed (2x). P = t*h*w, m = merge.
 *
 * Fixed-resolution towers (vision_tiles.c: SigLIP / CLIP / Llama 4 vision
 * encoders with the Gemma 3, LLaVA and Llama 4 projectors) take each grid
 * row as t tiles of h x w patches (the tile's pixels / patch_size); every
 * tile runs the encoder on its own (attention within the tile).
 */
#ifndef MFU_VISION_H
#define MFU_VISION_H

#include <stddef.h>
#include <stdint.h>

#include "mfu_status.h"

typedef enum mfu_vision_kind {
    MFU_VISION_NONE = 0,
    MFU_VISION_QWEN2_5_VL = 1, /* Qwen2.5-VL: RMSNorm, SwiGLU, windows */
    MFU_VISION_QWEN3_VL = 2,   /* Qwen3-VL: LayerNorm, GELU, deepstack */
    MFU_VISION_GEMMA3 = 3,     /* SigLIP + Gemma 3's pooled projector */
    MFU_VISION_LLAVA_CLIP = 4, /* CLIP + LLaVA's two-layer projector */
    MFU_VISION_LLAVA_SIGLIP = 5, /* SigLIP + LLaVA's projector (OneVision) */
    MFU_VISION_LLAMA4 = 6      /* Llama 4's encoder, pixel shuffle, projector */
} mfu_vision_kind;

/* Field names are the Python keyword names (the config's, where it has one). */
typedef struct mfu_vision_dims {
    mfu_vision_kind kind;
    int64_t depth;               /* blocks */
    int64_t hidden_size;         /* D */
    int64_t intermediate_size;   /* I */
    int64_t num_heads;           /* divides D */
    int64_t in_channels;         /* C_in (3) */
    int64_t patch_size;          /* p */
    int64_t temporal_patch_size; /* tp */
    int64_t spatial_merge_size;  /* m */
    int64_t out_hidden_size;     /* the language model's d */
    int64_t window_size;         /* Qwen2.5-VL: window side in pixels */
    int64_t num_full_blocks;     /* Qwen2.5-VL: len(fullatt_block_indexes) */
    int64_t num_deepstack_mergers;   /* Qwen3-VL */
    int64_t num_position_embeddings; /* Qwen3-VL learned table (params) */
    /* fixed-resolution towers (vision_tiles.c) */
    int64_t image_size;          /* tile side in pixels (the position table) */
    int64_t tokens_per_image;    /* Gemma 3: mm_tokens_per_image (pooled) */
    int64_t feature_layers;      /* LLaVA: hidden states concatenated (1) */
    int64_t unused_layers;       /* LLaVA: top layers above every selected
                                  * hidden state (vision_feature_layer -2:
                                  * 1): they run, their output reaches no
                                  * loss, forward only */
    int keep_cls;                /* LLaVA "full" strategy: CLS projected too */
    int use_head;                /* SigLIP's attention-pooling head runs */
    int projector_bias;          /* LLaVA projector Linears have biases */
    int image_newline;           /* LLaVA-NeXT / OneVision: a learned [d] row */
    int64_t pixel_shuffle_inverse;   /* Llama 4: 1 / pixel_shuffle_ratio */
    int64_t projector_input_dim;     /* Llama 4 adapter fc1 output */
    int64_t projector_output_dim;    /* Llama 4 adapter fc2 (square) */
    int64_t vision_output_dim;       /* Llama 4 projector input */
} mfu_vision_dims;

/* One image or video: t frames (after temporal patching) of h x w patches;
 * h and w are multiples of the merge size. */
typedef struct mfu_vision_grid {
    int64_t t, h, w;
} mfu_vision_grid;

typedef struct mfu_vision_input {
    mfu_vision_dims dims;
    const mfu_vision_grid *grids; /* borrowed */
    size_t num_grids;
} mfu_vision_input;

typedef struct mfu_vision_flops {
    double forward_flops;   /* one forward pass */
    double model_flops;     /* forward + the backward training needs */
    double attention_flops; /* the attention core, inside forward */
    double blocks_forward;  /* the blocks' forward (full recompute) */
    double num_params;      /* every tower parameter */
    double num_embedding_params; /* the learned position table */
    double num_patches;     /* P over every grid */
    double image_tokens;    /* the placeholder tokens the images take in the
                             * language model's sequences, at least (a
                             * LLaVA-NeXT image's crops are unpadded: its
                             * base tile counted) */
} mfu_vision_flops;

void mfu_vision_dims_init(mfu_vision_dims *dims);

/* Check the dims (kind NONE is valid: no tower). On error *bad_field names
 * the field ("vision.<name>") and the status is INVALID. */
mfu_status mfu_vision_validate(const mfu_vision_dims *dims,
                               const char **bad_field);

/* The tower over `num_grids` grids (bad field "image_grid_thw" for a grid
 * with t, h or w < 1 or h, w not multiples of the merge size). `matmul_only`
 * charges only matmul weights (the MATMUL formula), else every parameter of
 * a stage per token it touches (6N / PALM); `with_attention` 0 drops the
 * attention term (6N). Kind NONE gives zeros. */
mfu_status mfu_vision_flops_compute(const mfu_vision_input *input,
                                    int matmul_only, int with_attention,
                                    mfu_vision_flops *out,
                                    const char **bad_field);

#endif /* MFU_VISION_H */
