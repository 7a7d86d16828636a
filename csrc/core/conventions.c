/* conventions.c -- other frameworks' MFU formulas as presets (see
 * conventions.h). Each row cites the source file and commit whose formula it
 * reproduces, transcribed by hand; tests/test_conventions.py recomputes each
 * framework's own formula from the same files on three families or more. */
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

/* choice order: formula, embedding, lm_head, router, mtp, causal, windows, tower */
static const mfu_convention conventions[] = {
    /* this package's default: transformer_flops() with no option given */
    {.name = "mfu_tracker", .source = "mfu_tracker (csrc/core/transformer.h)",
     .covers = "every family of _C.transformer_families()",
     .choice = {1, EMB_EXCLUDED, 1, 1, 1, MFU_CAUSAL_FULL, WIN_SPAN, 1}},
    /* verl/utils/flops_counter.py @ b178a3cd56f58b2d502255daba591e92833930a7:
     * dense_N = matmul weights (q, k, v, o; gate, up, down; router d*E;
     * active + shared experts; MLA's lora projections) + emd_and_lm_head_N
     * = 2*V*d; 6 * dense_N * tokens; attention 6 * sum(s^2) * head_dim * H
     * per layer (half of PaLM's 12); gemma3_text / gpt_oss windows
     * s * min(s, w) at the same 6; no MTP; qwen2_5_vl through the text
     * formula (no tower) */
    {.name = "verl", .source = "verl/utils/flops_counter.py @ b178a3c",
     .covers = "llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, deepseek_v3, gemma3_text, "
               "gpt_oss, qwen2_5_vl (text), qwen3_vl",
     .choice = {2, EMB_COUNTED, 1, 1, 0, MFU_CAUSAL_HALF, WIN_HALF_SPAN, 0}},
    /* veomni/utils/count_flops.py @ d9774494f5d8042321386c65c9406e732a271501:
     * base_N = matmul weights + lm_head_N (V*d; "nn.Embedding is a table
     * lookup"); 6 * base_N * tokens; attention 12 * sum(s^2) * head_dim * H
     * (full); gpt_oss sliding layers 12 * (sum over queries of
     * min(pos+1, w)) * head_dim * H; vision towers by its own ViT
     * estimates (not reproduced: ours is counted) */
    {.name = "veomni", .source = "veomni/utils/count_flops.py @ d977449",
     .covers = "llama, qwen2, qwen3, qwen3_moe, gpt_oss, seed_oss, qwen2_vl, qwen2_5_vl, "
               "qwen3_vl, deepseek_v3",
     .choice = {2, EMB_EXCLUDED, 1, 1, 0, MFU_CAUSAL_FULL, WIN_KEPT, 1}},
    /* megatron/training/training.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553,
     * num_floating_point_operations / transformer_flops: 3 * 2 * tokens *
     * (MLP, routed + shared experts, qkv and out projections, logits
     * d * V * (1 + MTP)) -- no router, no embedding -- + core attention
     * 3 * 2 * sum(s^2) * kv_channels * H / 2 * 2 (causal half), no windows;
     * MTP layers as decoder layers + eh_proj */
    {.name = "megatron", .source = "megatron/training/training.py @ d98e8a6",
     .covers = "GPT-style dense and MoE decoders (GQA, MLA, SwiGLU)",
     .choice = {2, EMB_EXCLUDED, 1, 0, 1, MFU_CAUSAL_HALF, WIN_SQUARE, 0}},
    /* torchtitan/models/utils.py @ b5bcd76c66d0acb1a08b176d9639425bc55e0b2a,
     * get_dense_model_nparams_and_flops / get_moe_model_nparams_and_flops:
     * 6 * (parameters - embedding; tied: all parameters, the shared one
     * once; MoE: router + shared + routed experts * top_k / E) + 6 * L * H
     * * (d_qk + d_v) * seq_len (full, every full-attention layer, windows
     * ignored); the vision encoder left out ("TODO") */
    {.name = "torchtitan", .source = "torchtitan/models/utils.py @ b5bcd76",
     .covers = "llama3, qwen3 (dense and MoE), deepseek_v3, gpt_oss",
     .choice = {1, EMB_EXCLUDED, 1, 1, 0, MFU_CAUSAL_FULL, WIN_SQUARE, 0}},
    /* model.py @ 3adf61e154c3fe3fca428ad6bc3818b27a3b8291, GPT.estimate_mfu:
     * N = get_num_params() (every parameter once, the position table wpe
     * not), flops_per_token = 6 * N + 12 * L * H * Q * T */
    {.name = "nanogpt", .source = "nanoGPT model.py @ 3adf61e",
     .covers = "GPT (nanoGPT); the rule applies to any dense decoder",
     .choice = {1, EMB_ONCE, 1, 1, 0, MFU_CAUSAL_FULL, WIN_SQUARE, 0}},
};

