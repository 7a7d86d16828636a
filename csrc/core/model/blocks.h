/*
 * blocks.h -- the blocks of a decoder layer, each by its parameters and
 * the matmul weights one token meets (2 FLOPs each forward), and the
 * chunked scans of the linear-attention and SSM mixers. Sources are beside
 * each formula in blocks.c; transformer.c sums them over the layers.
 *
 * Per token, d = hidden_size, Q = head_dim, H / H_kv = heads:
 *   GQA attention   q d*H*Q (x2 with an output gate), k, v d*H_kv*Q each,
 *                   o H*Q*d
 *   MLA attention   q_a d*r_q + q_b r_q*H*d_qk (or q d*H*d_qk), kv_a
 *                   d*(r_kv + d_rope), kv_b r_kv*H*(d_nope + d_v), o H*d_v*d
 *   MLP             m*d*I (m = 3 SwiGLU, 2 GELU: any two-matrix MLP)
 *   MoE (active)    router d*E + k experts m*d*I_moe + shared m*d*I_shared
 *                   (+ d for its gate)
 *   gated DeltaNet  in_proj_qkvz d*(2*K + 2*Vd), in_proj_ba d*2*H_v,
 *                   out_proj Vd*d (K = H_k*d_k, Vd = H_v*d_v); conv1d over
 *                   2*K + Vd channels (counted by position, spans.h)
 *   Mamba-2         in_proj d*(2*I + 2*G*N + H_s), out_proj I*d
 *                   (I = H_s*P); conv1d over I + 2*G*N channels
 *
 * Attention core per (query, key) pair: 2*H*(d_qk + d_v) FLOPs (QK^T and
 * AV over all query heads; GQA broadcasts the kv heads).
 */
#ifndef MFU_BLOCKS_H
#define MFU_BLOCKS_H

#include "spans.h"
#include "transformer.h"

/* A block: matmul weights per token, every parameter, LoRA adapters. */
typedef struct mfu_tally {
    double matmul;
    double params;
    double lora;
} mfu_tally;

/* Parameters of one norm of `width` of the model's norm kind. */
double mfu_norm_params(const mfu_transformer_dims *d, double width);

/* The attention projections of one attention layer (GQA or MLA), with their
 * biases, q/k norms, sinks and LoRA adapters (not the layer norms). */
mfu_tally mfu_attention_tally(const mfu_transformer_dims *d,
                              const mfu_transformer_options *o);

/* FLOPs of the attention core per (query, key) pair: 2*H*(d_qk + d_v). */
double mfu_attention_pair_flops(const mfu_transformer_dims *d);

/* An MLP of width `width` of the model's kind (0 for mlp "none"). */
mfu_tally mfu_mlp_tally(const mfu_transformer_dims *d,
                        const mfu_transformer_options *o, double width);

/* A MoE layer: router + experts (+ shared expert and its gate); `active`
 * with k experts, `all` with every expert. */
void mfu_moe_tally(const mfu_transformer_dims *d,
                   const mfu_transformer_options *o, mfu_tally *active,
                   mfu_tally *all);

/* With moe_latent_size l > 0: one expert at width l (no biases, as
 * NemotronHExperts), and the two latent projections of a MoE layer
 * (Nemotron-H's fc1 / fc2_latent_proj). */
mfu_tally mfu_latent_expert_tally(const mfu_transformer_dims *d);
mfu_tally mfu_latent_projection_tally(const mfu_transformer_dims *d);

/* One routed expert of a MoE layer (at width moe_latent_size when it is
 * set). */
mfu_tally mfu_moe_expert_tally(const mfu_transformer_dims *d,
                               const mfu_transformer_options *o);

/* A gated DeltaNet layer's projections, conv weights, norm, dt / A. */
mfu_tally mfu_linear_attention_tally(const mfu_transformer_dims *d);

/* A Mamba-2 mixer's projections, conv, norm and dt / A / D. */
mfu_tally mfu_ssm_tally(const mfu_transformer_dims *d);

/* Channels of each mixer's depthwise conv1d (2*K + Vd; I + 2*G*N). */
double mfu_linear_conv_channels(const mfu_transformer_dims *d);
double mfu_ssm_conv_channels(const mfu_transformer_dims *d);

/* One layer's chunked scan over the batch: forward matmul FLOPs and the
 * model FLOPs (forward + the backward its grad-requiring inputs need). */
typedef struct mfu_scan_flops {
    double forward;
    double model;
} mfu_scan_flops;

mfu_status mfu_deltanet_scan(const mfu_transformer_dims *d,
                             const mfu_batch *batch, mfu_scan_flops *out);
mfu_status mfu_ssd_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                        mfu_scan_flops *out);

#endif /* MFU_BLOCKS_H */
