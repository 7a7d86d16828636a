/* conventions_quirks.c -- what each quirk of a framework's formula does to
 * the count (conventions.h). The rules that turn them on, with the lines
 * of the frameworks' sources, are in conventions_presets.c. */
#include <stdint.h>

#include "conventions.h"
#include "family_hybrid.h"

static const char *const quirk_names[MFU_CONVENTION_QUIRKS] = {
    [MFU_QUIRK_NO_SHARED_EXPERT] = "no_shared_expert",
    [MFU_QUIRK_NO_SHARED_GATE] = "no_shared_expert_gate",
    [MFU_QUIRK_ALL_MOE] = "every_layer_moe",
    [MFU_QUIRK_HIDDEN_HEAD_DIM] = "head_dim_from_hidden",
    [MFU_QUIRK_QK_NORM_WEIGHTS] = "qk_norm_weights",
    [MFU_QUIRK_AV_AT_QK_DIM] = "mla_av_at_qk_dim",
    [MFU_QUIRK_LORA_NORMS] = "mla_lora_norms",
    [MFU_QUIRK_MTP_NORMS] = "mtp_norms",
    [MFU_QUIRK_PADDED_VOCAB] = "padded_vocab",
    [MFU_QUIRK_QUICK_GEGLU] = "quick_geglu",
    [MFU_QUIRK_VIT_ESTIMATE] = "vit_estimate",
};

static const char *const quirk_texts[MFU_CONVENTION_QUIRKS] = {
    [MFU_QUIRK_NO_SHARED_EXPERT] = "leaves out the shared expert (and its gate)",
    [MFU_QUIRK_NO_SHARED_GATE] = "leaves out the shared expert's gate",
    [MFU_QUIRK_ALL_MOE] = "counts every layer as an MoE layer (its dense layers too)",
    [MFU_QUIRK_HIDDEN_HEAD_DIM] = "takes head_dim = hidden_size / num_heads, not the "
                                  "config's head_dim",
    [MFU_QUIRK_QK_NORM_WEIGHTS] = "counts d + kv_heads x head_dim of q/k norm weights per "
                                  "layer as matmul weights",
    [MFU_QUIRK_AV_AT_QK_DIM] = "charges MLA's attention x value at the query head dim, not "
                               "v_head_dim",
    [MFU_QUIRK_LORA_NORMS] = "counts MLA's q / kv LoRA norms as matmul weights (+1 per LoRA "
                             "rank)",
    [MFU_QUIRK_MTP_NORMS] = "counts each MTP layer's three norms as matmul weights (3d)",
    [MFU_QUIRK_PADDED_VOCAB] = "counts the logits over the padded vocabulary",
    [MFU_QUIRK_QUICK_GEGLU] = "counts 2 MLP matrices under --quick-geglu, not the 3 it runs",
    [MFU_QUIRK_VIT_ESTIMATE] = "estimates the vision tower by its own ViT formula (6 x the "
                               "weights, mergers included, per patch)",
};

const char *mfu_convention_quirk_name(int quirk)
{
    return quirk >= 0 && quirk < MFU_CONVENTION_QUIRKS ? quirk_names[quirk] : NULL;
}

const char *mfu_convention_quirk_text(int quirk)
{
    return quirk >= 0 && quirk < MFU_CONVENTION_QUIRKS ? quirk_texts[quirk] : NULL;
}

static int on(const mfu_convention_quirks *q, int quirk)
{
    return q != NULL && (q->bits >> quirk) & 1u;
}

void mfu_convention_quirk_dims(const mfu_transformer_dims *dims,
                               const mfu_convention_quirks *quirks,
                               mfu_transformer_dims *out)
{
    *out = *dims;
    if (on(quirks, MFU_QUIRK_NO_SHARED_EXPERT))
        out->shared_expert_intermediate_size = 0;
    if (on(quirks, MFU_QUIRK_NO_SHARED_EXPERT) || on(quirks, MFU_QUIRK_NO_SHARED_GATE))
        out->shared_expert_gate = 0;
    if (on(quirks, MFU_QUIRK_ALL_MOE) && out->num_experts > 0)
        out->num_dense_layers = 0;
    /* integer division, as `hidden_size // num_attention_heads` */
    if (on(quirks, MFU_QUIRK_HIDDEN_HEAD_DIM) && out->attention == MFU_ATTENTION_GQA &&
        out->num_heads > 0 && out->hidden_size >= out->num_heads)
        out->head_dim = out->hidden_size / out->num_heads;
    /* a vocab the validator refuses (<= 0, or past INT64_MAX padded) stays */
    if (on(quirks, MFU_QUIRK_PADDED_VOCAB) && quirks->vocab_multiple > 1 &&
        out->vocab_size > 0 && out->vocab_size <= INT64_MAX - quirks->vocab_multiple &&
        out->vocab_size % quirks->vocab_multiple != 0)
        out->vocab_size += quirks->vocab_multiple - out->vocab_size % quirks->vocab_multiple;
    if (on(quirks, MFU_QUIRK_QUICK_GEGLU) && out->mlp == MFU_MLP_SWIGLU)
        out->mlp = MFU_MLP_GELU;
}

double mfu_convention_quirk_weights(const mfu_transformer_dims *dims,
                                    const mfu_convention_quirks *quirks, int mtp)
{
    const double h = (double)dims->hidden_size;
    const double mtp_layers = mtp ? (double)dims->num_mtp_layers : 0.0;
    double w = 0.0;
    if (on(quirks, MFU_QUIRK_QK_NORM_WEIGHTS) && dims->attention == MFU_ATTENTION_GQA) {
        const int64_t heads = dims->num_heads > 0 ? dims->num_heads : 1;
        const double q = (double)(dims->head_dim > 0 ? dims->head_dim : dims->hidden_size / heads);
        const double kv = (double)(dims->num_kv_heads > 0 ? dims->num_kv_heads : heads);
        w += (double)dims->num_layers * (h + kv * q); /* verl: * num_hidden_layers */
    }
    if (on(quirks, MFU_QUIRK_LORA_NORMS) && dims->attention == MFU_ATTENTION_MLA)
        w += ((double)mfu_attention_layer_count(dims) + mtp_layers) *
             (double)(dims->q_lora_rank + dims->kv_lora_rank);
    if (on(quirks, MFU_QUIRK_MTP_NORMS))
        w += mtp_layers * 3.0 * h;
    return w;
}

void mfu_convention_quirk_attention_dims(const mfu_transformer_dims *dims,
                                         const mfu_convention_quirks *quirks,
                                         mfu_transformer_dims *out)
{
    *out = *dims;
    if (on(quirks, MFU_QUIRK_AV_AT_QK_DIM) && out->attention == MFU_ATTENTION_MLA)
        out->v_head_dim = out->qk_nope_head_dim + out->qk_rope_head_dim;
}
