/*
 * context_parallel.h -- one rank's analytic FLOPs when each sequence is
 * split across the `degree` ranks of a context-parallel group.
 *
 * Each sequence of s tokens is cut into `degree` contiguous chunks of
 * c = s / degree tokens (s must divide); rank r holds chunk r, so the
 * token-linear work (projections, MLP, lm_head) of c tokens per sequence is
 * its own, and the group's tokens add up to the batch's (never divided
 * twice). Attention per mode:
 *
 *   ulysses  all-to-all to H / degree heads over the whole sequence: the
 *            rank's attention is the batch's / degree (any span, any
 *            convention); so is everything else.
 *   ring     ring attention or an all-gather of K and V (the same blocks):
 *            chunk r of the queries against key chunks 0..r -- r whole
 *            blocks of c x c and the diagonal block, causal (c^2 under
 *            "full", c^2 / 2 under "half"); the blocks above the diagonal
 *            never run, so they are not charged. Per head and sequence:
 *            r c^2 + diag(c). Summed over the ranks: s^2 / 2 under "half"
 *            (the single-device count), (degree + 1) / (2 degree) s^2 under
 *            "full" (the skipped blocks). Windows, chunked attention,
 *            linear-attention / SSM layers, MTP layers and a vision tower
 *            are refused (INVALID, bad field "context_parallel").
 */
#ifndef MFU_CONTEXT_PARALLEL_H
#define MFU_CONTEXT_PARALLEL_H

#include "transformer.h"

typedef enum mfu_cp_mode {
    MFU_CP_ULYSSES = 0,
    MFU_CP_RING = 1
} mfu_cp_mode;

typedef struct mfu_context_parallel {
    int64_t degree; /* ranks per group, >= 1 (1: no context parallelism) */
    int64_t rank;   /* 0 .. degree - 1 */
    mfu_cp_mode mode;
} mfu_context_parallel;

/* The rank's share of the batch (transformer.h's fields; num_tokens: the
 * rank's tokens). Bad fields: "cp_rank", "cp_mode", "context_parallel"
 * (degree < 1, a length it does not divide, or what ring refuses), else as
 * mfu_transformer_flops_compute. */
mfu_status mfu_context_parallel_flops(const mfu_transformer_dims *dims,
                                      const mfu_transformer_options *options,
                                      const mfu_batch *batch,
                                      const mfu_context_parallel *cp,
                                      mfu_transformer_flops *out, const char **bad_field);

#endif /* MFU_CONTEXT_PARALLEL_H */
