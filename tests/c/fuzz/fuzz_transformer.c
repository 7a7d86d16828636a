/*
 * fuzz_transformer.c -- the analytic path: mfu_transformer_validate(),
 * mfu_transformer_flops_compute() with and without a vision tower, the
 * span and chunking sums (spans.h) and mfu_vision_validate() on fuzzed dims,
 * options, sequence lengths and grids (what the Python layer builds from a
 * user's config and a batch's cu_seqlens, position_ids, attention mask and
 * image_grid_thw).
 *
 * Input: mode u8; then every int64 dims field of `int_fields` below in
 * order (fi_i64; in plausible mode a small value instead, see plausible(),
 * which reads mlp_act_params last),
 * every flag of `flag_fields` (a u8: raw (byte % 4) - 1, plausible byte & 1),
 * the enums attention, mlp, norm, qk_norm (fi_i32); the options formula,
 * causal, recompute (fi_i32), include_lm_head, include_embedding (u8 flags),
 * lora_rank (fi_i64), lora_targets (fi_i32); with mode bit 2 the vision
 * dims (kind fi_i32, then every int64 of `vision_fields`) and a grid count
 * u8 % 5 with t, h, w (fi_i64 each); then a sequence count u8 % 65 and the
 * lengths (fi_i64); last, the hybrid fields (family_mla.h, family_hybrid.h:
 * every int64 of `hybrid_int_fields`, every flag of `hybrid_flag_fields`,
 * then linear_kind, ssm_kind as fi_i32), read in raw mode only when bytes
 * remain, so inputs without them read as before. Mode bit 0 keeps the dims
 * plausible (small positive sizes, a consistent layer partition; the hybrid
 * block is then one pick byte switching on KDA, Mamba-1, SSM beside
 * attention, short-conv layers, MLP-only / mixer-only layers, latent experts
 * and the hybrid flags) so the compute path is reached often; bit 1 reads
 * the first two lengths as (batch, seq_len) of a uniform batch.
 *
 * With mode bit 2 the vision dims also hold the tiled towers' fields
 * (vision_tiles.h: image_size .. vision_output_dim, then the flags keep_cls,
 * use_head, projector_bias, image_newline as u8); plausible kinds cover all
 * six towers. After a count: every convention preset (with its catch-all
 * rule's quirks) and a fuzzed choice vector with fuzzed quirks
 * (mfu_convention_compute), and a context-parallel split (degree u8 % 4 + 1,
 * rank, mode).
 *
 * Properties:
 *  - validate returns OK or INVALID_ARGUMENT, and on INVALID names a field
 *    (a non-empty string); compute agrees with validate on the dims;
 *  - spans: OK iff the batch is valid; pairs finite, >= 0; half <= full;
 *    sliding and chunked <= the full span; chunking counts >= 0; every
 *    span equal (to 1e-12) to spans.h's closed forms summed in doubles, as
 *    spans.c computed them before it called the pairs rule (pairs.h): the
 *    analytic numbers did not move;
 *  - compute on OK: every figure finite and >= 0, forward >= attention +
 *    scans, model >= forward, hardware >= model, active params <= params,
 *    language + vision = model; the same call twice gives the same numbers;
 *    NULL batch / out refused;
 *  - conventions: OK or INVALID naming a field; on OK finite figures, ours
 *    + the itemized deltas = the convention's count, and the "mfu_tracker"
 *    row = the count itself under the default options;
 *  - context parallelism: OK or INVALID naming a field; Ulysses = the
 *    count without a tower / degree; ring under "half": the ranks add up to
 *    it;
 *  - generation (the lengths as prompts, each generating 1 + u8 tokens): OK
 *    or INVALID naming a field; on OK finite figures >= 0, the token and
 *    forward counts, attention inside the FLOPs, decode the same under both
 *    causal conventions, the same numbers twice.
 */
#include <math.h>
#include <stddef.h>

#include "context_parallel.h"
#include "conventions.h"
#include "generation.h"
#include "family_hybrid.h"
#include "fuzz_input.h"
#include "spans.h"
#include "transformer.h"
#include "vision.h"

#define OFF(f) offsetof(mfu_transformer_dims, f)