size_t mfu_convention_count(void)
{
    return sizeof conventions / sizeof conventions[0];
}

const mfu_convention *mfu_convention_at(size_t index)
{
    return index < mfu_convention_count() ? &conventions[index] : NULL;
}

const mfu_convention *mfu_convention_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < mfu_convention_count(); i++)
        if (strcmp(conventions[i].name, name) == 0)
            return &conventions[i];
    return NULL;
}

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

/* The count under one set of choices. */
static mfu_status evaluate(const mfu_transformer_dims *d, const mfu_batch *batch,
                           const mfu_vision_input *vision, const int *c,
                           mfu_convention_flops *r, const char **bf)
{
    const double table = (double)d->vocab_size * (double)d->hidden_size;
    const double emb = c[MFU_CHOICE_EMBEDDING] == EMB_COUNTED ? table
                       : c[MFU_CHOICE_EMBEDDING] == EMB_ONCE && !d->tie_word_embeddings ? table
                                                                                         : 0.0;
    double w2t, attn, tokens, extra;
    mfu_vision_flops v = {0};
    mfu_status st;
    if ((st = weights_forward(d, batch, c, &w2t, bf)) != MFU_OK)
        return st;
    if (mfu_batch_tokens(batch, &tokens) != MFU_OK || attention_forward(d, batch, c, &attn) != MFU_OK)
        return bad(bf, "seq_lens");
    if (c[MFU_CHOICE_TOWER] && vision != NULL && vision->dims.kind != MFU_VISION_NONE &&
        (st = mfu_vision_flops_compute(vision, c[MFU_CHOICE_FORMULA] == MFU_FORMULA_MATMUL,
                                       c[MFU_CHOICE_FORMULA] != MFU_FORMULA_6N, &v, bf)) != MFU_OK)
        return st;
    extra = 2.0 * (emb - router_weights(d, c)) * tokens;
    r->forward_flops = w2t + extra + attn + v.forward_flops;
    r->model_flops = 3.0 * (w2t + extra) +
                     (1.0 + MFU_ATTENTION_MODEL_BACKWARD) * attn + v.model_flops;
    r->attention_flops = attn + v.attention_flops;
    r->vision_flops = v.model_flops;
    return MFU_OK;
}

mfu_status mfu_convention_compute(const mfu_transformer_dims *dims, const mfu_batch *batch,
                                  const mfu_vision_input *vision,
                                  const int choice[MFU_CONVENTION_CHOICES],
                                  mfu_convention_flops *out, const char **bad_field)
{
    int state[MFU_CONVENTION_CHOICES];
    mfu_convention_flops theirs = {0}, step = {0};
    mfu_status st;
    if (dims == NULL || batch == NULL || choice == NULL || out == NULL)
        return bad(bad_field, dims == NULL ? "dims" : "convention");
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++)
        if (mfu_convention_value_name(i, choice[i]) == NULL)
            return bad(bad_field, choice_names[i]);
    if (dims->num_linear_layers > 0 || dims->num_ssm_layers > 0)
        return bad(bad_field, dims->num_linear_layers > 0 ? "num_linear_layers"
                                                          : "num_ssm_layers");
    memcpy(state, conventions[0].choice, sizeof state);
    if ((st = evaluate(dims, batch, vision, state, &step, bad_field)) != MFU_OK)
        return st;
    theirs.ours_model_flops = step.model_flops;
    for (int i = 0; i < MFU_CONVENTION_CHOICES; i++) {
        const double before = step.model_flops;
        state[i] = choice[i];
        if ((st = evaluate(dims, batch, vision, state, &step, bad_field)) != MFU_OK)
            return st;
        theirs.delta[i] = step.model_flops - before;
    }
    theirs.model_flops = step.model_flops;
    theirs.forward_flops = step.forward_flops;
    theirs.attention_flops = step.attention_flops;
    theirs.vision_flops = step.vision_flops;
    *out = theirs;
    return MFU_OK;
}
