/* vision_tiles.c -- fixed-resolution vision towers (see vision_tiles.h for
 * the formulas). Each layout cites the transformers (5.x) modeling file
 * whose modules it describes. */
#include <stddef.h>

#include "vision_tiles.h"

typedef enum tile_projector {
    PROJECTOR_GEMMA3 = 0, /* avg-pool to M tokens, RMSNorm, matmul D -> d */
    PROJECTOR_LLAVA = 1,  /* Linear(D f -> d), GELU, Linear(d -> d) */
    PROJECTOR_LLAMA4 = 2  /* pixel shuffle, fc1, fc2 (adapter), Linear(-> d) */
} tile_projector;

/* How a kind lays out its encoder and projector. */
typedef struct tile_layout {
    mfu_vision_kind kind;
    int cls_token;     /* a CLS token joins the patches (T = N + 1) */
    int patch_bias;    /* the patch embedding has a bias */
    int pre_norm;      /* a LayerNorm before the layers */
    int siglip_head;   /* the attention-pooling head exists (use_head) */
    tile_projector projector;
} tile_layout;

static const tile_layout layouts[] = {
    /* transformers models/siglip/modeling_siglip.py: SiglipVisionEmbeddings
     * (Conv2d with bias, position_embedding of N rows), SiglipEncoderLayer
     * (q/k/v/out_proj and fc1/fc2 with bias, layer_norm1/2), post_layernorm,
     * SiglipMultiheadAttentionPoolingHead when vision_use_head;
     * models/gemma3/modeling_gemma3.py: Gemma3MultiModalProjector (AvgPool2d
     * to mm_tokens_per_image, mm_soft_emb_norm, mm_input_projection_weight) */
    {.kind = MFU_VISION_GEMMA3, .cls_token = 0, .patch_bias = 1, .pre_norm = 0,
     .siglip_head = 1, .projector = PROJECTOR_GEMMA3},
    /* models/clip/modeling_clip.py: CLIPVisionEmbeddings (class_embedding,
     * Conv2d without bias, N + 1 positions), pre_layrnorm, CLIPEncoderLayer,
     * post_layernorm; models/llava/modeling_llava.py:
     * LlavaMultiModalProjector (linear_1, act, linear_2) on the selected
     * hidden state(s), CLS dropped by the "default" strategy */
    {.kind = MFU_VISION_LLAVA_CLIP, .cls_token = 1, .patch_bias = 0, .pre_norm = 1,
     .siglip_head = 0, .projector = PROJECTOR_LLAVA},
    /* SigLIP (above) under LLaVA's projector: llava_onevision's default */
    {.kind = MFU_VISION_LLAVA_SIGLIP, .cls_token = 0, .patch_bias = 1, .pre_norm = 0,
     .siglip_head = 1, .projector = PROJECTOR_LLAVA},
    /* models/llama4/modeling_llama4.py: Llama4UnfoldConvolution (Linear
     * without bias on unfolded pixels), class_embedding,
     * positional_embedding_vlm (N + 1 rows), layernorm_pre / _post,
     * Llama4VisionEncoderLayer (q/k/v/o_proj and fc1/fc2 with bias),
     * Llama4VisionPixelShuffleMLP (Llama4VisionMLP2: fc1, fc2 without bias)
     * on the patches (CLS dropped), Llama4MultiModalProjector (linear_1) */
    {.kind = MFU_VISION_LLAMA4, .cls_token = 1, .patch_bias = 0, .pre_norm = 1,
     .siglip_head = 0, .projector = PROJECTOR_LLAMA4},
};

static const tile_layout *layout_of(mfu_vision_kind kind)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].kind == kind)
            return &layouts[i];
    return NULL;
}

int mfu_vision_is_tiled(mfu_vision_kind kind)
{
    return layout_of(kind) != NULL;
}

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

/* Patches per tile side. */
static int64_t side_of(const mfu_vision_dims *d)
{
    return d->image_size / d->patch_size;
}

