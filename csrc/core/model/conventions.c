/* conventions.c -- the count under a convention's choices and quirks, and
 * its itemized difference from ours (conventions.h). The presets and their
 * rules, with the frameworks' sources, are in conventions_presets.c; the
 * quirks in conventions_quirks.c. */
#include <string.h>

#include "blocks.h"
#include "conventions.h"
#include "family_hybrid.h"

enum { EMB_EXCLUDED = 0, EMB_COUNTED = 1, EMB_ONCE = 2 };
enum { WIN_SPAN = 0, WIN_SQUARE = 1, WIN_HALF_SPAN = 2, WIN_KEPT = 3 };

static const char *const value_names[MFU_CONVENTION_CHOICES][5] = {
    [MFU_CHOICE_FORMULA] = {"6n", "palm", "matmul", NULL},
    [MFU_CHOICE_EMBEDDING] = {"excluded", "counted", "once", NULL},
    [MFU_CHOICE_LM_HEAD] = {"excluded", "counted", NULL},
    [MFU_CHOICE_ROUTER] = {"excluded", "counted", NULL},
    [MFU_CHOICE_MTP] = {"excluded", "counted", NULL},
    [MFU_CHOICE_CAUSAL] = {"full", "half", NULL},
    [MFU_CHOICE_WINDOWS] = {"span", "square", "half_span", "kept", NULL},
    [MFU_CHOICE_TOWER] = {"excluded", "counted", NULL},
};

static const char *const choice_names[MFU_CONVENTION_CHOICES] = {
    "formula", "embedding", "lm_head", "router", "mtp", "causal", "windows", "tower"};

const char *mfu_convention_choice_name(int choice)
{
    return choice >= 0 && choice < MFU_CONVENTION_CHOICES ? choice_names[choice] : NULL;
}

const char *mfu_convention_value_name(int choice, int value)
{
    if (choice < 0 || choice >= MFU_CONVENTION_CHOICES || value < 0 || value >= 4)
        return NULL;
    return value_names[choice][value];
}

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

/* 2 * W * T: the weights term of the core's forward under the formula and
 * lm_head / MTP choices. */
static mfu_status weights_forward(const mfu_transformer_dims *dims, const mfu_batch *batch,
                                  const int *c, double *out, const char **bf)
{
    mfu_transformer_dims d = *dims;
    mfu_transformer_options o;
    mfu_transformer_flops r;
    mfu_status st;
    mfu_transformer_options_init(&o);
    o.formula = (mfu_flops_formula)c[MFU_CHOICE_FORMULA];
    o.include_lm_head = c[MFU_CHOICE_LM_HEAD];
    if (!c[MFU_CHOICE_MTP])
        d.num_mtp_layers = 0;
    if ((st = mfu_transformer_flops_compute(&d, &o, batch, NULL, &r, bf)) != MFU_OK)
        return st;
    *out = r.forward_flops - r.attention_flops - r.scan_flops;
    return MFU_OK;
}

/* (query, key) pairs of one layer of `kind` under the causal and window
 * choices. */
static mfu_status layer_pairs(const mfu_batch *batch, mfu_span_kind kind, int64_t window,
                              const int *c, double *out)
{
    const mfu_causal causal = (mfu_causal)c[MFU_CHOICE_CAUSAL];
    mfu_status st;
    if (kind == MFU_SPAN_FULL || c[MFU_CHOICE_WINDOWS] == WIN_SQUARE)
        return mfu_span_pairs(batch, MFU_SPAN_FULL, 0, causal, out);
    if (c[MFU_CHOICE_WINDOWS] == WIN_SPAN)
        return mfu_span_pairs(batch, kind, window, causal, out);
    if (c[MFU_CHOICE_WINDOWS] == WIN_KEPT)
        return mfu_span_pairs(batch, kind, window, MFU_CAUSAL_HALF, out);
    st = mfu_span_pairs(batch, kind, window, MFU_CAUSAL_FULL, out); /* half of the span */
    *out *= 0.5;
    return st;
}

/* A: the attention core forward over the attention (and MTP) layers. */
static mfu_status attention_forward(const mfu_transformer_dims *d, const mfu_batch *batch,
                                    const int *c, double *out)
{
    /* the layer partition of transformer.h: the attention layers less the
     * windowed ones (no linear / SSM layers here: refused) */
    const double sliding = (double)d->num_sliding_layers, chunked = (double)d->num_chunked_layers;
    const double full = (double)mfu_attention_layer_count(d) - sliding - chunked +
                        (c[MFU_CHOICE_MTP] ? (double)d->num_mtp_layers : 0.0);
    double f = 0.0, s = 0.0, ch = 0.0;
    mfu_status st;
    *out = 0.0;
    if (c[MFU_CHOICE_FORMULA] == MFU_FORMULA_6N)
        return MFU_OK;
    if ((st = layer_pairs(batch, MFU_SPAN_FULL, 0, c, &f)) != MFU_OK ||
        (sliding > 0.0 &&
         (st = layer_pairs(batch, d->bidirectional ? MFU_SPAN_SLIDING_BIDIRECTIONAL
                                                   : MFU_SPAN_SLIDING,
                           d->sliding_window, c, &s)) != MFU_OK) ||
        (chunked > 0.0 &&
         (st = layer_pairs(batch, MFU_SPAN_CHUNKED, d->attention_chunk_size, c, &ch)) != MFU_OK))
        return st;
    *out = mfu_attention_pair_flops(d) * (full * f + sliding * s + chunked * ch);
    return MFU_OK;
}

