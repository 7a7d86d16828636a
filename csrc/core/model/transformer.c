/* transformer.c -- the analytic count: validation and assembly of the
 * blocks (blocks.h), spans (spans.h) and vision tower (vision.h). */
#include <math.h>
#include <stddef.h>

#include "blocks.h"
#include "family_hybrid.h"
#include "family_mla.h"
#include "transformer.h"

void mfu_transformer_dims_init(mfu_transformer_dims *dims)
{
    *dims = (mfu_transformer_dims){
        .attention = MFU_ATTENTION_GQA,
        .mlp = MFU_MLP_SWIGLU,
        .norm = MFU_NORM_RMSNORM,
        .qk_norm = MFU_QK_NORM_NONE,
        .norms_per_layer = 2,
        .linear_chunk_size = 64, /* FLA / transformers' chunk_gated_delta_rule */
        .ssm_chunk_size = 256,   /* Mamba2Config's default chunk_size */
        .ssm_norm = 1,           /* Mamba2Mixer.norm (MambaRMSNormGated) */
    };
}

void mfu_transformer_options_init(mfu_transformer_options *options)
{
    *options = (mfu_transformer_options){
        .formula = MFU_FORMULA_PALM,
        .causal = MFU_CAUSAL_FULL,
        .include_lm_head = 1,
        .include_embedding = 0,
        .recompute = MFU_RECOMPUTE_NONE,
        .lora_rank = 0,
        .lora_targets = 0,
    };
}

/* ------------------------------------------------------------------------
 * Validation: ranges and flags from tables, then the cross-field rules
 * ------------------------------------------------------------------------ */

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

#define DIM(field) #field, offsetof(mfu_transformer_dims, field)

/* int64 fields and their lower bounds (cross-field rules come after). */
static const struct {
    const char *field;
    size_t offset;
    int64_t min;
} int_rules[] = {
    {DIM(hidden_size), 1}, {DIM(num_layers), 1}, {DIM(vocab_size), 1},
    {DIM(num_heads), 0}, {DIM(num_kv_heads), 0}, {DIM(head_dim), 0},
    {DIM(q_lora_rank), 0}, {DIM(kv_lora_rank), 0}, {DIM(qk_nope_head_dim), 0},
    {DIM(qk_rope_head_dim), 0}, {DIM(v_head_dim), 0},
    {DIM(intermediate_size), 0}, {DIM(norms_per_layer), 0},
    {DIM(num_experts), 0}, {DIM(experts_per_token), 0},
    {DIM(moe_intermediate_size), 0}, {DIM(shared_expert_intermediate_size), 0},
    {DIM(num_dense_layers), 0}, {DIM(num_positions), 0},
    {DIM(sliding_window), 0}, {DIM(num_sliding_layers), 0},
    {DIM(attention_chunk_size), 0}, {DIM(num_chunked_layers), 0},
    {DIM(num_linear_layers), 0}, {DIM(linear_num_key_heads), 0},
    {DIM(linear_key_head_dim), 0}, {DIM(linear_num_value_heads), 0},
    {DIM(linear_value_head_dim), 0}, {DIM(linear_conv_kernel), 0},
    {DIM(linear_chunk_size), 1}, {DIM(num_ssm_layers), 0},
    {DIM(ssm_num_heads), 0}, {DIM(ssm_head_dim), 0}, {DIM(ssm_state_size), 0},
    {DIM(ssm_num_groups), 0}, {DIM(ssm_conv_kernel), 0},
    {DIM(ssm_chunk_size), 1}, {DIM(num_mtp_layers), 0},
    {DIM(mlp_act_params), 0},
};

/* 0 / 1 fields. */
static const struct {
    const char *field;
    size_t offset;
} flag_rules[] = {
    {DIM(qkv_bias)}, {DIM(attention_out_bias)}, {DIM(attention_gate)},
    {DIM(attention_sinks)}, {DIM(mlp_bias)}, {DIM(shared_expert_gate)},
    {DIM(router_bias)}, {DIM(tie_word_embeddings)}, {DIM(ssm_conv_bias)},
    {DIM(ssm_proj_bias)}, {DIM(unbiased_experts)}, {DIM(attention_gate_proj)},
    {DIM(lm_head_bias)}, {DIM(bidirectional)},
};

