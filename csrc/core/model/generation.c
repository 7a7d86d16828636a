/* generation.c -- the prefill and decode of a generation (see generation.h). */
#include <stdint.h>
#include <stdlib.h>

#include "blocks.h"
#include "family_hybrid.h"
#include "generation.h"
#include "pairs.h"

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

/* What generation counts beyond transformer.h's own checks. */
static mfu_status check(const mfu_transformer_dims *d, const mfu_transformer_options *o,
                        const int64_t *prompt_lens, const int64_t *output_lens,
                        size_t count, const mfu_generation_spec *spec, const char **bf)
{
    if (o->lora_rank > 0)
        return bad(bf, "lora_rank");
    if (o->recompute != MFU_RECOMPUTE_NONE)
        return bad(bf, "activation_recompute");
    if (d->num_ssm_layers > 0)
        return bad(bf, "num_ssm_layers");
    if (d->num_short_conv_layers > 0)
        return bad(bf, "num_short_conv_layers");
    if (d->num_linear_layers > 0 && d->linear_kind != MFU_LINEAR_GATED_DELTANET)
        return bad(bf, "linear_kind");
    if (d->bidirectional)
        return bad(bf, "bidirectional");
    if (count == 0 || prompt_lens == NULL)
        return bad(bf, "prompt_lens");
    if (output_lens == NULL)
        return bad(bf, "output_lens");
    for (size_t i = 0; i < count; i++) {
        if (prompt_lens[i] < 1)
            return bad(bf, "prompt_lens");
        /* the last decode token's position, p + n - 1, fits an int64 */
        if (output_lens[i] < 1 || output_lens[i] > INT64_MAX - prompt_lens[i])
            return bad(bf, "output_lens");
    }
    if (spec == NULL || mfu_dtype_bytes(spec->weight_dtype) <= 0.0)
        return bad(bf, "weight_dtype");
    if (mfu_dtype_bytes(spec->cache_dtype) <= 0.0)
        return bad(bf, "cache_dtype");
    if (spec->mla_cache != MFU_MLA_CACHE_LATENT && spec->mla_cache != MFU_MLA_CACHE_EXPANDED)
        return bad(bf, "mla_cache");
    return MFU_OK;
}

/* The model's per-token and per-forward constants. */
typedef struct gen_model {
    mfu_layer_mix mix;
    double attention_layers;
    double token_flops;   /* 2 * (W + Hd): one decode token's weight FLOPs */
    double head_flops;    /* 2 * Hd */
    double pair_flops;    /* per (query, key) pair and attention layer; 0 for 6N */
    double conv_flops;    /* one decode token's conv1d FLOPs, every linear layer */
    double expand_flops;  /* per re-expanded MLA latent and layer */
    double kv_bytes;      /* one token's K and V in one attention layer */
    double state_bytes;   /* one sequence's recurrent state, every linear layer */
    double dense_bytes;   /* one forward's weights but the routed experts */
    double expert_bytes;  /* one routed expert's weights, every MoE layer */
} gen_model;

/* One token's cached K and V in one attention layer, in elements. */
static double kv_elements(const mfu_transformer_dims *d, mfu_mla_cache layout)
{
    const double heads = (double)d->num_heads;
    if (d->attention == MFU_ATTENTION_MLA)
        return layout == MFU_MLA_CACHE_LATENT
                   ? (double)d->kv_lora_rank + (double)d->qk_rope_head_dim
                   : heads * ((double)d->qk_nope_head_dim + (double)d->qk_rope_head_dim +
                              (double)d->v_head_dim);
    return 2.0 * (double)(d->num_kv_heads > 0 ? d->num_kv_heads : d->num_heads) *
           (d->head_dim > 0 ? (double)d->head_dim : (double)d->hidden_size / heads);
}

