/* family_mla.c -- Kimi delta attention's projections and the linear-mixer
 * dispatch (see family_mla.h; its scan is the gated DeltaNet's). */
#include "family_mla.h"

/* Kimi Linear (transformers kimi_linear/modeling_kimi_linear.py,
 * KimiLinearDeltaAttention): q_proj, k_proj, v_proj [d -> H*D];
 * conv1d depthwise over 3*H*D channels, no bias; KimiLinearForgetGate
 * f_a_proj [d -> D], f_b_proj [D -> H*D], dt_bias (H*D), A_log (H);
 * b_proj [d -> H]; g_a_proj [d -> D], g_b_proj [D -> H*D];
 * o_norm KimiLinearRMSNormGated(D); o_proj [H*D -> d]. No biases. */
mfu_tally mfu_kda_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size, heads = (double)d->linear_num_key_heads;
    const double dim = (double)d->linear_key_head_dim, hd = heads * dim;
    mfu_tally r = {0};

    r.matmul = 3.0 * h * hd + 2.0 * (h * dim + dim * hd) + h * heads + hd * h;
    r.params = r.matmul + 3.0 * hd * (double)d->linear_conv_kernel + hd + heads + dim;
    return r;
}

mfu_tally mfu_linear_mixer_tally(const mfu_transformer_dims *d)
{
    return d->linear_kind == MFU_LINEAR_KDA ? mfu_kda_tally(d)
                                            : mfu_linear_attention_tally(d);
}

mfu_status mfu_linear_kind_check(const mfu_transformer_dims *d,
                                 const char **bad_field)
{
    const char *field = NULL;
    if (d->linear_kind != MFU_LINEAR_GATED_DELTANET && d->linear_kind != MFU_LINEAR_KDA)
        field = "linear_kind";
    else if (d->linear_kind == MFU_LINEAR_KDA && d->num_linear_layers > 0) {
        /* one head count and one head dim for q, k and v */
        if (d->linear_num_value_heads != d->linear_num_key_heads)
            field = "linear_num_value_heads";
        else if (d->linear_value_head_dim != d->linear_key_head_dim)
            field = "linear_value_head_dim";
    }
    if (field == NULL)
        return MFU_OK;
    if (bad_field != NULL)
        *bad_field = field;
    return MFU_ERR_INVALID_ARGUMENT;
}
