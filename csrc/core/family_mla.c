/* family_mla.c -- Kimi delta attention and the linear-mixer dispatch (see
 * family_mla.h). */
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

/*
 * The chunked KDA scan as transformers' torch fallback runs it
 * (kimi_linear/modeling_kimi_linear.py chunk_kimi_delta_attention, chunk
 * C = linear_chunk_size = 64, each sequence padded to whole chunks; FLA's
 * chunk_kda uses the same chunk). Per head, per chunk, with D_k = D_v = D:
 *   attn @ v_beta, attn @ (k_beta * exp(g))     2*C^2*D_v + 2*C^2*D_k
 *   (q * exp(g)) @ S, k_cumdecay @ S            2 * 2*C*D_k*D_v
 *   attn_intra @ v_new                          2*C^2*D_v
 *   (k * decay)^T @ v_new (state update)        2*C*D_k*D_v
 * forward = chunks * (2C^2 D_k + 4C^2 D_v + 6C D_k D_v). Model: 3x, less
 * the first chunk's two reads of the zero initial state (no gradient to it):
 * - 2 * 2*C*D_k*D_v per sequence. NB: unlike the gated DeltaNet, the
 * key-key and query-key products inside a chunk are per-channel decayed
 * elementwise sums (the decay is per channel), not matmuls: neither this
 * count nor the counter sees them; nor the in-place row recurrence that
 * inverts the intra-chunk system.
 */
mfu_status mfu_kda_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                        mfu_scan_flops *out)
{
    const double c = (double)d->linear_chunk_size, dk = (double)d->linear_key_head_dim;
    const double dv = (double)d->linear_value_head_dim;
    const double heads = (double)d->linear_num_value_heads;
    mfu_chunking ch;
    mfu_status st = mfu_batch_chunking(batch, d->linear_chunk_size, &ch);
    if (st != MFU_OK)
        return st;
    out->forward = heads * ch.chunks *
                   (2.0 * c * c * dk + 4.0 * c * c * dv + 6.0 * c * dk * dv);
    out->model = 3.0 * out->forward - heads * ch.nonempty * 4.0 * c * dk * dv;
    return MFU_OK;
}

mfu_tally mfu_linear_mixer_tally(const mfu_transformer_dims *d)
{
    return d->linear_kind == MFU_LINEAR_KDA ? mfu_kda_tally(d)
                                            : mfu_linear_attention_tally(d);
}

mfu_status mfu_linear_mixer_scan(const mfu_transformer_dims *d,
                                 const mfu_batch *batch, mfu_scan_flops *out)
{
    return d->linear_kind == MFU_LINEAR_KDA ? mfu_kda_scan(d, batch, out)
                                            : mfu_deltanet_scan(d, batch, out);
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