static mfu_status check_projector(const mfu_vision_dims *d, const tile_layout *lay,
                                  const char **bf)
{
    const int64_t side = side_of(d);
    if (lay->projector == PROJECTOR_GEMMA3) {
        /* (<= the tile's patches: checked with images, see compute) */
        if (d->tokens_per_image < 1)
            return bad(bf, "vision.tokens_per_image");
    } else if (d->tokens_per_image != 0) {
        return bad(bf, "vision.tokens_per_image");
    }
    if (lay->projector == PROJECTOR_LLAVA) {
        if (d->feature_layers < 1 || d->feature_layers > d->depth + 1)
            return bad(bf, "vision.feature_layers");
        if (d->unused_layers < 0 || d->unused_layers > d->depth)
            return bad(bf, "vision.unused_layers");
    } else if (d->feature_layers > 1 || d->unused_layers != 0 || d->keep_cls ||
               d->projector_bias || d->image_newline) {
        return bad(bf, d->feature_layers > 1 ? "vision.feature_layers"
                       : d->unused_layers  ? "vision.unused_layers"
                       : d->keep_cls      ? "vision.keep_cls"
                       : d->image_newline ? "vision.image_newline"
                                          : "vision.projector_bias");
    }
    if (lay->projector == PROJECTOR_LLAMA4) {
        const int64_t s = d->pixel_shuffle_inverse;
        if (s < 1 || side % s != 0)
            return bad(bf, "vision.pixel_shuffle_inverse");
        if (d->projector_input_dim < 1)
            return bad(bf, "vision.projector_input_dim");
        if (d->projector_output_dim < 1)
            return bad(bf, "vision.projector_output_dim");
        if (d->vision_output_dim < 1)
            return bad(bf, "vision.vision_output_dim");
    } else if (d->pixel_shuffle_inverse != 0 || d->projector_input_dim != 0 ||
               d->projector_output_dim != 0 || d->vision_output_dim != 0) {
        return bad(bf, "vision.pixel_shuffle_inverse");
    }
    return MFU_OK;
}

mfu_status mfu_vision_tiles_validate(const mfu_vision_dims *d, const char **bf)
{
    const tile_layout *lay = d != NULL ? layout_of(d->kind) : NULL;
    if (lay == NULL)
        return bad(bf, "vision.kind");
    if (d->depth < 1)
        return bad(bf, "vision.depth");
    if (d->hidden_size < 1)
        return bad(bf, "vision.hidden_size");
    if (d->intermediate_size < 1)
        return bad(bf, "vision.intermediate_size");
    if (d->num_heads < 1 || d->hidden_size % d->num_heads != 0)
        return bad(bf, "vision.num_heads");
    if (d->in_channels < 1)
        return bad(bf, "vision.in_channels");
    if (d->patch_size < 1)
        return bad(bf, "vision.patch_size");
    if (d->image_size < d->patch_size)
        return bad(bf, "vision.image_size");
    if (d->out_hidden_size < 1)
        return bad(bf, "vision.out_hidden_size");
    if (d->use_head && !lay->siglip_head)
        return bad(bf, "vision.use_head");
    if (d->use_head != 0 && d->use_head != 1)
        return bad(bf, "vision.use_head");
    if (d->keep_cls != 0 && d->keep_cls != 1)
        return bad(bf, "vision.keep_cls");
    if (d->projector_bias != 0 && d->projector_bias != 1)
        return bad(bf, "vision.projector_bias");
    if (d->image_newline != 0 && d->image_newline != 1)
        return bad(bf, "vision.image_newline");
    /* the grid-tower fields belong to the Qwen towers */
    if (d->temporal_patch_size > 1 || d->spatial_merge_size > 1 || d->window_size != 0 ||
        d->num_full_blocks != 0 || d->num_deepstack_mergers != 0 ||
        d->num_position_embeddings != 0)
        return bad(bf, "vision.spatial_merge_size");
    return check_projector(d, lay, bf);
}

/* Weights one token meets in each stage (matmul weights, or every
 * parameter for the 6N / PaLM formulas). */
typedef struct tile_stages {
    double patch, layer, head_query, head_kv, head_tail, projector;
} tile_stages;

static double projector_width(const mfu_vision_dims *d, const tile_layout *lay)
{
    const double dd = (double)d->hidden_size, out = (double)d->out_hidden_size;
    if (lay->projector == PROJECTOR_GEMMA3)
        return dd * out;
    if (lay->projector == PROJECTOR_LLAVA)
        return dd * (double)d->feature_layers * out + out * out;
    return (double)d->intermediate_size * (double)d->projector_input_dim +
           (double)d->projector_output_dim * (double)d->projector_output_dim +
           (double)d->vision_output_dim * out;
}

static tile_stages stage_weights(const mfu_vision_dims *d, const tile_layout *lay,
                                 int matmul_only)
{
    const double dd = (double)d->hidden_size, inter = (double)d->intermediate_size;
    const double out = (double)d->out_hidden_size;
    tile_stages s;
    s.patch = dd * (double)d->in_channels * (double)d->patch_size * (double)d->patch_size;
    s.layer = 4.0 * dd * dd + 2.0 * dd * inter;
    s.head_query = 2.0 * dd * dd;                 /* q and out_proj, one token */
    s.head_kv = 2.0 * dd * dd;                    /* k and v, every patch */
    s.head_tail = 2.0 * dd * inter;               /* the head's MLP, one token */
    s.projector = projector_width(d, lay);
    if (matmul_only)
        return s;
    s.patch += lay->patch_bias ? dd : 0.0;
    s.layer += 4.0 * dd + inter + dd + 4.0 * dd;  /* biases, two LayerNorms */
    s.head_query += 2.0 * dd + dd;                /* q / out biases, probe */
    s.head_kv += 2.0 * dd;
    s.head_tail += inter + dd + 2.0 * dd;         /* MLP biases, LayerNorm */
    if (lay->projector == PROJECTOR_GEMMA3)
        s.projector += dd;                        /* mm_soft_emb_norm */
    else if (lay->projector == PROJECTOR_LLAVA && d->projector_bias)
        s.projector += 2.0 * out;
    return s;
}

