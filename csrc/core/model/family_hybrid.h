/*
 * family_hybrid.h -- the Mamba and convolution hybrids' blocks beyond
 * blocks.h, and their layer layouts:
 *
 *   Granite 4 (granitemoehybrid)  Mamba-2 or attention + a shared MLP and MoE
 *   Nemotron-H (nemotron_h)       one-norm blocks: Mamba-2, attention, MLP or
 *                                 MoE (num_mlp_only_layers /
 *                                 num_mixer_only_layers), latent experts
 *   Falcon-H1 (falcon_h1)         attention and Mamba-2 side by side in every
 *                                 layer (ssm_parallel)
 *   Jamba (jamba)                 attention or Mamba-1 + dense or MoE MLP
 *   LFM2 (lfm2)                   attention or a gated short convolution
 *
 * Per token, d = hidden_size:
 *   Mamba-1     in_proj d*2I, x_proj I*(R + 2N), dt_proj R*I, out_proj I*d
 *               (I = ssm_intermediate_size, R = ssm_dt_rank, N =
 *               ssm_state_size); conv1d over I channels
 *   short conv  in_proj d*3d, out_proj d*d; conv1d over d channels
 *   latent MoE  fc1_latent_proj d*l, fc2_latent_proj l*d around experts
 *               that run at width l = moe_latent_size
 * The Mamba-2 mixer and the latent experts are blocks.h's (the MoE tally
 * counts them).
 */
#ifndef MFU_FAMILY_HYBRID_H
#define MFU_FAMILY_HYBRID_H

#include "blocks.h"

/* Attention layers: L - num_mlp_only_layers - num_linear_layers
 * - num_short_conv_layers - (ssm_parallel ? 0 : num_ssm_layers). */
int64_t mfu_attention_layer_count(const mfu_transformer_dims *d);

/* A Mamba-1 mixer's projections, conv, dt bias, A_log, D (and Jamba's
 * inner norms). */
mfu_tally mfu_mamba1_tally(const mfu_transformer_dims *d);

/* The Mamba-1 selective scan's matmuls over the batch. */
mfu_status mfu_mamba1_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                           mfu_scan_flops *out);

/* The SSM layer of d->ssm_kind: its tally, scan and conv1d channels. */
mfu_tally mfu_ssm_mixer_tally(const mfu_transformer_dims *d);
mfu_status mfu_ssm_mixer_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                              mfu_scan_flops *out);
double mfu_ssm_mixer_conv_channels(const mfu_transformer_dims *d);

/* An LFM2 short-convolution mixer (conv1d over hidden_size channels). */
mfu_tally mfu_short_conv_tally(const mfu_transformer_dims *d);

/* The hybrid fields: kinds, flags, sizes, the Mamba-1 / short-conv dims of
 * layers that exist and the MLP-only / mixer-only layout (the partition
 * itself is transformer.c's). On error *bad_field names the field. */
mfu_status mfu_hybrid_check(const mfu_transformer_dims *d, const char **bad_field);

#endif /* MFU_FAMILY_HYBRID_H */