/* The int64 dims fields, in input order. */
static const size_t int_fields[] = {
    OFF(hidden_size), OFF(num_layers), OFF(vocab_size), OFF(num_heads),
    OFF(num_kv_heads), OFF(head_dim), OFF(q_lora_rank), OFF(kv_lora_rank),
    OFF(qk_nope_head_dim), OFF(qk_rope_head_dim), OFF(v_head_dim),
    OFF(intermediate_size), OFF(norms_per_layer), OFF(num_experts),
    OFF(experts_per_token), OFF(moe_intermediate_size),
    OFF(shared_expert_intermediate_size), OFF(num_dense_layers),
    OFF(num_positions), OFF(sliding_window), OFF(num_sliding_layers),
    OFF(attention_chunk_size), OFF(num_chunked_layers), OFF(num_linear_layers),
    OFF(linear_num_key_heads), OFF(linear_key_head_dim),
    OFF(linear_num_value_heads), OFF(linear_value_head_dim),
    OFF(linear_conv_kernel), OFF(linear_chunk_size), OFF(num_ssm_layers),
    OFF(ssm_num_heads), OFF(ssm_head_dim), OFF(ssm_state_size),
    OFF(ssm_num_groups), OFF(ssm_conv_kernel), OFF(ssm_chunk_size),
    OFF(num_mtp_layers), OFF(mlp_act_params),
};

static const size_t flag_fields[] = {
    OFF(qkv_bias), OFF(attention_out_bias), OFF(attention_gate),
    OFF(attention_sinks), OFF(mlp_bias), OFF(shared_expert_gate),
    OFF(router_bias), OFF(tie_word_embeddings), OFF(ssm_conv_bias),
    OFF(ssm_proj_bias), OFF(attention_gate_proj), OFF(lm_head_bias),
    OFF(bidirectional),
};

/* The hybrid fields, read after the lengths. */
static const size_t hybrid_int_fields[] = {
    OFF(ssm_intermediate_size), OFF(ssm_dt_rank), OFF(num_short_conv_layers),
    OFF(short_conv_kernel), OFF(num_mlp_only_layers), OFF(num_mixer_only_layers),
    OFF(moe_latent_size),
};

static const size_t hybrid_flag_fields[] = {
    OFF(ssm_parallel), OFF(ssm_norm), OFF(ssm_out_proj_bias), OFF(ssm_inner_norms),
    OFF(short_conv_bias), OFF(unbiased_experts),
};

#undef OFF
#define VOFF(f) offsetof(mfu_vision_dims, f)

static const size_t vision_fields[] = {
    VOFF(depth), VOFF(hidden_size), VOFF(intermediate_size), VOFF(num_heads),
    VOFF(in_channels), VOFF(patch_size), VOFF(temporal_patch_size),
    VOFF(spatial_merge_size), VOFF(out_hidden_size), VOFF(window_size),
    VOFF(num_full_blocks), VOFF(num_deepstack_mergers),
    VOFF(num_position_embeddings), VOFF(image_size), VOFF(tokens_per_image),
    VOFF(feature_layers), VOFF(pixel_shuffle_inverse), VOFF(projector_input_dim),
    VOFF(projector_output_dim), VOFF(vision_output_dim), VOFF(unused_layers),
};

#undef VOFF

static int64_t *slot64(void *base, size_t offset)
{
    return (int64_t *)(void *)((char *)base + offset);
}

static int64_t small(fuzz_input *in, int64_t mod)
{
    return 1 + (int64_t)(fi_bytes_le(in, 2) % (uint64_t)mod);
}

/* Coherent small dims: a layer partition that adds up, heads that divide,
 * MoE fields only with experts, windows only with their layers. */
static void plausible(fuzz_input *in, mfu_transformer_dims *d)
{
    const uint8_t shape = fi_u8(in);
    d->hidden_size = 8 * small(in, 64);
    d->num_layers = small(in, 16);
    d->vocab_size = small(in, 4096);
    d->num_heads = 1 << (fi_u8(in) % 4);
    d->num_kv_heads = (shape & 1) ? 1 : 0;
    d->head_dim = (shape & 2) ? small(in, 128) : 0;
    d->hidden_size = d->head_dim ? d->hidden_size : d->num_heads * 8;
    d->attention = (shape & 4) ? MFU_ATTENTION_MLA : MFU_ATTENTION_GQA;
    d->kv_lora_rank = small(in, 64);
    d->q_lora_rank = (shape & 8) ? small(in, 64) : 0;
    d->qk_nope_head_dim = small(in, 64);
    d->qk_rope_head_dim = small(in, 32);
    d->v_head_dim = small(in, 64);
    d->intermediate_size = small(in, 512);
    d->norms_per_layer = (int64_t)(fi_u8(in) % 5);
    if (shape & 16) {
        d->num_experts = small(in, 64);
        d->experts_per_token = small(in, d->num_experts);
        d->moe_intermediate_size = small(in, 256);
        d->shared_expert_intermediate_size = (fi_u8(in) & 1) ? small(in, 256) : 0;
        d->num_dense_layers = (int64_t)(fi_u8(in) % (uint64_t)(d->num_layers + 1));
    }
    if (shape & 32) {
        d->num_linear_layers = (int64_t)(fi_u8(in) % (uint64_t)(d->num_layers + 1));
        d->linear_num_key_heads = small(in, 4);
        d->linear_num_value_heads = d->linear_num_key_heads * small(in, 3);
        d->linear_key_head_dim = small(in, 64);
        d->linear_value_head_dim = small(in, 64);
        d->linear_conv_kernel = small(in, 4);
        d->linear_chunk_size = small(in, 64);
    } else if (shape & 64) {
        d->num_ssm_layers = d->num_layers;
        d->mlp = MFU_MLP_NONE;
        d->intermediate_size = d->num_experts = d->experts_per_token = 0;
        d->moe_intermediate_size = d->shared_expert_intermediate_size = 0;
        d->num_dense_layers = 0;
        d->ssm_num_groups = small(in, 4);
        d->ssm_num_heads = d->ssm_num_groups * small(in, 4);
        d->ssm_head_dim = small(in, 64);
        d->ssm_state_size = small(in, 64);
        d->ssm_conv_kernel = small(in, 4);
        d->ssm_chunk_size = small(in, 256);
    }
    {
        const int64_t attention = d->num_layers - d->num_linear_layers - d->num_ssm_layers;
        d->sliding_window = small(in, 4096);
        d->num_sliding_layers = (int64_t)(fi_u8(in) % (uint64_t)(attention + 1));
        d->attention_chunk_size = small(in, 4096);
        d->num_chunked_layers = (int64_t)(fi_u8(in) %
                                          (uint64_t)(attention - d->num_sliding_layers + 1));
    }
    d->num_mtp_layers = (shape & 128) ? 1 : 0;
    d->mlp_act_params = (int64_t)(fi_u8(in) % 3);
}

