/*
 * spans.h -- what a batch's sequences cost the analytic count: the (query,
 * key) pairs one attention head computes under each attention span and
 * causal convention, and the chunk counts of chunked scans.
 *
 * A batch is a list of real (unpadded) sequence lengths, each repeated
 * `repeat` times (a uniform batch is one length repeated batch_size times).
 * Attention never crosses a sequence boundary (packed sequences are counted
 * as the varlen kernels run them).
 *
 * Pairs per sequence of length s (the attention term is 2 * heads *
 * (d_qk + d_v) FLOPs per pair):
 *
 *   span                      causal "full"            causal "half"
 *   full (no window)          s^2                      s^2 / 2 (exactly half)
 *   sliding window w          s * min(s, w)            sum_{p<s} min(p + 1, w)
 *   chunked, chunk c          sum_chunks len^2         sum_chunks len(len+1)/2
 *   bidirectional window w    s * min(s, 2w - 1)       sum_{p<s} (keys within w - 1
 *                                                        of p on either side)
 *
 * "full" charges each query the whole span it may see (for a sliding window
 * the full window, for a chunk the full chunk): PaLM / torchtitan /
 * FlopCounterMode generalised. "half" counts, for a window or chunk, the
 * unmasked (query, key) pairs (the query itself and the keys before it
 * inside its window: a window of w holds the query and w - 1 earlier keys,
 * transformers' sliding_window_overlay: kv > q - w); for an unwindowed layer
 * it stays Megatron's exact half of the square. NB: so at s <= w a windowed
 * layer's "half" count is s(s+1)/2 while an unwindowed layer's is s^2/2;
 * they differ by s/2 per sequence and head.
 *
 * Each span is a mask (pairs.h): full is plain causal, a sliding window of
 * w a left window of w - 1, a chunk of w a chunk, a bidirectional window of
 * w (Gemma 3's use_bidirectional_attention: |query - key| < w, transformers'
 * _bidirectional_window_overlay) w - 1 keys on each side; the pairs are
 * pairs.h's rule (the one the op formulas count windows with), exact in
 * integers and summed as doubles (exact below 2^53).
 */
#ifndef MFU_SPANS_H
#define MFU_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "flops.h"
#include "mfu_status.h"

typedef enum mfu_span_kind {
    MFU_SPAN_FULL = 0,    /* every earlier key of the sequence */
    MFU_SPAN_SLIDING = 1, /* the query and the w - 1 keys before it */
    MFU_SPAN_CHUNKED = 2, /* the keys of the query's chunk of w (Llama 4) */
    MFU_SPAN_SLIDING_BIDIRECTIONAL = 3 /* the keys within w - 1 of the query,
                                        * before and after it */
} mfu_span_kind;

/* The sequences of one batch: lengths[0..count-1], each `repeat` times.
 * Borrowed: the lengths must outlive the call they are passed to. */
typedef struct mfu_batch {
    const int64_t *lengths;
    size_t count;
    int64_t repeat;
} mfu_batch;

/* T = repeat * sum of lengths. INVALID for a NULL batch, lengths == NULL
 * with count > 0, a negative length or repeat < 0. */
mfu_status mfu_batch_tokens(const mfu_batch *batch, double *tokens);

/* (query, key) pairs of one head over the batch for `kind` with window /
 * chunk `window` (ignored for MFU_SPAN_FULL; >= 1 otherwise) under `causal`
 * (table above). INVALID for a bad batch, kind, causal or window. */
mfu_status mfu_span_pairs(const mfu_batch *batch, mfu_span_kind kind,
                          int64_t window, mfu_causal causal, double *pairs);

/* Chunked scans pad each sequence to whole chunks of `chunk` (>= 1):
 * chunks = sum ceil(s / chunk); chunks_sq = sum (ceil(s / chunk) + 1)^2 (the
 * SSD state pass); nonempty = sequences with s > 0. Each is repeat-weighted. */
typedef struct mfu_chunking {
    double chunks;
    double chunks_sq;
    double nonempty;
} mfu_chunking;

mfu_status mfu_batch_chunking(const mfu_batch *batch, int64_t chunk,
                              mfu_chunking *out);

/* sum (s + pad) over the batch: the positions a causal depthwise conv1d
 * computes with `pad` = kernel - 1 zeros on both sides, before the output
 * is cut back to s (transformers' torch fallback of causal_conv1d_fn). */
mfu_status mfu_batch_padded_tokens(const mfu_batch *batch, int64_t pad,
                                   double *positions);

#endif /* MFU_SPANS_H */