/* Tokens entering the projector per tile of N patches. */
static double projector_tokens(const mfu_vision_dims *d, const tile_layout *lay, double n)
{
    const double s = (double)d->pixel_shuffle_inverse;
    if (lay->projector == PROJECTOR_GEMMA3)
        return (double)d->tokens_per_image;
    if (lay->projector == PROJECTOR_LLAVA)
        return n + (lay->cls_token && d->keep_cls ? 1.0 : 0.0);
    return n / (s * s);
}

static double tower_params(const mfu_vision_dims *d, const tile_layout *lay)
{
    const tile_stages p = stage_weights(d, lay, 0);
    const double dd = (double)d->hidden_size, side = (double)side_of(d);
    const double cls = lay->cls_token ? 1.0 : 0.0;
    double total = p.patch + (double)d->depth * p.layer + p.projector +
                   2.0 * dd /* post-norm */ + (lay->pre_norm ? 2.0 * dd : 0.0) +
                   cls * dd /* class embedding */ + (side * side + cls) * dd;
    if (lay->siglip_head && d->use_head)
        total += p.head_query + p.head_kv + p.head_tail;
    if (d->image_newline) /* LLaVA-NeXT's image_newline row: a parameter, no matmul */
        total += (double)d->out_hidden_size;
    return total;
}

mfu_status mfu_vision_tiles_compute(const mfu_vision_input *input, int matmul_only,
                                    int with_attention, mfu_vision_flops *out,
                                    const char **bad_field)
{
    const mfu_vision_dims *d = &input->dims;
    const tile_layout *lay = layout_of(d->kind);
    const int64_t side = side_of(d);
    const double dd = (double)d->hidden_size, n = (double)side * (double)side;
    const double t = n + (lay->cls_token ? 1.0 : 0.0), depth = (double)d->depth;
    const double unused = (double)d->unused_layers;
    const int head = lay->siglip_head && d->use_head;
    mfu_vision_flops r = {0};
    double tiles = 0.0, patch_fwd, head_attn, head_fwd, projector_fwd, layer_fwd, unused_fwd;
    tile_stages w;

    for (size_t i = 0; i < input->num_grids; i++) {
        const mfu_vision_grid *g = &input->grids[i];
        if (g->t < 1 || g->h != side || g->w != side)
            return bad(bad_field, "pixel_values");
        tiles += (double)g->t;
    }
    /* Gemma 3 pools the tile's patches down to tokens_per_image: never up
     * (transformers' class defaults, 224-pixel SigLIP under 256 tokens, run
     * no image) */
    if (tiles > 0.0 && lay->projector == PROJECTOR_GEMMA3 && (double)d->tokens_per_image > n)
        return bad(bad_field, "vision.tokens_per_image");
    w = stage_weights(d, lay, matmul_only);
    patch_fwd = tiles * 2.0 * n * w.patch;
    /* one layer over the tiles; QK^T + AV over all heads: 2 * 2D per
     * (query, key) pair, whole tile */
    layer_fwd = tiles * (2.0 * t * w.layer + (with_attention ? 4.0 * dd * t * t : 0.0));
    unused_fwd = unused * layer_fwd;
    /* a layer no loss reaches is never recomputed either */
    r.blocks_forward = (depth - unused) * layer_fwd;
    /* the pooling head: one probe query over the N patches */
    head_attn = head && with_attention ? tiles * 4.0 * n * dd : 0.0;
    head_fwd = head ? tiles * 2.0 * (w.head_query + n * w.head_kv + w.head_tail) + head_attn
                    : 0.0;
    projector_fwd = tiles * 2.0 * projector_tokens(d, lay, n) * w.projector;
    r.attention_flops = (with_attention ? tiles * depth * 4.0 * dd * t * t : 0.0) + head_attn;
    r.forward_flops = patch_fwd + r.blocks_forward + unused_fwd + head_fwd + projector_fwd;
    /* the pixels need no gradient: the patch embed costs forward + weight
     * gradient; the head and the unused layers forward only (no loss
     * reaches them); everything else 3x */
    r.model_flops = 2.0 * patch_fwd + unused_fwd + head_fwd +
                    3.0 * (r.blocks_forward + projector_fwd);
    r.num_params = tower_params(d, lay);
    r.num_embedding_params = t * dd; /* the position table */
    r.num_patches = tiles * n;
    /* an image's crops (LLaVA-NeXT's image_newline layouts) are unpadded
     * before they become tokens: its base tile's are the ones it surely
     * takes */
    r.image_tokens = (d->image_newline ? (double)input->num_grids : tiles) *
                     projector_tokens(d, lay, n);
    *out = r;
    return MFU_OK;
}