#undef DIM

static mfu_status check_tables(const mfu_transformer_dims *d, const char **bf)
{
    const char *base = (const char *)d;
    for (size_t i = 0; i < sizeof int_rules / sizeof int_rules[0]; i++) {
        const int64_t *v = (const int64_t *)(const void *)(base + int_rules[i].offset);
        if (*v < int_rules[i].min)
            return bad(bf, int_rules[i].field);
    }
    for (size_t i = 0; i < sizeof flag_rules / sizeof flag_rules[0]; i++) {
        const int *v = (const int *)(const void *)(base + flag_rules[i].offset);
        if (*v != 0 && *v != 1)
            return bad(bf, flag_rules[i].field);
    }
    if (d->attention != MFU_ATTENTION_GQA && d->attention != MFU_ATTENTION_MLA)
        return bad(bf, "attention");
    if (d->mlp != MFU_MLP_GELU && d->mlp != MFU_MLP_SWIGLU && d->mlp != MFU_MLP_NONE)
        return bad(bf, "mlp");
    if (d->norm != MFU_NORM_RMSNORM && d->norm != MFU_NORM_LAYERNORM &&
        d->norm != MFU_NORM_LAYERNORM_NOBIAS)
        return bad(bf, "norm");
    if (d->qk_norm != MFU_QK_NORM_NONE && d->qk_norm != MFU_QK_NORM_HEAD &&
        d->qk_norm != MFU_QK_NORM_PROJECTION)
        return bad(bf, "qk_norm");
    return MFU_OK;
}

/* Attention layers: the heads (GQA) or the latent ranks (MLA). */
static mfu_status check_attention(const mfu_transformer_dims *d, const char **bf)
{
    const int any = mfu_attention_layer_count(d) > 0 || d->num_mtp_layers > 0;
    if (!any)
        return MFU_OK;
    if (d->num_heads < 1)
        return bad(bf, "num_heads");
    if (d->attention == MFU_ATTENTION_MLA) {
        if (d->kv_lora_rank < 1)
            return bad(bf, "kv_lora_rank");
        if (d->qk_nope_head_dim < 1 && d->qk_rope_head_dim < 1)
            return bad(bf, "qk_nope_head_dim");
        if (d->v_head_dim < 1)
            return bad(bf, "v_head_dim");
        return MFU_OK;
    }
    /* 0 = as many kv heads as query heads (plain multi-head attention) */
    if (d->num_kv_heads > d->num_heads ||
        (d->num_kv_heads > 0 && d->num_heads % d->num_kv_heads != 0))
        return bad(bf, "num_kv_heads");
    /* Without an explicit head_dim the heads must split hidden_size. */
    if (d->head_dim == 0 && d->hidden_size % d->num_heads != 0)
        return bad(bf, "num_heads");
    return MFU_OK;
}