static void read_dims(fuzz_input *in, int is_plausible, mfu_transformer_dims *d)
{
    mfu_transformer_dims_init(d);
    if (is_plausible)
        plausible(in, d);
    else
        for (size_t i = 0; i < FI_COUNT(int_fields); i++)
            *slot64(d, int_fields[i]) = fi_i64(in);
    for (size_t i = 0; i < FI_COUNT(flag_fields); i++) {
        const uint8_t b = fi_u8(in);
        int *f = (int *)(void *)((char *)d + flag_fields[i]);
        *f = is_plausible ? (b & 1) : (int)(b % 4) - 1;
    }
    if (is_plausible) {
        d->shared_expert_gate &= d->shared_expert_intermediate_size > 0;
        d->router_bias &= d->num_experts > 0;
        d->attention_gate_proj &= d->attention_gate;
        if (d->bidirectional) /* a bidirectional chunk is refused */
            d->num_chunked_layers = 0;
        return;
    }
    d->attention = (mfu_attention_kind)fi_i32(in);
    d->mlp = (mfu_mlp_kind)fi_i32(in);
    d->norm = (mfu_norm_kind)fi_i32(in);
    d->qk_norm = (mfu_qk_norm_kind)fi_i32(in);
}

static void read_options(fuzz_input *in, int is_plausible, const mfu_transformer_dims *d,
                         mfu_transformer_options *o)
{
    mfu_transformer_options_init(o);
    o->formula = (mfu_flops_formula)(is_plausible ? fi_u8(in) % 3 : fi_i32(in));
    o->causal = (mfu_causal)(is_plausible ? fi_u8(in) % 2 : fi_i32(in));
    o->recompute = (mfu_recompute)(is_plausible ? fi_u8(in) % 3 : fi_i32(in));
    o->include_lm_head = is_plausible ? fi_u8(in) & 1 : (int)(fi_u8(in) % 4) - 1;
    o->include_embedding = is_plausible ? fi_u8(in) & 1 : (int)(fi_u8(in) % 4) - 1;
    o->lora_rank = fi_i64(in);
    o->lora_targets = (unsigned)fi_i32(in);
    if (is_plausible) {
        int lora = o->lora_rank > 0 && d->attention == MFU_ATTENTION_GQA &&
                   d->num_linear_layers == 0 && d->num_ssm_layers == 0;
        o->lora_rank = lora ? 1 + o->lora_rank % 256 : 0;
        o->lora_targets = lora ? 1u + o->lora_targets % MFU_LORA_ALL : 0u;
        if (d->mlp != MFU_MLP_SWIGLU)
            o->lora_targets &= ~(unsigned)MFU_LORA_GATE;
        if (lora && o->lora_targets == 0)
            o->lora_targets = MFU_LORA_Q;
    }
}

/* A tiled tower's coherent fields (plausible mode): tiles of side x side
 * patches, each tower's own projector fields, the Qwen ones zero. */
