/*
 * family_mla.h -- the MLA family's blocks beyond blocks.h: Kimi Linear's
 * Kimi delta attention (KDA) layers, and the dispatch of a model's linear-
 * attention layers to their kind (gated DeltaNet, blocks.h, or KDA).
 *
 * DeepSeek-V2 and GLM-4.7-Flash (glm4_moe_lite) need no block of their own:
 * their attention is blocks.h's MLA (DeepseekV2Attention = DeepseekV3Attention
 * less the RoPE layout) and their MLP the DeepSeek MoE; the family table
 * (families.c) and the config reader choose them.
 *
 * KDA per token, d = hidden_size, H heads of D (linear_num_key_heads =
 * linear_num_value_heads = H, linear_key_head_dim = linear_value_head_dim = D):
 *   q_proj, k_proj, v_proj    3 * d*H*D
 *   forget gate f_a, f_b      d*D + D*H*D
 *   b_proj                    d*H
 *   output gate g_a, g_b      d*D + D*H*D
 *   o_proj                    H*D*d
 * and a depthwise conv1d over 3*H*D channels (spans.h counts its positions).
 *
 * The chunked KDA scan as transformers' torch fallback runs it
 * (kimi_linear/modeling_kimi_linear.py chunk_kimi_delta_attention, chunk
 * C = linear_chunk_size = 64, each sequence padded to whole chunks; FLA's
 * chunk_kda uses the same chunk), per head and chunk:
 *   attn @ v_beta, attn @ (k_beta * exp(g))     2*C^2*D + 2*C^2*D
 *   (q * exp(g)) @ S, k_cumdecay @ S            2 * 2*C*D^2
 *   attn_intra @ v_new                          2*C^2*D
 *   (k * decay)^T @ v_new (state update)        2*C*D^2
 * = 6C^2 D + 6C D^2; the model saves the first chunk's two reads of the
 * zero state and the last chunk's state update's backward, as the gated
 * DeltaNet's scan (blocks.h) with d_k = d_v = D: mfu_deltanet_scan counts a
 * KDA layer too (less the gated DeltaNet's triangular solves' backward). NB: unlike the gated DeltaNet,
 * the key-key and query-key products inside a chunk are per-channel decayed
 * elementwise sums (the decay is per channel), not matmuls: neither this
 * count nor the counter sees them; nor the in-place row recurrence that
 * inverts the intra-chunk system.
 */
#ifndef MFU_FAMILY_MLA_H
#define MFU_FAMILY_MLA_H

#include "blocks.h"

/* A KDA layer's projections, conv weights, dt_bias, A_log and o_norm. */
mfu_tally mfu_kda_tally(const mfu_transformer_dims *d);

/* The linear-attention layer of d->linear_kind: its tally (the scan of
 * either kind is mfu_deltanet_scan's, above). */
mfu_tally mfu_linear_mixer_tally(const mfu_transformer_dims *d);

/* linear_kind and, for KDA layers, equal key / value heads and dims; on
 * error *bad_field names the field (INVALID_ARGUMENT). */
mfu_status mfu_linear_kind_check(const mfu_transformer_dims *d,
                                 const char **bad_field);

#endif /* MFU_FAMILY_MLA_H */