/* The layer partition and each mixer's dims. */
static mfu_status check_layers(const mfu_transformer_dims *d, const char **bf)
{
    const int64_t mixers = d->num_layers - d->num_mlp_only_layers;
    int64_t attention;
    mfu_status st;
    if ((st = mfu_hybrid_check(d, bf)) != MFU_OK)
        return st;
    if (d->num_linear_layers > mixers)
        return bad(bf, "num_linear_layers");
    if (d->num_ssm_layers > mixers - d->num_linear_layers)
        return bad(bf, "num_ssm_layers");
    if (d->num_short_conv_layers >
        mixers - d->num_linear_layers - (d->ssm_parallel ? 0 : d->num_ssm_layers))
        return bad(bf, "num_short_conv_layers");
    attention = mfu_attention_layer_count(d);
    if (d->ssm_parallel && d->num_ssm_layers > attention) /* beside attention */
        return bad(bf, "num_ssm_layers");
    if (d->num_sliding_layers > attention ||
        (d->sliding_window == 0 && d->num_sliding_layers != 0))
        return bad(bf, "num_sliding_layers");
    if (d->num_chunked_layers > attention - d->num_sliding_layers ||
        (d->attention_chunk_size == 0 && d->num_chunked_layers != 0))
        return bad(bf, "num_chunked_layers");
    /* a bidirectional sliding window spans both sides (spans.h); a chunk
     * has no bidirectional span */
    if (d->bidirectional && d->num_chunked_layers > 0)
        return bad(bf, "bidirectional");
    if (d->attention_gate_proj && !d->attention_gate)
        return bad(bf, "attention_gate_proj");
    if (d->num_linear_layers > 0) {
        if (d->linear_num_key_heads < 1 || d->linear_key_head_dim < 1)
            return bad(bf, d->linear_num_key_heads < 1 ? "linear_num_key_heads"
                                                       : "linear_key_head_dim");
        if (d->linear_num_value_heads < 1 ||
            d->linear_num_value_heads % d->linear_num_key_heads != 0)
            return bad(bf, "linear_num_value_heads");
        if (d->linear_value_head_dim < 1)
            return bad(bf, "linear_value_head_dim");
    }
    if ((st = mfu_linear_kind_check(d, bf)) != MFU_OK)
        return st;
    if (d->num_ssm_layers > 0 && d->ssm_kind == MFU_SSM_MAMBA2) {
        if (d->ssm_num_heads < 1 || d->ssm_head_dim < 1 || d->ssm_state_size < 1)
            return bad(bf, d->ssm_num_heads < 1 ? "ssm_num_heads"
                           : d->ssm_head_dim < 1 ? "ssm_head_dim" : "ssm_state_size");
        if (d->ssm_num_groups < 1 || d->ssm_num_heads % d->ssm_num_groups != 0)
            return bad(bf, "ssm_num_groups");
    }
    return MFU_OK;
}

/* Dense and expert MLPs. */
static mfu_status check_mlp(const mfu_transformer_dims *d, const char **bf)
{
    int64_t dense;
    if (d->mlp == MFU_MLP_NONE) {
        if (d->num_experts != 0)
            return bad(bf, "num_experts");
        return d->intermediate_size != 0 ? bad(bf, "intermediate_size") : MFU_OK;
    }
    if (d->num_experts > 0) {
        if (d->experts_per_token < 1 || d->experts_per_token > d->num_experts)
            return bad(bf, "experts_per_token");
        if (d->moe_intermediate_size < 1)
            return bad(bf, "moe_intermediate_size");
        if (d->num_dense_layers > d->num_layers - d->num_mixer_only_layers)
            return bad(bf, "num_dense_layers");
        dense = d->num_dense_layers;
    } else {
        if (d->experts_per_token != 0)
            return bad(bf, "experts_per_token");
        if (d->moe_intermediate_size != 0)
            return bad(bf, "moe_intermediate_size");
        if (d->shared_expert_intermediate_size != 0)
            return bad(bf, "shared_expert_intermediate_size");
        dense = d->num_layers - d->num_mixer_only_layers; /* every MLP layer */
        if (d->num_dense_layers != 0 && d->num_dense_layers != dense)
            return bad(bf, "num_dense_layers");
    }
    if (d->shared_expert_gate && d->shared_expert_intermediate_size == 0)
        return bad(bf, "shared_expert_gate");
    if (d->router_bias && d->num_experts == 0)
        return bad(bf, "router_bias");
    if (dense > 0 ? d->intermediate_size < 1 : 0)
        return bad(bf, "intermediate_size");
    return MFU_OK;
}