static int64_t plausible_tiles(fuzz_input *in, mfu_vision_dims *v)
{
    const int64_t side = 2 * small(in, 4);
    const int kind = (int)v->kind;
    v->temporal_patch_size = v->spatial_merge_size = 0;
    v->window_size = v->num_full_blocks = v->num_deepstack_mergers = 0;
    v->num_position_embeddings = 0;
    v->image_size = v->patch_size * side;
    v->tokens_per_image = kind == MFU_VISION_GEMMA3 ? 1 + v->tokens_per_image % (side * side) : 0;
    v->feature_layers = kind == MFU_VISION_LLAVA_CLIP || kind == MFU_VISION_LLAVA_SIGLIP
                            ? 1 + v->feature_layers % v->depth : 0;
    v->unused_layers = kind == MFU_VISION_LLAVA_CLIP || kind == MFU_VISION_LLAVA_SIGLIP
                           ? v->unused_layers % (v->depth + 1) : 0;
    v->pixel_shuffle_inverse = kind == MFU_VISION_LLAMA4 ? 1 + (v->pixel_shuffle_inverse & 1) : 0;
    if (kind != MFU_VISION_LLAMA4)
        v->projector_input_dim = v->projector_output_dim = v->vision_output_dim = 0;
    if (kind != MFU_VISION_LLAVA_CLIP && kind != MFU_VISION_LLAVA_SIGLIP)
        v->keep_cls = v->projector_bias = v->image_newline = 0;
    if (kind == MFU_VISION_LLAVA_CLIP || kind == MFU_VISION_LLAMA4)
        v->use_head = 0;
    return side;
}

static void read_vision(fuzz_input *in, int is_plausible, mfu_vision_input *v,
                        mfu_vision_grid *grids)
{
    int *flags[] = {&v->dims.keep_cls, &v->dims.use_head, &v->dims.projector_bias,
                    &v->dims.image_newline};
    int64_t side = 0;
    mfu_vision_dims_init(&v->dims);
    v->dims.kind = (mfu_vision_kind)(is_plausible ? 1 + fi_u8(in) % 6 : fi_i32(in));
    for (size_t i = 0; i < FI_COUNT(vision_fields); i++)
        *slot64(&v->dims, vision_fields[i]) = is_plausible ? small(in, 64) : fi_i64(in);
    for (size_t i = 0; i < FI_COUNT(flags); i++)
        *flags[i] = is_plausible ? fi_u8(in) & 1 : fi_u8(in) % 4 - 1;
    if (is_plausible) {
        v->dims.num_heads = 1;
        if (v->dims.kind >= MFU_VISION_GEMMA3) {
            side = plausible_tiles(in, &v->dims);
        } else {
            v->dims.image_size = v->dims.tokens_per_image = v->dims.feature_layers = 0;
            v->dims.unused_layers = 0;
            v->dims.pixel_shuffle_inverse = v->dims.projector_input_dim = 0;
            v->dims.projector_output_dim = v->dims.vision_output_dim = 0;
            v->dims.keep_cls = v->dims.use_head = v->dims.projector_bias = 0;
            v->dims.image_newline = 0;
        }
        v->dims.window_size = v->dims.kind == MFU_VISION_QWEN2_5_VL
                                  ? v->dims.window_size * v->dims.spatial_merge_size *
                                        v->dims.patch_size
                                  : 0;
        v->dims.num_full_blocks = v->dims.kind == MFU_VISION_QWEN2_5_VL
                                      ? v->dims.num_full_blocks % (v->dims.depth + 1) : 0;
        v->dims.num_deepstack_mergers = v->dims.kind == MFU_VISION_QWEN3_VL
                                            ? v->dims.num_deepstack_mergers % (v->dims.depth + 1)
                                            : 0;
        v->dims.num_position_embeddings *= v->dims.kind == MFU_VISION_QWEN3_VL;
    }
    v->num_grids = fi_u8(in) % 5;
    for (size_t i = 0; i < v->num_grids; i++) {
        grids[i].t = is_plausible ? small(in, 4) : fi_i64(in);
        grids[i].h = !is_plausible ? fi_i64(in)
                     : side > 0    ? side
                                   : v->dims.spatial_merge_size * small(in, 32);
        grids[i].w = !is_plausible ? fi_i64(in) : side > 0 ? side : grids[i].h;
        if (is_plausible && side == 0)
            grids[i].w = v->dims.spatial_merge_size * small(in, 32);
    }
    v->grids = grids;
}

/* spans.h's closed forms for one sequence of s tokens, in doubles (what
 * spans.c summed before it called pairs.h): full s^2 (half s^2 / 2);
 * sliding w: full s * min(s, w), half w(w + 1)/2 + (s - w) w (s(s + 1)/2 at
 * s <= w); chunked w: full whole * w^2 + rest^2, half whole * w(w + 1)/2 +
 * rest(rest + 1)/2. */
