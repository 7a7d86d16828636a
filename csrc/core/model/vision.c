/* vision.c -- VLM vision towers (see vision.h for the formulas). */
#include <stddef.h>

#include "vision.h"
#include "vision_tiles.h"

/* How a kind lays out its tower; the arithmetic below reads only this. */
typedef struct vision_layout {
    mfu_vision_kind kind;
    int swiglu;     /* block MLP: gate, up, down (else fc1, fc2 with GELU) */
    int layernorm;  /* block and merger norms: LayerNorm (weight + bias) */
    int patch_bias; /* the patch Conv3d has a bias */
    int windows;    /* blocks outside the full ones attend within windows */
    int deepstack;  /* deepstack mergers (LayerNorm over D m^2) */
} vision_layout;

static const vision_layout layouts[] = {
    /* transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py:
     * Qwen2_5_VisionPatchEmbed (Conv3d, bias=False), Qwen2_5_VLVisionBlock
     * (RMSNorm norm1/norm2, qkv and proj with bias, Qwen2_5_VLMLP with
     * bias), Qwen2_5_VLPatchMerger (RMSNorm ln_q, Linear, GELU, Linear);
     * windows from vision_utils.get_vision_window_index. */
    {.kind = MFU_VISION_QWEN2_5_VL, .swiglu = 1, .layernorm = 0,
     .patch_bias = 0, .windows = 1, .deepstack = 0},
    /* transformers models/qwen3_vl/modeling_qwen3_vl.py:
     * Qwen3VLVisionPatchEmbed (Conv3d, bias=True), pos_embed (Embedding,
     * interpolated: no matmul), Qwen3VLVisionBlock (LayerNorm norm1/norm2),
     * Qwen3VLVisionMLP (linear_fc1, GELU, linear_fc2, with bias),
     * Qwen3VLVisionPatchMerger (LayerNorm, fc1, GELU, fc2) and one per
     * deepstack_visual_indexes entry (use_postshuffle_norm: LayerNorm over
     * D m^2). */
    {.kind = MFU_VISION_QWEN3_VL, .swiglu = 0, .layernorm = 1,
     .patch_bias = 1, .windows = 0, .deepstack = 1},
};

static const vision_layout *layout_of(mfu_vision_kind kind)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].kind == kind)
            return &layouts[i];
    return NULL;
}

void mfu_vision_dims_init(mfu_vision_dims *dims)
{
    *dims = (mfu_vision_dims){.kind = MFU_VISION_NONE};
}

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

/* The window side in merged tokens (Qwen2.5-VL's vit_merger_window_size). */
static int64_t window_tokens(const mfu_vision_dims *d)
{
    return d->window_size / d->spatial_merge_size / d->patch_size;
}

mfu_status mfu_vision_validate(const mfu_vision_dims *d, const char **bad_field)
{
    const vision_layout *lay;
    if (d == NULL)
        return bad(bad_field, "vision");
    if (d->kind == MFU_VISION_NONE)
        return MFU_OK;
    if (mfu_vision_is_tiled(d->kind))
        return mfu_vision_tiles_validate(d, bad_field);
    lay = layout_of(d->kind);
    if (lay == NULL)
        return bad(bad_field, "vision.kind");
    if (d->image_size != 0 || d->tokens_per_image != 0 || d->feature_layers > 1 ||
        d->unused_layers != 0 ||
        d->keep_cls || d->use_head || d->projector_bias || d->image_newline ||
        d->pixel_shuffle_inverse != 0 ||
        d->projector_input_dim != 0 || d->projector_output_dim != 0 ||
        d->vision_output_dim != 0)
        return bad(bad_field, "vision.image_size"); /* the tiled towers' fields */
    if (d->depth < 1)
        return bad(bad_field, "vision.depth");
    if (d->hidden_size < 1)
        return bad(bad_field, "vision.hidden_size");
    if (d->intermediate_size < 1)
        return bad(bad_field, "vision.intermediate_size");
    if (d->num_heads < 1 || d->hidden_size % d->num_heads != 0)
        return bad(bad_field, "vision.num_heads");
    if (d->in_channels < 1)
        return bad(bad_field, "vision.in_channels");
    if (d->patch_size < 1)
        return bad(bad_field, "vision.patch_size");
    if (d->temporal_patch_size < 1)
        return bad(bad_field, "vision.temporal_patch_size");
    if (d->spatial_merge_size < 1)
        return bad(bad_field, "vision.spatial_merge_size");
    if (d->out_hidden_size < 1)
        return bad(bad_field, "vision.out_hidden_size");
    if (d->num_full_blocks < 0 || d->num_full_blocks > d->depth ||
        (!lay->windows && d->num_full_blocks != 0))
        return bad(bad_field, "vision.num_full_blocks");
    if (d->window_size < 0 || (!lay->windows && d->window_size != 0) ||
        (lay->windows && d->num_full_blocks < d->depth && window_tokens(d) < 1))
        return bad(bad_field, "vision.window_size");
    if (d->num_deepstack_mergers < 0 || d->num_deepstack_mergers > d->depth ||
        (!lay->deepstack && d->num_deepstack_mergers != 0))
        return bad(bad_field, "vision.num_deepstack_mergers");
    if (d->num_position_embeddings < 0 ||
        (!lay->deepstack && d->num_position_embeddings != 0))
        return bad(bad_field, "vision.num_position_embeddings");
    return MFU_OK;
}

/* sum of squared window extents along one axis of n merged tokens cut in
 * windows of ws: floor(n/ws) full windows and one of the rest (an empty
 * padded window, when ws divides n, holds nothing and vanishes). */
