/*
 * generation.h -- the analytic FLOPs and bytes of generating text with a KV
 * cache: one prefill forward over the prompts, then one decode forward per
 * generated token after the first (transformers' generate(), vLLM, SGLang).
 * Generation runs no backward: its model FLOPs are its forward FLOPs.
 *
 * Sequence i has a prompt of p_i >= 1 tokens and generates n_i >= 1 tokens.
 * The prefill computes the p_i prompt tokens and the logits of the last one
 * only (transformers' generate() passes logits_to_keep = 1; vLLM's
 * num_logits_tokens counts one per prefill request), which give token 1.
 * Decode step t = 1 .. n_i - 1 feeds token t back at position p_i + t - 1:
 * one query against keys(p_i + t) cached keys -- all of them on a full
 * layer, the last min(p_i + t, w) on a sliding window of w, the query's
 * chunk so far on a chunked layer (pairs.h's kept pairs of the decode
 * queries). One query has nothing to halve: decode counts the same under
 * both causal conventions; the prefill counts as transformer.h counts a
 * forward (spans.h), less the lm_head of every prompt token but the last.
 *
 * FLOPs, the formula's view (transformer.h); W the layer weights a token
 * meets, Hd one lm_head application, A the pair FLOPs of an attention layer:
 *   prefill = forward(prompts, no lm_head) + 2*Hd per sequence
 *   decode  = per decode token 2*(W + Hd) + A * its keys, summed over the
 *             attention layers
 *           + MATMUL: each gated-DeltaNet layer's depthwise conv1d over 2
 *             positions per decode token (transformers' causal_conv1d_update
 *             convolves the k cached inputs and the new one unpadded:
 *             (k + 1) - k + 1 outputs, the first discarded)
 *           + MLA with a latent cache (not 6N): kv_b_proj again over the
 *             keys - 1 cached latents per decode token and layer
 *             (transformers' DeepseekV3Attention caches the latent and
 *             expands every key each forward, expand_kv)
 *   The recurrent gated-DeltaNet step (transformers'
 *   torch_recurrent_gated_delta_rule) is elementwise: 0 matmul FLOPs.
 *   MTP layers never run in generation (transformers builds none): not
 *   counted.
 *
 * Bytes, vLLM's convention (vllm/v1/metrics/perf.py @ 00cee63: weights read
 * once per forward, every routed expert that some token of the forward
 * picks, min(tokens * k, E) of them per MoE layer ("perfect load
 * balancing"); the KV cache read over the context of each decode token,
 * the new token included, window-clamped, and written once per token; MLA's
 * latent r_kv + d_rope per token), without the activations vLLM adds:
 *   weights   every parameter but the embedding table and the routed
 *             experts, the lm_head (tied or not), and min(b*k, E) experts
 *             per MoE layer, in the weight dtype; once per forward, b the
 *             tokens of the forward (decode: the sequences still generating,
 *             all sequences decoding in lockstep; prefill: every prompt token)
 *   KV cache  per token and attention layer: GQA 2*H_kv*Q elements; MLA
 *             r_kv + d_rope (latent) or H*(d_qk + d_v) (expanded); read for
 *             each decode token's keys, written for every prompt and decode
 *             token; in the cache dtype
 *   state     gated-DeltaNet layers: the recurrent state, H_v*d_k*d_v
 *             elements per sequence, read and written per decode token,
 *             written once by the prefill; in the cache dtype (open-instruct's
 *             gdn_state_bytes convention; the conv state is left out)
 *
 * Refused (INVALID, the bad field named): LoRA ("lora_rank"), recompute
 * ("activation_recompute"), Mamba / SSM and short-conv layers
 * ("num_ssm_layers", "num_short_conv_layers"), Kimi delta attention
 * ("linear_kind"), bidirectional attention ("bidirectional"), a length < 1
 * or no sequence ("prompt_lens", "output_lens"; p_i + n_i beyond int64:
 * "output_lens"), a bad dtype ("weight_dtype",
 * "cache_dtype") or cache layout ("mla_cache"); else as
 * mfu_transformer_flops_compute.
 */
#ifndef MFU_GENERATION_H
#define MFU_GENERATION_H

#include <stddef.h>
#include <stdint.h>

#include "dtypes.h"
#include "transformer.h"

typedef enum mfu_mla_cache {
    MFU_MLA_CACHE_LATENT = 0,  /* r_kv + d_rope per token (transformers 5, vLLM, SGLang) */
    MFU_MLA_CACHE_EXPANDED = 1 /* per-head K and V (transformers 4) */
} mfu_mla_cache;

typedef struct mfu_generation_spec {
    mfu_dtype weight_dtype; /* the weights as stored */
    mfu_dtype cache_dtype;  /* the KV cache and recurrent states */
    mfu_mla_cache mla_cache;
} mfu_generation_spec;

/* FLOPs, bytes and counts; every figure for the whole batch. */
typedef struct mfu_generation_flops {
    double prefill_flops, decode_flops; /* forward FLOPs */
    double prefill_attention_flops, decode_attention_flops; /* inside them */
    double prefill_tokens;  /* sum p_i */
    double decode_tokens;   /* sum (n_i - 1): the decode forwards' tokens */
    double sequences;
    double decode_forwards; /* max (n_i - 1): lockstep decode steps */
    double prefill_weight_bytes, prefill_kv_write_bytes, prefill_state_bytes;
    double decode_weight_bytes, decode_kv_read_bytes, decode_kv_write_bytes;
    double decode_state_bytes;
} mfu_generation_flops;

mfu_status mfu_generation_flops_compute(const mfu_transformer_dims *dims,
                                        const mfu_transformer_options *options,
                                        const int64_t *prompt_lens,
                                        const int64_t *output_lens, size_t count,
                                        const mfu_generation_spec *spec,
                                        mfu_generation_flops *out, const char **bad_field);

#endif /* MFU_GENERATION_H */