static double closed_span_pairs(int64_t len, mfu_span_kind kind, int64_t window, int half)
{
    const double s = (double)len, w = (double)window;
    const double whole = kind == MFU_SPAN_CHUNKED ? (double)(len / window) : 0.0;
    const double rest = kind == MFU_SPAN_CHUNKED ? (double)(len % window) : 0.0;
    if (kind == MFU_SPAN_SLIDING && half)
        return len <= window ? s * (s + 1.0) / 2.0 : w * (w + 1.0) / 2.0 + (s - w) * w;
    if (kind == MFU_SPAN_SLIDING)
        return s * (len < window ? s : w);
    if (kind == MFU_SPAN_CHUNKED)
        return half ? whole * w * (w + 1.0) / 2.0 + rest * (rest + 1.0) / 2.0
                    : whole * w * w + rest * rest;
    return half ? s * s / 2.0 : s * s;
}

/* mfu_span_pairs(b, kind, window, causal) against the closed forms. */
static void check_closed(const mfu_batch *b, mfu_span_kind kind, int64_t window, int half,
                         double got)
{
    double sum = 0.0;
    for (size_t i = 0; i < b->count; i++)
        sum += closed_span_pairs(b->lengths[i], kind, window, half);
    sum *= (double)b->repeat;
    FUZZ_CHECK(got == sum || fabs(got - sum) <= 1e-12 * fabs(sum));
}

/* Plausible hybrids: mixers and layouts carved from the plausible model. */
static void plausible_hybrid(fuzz_input *in, mfu_transformer_dims *d,
                             mfu_transformer_options *o)
{
    const uint8_t pick = fi_u8(in), flags = fi_u8(in);
    int64_t free_attention;
    if ((pick & 1) && d->num_linear_layers > 0) { /* KDA: one head count and dim */
        d->linear_kind = MFU_LINEAR_KDA;
        d->linear_num_value_heads = d->linear_num_key_heads;
        d->linear_value_head_dim = d->linear_key_head_dim;
    }
    if ((pick & 2) && d->num_ssm_layers > 0) {
        d->ssm_kind = MFU_SSM_MAMBA1;
        d->ssm_intermediate_size = small(in, 256);
        d->ssm_dt_rank = small(in, 16);
    }
    d->ssm_parallel = (pick & 4) && d->num_ssm_layers > 0; /* all layers: attention too */
    free_attention = mfu_attention_layer_count(d) - d->num_sliding_layers -
                     d->num_chunked_layers;
    if ((pick & 8) && free_attention > 0) {
        d->num_short_conv_layers = (int64_t)(fi_u8(in) % (uint64_t)(free_attention + 1));
        d->short_conv_kernel = small(in, 4);
        free_attention -= d->num_short_conv_layers;
    }
    if ((pick & 16) && d->mlp != MFU_MLP_NONE && free_attention > 0) {
        d->num_mlp_only_layers = (int64_t)(fi_u8(in) % (uint64_t)(free_attention + 1));
        d->num_mixer_only_layers =
            (int64_t)(fi_u8(in) % (uint64_t)(d->num_layers - d->num_mlp_only_layers + 1));
        if (d->num_dense_layers > d->num_layers - d->num_mixer_only_layers)
            d->num_dense_layers = d->num_layers - d->num_mixer_only_layers;
    }
    if ((pick & 32) && d->num_experts > 0)
        d->moe_latent_size = small(in, 64);
    d->ssm_norm = flags & 1;
    d->ssm_out_proj_bias = (flags >> 1) & 1;
    d->ssm_inner_norms = (flags >> 2) & 1;
    d->short_conv_bias = (flags >> 3) & 1;
    d->unbiased_experts = (flags >> 4) & 1;
    if (d->num_short_conv_layers > 0 || d->moe_latent_size > 0 || d->ssm_kind != MFU_SSM_MAMBA2) {
        o->lora_rank = 0; /* adapters: GQA and MLP layers only */
        o->lora_targets = 0;
    }
}

static void read_hybrid(fuzz_input *in, int is_plausible, mfu_transformer_dims *d,
                        mfu_transformer_options *o)
{
    if (is_plausible) {
        plausible_hybrid(in, d, o);
        return;
    }
    if (in->pos >= in->size)
        return;
    for (size_t i = 0; i < FI_COUNT(hybrid_int_fields); i++)
        *slot64(d, hybrid_int_fields[i]) = fi_i64(in);
    for (size_t i = 0; i < FI_COUNT(hybrid_flag_fields); i++)
        *(int *)(void *)((char *)d + hybrid_flag_fields[i]) = (int)(fi_u8(in) % 4) - 1;
    d->linear_kind = (mfu_linear_kind)fi_i32(in);
    d->ssm_kind = (mfu_ssm_kind)fi_i32(in);
}