static double window_extents_sq(int64_t n, int64_t ws)
{
    const double whole = (double)(n / ws), rest = (double)(n % ws);
    return whole * (double)ws * (double)ws + rest * rest;
}

/* Weights a token meets in each stage: matmul weights, or all parameters. */
typedef struct vision_stages {
    double patch, block, merger, deepstack_merger;
} vision_stages;

static vision_stages stage_weights(const mfu_vision_dims *d,
                                   const vision_layout *lay, int matmul_only)
{
    const double dd = (double)d->hidden_size, inter = (double)d->intermediate_size;
    const double m = (double)d->spatial_merge_size;
    const double dm = dd * m * m;
    const double out = (double)d->out_hidden_size;
    const double norm = lay->layernorm ? 2.0 * dd : dd;
    vision_stages s;

    s.patch = dd * (double)d->in_channels * (double)d->temporal_patch_size *
              (double)d->patch_size * (double)d->patch_size;
    /* qkv D -> 3D, proj D -> D, MLP */
    s.block = 4.0 * dd * dd + (lay->swiglu ? 3.0 : 2.0) * dd * inter;
    s.merger = s.deepstack_merger = dm * dm + dm * out;
    if (matmul_only)
        return s;
    s.patch += lay->patch_bias ? dd : 0.0;
    s.block += 3.0 * dd + dd + (lay->swiglu ? 2.0 * inter : inter) + dd +
               2.0 * norm;
    s.merger += dm + out + norm;
    s.deepstack_merger += dm + out + (lay->layernorm ? 2.0 * dm : dm);
    return s;
}

/* (query, key) pairs of one grid: full blocks, windowed blocks. */
static void grid_pairs(const mfu_vision_dims *d, const mfu_vision_grid *g,
                       int windows, double *full, double *windowed)
{
    const double frame = (double)g->h * (double)g->w;
    const int64_t m = d->spatial_merge_size;
    *full = (double)g->t * frame * frame;
    *windowed = 0.0;
    if (windows && window_tokens(d) >= 1) {
        const int64_t ws = window_tokens(d);
        const double m4 = (double)m * (double)m * (double)m * (double)m;
        *windowed = (double)g->t * m4 * window_extents_sq(g->h / m, ws) *
                    window_extents_sq(g->w / m, ws);
    }
}

static double tower_params(const mfu_vision_dims *d, const vision_layout *lay)
{
    const vision_stages p = stage_weights(d, lay, 0);
    return p.patch + (double)d->depth * p.block + p.merger +
           (double)d->num_deepstack_mergers * p.deepstack_merger +
           (double)d->num_position_embeddings * (double)d->hidden_size;
}

mfu_status mfu_vision_flops_compute(const mfu_vision_input *input,
                                    int matmul_only, int with_attention,
                                    mfu_vision_flops *out,
                                    const char **bad_field)
{
    const mfu_vision_dims *d = input != NULL ? &input->dims : NULL;
    mfu_status st = mfu_vision_validate(d, bad_field);
    const vision_layout *lay;
    mfu_vision_flops r = {0};
    vision_stages w;
    double patches = 0.0, full = 0.0, windowed = 0.0, attn, windowed_blocks;

    if (st != MFU_OK)
        return st;
    if (out == NULL || (input->num_grids > 0 && input->grids == NULL))
        return bad(bad_field, "image_grid_thw");
    if (d->kind == MFU_VISION_NONE) {
        *out = r;
        return MFU_OK;
    }
    if (mfu_vision_is_tiled(d->kind))
        return mfu_vision_tiles_compute(input, matmul_only, with_attention, out, bad_field);
    lay = layout_of(d->kind);
    for (size_t i = 0; i < input->num_grids; i++) {
        const mfu_vision_grid *g = &input->grids[i];
        double f, wi;
        if (g->t < 1 || g->h < 1 || g->w < 1 ||
            g->h % d->spatial_merge_size != 0 ||
            g->w % d->spatial_merge_size != 0)
            return bad(bad_field, "image_grid_thw");
        grid_pairs(d, g, lay->windows, &f, &wi);
        patches += (double)g->t * (double)g->h * (double)g->w;
        full += f;
        windowed += wi;
    }
    w = stage_weights(d, lay, matmul_only);
    windowed_blocks = lay->windows ? (double)(d->depth - d->num_full_blocks) : 0.0;
    /* QK^T + AV over all heads: 2 * 2D per pair; bidirectional */
    attn = with_attention ? 4.0 * (double)d->hidden_size *
                                ((double)d->depth - windowed_blocks) * full +
                                4.0 * (double)d->hidden_size * windowed_blocks * windowed
                          : 0.0;
    {
        const double merged = patches / ((double)d->spatial_merge_size *
                                          (double)d->spatial_merge_size);
        const double patch_fwd = 2.0 * patches * w.patch;
        r.blocks_forward = 2.0 * patches * (double)d->depth * w.block + attn;
        r.forward_flops = patch_fwd + r.blocks_forward +
                          2.0 * merged * (w.merger + (double)d->num_deepstack_mergers *
                                                         w.deepstack_merger);
        /* the pixels need no gradient: the patch embed costs forward +
         * weight gradient; everything after it 3x */
        r.model_flops = 2.0 * patch_fwd + 3.0 * (r.forward_flops - patch_fwd);
        r.image_tokens = merged; /* one token per merged patch */
    }
    r.attention_flops = attn;
    r.num_params = tower_params(d, lay);
    r.num_embedding_params = (double)d->num_position_embeddings * (double)d->hidden_size;
    r.num_patches = patches;
    *out = r;
    return MFU_OK;
}
