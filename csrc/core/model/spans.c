/* spans.c -- attention spans and scan chunking of a batch (see spans.h). */
#include "spans.h"

#include "pairs.h"

static int batch_ok(const mfu_batch *b)
{
    if (b == NULL || b->repeat < 0 || (b->count > 0 && b->lengths == NULL))
        return 0;
    for (size_t i = 0; i < b->count; i++)
        if (b->lengths[i] < 0)
            return 0;
    return 1;
}

mfu_status mfu_batch_tokens(const mfu_batch *batch, double *tokens)
{
    double sum = 0.0;
    if (!batch_ok(batch) || tokens == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < batch->count; i++)
        sum += (double)batch->lengths[i];
    *tokens = (double)batch->repeat * sum;
    return MFU_OK;
}

/* The mask of a span (pairs.h): a causal span has right = 0; a sliding
 * window of w keeps the query and the w - 1 keys before it, a chunk is w
 * keys, a bidirectional window the w - 1 keys on each side too. */
static mfu_attention_mask span_mask(mfu_span_kind kind, int64_t window)
{
    mfu_attention_mask mask = {.window_left = -1, .window_right = 0, .chunk = 0};
    if (kind == MFU_SPAN_SLIDING)
        mask.window_left = window - 1;
    else if (kind == MFU_SPAN_CHUNKED)
        mask.chunk = window;
    else if (kind == MFU_SPAN_SLIDING_BIDIRECTIONAL)
        mask.window_left = mask.window_right = window - 1;
    return mask;
}

mfu_status mfu_span_pairs(const mfu_batch *batch, mfu_span_kind kind,
                          int64_t window, mfu_causal causal, double *pairs)
{
    double sum = 0.0, seq_pairs = 0.0;
    mfu_attention_mask mask;
    mfu_pair_count twice;
    if (!batch_ok(batch) || pairs == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (kind != MFU_SPAN_FULL && kind != MFU_SPAN_SLIDING &&
        kind != MFU_SPAN_CHUNKED && kind != MFU_SPAN_SLIDING_BIDIRECTIONAL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF)
        return MFU_ERR_INVALID_ARGUMENT;
    if (kind != MFU_SPAN_FULL && window < 1)
        return MFU_ERR_INVALID_ARGUMENT;
    mask = span_mask(kind, window);
    for (size_t i = 0; i < batch->count; i++) {
        /* a run of equal lengths (a padded batch) counts its first one's
         * pairs: the exact count costs some 128-bit arithmetic per call */
        if (i == 0 || batch->lengths[i] != batch->lengths[i - 1]) {
            /* a valid length and mask: the rule cannot refuse them */
            if (mfu_attention_pairs(batch->lengths[i], batch->lengths[i], &mask, causal,
                                    &twice) != MFU_OK)
                return MFU_ERR_INVALID_ARGUMENT;
            seq_pairs = mfu_pair_count_double(twice) / 2.0;
        }
        sum += seq_pairs;
    }
    *pairs = (double)batch->repeat * sum;
    return MFU_OK;
}

mfu_status mfu_batch_chunking(const mfu_batch *batch, int64_t chunk,
                              mfu_chunking *out)
{
    mfu_chunking acc = {0.0, 0.0, 0.0};
    const double r = batch != NULL ? (double)batch->repeat : 0.0;
    if (!batch_ok(batch) || chunk < 1 || out == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < batch->count; i++) {
        const int64_t s = batch->lengths[i];
        /* ceil(s / chunk) without overflow: s / chunk + (s % chunk != 0) */
        const double n = (double)(s / chunk + (s % chunk != 0));
        if (s == 0)
            continue; /* an empty row runs no scan */
        acc.chunks += r * n;
        acc.chunks_sq += r * (n + 1.0) * (n + 1.0);
        acc.nonempty += r;
    }
    *out = acc;
    return MFU_OK;
}

mfu_status mfu_batch_padded_tokens(const mfu_batch *batch, int64_t pad,
                                   double *positions)
{
    double sum = 0.0;
    if (!batch_ok(batch) || pad < 0 || positions == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < batch->count; i++)
        if (batch->lengths[i] > 0)
            sum += (double)batch->lengths[i] + (double)pad;
    *positions = (double)batch->repeat * sum;
    return MFU_OK;
}
