/* family_hybrid.c -- Mamba-1, short convolution, the hybrid fields' checks
 * and layer layouts (see family_hybrid.h). */
#include <stddef.h>

#include "family_hybrid.h"

int64_t mfu_attention_layer_count(const mfu_transformer_dims *d)
{
    return d->num_layers - d->num_mlp_only_layers - d->num_linear_layers -
           d->num_short_conv_layers - (d->ssm_parallel ? 0 : d->num_ssm_layers);
}

/* Mamba-1 as Jamba runs it (Gu & Dao, arXiv:2312.00752; transformers
 * jamba/modeling_jamba.py JambaMambaMixer): in_proj [d -> 2I] (bias:
 * mamba_proj_bias), conv1d depthwise over I channels (bias: mamba_conv_bias),
 * x_proj [I -> R + 2N], dt_proj [R -> I] with bias, A_log [I, N], D (I),
 * out_proj [I -> d] (bias: mamba_proj_bias); Jamba adds dt_layernorm (R),
 * b_layernorm and c_layernorm (N each). */
mfu_tally mfu_mamba1_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size, inner = (double)d->ssm_intermediate_size;
    const double n = (double)d->ssm_state_size, rank = (double)d->ssm_dt_rank;
    mfu_tally r = {0};

    r.matmul = h * 2.0 * inner + inner * (rank + 2.0 * n) + rank * inner + inner * h;
    r.params = r.matmul + inner * (double)d->ssm_conv_kernel + inner /* dt_proj bias */ +
               inner * n + inner;
    if (d->ssm_conv_bias)
        r.params += inner;
    if (d->ssm_proj_bias)
        r.params += 2.0 * inner;
    if (d->ssm_out_proj_bias)
        r.params += h;
    if (d->ssm_inner_norms)
        r.params += rank + 2.0 * n;
    return r;
}

/*
 * The selective scan as transformers' torch fallback runs it
 * (jamba/modeling_jamba.py mamba_selective_scan; the same count for its
 * mambapy and associative-scan paths): the state update is elementwise, the
 * readout one matmul per position, state [I, N] @ C [N, 1]: 2*I*N FLOPs per
 * token. Every operand needs a gradient (the state is built from the inputs
 * from the first position on): model = 3x forward.
 */
mfu_status mfu_mamba1_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                           mfu_scan_flops *out)
{
    double tokens;
    mfu_status st = mfu_batch_tokens(batch, &tokens);
    if (st != MFU_OK)
        return st;
    out->forward = 2.0 * (double)d->ssm_intermediate_size * (double)d->ssm_state_size * tokens;
    out->model = 3.0 * out->forward;
    return MFU_OK;
}

mfu_tally mfu_ssm_mixer_tally(const mfu_transformer_dims *d)
{
    return d->ssm_kind == MFU_SSM_MAMBA1 ? mfu_mamba1_tally(d) : mfu_ssm_tally(d);
}

mfu_status mfu_ssm_mixer_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                              mfu_scan_flops *out)
{
    return d->ssm_kind == MFU_SSM_MAMBA1 ? mfu_mamba1_scan(d, batch, out)
                                         : mfu_ssd_scan(d, batch, out);
}

double mfu_ssm_mixer_conv_channels(const mfu_transformer_dims *d)
{
    return d->ssm_kind == MFU_SSM_MAMBA1 ? (double)d->ssm_intermediate_size
                                         : mfu_ssm_conv_channels(d);
}

/* LFM2 (transformers lfm2/modeling_lfm2.py Lfm2ShortConv): in_proj
 * [d -> 3d] (B, C, x), conv depthwise over d channels of kernel L_cache,
 * out_proj [d -> d]; conv_bias puts biases on all three. The gates B * x and
 * C * y are elementwise. */
mfu_tally mfu_short_conv_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size;
    mfu_tally r = {0};

    r.matmul = h * 3.0 * h + h * h;
    r.params = r.matmul + h * (double)d->short_conv_kernel;
    if (d->short_conv_bias)
        r.params += 3.0 * h + h + h;
    return r;
}

static mfu_status bad(const char **bad_field, const char *field)
{
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}

#define DIM(field) #field, offsetof(mfu_transformer_dims, field)

/* The hybrid int64 fields (all >= 0) and flags (0 / 1). */
static const struct {
    const char *field;
    size_t offset;
} hybrid_ints[] = {
    {DIM(ssm_intermediate_size)}, {DIM(ssm_dt_rank)}, {DIM(num_short_conv_layers)},
    {DIM(short_conv_kernel)}, {DIM(num_mlp_only_layers)}, {DIM(num_mixer_only_layers)},
    {DIM(moe_latent_size)},
}, hybrid_flags[] = {
    {DIM(ssm_parallel)}, {DIM(ssm_norm)}, {DIM(ssm_out_proj_bias)},
    {DIM(ssm_inner_norms)}, {DIM(short_conv_bias)}, {DIM(unbiased_experts)},
};

#undef DIM

static mfu_status check_ranges(const mfu_transformer_dims *d, const char **bf)
{
    const char *base = (const char *)d;
    for (size_t i = 0; i < sizeof hybrid_ints / sizeof hybrid_ints[0]; i++)
        if (*(const int64_t *)(const void *)(base + hybrid_ints[i].offset) < 0)
            return bad(bf, hybrid_ints[i].field);
    for (size_t i = 0; i < sizeof hybrid_flags / sizeof hybrid_flags[0]; i++) {
        const int v = *(const int *)(const void *)(base + hybrid_flags[i].offset);
        if (v != 0 && v != 1)
            return bad(bf, hybrid_flags[i].field);
    }
    if (d->ssm_kind != MFU_SSM_MAMBA2 && d->ssm_kind != MFU_SSM_MAMBA1)
        return bad(bf, "ssm_kind");
    return MFU_OK;
}

mfu_status mfu_hybrid_check(const mfu_transformer_dims *d, const char **bf)
{
    mfu_status st = check_ranges(d, bf);
    if (st != MFU_OK)
        return st;
    /* a layer holds a mixer, an MLP or both; with no MLP at all there are
     * no MLP-only layers */
    if (d->num_mlp_only_layers > d->num_layers ||
        (d->mlp == MFU_MLP_NONE && d->num_mlp_only_layers != 0))
        return bad(bf, "num_mlp_only_layers");
    if (d->num_mixer_only_layers > d->num_layers - d->num_mlp_only_layers)
        return bad(bf, "num_mixer_only_layers");
    if (d->num_short_conv_layers > 0 && d->short_conv_kernel < 1)
        return bad(bf, "short_conv_kernel");
    if (d->num_ssm_layers > 0 && d->ssm_kind == MFU_SSM_MAMBA1) {
        if (d->ssm_intermediate_size < 1)
            return bad(bf, "ssm_intermediate_size");
        if (d->ssm_dt_rank < 1)
            return bad(bf, "ssm_dt_rank");
        if (d->ssm_state_size < 1)
            return bad(bf, "ssm_state_size");
    }
    if (d->moe_latent_size > 0 && d->num_experts == 0)
        return bad(bf, "moe_latent_size");
    return MFU_OK;
}