static int le(double a, double b)
{
    return a <= b * (1.0 + 1e-12) + 1.0;
}

/* The span and chunking sums on any batch (bad ones refused). */
static void check_spans(const mfu_batch *b, int batch_ok, int64_t window)
{
    double full_f, full_h, s_f, s_h, c_f, c_h, t;
    mfu_chunking ch;
    mfu_status st = mfu_span_pairs(b, MFU_SPAN_FULL, 0, MFU_CAUSAL_FULL, &full_f);
    FUZZ_CHECK(st == (batch_ok ? MFU_OK : MFU_ERR_INVALID_ARGUMENT));
    FUZZ_CHECK(mfu_batch_tokens(b, &t) == st);
    if (st != MFU_OK || window < 1)
        return;
    FUZZ_CHECK(mfu_span_pairs(b, MFU_SPAN_FULL, 0, MFU_CAUSAL_HALF, &full_h) == MFU_OK);
    check_closed(b, MFU_SPAN_FULL, 0, 0, full_f);
    check_closed(b, MFU_SPAN_FULL, 0, 1, full_h);
    FUZZ_CHECK(mfu_span_pairs(b, MFU_SPAN_SLIDING, window, MFU_CAUSAL_FULL, &s_f) == MFU_OK);
    FUZZ_CHECK(mfu_span_pairs(b, MFU_SPAN_SLIDING, window, MFU_CAUSAL_HALF, &s_h) == MFU_OK);
    FUZZ_CHECK(mfu_span_pairs(b, MFU_SPAN_CHUNKED, window, MFU_CAUSAL_FULL, &c_f) == MFU_OK);
    FUZZ_CHECK(mfu_span_pairs(b, MFU_SPAN_CHUNKED, window, MFU_CAUSAL_HALF, &c_h) == MFU_OK);
    check_closed(b, MFU_SPAN_SLIDING, window, 0, s_f);
    check_closed(b, MFU_SPAN_SLIDING, window, 1, s_h);
    check_closed(b, MFU_SPAN_CHUNKED, window, 0, c_f);
    check_closed(b, MFU_SPAN_CHUNKED, window, 1, c_h);
    /* exact below 2^53; beyond, doubles round: compare with 1e-12 slack */
    FUZZ_CHECK(full_f >= 0.0 && full_h <= full_f && le(s_f, full_f) && le(c_f, full_f));
    FUZZ_CHECK(le(s_h, s_f) && le(c_h, c_f) && le(c_h, s_h));
    FUZZ_CHECK(mfu_batch_chunking(b, window, &ch) == MFU_OK);
    FUZZ_CHECK(ch.chunks >= 0.0 && ch.chunks_sq >= ch.chunks && ch.nonempty >= 0.0);
}

static void check_result(const mfu_transformer_flops *r)
{
    const double v[] = {r->model_flops, r->hardware_flops, r->forward_flops,
                        r->attention_flops, r->scan_flops, r->language_flops,
                        r->vision_flops, r->num_params, r->num_embedding_params,
                        r->num_active_params, r->num_adapter_params, r->num_tokens};
    for (size_t i = 0; i < FI_COUNT(v); i++)
        FUZZ_CHECK(!isnan(v[i]) && v[i] >= 0.0);
    if (!isfinite(r->model_flops) || !isfinite(r->num_params))
        return; /* raw dims near INT64_MAX overflow a double: inf, never NaN */
    FUZZ_CHECK(r->forward_flops >= r->attention_flops + r->scan_flops -
                                       1e-9 * r->forward_flops);
    FUZZ_CHECK(r->model_flops >= r->forward_flops);
    FUZZ_CHECK(r->hardware_flops >= r->model_flops);
    FUZZ_CHECK(r->num_active_params <= r->num_params);
    FUZZ_CHECK(fabs(r->language_flops + r->vision_flops - r->model_flops) <=
               1e-9 * r->model_flops);
}

