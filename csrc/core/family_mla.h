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
 */
#ifndef MFU_FAMILY_MLA_H
#define MFU_FAMILY_MLA_H

#include "blocks.h"

/* A KDA layer's projections, conv weights, dt_bias, A_log and o_norm. */
mfu_tally mfu_kda_tally(const mfu_transformer_dims *d);

/* The chunked KDA scan over the batch (forward and model matmul FLOPs). */
mfu_status mfu_kda_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                        mfu_scan_flops *out);

/* The linear-attention layer of d->linear_kind: its tally and scan. */
mfu_tally mfu_linear_mixer_tally(const mfu_transformer_dims *d);
mfu_status mfu_linear_mixer_scan(const mfu_transformer_dims *d,
                                 const mfu_batch *batch, mfu_scan_flops *out);

/* linear_kind and, for KDA layers, equal key / value heads and dims; on
 * error *bad_field names the field (INVALID_ARGUMENT). */
mfu_status mfu_linear_kind_check(const mfu_transformer_dims *d,
                                 const char **bad_field);

#endif /* MFU_FAMILY_MLA_H */