/* Router weights per token when the router is excluded (subtracted). */
static double router_weights(const mfu_transformer_dims *d, const int *c)
{
    double layers;
    if (c[MFU_CHOICE_ROUTER] || d->num_experts == 0)
        return 0.0;
    layers = (double)(d->num_layers - d->num_mixer_only_layers - d->num_dense_layers) +
             (c[MFU_CHOICE_MTP] ? (double)d->num_mtp_layers : 0.0);
    return layers * ((double)d->hidden_size * (double)d->num_experts +
                     (d->router_bias && c[MFU_CHOICE_FORMULA] != MFU_FORMULA_MATMUL
                          ? (double)d->num_experts : 0.0));
}

/* The count under one set of choices and quirks. */
static mfu_status evaluate(const mfu_transformer_dims *dims, const mfu_batch *batch,
                           const mfu_vision_input *vision, const int *c,
                           const mfu_convention_quirks *q, mfu_convention_flops *r,
                           const char **bf)
{
    mfu_transformer_dims d, attn_d;
    double table, emb, w2t, attn, tokens, extra;
    mfu_vision_flops v = {0};
    mfu_status st;
    mfu_convention_quirk_dims(dims, q, &d);
    mfu_convention_quirk_attention_dims(&d, q, &attn_d);
    table = (double)d.vocab_size * (double)d.hidden_size;
    emb = c[MFU_CHOICE_EMBEDDING] == EMB_COUNTED                              ? table
          : c[MFU_CHOICE_EMBEDDING] == EMB_ONCE && !d.tie_word_embeddings ? table
                                                                            : 0.0;
    if ((st = weights_forward(&d, batch, c, &w2t, bf)) != MFU_OK)
        return st;
    if (mfu_batch_tokens(batch, &tokens) != MFU_OK ||
        attention_forward(&attn_d, batch, c, &attn) != MFU_OK)
        return bad(bf, "seq_lens");
    if (vision != NULL && vision->dims.kind != MFU_VISION_NONE) {
        /* the framework's ViT estimate stands in for the tower, counted or not */
        if ((q->bits >> MFU_QUIRK_VIT_ESTIMATE) & 1u)
            st = mfu_convention_vit_estimate(vision, &v, bf);
        else if (c[MFU_CHOICE_TOWER])
            st = mfu_vision_flops_compute(vision, c[MFU_CHOICE_FORMULA] == MFU_FORMULA_MATMUL,
                                          c[MFU_CHOICE_FORMULA] != MFU_FORMULA_6N, &v, bf);
        if (st != MFU_OK)
            return st;
    }
    extra = 2.0 * (emb - router_weights(&d, c) +
                   mfu_convention_quirk_weights(&d, q, c[MFU_CHOICE_MTP])) * tokens;
    r->forward_flops = w2t + extra + attn + v.forward_flops;
    r->model_flops = 3.0 * (w2t + extra) +
                     (1.0 + MFU_ATTENTION_MODEL_BACKWARD) * attn + v.model_flops;
    r->attention_flops = attn + v.attention_flops;
    r->vision_flops = v.model_flops;
    return MFU_OK;
}

static mfu_status check_inputs(const mfu_transformer_dims *dims, const int *choice,
                               const mfu_convention_quirks *quirks, const char **bf)
{
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++)
        if (mfu_convention_value_name(i, choice[i]) == NULL)
            return bad(bf, choice_names[i]);
    if (quirks != NULL && ((quirks->bits >> MFU_CONVENTION_QUIRKS) != 0u ||
                           quirks->vocab_multiple < 1))
        return bad(bf, "quirks");
    if (dims->num_linear_layers > 0 || dims->num_ssm_layers > 0)
        return bad(bf, dims->num_linear_layers > 0 ? "num_linear_layers" : "num_ssm_layers");
    return MFU_OK;
}

mfu_status mfu_convention_compute(const mfu_transformer_dims *dims, const mfu_batch *batch,
                                  const mfu_vision_input *vision,
                                  const int choice[MFU_CONVENTION_CHOICES],
                                  const mfu_convention_quirks *quirks,
                                  mfu_convention_flops *out, const char **bad_field)
{
    int state[MFU_CONVENTION_CHOICES];
    mfu_convention_quirks turned = {0u, quirks != NULL ? quirks->vocab_multiple : 1};
    mfu_convention_flops theirs = {0}, step = {0};
    mfu_status st;
    if (dims == NULL || batch == NULL || choice == NULL || out == NULL)
        return bad(bad_field, dims == NULL ? "dims" : "convention");
    if ((st = check_inputs(dims, choice, quirks, bad_field)) != MFU_OK)
        return st;
    memcpy(state, mfu_convention_at(0)->choice, sizeof state);
    if ((st = evaluate(dims, batch, vision, state, &turned, &step, bad_field)) != MFU_OK)
        return st;
    theirs.ours_model_flops = step.model_flops;
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++) {
        const double before = step.model_flops;
        state[i] = choice[i];
        if ((st = evaluate(dims, batch, vision, state, &turned, &step, bad_field)) != MFU_OK)
            return st;
        theirs.delta[i] = step.model_flops - before;
    }
    for (int q = 0; quirks != NULL && q < MFU_CONVENTION_QUIRKS; q++) {
        const double before = step.model_flops;
        if (!((quirks->bits >> q) & 1u))
            continue;
        turned.bits |= 1u << q;
        if ((st = evaluate(dims, batch, vision, state, &turned, &step, bad_field)) != MFU_OK)
            return st;
        theirs.quirk_delta[q] = step.model_flops - before;
    }
    theirs.model_flops = step.model_flops;
    theirs.forward_flops = step.forward_flops;
    theirs.attention_flops = step.attention_flops;
    theirs.vision_flops = step.vision_flops;
    *out = theirs;
    return MFU_OK;
}