/* Every preset and one fuzzed choice vector on a batch the count accepted. */
static void check_conventions(fuzz_input *in, const mfu_transformer_dims *d,
                              const mfu_transformer_options *o, const mfu_batch *b,
                              const mfu_vision_input *v, const mfu_transformer_flops *out)
{
    int fuzzed[MFU_CONVENTION_CHOICES];
    /* fuzzed quirk bits (one past the last: refused) and padding multiple */
    const mfu_convention_quirks fuzzed_quirks = {
        .bits = (unsigned)fi_bytes_le(in, 2) & ((1u << (MFU_CONVENTION_QUIRKS + 1)) - 1u),
        .vocab_multiple = (int64_t)fi_u8(in) - 1};
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++)
        fuzzed[i] = fi_u8(in) % 6 - 1;
    for (size_t row = 0; row <= mfu_convention_count(); row++) {
        const mfu_convention *preset = mfu_convention_at(row);
        const int *choice = preset != NULL ? preset->choice : fuzzed;
        const mfu_convention_quirks quirks =
            preset != NULL
                ? (mfu_convention_quirks){mfu_convention_rule_quirks(
                                              mfu_convention_rule_for(preset, NULL)),
                                          128}
                           : fuzzed_quirks;
        mfu_convention_flops c;
        const char *bad = NULL;
        double sum = 0.0;
        const mfu_status st = mfu_convention_compute(d, b, v, choice, &quirks, &c, &bad);
        FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
        if (st != MFU_OK) {
            FUZZ_CHECK(bad != NULL && bad[0] != '\0');
            continue;
        }
        FUZZ_CHECK(!isnan(c.model_flops) && !isnan(c.forward_flops) && c.vision_flops >= 0.0);
        if (!isfinite(c.model_flops) || !isfinite(c.ours_model_flops))
            continue;
        for (int i = 0; i < MFU_CONVENTION_CHOICES; i++)
            sum += c.delta[i];
        for (int q = 0; q < MFU_CONVENTION_QUIRKS; q++)
            sum += c.quirk_delta[q];
        FUZZ_CHECK(fabs(c.ours_model_flops + sum - c.model_flops) <=
                   1e-9 * (fabs(c.model_flops) + fabs(c.ours_model_flops)) + 1.0);
        if (row == 0 && o->formula == MFU_FORMULA_PALM && o->causal == MFU_CAUSAL_FULL &&
            o->include_lm_head && !o->include_embedding && o->lora_rank == 0)
            FUZZ_CHECK(fabs(c.model_flops - out->model_flops) <= 1e-9 * out->model_flops + 1.0);
    }
}

/* A context-parallel split of the batch: Ulysses is an even share; ring
 * under "half" adds up over the ranks. */
static void check_context_parallel(fuzz_input *in, const mfu_transformer_dims *d,
                                   const mfu_transformer_options *o, const mfu_batch *b)
{
    mfu_context_parallel cp = {.degree = 1 + fi_u8(in) % 4, .rank = 0,
                               .mode = (mfu_cp_mode)(fi_u8(in) % 2)};
    mfu_transformer_flops whole, share;
    double sum = 0.0;
    const char *bad = NULL;
    mfu_status st;
    if (mfu_transformer_flops_compute(d, o, b, NULL, &whole, NULL) != MFU_OK ||
        !isfinite(whole.model_flops))
        return;
    for (cp.rank = 0; cp.rank < cp.degree; cp.rank++) {
        st = mfu_context_parallel_flops(d, o, b, &cp, &share, &bad);
        FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
        if (st != MFU_OK) {
            FUZZ_CHECK(bad != NULL && bad[0] != '\0');
            return;
        }
        check_result(&share);
        if (cp.mode == MFU_CP_ULYSSES)
            FUZZ_CHECK(fabs(share.model_flops * (double)cp.degree - whole.model_flops) <=
                       1e-9 * whole.model_flops + 1.0);
        sum += share.model_flops;
    }
    if (cp.mode == MFU_CP_RING && o->causal == MFU_CAUSAL_HALF)
        FUZZ_CHECK(fabs(sum - whole.model_flops) <= 1e-9 * whole.model_flops + 1.0);
}

/* A generation (generation.h) of prompts of 1 + (the batch's lengths % 4096)
 * tokens (1 + a fuzzed u8 tokens generated each), the options without LoRA
 * or recompute (which it refuses): OK or INVALID naming a field; on OK
 * finite figures >= 0, the token and forward counts, attention inside the
 * FLOPs, decode the same under both causal conventions, the same call twice
 * the same numbers. */