static mfu_status check_options(const mfu_transformer_dims *d,
                                const mfu_transformer_options *o, const char **bf)
{
    if (o->formula != MFU_FORMULA_6N && o->formula != MFU_FORMULA_PALM &&
        o->formula != MFU_FORMULA_MATMUL)
        return bad(bf, "formula");
    if (o->causal != MFU_CAUSAL_FULL && o->causal != MFU_CAUSAL_HALF)
        return bad(bf, "causal_attention");
    if ((o->include_lm_head != 0 && o->include_lm_head != 1) ||
        (o->include_embedding != 0 && o->include_embedding != 1))
        return bad(bf, o->include_lm_head != 0 && o->include_lm_head != 1
                           ? "include_lm_head" : "include_embedding");
    if (o->recompute != MFU_RECOMPUTE_NONE && o->recompute != MFU_RECOMPUTE_FULL &&
        o->recompute != MFU_RECOMPUTE_SELECTIVE)
        return bad(bf, "activation_recompute");
    if (o->lora_rank < 0)
        return bad(bf, "lora_rank");
    /* adapters are counted on GQA projections and MLPs only */
    if (o->lora_rank > 0 && (d->attention == MFU_ATTENTION_MLA || d->attention_gate_proj ||
                             d->num_linear_layers > 0 || d->num_ssm_layers > 0 ||
                             d->num_short_conv_layers > 0 || d->moe_latent_size > 0))
        return bad(bf, "lora_rank");
    if ((o->lora_targets & ~(unsigned)MFU_LORA_ALL) != 0 ||
        (o->lora_rank > 0) != (o->lora_targets != 0))
        return bad(bf, "lora_targets");
    if (d->mlp != MFU_MLP_SWIGLU && (o->lora_targets & MFU_LORA_GATE) != 0)
        return bad(bf, "lora_targets");
    return MFU_OK;
}

mfu_status mfu_transformer_validate(const mfu_transformer_dims *dims,
                                    const mfu_transformer_options *options,
                                    const char **bad_field)
{
    mfu_status st;
    if (dims == NULL)
        return bad(bad_field, "dims");
    if (options == NULL)
        return bad(bad_field, "options");
    if ((st = check_tables(dims, bad_field)) != MFU_OK ||
        (st = check_layers(dims, bad_field)) != MFU_OK ||
        (st = check_attention(dims, bad_field)) != MFU_OK ||
        (st = check_mlp(dims, bad_field)) != MFU_OK)
        return st;
    return check_options(dims, options, bad_field);
}

/* ------------------------------------------------------------------------
 * The count
 * ------------------------------------------------------------------------ */

mfu_layer_mix mfu_layer_mix_of(const mfu_transformer_dims *d)
{
    /* layers holding an MLP (all but Nemotron-H's mixer blocks) */
    const double mlp_layers = (double)(d->num_layers - d->num_mixer_only_layers);
    mfu_layer_mix m;
    m.layers = (double)d->num_layers;
    m.linear = (double)d->num_linear_layers;
    m.ssm = (double)d->num_ssm_layers;
    m.conv = (double)d->num_short_conv_layers;
    m.sliding = (double)d->num_sliding_layers;
    m.chunked = (double)d->num_chunked_layers;
    m.full = (double)mfu_attention_layer_count(d) - m.sliding - m.chunked;
    m.dense = d->mlp == MFU_MLP_NONE ? 0.0
              : d->num_experts > 0   ? (double)d->num_dense_layers
                                     : mlp_layers;
    m.moe = d->num_experts > 0 ? mlp_layers - m.dense : 0.0;
    m.mtp = (double)d->num_mtp_layers;
    return m;
}