static gen_model model_of(const mfu_transformer_dims *d, const mfu_transformer_options *o,
                          const mfu_generation_spec *spec)
{
    const double h = (double)d->hidden_size, heads = (double)d->num_heads;
    const double wb = mfu_dtype_bytes(spec->weight_dtype);
    const double cb = mfu_dtype_bytes(spec->cache_dtype);
    const double n_emb = (double)d->vocab_size * h + (double)d->num_positions * h;
    const double head = o->include_lm_head ? mfu_lm_head_weights(d, o) : 0.0;
    const mfu_transformer_options params = {.formula = MFU_FORMULA_PALM};
    const int mla = d->attention == MFU_ATTENTION_MLA;
    gen_model g;
    mfu_model_tally t;

    g.mix = mfu_layer_mix_of(d);
    t = mfu_model_tally_of(d, o, &g.mix);
    g.attention_layers = g.mix.full + g.mix.sliding + g.mix.chunked;
    g.head_flops = 2.0 * head;
    g.token_flops = 2.0 * (mfu_layer_weights(o, &t) + (o->include_embedding ? n_emb : 0.0)) +
                    g.head_flops;
    g.pair_flops = o->formula == MFU_FORMULA_6N ? 0.0 : mfu_attention_pair_flops(d);
    g.conv_flops = o->formula == MFU_FORMULA_MATMUL
                       ? g.mix.linear * 2.0 * (double)d->linear_conv_kernel *
                             mfu_linear_conv_channels(d) * 2.0
                       : 0.0;
    g.expand_flops = mla && spec->mla_cache == MFU_MLA_CACHE_LATENT &&
                             o->formula != MFU_FORMULA_6N
                         ? 2.0 * (double)d->kv_lora_rank * heads *
                               ((double)d->qk_nope_head_dim + (double)d->v_head_dim)
                         : 0.0;
    g.kv_bytes = g.attention_layers > 0.0 ? cb * kv_elements(d, spec->mla_cache) : 0.0;
    g.state_bytes = cb * g.mix.linear * (double)d->linear_num_value_heads *
                    (double)d->linear_key_head_dim * (double)d->linear_value_head_dim;
    /* parameters, whatever the formula: what a forward reads */
    t = mfu_model_tally_of(d, &params, &g.mix);
    g.expert_bytes = d->num_experts > 0
                         ? wb * g.mix.moe * mfu_moe_expert_tally(d, &params).params
                         : 0.0;
    g.dense_bytes = wb * (t.params_active + mfu_lm_head_weights(d, &params)) -
                    (double)d->experts_per_token * g.expert_bytes;
    return g;
}

/* One forward's weight bytes with `tokens` tokens in it. */
static double forward_weight_bytes(const mfu_transformer_dims *d, const gen_model *g,
                                   double tokens)
{
    double experts = tokens * (double)d->experts_per_token;
    if (experts > (double)d->num_experts)
        experts = (double)d->num_experts;
    return g->dense_bytes + experts * g->expert_bytes;
}

/* The kept pairs of the `decode` queries at the end of `keys` keys under a
 * causal window or chunk: the keys each decode token sees, summed. */
static double window_keys(int64_t decode, int64_t keys, int64_t left, int64_t chunk)
{
    const mfu_attention_mask mask = {.window_left = left, .window_right = 0, .chunk = chunk};
    mfu_pair_count twice;
    if (mfu_attention_pairs(decode, keys, &mask, MFU_CAUSAL_HALF, &twice) != MFU_OK)
        return 0.0; /* valid lengths and mask: the rule does not refuse them */
    return mfu_pair_count_double(twice) / 2.0;
}

/* One sequence's decode: p prompt tokens, n generated. */
static void add_decode(const mfu_transformer_dims *d, const gen_model *g, int64_t p,
                       int64_t n, mfu_generation_flops *r)
{
    const int64_t steps = n - 1;
    const double s = (double)steps;
    /* sum over t = 1 .. steps of (p + t): every earlier key and the token itself */
    const double full = s * (double)p + s * (s + 1.0) / 2.0;
    double keys = g->mix.full * full;
    if (steps == 0)
        return;
    if (g->mix.sliding > 0.0)
        keys += g->mix.sliding * window_keys(steps, p + steps, d->sliding_window - 1, 0);
    if (g->mix.chunked > 0.0)
        keys += g->mix.chunked * window_keys(steps, p + steps, -1, d->attention_chunk_size);
    r->decode_attention_flops += g->pair_flops * keys;
    r->decode_flops += g->token_flops * s + g->pair_flops * keys + g->conv_flops * s +
                       g->expand_flops * g->attention_layers * (full - s);
    r->decode_tokens += s;
    r->decode_kv_read_bytes += g->kv_bytes * keys;
    r->decode_kv_write_bytes += g->kv_bytes * g->attention_layers * s;
    r->decode_state_bytes += 2.0 * g->state_bytes * s;
}