static void check_generation(fuzz_input *in, const mfu_transformer_dims *d,
                             const mfu_transformer_options *o, const mfu_batch *b)
{
    static const mfu_generation_spec spec = {MFU_DTYPE_BF16, MFU_DTYPE_FP8,
                                             MFU_MLA_CACHE_LATENT};
    int64_t outputs[64], prompts_of[64];
    mfu_transformer_options go = *o, other;
    mfu_generation_flops g, g2;
    double prompts = 0.0, steps = 0.0, longest = 0.0;
    const char *bad = NULL;
    mfu_status st;
    if (b->repeat != 1 || b->count == 0)
        return;
    go.lora_rank = 0;
    go.lora_targets = 0;
    go.recompute = MFU_RECOMPUTE_NONE;
    other = go;
    for (size_t i = 0; i < b->count; i++) {
        outputs[i] = 1 + (int64_t)fi_u8(in);
        prompts_of[i] = 1 + (b->lengths[i] < 0 ? -(b->lengths[i] + 1) : b->lengths[i]) % 4096;
        prompts += (double)prompts_of[i];
        steps += (double)(outputs[i] - 1);
        longest = fmax(longest, (double)(outputs[i] - 1));
    }
    st = mfu_generation_flops_compute(d, &go, prompts_of, outputs, b->count, &spec, &g, &bad);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
    if (st != MFU_OK) {
        FUZZ_CHECK(bad != NULL && bad[0] != '\0');
        return;
    }
    for (const double *f = &g.prefill_flops; f <= &g.decode_state_bytes; f++)
        FUZZ_CHECK(isfinite(*f) && *f >= 0.0);
    FUZZ_CHECK(g.prefill_tokens == prompts && g.decode_tokens == steps);
    FUZZ_CHECK(g.decode_forwards == longest && g.sequences == (double)b->count);
    FUZZ_CHECK(g.prefill_attention_flops <= g.prefill_flops &&
               g.decode_attention_flops <= g.decode_flops);
    other.causal = go.causal == MFU_CAUSAL_FULL ? MFU_CAUSAL_HALF : MFU_CAUSAL_FULL;
    FUZZ_CHECK(mfu_generation_flops_compute(d, &other, prompts_of, outputs, b->count, &spec,
                                            &g2, &bad) == MFU_OK);
    FUZZ_CHECK(g2.decode_flops == g.decode_flops &&
               g2.decode_kv_read_bytes == g.decode_kv_read_bytes);
    FUZZ_CHECK(mfu_generation_flops_compute(d, &go, prompts_of, outputs, b->count, &spec,
                                            &g2, &bad) == MFU_OK &&
               memcmp(&g, &g2, sizeof g) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    const uint8_t mode = fi_u8(&in);
    const int is_plausible = mode & 1, is_uniform = (mode >> 1) & 1;
    mfu_transformer_dims d;
    mfu_transformer_options o;
    mfu_vision_input v = {.grids = NULL, .num_grids = 0};
    mfu_vision_grid grids[4];
    mfu_transformer_flops out, out2;
    const char *bad = NULL, *bad2 = NULL;
    int64_t lengths[64];
    size_t count;
    int batch_ok = 1;
    mfu_batch b;
    mfu_status vst, cst;

    read_dims(&in, is_plausible, &d);
    read_options(&in, is_plausible, &d, &o);
    mfu_vision_dims_init(&v.dims);
    if (mode & 4)
        read_vision(&in, is_plausible, &v, grids);
    count = fi_u8(&in) % 65;
    for (size_t i = 0; i < count && i < 64; i++)
        lengths[i] = is_plausible ? (int64_t)fi_bytes_le(&in, 2) : fi_i64(&in);
    count = count < 64 ? count : 64;
    read_hybrid(&in, is_plausible, &d, &o);
    b = (mfu_batch){.lengths = lengths, .count = count, .repeat = 1};
    if (is_uniform)
        b = (mfu_batch){.lengths = count > 1 ? &lengths[1] : lengths,
                        .count = count > 1 ? 1 : 0,
                        .repeat = count > 0 ? lengths[0] : 0};
    batch_ok = b.repeat >= 0;
    for (size_t i = 0; i < b.count; i++)
        batch_ok &= b.lengths[i] >= 0;
    check_spans(&b, batch_ok, d.sliding_window);

    vst = mfu_transformer_validate(&d, &o, &bad);
    FUZZ_CHECK(vst == MFU_OK || vst == MFU_ERR_INVALID_ARGUMENT);
    if (vst != MFU_OK)
        FUZZ_CHECK(bad != NULL && bad[0] != '\0');
    bad = NULL;
    cst = mfu_transformer_flops_compute(&d, &o, &b, &v, &out, &bad);
    FUZZ_CHECK(cst == MFU_OK || cst == MFU_ERR_INVALID_ARGUMENT);
    if (vst != MFU_OK || cst != MFU_OK) {
        FUZZ_CHECK(cst == MFU_ERR_INVALID_ARGUMENT && bad != NULL && bad[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(batch_ok && out.num_tokens > 0.0);
    check_result(&out);
    cst = mfu_transformer_flops_compute(&d, &o, &b, &v, &out2, &bad2);
    FUZZ_CHECK(cst == MFU_OK && memcmp(&out, &out2, sizeof out) == 0);
    FUZZ_CHECK(mfu_transformer_flops_compute(&d, &o, &b, &v, NULL, &bad2) ==
               MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(mfu_transformer_flops_compute(&d, &o, NULL, NULL, &out2, NULL) ==
               MFU_ERR_INVALID_ARGUMENT);
    check_conventions(&in, &d, &o, &b, &v, &out);
    check_context_parallel(&in, &d, &o, &b);
    check_generation(&in, &d, &o, &b);
    return 0;
}