mfu_model_tally mfu_model_tally_of(const mfu_transformer_dims *d,
                                   const mfu_transformer_options *o, const mfu_layer_mix *m)
{
    const double h = (double)d->hidden_size;
    const mfu_tally att = mfu_attention_tally(d, o);
    const mfu_tally lin = mfu_linear_mixer_tally(d);
    const mfu_tally ssm = mfu_ssm_mixer_tally(d);
    const mfu_tally conv = mfu_short_conv_tally(d);
    const mfu_tally dense = mfu_mlp_tally(d, o, (double)d->intermediate_size);
    const double norm = mfu_norm_params(d, h);
    const double attention_layers = m->full + m->sliding + m->chunked;
    mfu_tally act = {0}, all = {0}, mtp_mlp;
    mfu_model_tally t;

    if (d->num_experts > 0)
        mfu_moe_tally(d, o, &act, &all);
    /* an MTP module (DeepSeek-V3 §2.2): eh_proj [2d -> d], enorm, hnorm,
     * shared_head.norm and one decoder layer (MoE when the model has experts) */
    mtp_mlp = d->num_experts > 0 ? act : dense;
    t.matmul = attention_layers * att.matmul + m->linear * lin.matmul +
               m->ssm * ssm.matmul + m->conv * conv.matmul + m->dense * dense.matmul +
               m->moe * act.matmul +
               m->mtp * (att.matmul + mtp_mlp.matmul + 2.0 * h * h);
    t.params_active = attention_layers * att.params + m->linear * lin.params +
                      m->ssm * ssm.params + m->conv * conv.params +
                      m->dense * (dense.params + (double)d->mlp_act_params) +
                      m->moe * act.params + m->layers * (double)d->norms_per_layer * norm +
                      norm + /* the final norm */
                      m->mtp * (att.params + mtp_mlp.params + 2.0 * h * h +
                                ((double)d->norms_per_layer + 3.0) * norm);
    t.params_all = t.params_active + (m->moe + m->mtp * (d->num_experts > 0)) *
                                         (all.params - act.params);
    t.lora_active = attention_layers * att.lora + m->dense * dense.lora + m->moe * act.lora;
    t.lora_all = attention_layers * att.lora + m->dense * dense.lora + m->moe * all.lora;
    return t;
}

/* Attention core forward over the batch (0 for 6N). */
static mfu_status attention_term(const mfu_transformer_dims *d,
                                 const mfu_transformer_options *o,
                                 const mfu_batch *b, const mfu_layer_mix *m, double *out)
{
    /* bidirectional attention computes every pair: nothing to halve */
    const mfu_causal causal = d->bidirectional ? MFU_CAUSAL_FULL : o->causal;
    double full, sliding = 0.0, chunked = 0.0;
    mfu_status st;
    *out = 0.0;
    if (o->formula == MFU_FORMULA_6N || m->full + m->sliding + m->chunked + m->mtp == 0.0)
        return MFU_OK;
    if ((st = mfu_span_pairs(b, MFU_SPAN_FULL, 0, causal, &full)) != MFU_OK)
        return st;
    if (m->sliding > 0.0 &&
        (st = mfu_span_pairs(b, d->bidirectional ? MFU_SPAN_SLIDING_BIDIRECTIONAL
                                                 : MFU_SPAN_SLIDING,
                             d->sliding_window, o->causal, &sliding)) != MFU_OK)
        return st;
    if (m->chunked > 0.0 &&
        (st = mfu_span_pairs(b, MFU_SPAN_CHUNKED, d->attention_chunk_size,
                             o->causal, &chunked)) != MFU_OK)
        return st;
    *out = mfu_attention_pair_flops(d) *
           ((m->full + m->mtp) * full + m->sliding * sliding + m->chunked * chunked);
    return MFU_OK;
}

/* FLOPs of `layers` depthwise causal conv1d layers of `channels` channels
 * and kernel `kernel` over the batch: 2 * kernel FLOPs per channel and
 * computed position (spans.h); none for a kernel of 0. */
static mfu_status conv_flops(const mfu_batch *b, double layers, int64_t kernel,
                             double channels, double *out)
{
    double pos;
    mfu_status st;
    if (layers == 0.0 || kernel < 1)
        return MFU_OK;
    if ((st = mfu_batch_padded_tokens(b, kernel - 1, &pos)) != MFU_OK)
        return st;
    *out += layers * 2.0 * (double)kernel * channels * pos;
    return MFU_OK;
}