static int by_value(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Lockstep decode: forward f carries the sequences with n_i - 1 >= f. */
static mfu_status decode_weights(const mfu_transformer_dims *d, const gen_model *g,
                                 const int64_t *output_lens, size_t count,
                                 mfu_generation_flops *r)
{
    int64_t *steps = malloc(count * sizeof *steps);
    int64_t done = 0;
    if (steps == NULL)
        return MFU_ERR_NO_MEMORY;
    for (size_t i = 0; i < count; i++)
        steps[i] = output_lens[i] - 1;
    qsort(steps, count, sizeof *steps, by_value);
    for (size_t j = 0; j < count; j++) {
        /* forwards done + 1 .. steps[j] carry the count - j longest */
        r->decode_weight_bytes += (double)(steps[j] - done) *
                                  forward_weight_bytes(d, g, (double)(count - j));
        done = steps[j];
    }
    r->decode_forwards = (double)done;
    free(steps);
    return MFU_OK;
}

/* The prefill: the training count's forward without the lm_head, then one
 * lm_head application per sequence. */
static mfu_status add_prefill(const mfu_transformer_dims *d, const mfu_transformer_options *o,
                              const gen_model *g, const int64_t *prompt_lens, size_t count,
                              mfu_generation_flops *r, const char **bf)
{
    mfu_transformer_options no_head = *o;
    const mfu_batch batch = {.lengths = prompt_lens, .count = count, .repeat = 1};
    mfu_transformer_flops f;
    mfu_status st;
    no_head.include_lm_head = 0;
    if ((st = mfu_transformer_flops_compute(d, &no_head, &batch, NULL, &f, bf)) != MFU_OK)
        return st;
    r->prefill_flops = f.forward_flops + g->head_flops * (double)count;
    r->prefill_attention_flops = f.attention_flops;
    r->prefill_tokens = f.num_tokens;
    r->prefill_weight_bytes = forward_weight_bytes(d, g, f.num_tokens);
    r->prefill_kv_write_bytes = g->kv_bytes * g->attention_layers * f.num_tokens;
    r->prefill_state_bytes = g->state_bytes * (double)count;
    return MFU_OK;
}

mfu_status mfu_generation_flops_compute(const mfu_transformer_dims *dims,
                                        const mfu_transformer_options *options,
                                        const int64_t *prompt_lens,
                                        const int64_t *output_lens, size_t count,
                                        const mfu_generation_spec *spec,
                                        mfu_generation_flops *out, const char **bad_field)
{
    mfu_transformer_dims d;
    mfu_generation_flops r = {0};
    gen_model g;
    mfu_status st;

    if (dims == NULL || options == NULL)
        return bad(bad_field, dims == NULL ? "dims" : "options");
    if (out == NULL)
        return bad(bad_field, "out");
    d = *dims;
    d.num_mtp_layers = 0; /* a training objective: generation never runs them */
    if ((st = mfu_transformer_validate(&d, options, bad_field)) != MFU_OK ||
        (st = check(&d, options, prompt_lens, output_lens, count, spec, bad_field)) != MFU_OK)
        return st;
    g = model_of(&d, options, spec);
    if ((st = add_prefill(&d, options, &g, prompt_lens, count, &r, bad_field)) != MFU_OK)
        return st;
    for (size_t i = 0; i < count; i++)
        add_decode(&d, &g, prompt_lens[i], output_lens[i], &r);
    if ((st = decode_weights(&d, &g, output_lens, count, &r)) != MFU_OK)
        return st;
    r.sequences = (double)count;
    *out = r;
    return MFU_OK;
}