/* The scans (PALM, MATMUL) and the mixers' depthwise convolutions (MATMUL). */
static mfu_status mixer_terms(const mfu_transformer_dims *d,
                              const mfu_transformer_options *o, const mfu_batch *b,
                              const mfu_layer_mix *m, mfu_scan_flops *scan, double *conv)
{
    mfu_scan_flops s = {0.0, 0.0};
    mfu_status st;
    *scan = s;
    *conv = 0.0;
    if (o->formula == MFU_FORMULA_6N)
        return MFU_OK;
    if (m->linear > 0.0) {
        if ((st = mfu_deltanet_scan(d, b, &s)) != MFU_OK) /* KDA's too: family_mla.h */
            return st;
        scan->forward += m->linear * s.forward;
        scan->model += m->linear * s.model;
    }
    if (m->ssm > 0.0) {
        if ((st = mfu_ssm_mixer_scan(d, b, &s)) != MFU_OK)
            return st;
        scan->forward += m->ssm * s.forward;
        scan->model += m->ssm * s.model;
    }
    if (o->formula != MFU_FORMULA_MATMUL)
        return MFU_OK;
    if ((st = conv_flops(b, m->linear, d->linear_conv_kernel, mfu_linear_conv_channels(d),
                         conv)) != MFU_OK ||
        (st = conv_flops(b, m->ssm, d->ssm_conv_kernel, mfu_ssm_mixer_conv_channels(d),
                         conv)) != MFU_OK)
        return st;
    /* LFM2's short convolutions: no scan */
    return conv_flops(b, m->conv, d->short_conv_kernel, (double)d->hidden_size, conv);
}

double mfu_layer_weights(const mfu_transformer_options *o, const mfu_model_tally *t)
{
    return o->formula == MFU_FORMULA_MATMUL ? t->matmul : t->params_active;
}

double mfu_lm_head_weights(const mfu_transformer_dims *d, const mfu_transformer_options *o)
{
    /* [d -> V]; its bias (PhimoeForCausalLM) is a parameter, not a matmul */
    const double bias = d->lm_head_bias ? (double)d->vocab_size : 0.0;
    return (double)d->vocab_size * (double)d->hidden_size +
           (o->formula == MFU_FORMULA_MATMUL ? 0.0 : bias);
}

/* The language model's totals from its parts. */
static void combine(const mfu_transformer_dims *d, const mfu_transformer_options *o,
                    const mfu_layer_mix *m, const mfu_model_tally *t, double tokens,
                    double attn, const mfu_scan_flops *scan, double conv,
                    mfu_transformer_flops *r)
{
    const double h = (double)d->hidden_size, vocab = (double)d->vocab_size;
    const double n_emb = vocab * h + (double)d->num_positions * h;
    const double lm_head = vocab * h; /* [d -> V], once per head application */
    const double lm_bias = d->lm_head_bias ? vocab : 0.0; /* PhimoeForCausalLM */
    const double final_norm = mfu_norm_params(d, h);
    const int matmul = o->formula == MFU_FORMULA_MATMUL;
    const double layers_w = mfu_layer_weights(o, t);
    const double head_w = mfu_lm_head_weights(d, o);
    const double weights = layers_w + (o->include_lm_head ? (1.0 + m->mtp) * head_w : 0.0) +
                           (o->include_embedding ? n_emb : 0.0);
    const double base = o->lora_rank > 0 ? 4.0 : 6.0; /* frozen base: no weight grad */

    r->forward_flops = 2.0 * weights * tokens + 2.0 * t->lora_active * tokens + attn +
                       scan->forward + conv;
    r->model_flops = base * weights * tokens + 6.0 * t->lora_active * tokens +
                     (1.0 + MFU_ATTENTION_MODEL_BACKWARD) * attn + scan->model + 3.0 * conv;
    r->hardware_flops = r->model_flops;
    if (o->recompute == MFU_RECOMPUTE_SELECTIVE)
        r->hardware_flops += attn;
    else if (o->recompute == MFU_RECOMPUTE_FULL)
        /* the decoder layers' forward again (not the final norm, the
         * lm_head or the embedding) */
        r->hardware_flops += 2.0 * (layers_w - (matmul ? 0.0 : final_norm)) * tokens +
                             2.0 * t->lora_active * tokens + attn + scan->forward + conv;
    r->attention_flops = attn;
    r->scan_flops = scan->forward;
    r->language_flops = r->model_flops;
    r->vision_flops = 0.0;
    r->num_params = t->params_all + n_emb + (d->tie_word_embeddings ? 0.0 : lm_head) + lm_bias;
    r->num_embedding_params = n_emb;
    r->num_active_params = t->params_active + n_emb + (d->tie_word_embeddings ? 0.0 : lm_head) +
                           lm_bias;
    r->num_adapter_params = t->lora_all;
    r->num_tokens = tokens;
}

/* The vision tower, added to the language model's totals. */
static mfu_status add_vision(const mfu_transformer_options *o,
                             const mfu_vision_input *vision,
                             mfu_transformer_flops *r, const char **bad_field)
{
    mfu_vision_flops v;
    mfu_status st;
    if (vision == NULL || vision->dims.kind == MFU_VISION_NONE)
        return MFU_OK;
    if (o->lora_rank > 0 && vision->num_grids > 0) /* which tower weights train: unknown */
        return bad(bad_field, "lora_rank");
    st = mfu_vision_flops_compute(vision, o->formula == MFU_FORMULA_MATMUL,
                                  o->formula != MFU_FORMULA_6N, &v, bad_field);
    if (st != MFU_OK)
        return st;
    if (v.image_tokens > r->num_tokens) /* the lengths count every image token */
        return bad(bad_field, "image_tokens");
    r->vision_flops = v.model_flops;
    r->model_flops += v.model_flops;
    r->forward_flops += v.forward_flops;
    r->attention_flops += v.attention_flops;
    r->hardware_flops += v.model_flops;
    if (o->recompute == MFU_RECOMPUTE_SELECTIVE)
        r->hardware_flops += v.attention_flops;
    else if (o->recompute == MFU_RECOMPUTE_FULL)
        r->hardware_flops += v.blocks_forward;
    r->num_params += v.num_params;
    r->num_active_params += v.num_params;
    r->num_embedding_params += v.num_embedding_params;
    return MFU_OK;
}

mfu_status mfu_transformer_flops_compute(const mfu_transformer_dims *dims,
                                         const mfu_transformer_options *options,
                                         const mfu_batch *batch,
                                         const mfu_vision_input *vision,
                                         mfu_transformer_flops *out,
                                         const char **bad_field)
{
    mfu_status st = mfu_transformer_validate(dims, options, bad_field);
    mfu_transformer_flops r = {0};
    mfu_scan_flops scan;
    double tokens = 0.0, attn, conv;
    mfu_layer_mix m;
    mfu_model_tally t;

    if (st != MFU_OK)
        return st;
    if (mfu_batch_tokens(batch, &tokens) != MFU_OK || !(tokens > 0.0))
        return bad(bad_field, "seq_lens");
    if (out == NULL)
        return bad(bad_field, "out");
    m = mfu_layer_mix_of(dims);
    t = mfu_model_tally_of(dims, options, &m);
    if ((st = attention_term(dims, options, batch, &m, &attn)) != MFU_OK ||
        (st = mixer_terms(dims, options, batch, &m, &scan, &conv)) != MFU_OK)
        return bad(bad_field, "seq_lens");
    combine(dims, options, &m, &t, tokens, attn, &scan, conv, &r);
    if ((st = add_vision(options, vision, &r, bad_field)) != MFU_OK)
        return st;
    *out = r;
    return MFU_OK;
}

mfu_status mfu_params_flops(double num_params, double num_tokens, int lora,
                            double *model_flops, double *forward_flops)
{
    /* 6N: forward 2 FLOPs per weight per token, backward 4 (input and
     * weight gradient); a frozen base (LoRA) 2 backward (input only) */
    const double per_token = lora ? 4.0 : 6.0;
    if (!(isfinite(num_params) && num_params > 0.0) ||
        !(isfinite(num_tokens) && num_tokens >= 0.0) || (lora != 0 && lora != 1) ||
        model_flops == NULL || forward_flops == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    *model_flops = per_token * num_params * num_tokens;
    *forward_flops = 2.0 * num_params * num_tokens;
    return MFU_OK;
}
