/* spans.c -- attention spans and scan chunking of a batch (see spans.h). */
#include "spans.h"

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

/* sum_{p < n} min(p + 1, w): the unmasked pairs of n causal queries under a
 * window of w (w(w+1)/2 for the first w queries, then w each). */
static double causal_window_pairs(double n, double w)
{
    if (n <= w)
        return n * (n + 1.0) / 2.0;
    return w * (w + 1.0) / 2.0 + (n - w) * w;
}

/* One sequence of `len` tokens (doubles: exact below 2^53). */
static double sequence_pairs(int64_t len, mfu_span_kind kind, int64_t window,
                             mfu_causal causal)
{
    const int half = causal == MFU_CAUSAL_HALF;
    const double s = (double)len, w = (double)window;
    double whole, rest;

    switch (kind) {
    case MFU_SPAN_SLIDING:
        /* full: each query charged the whole window it may see */
        return half ? causal_window_pairs(s, w) : s * (len < window ? s : w);
    case MFU_SPAN_CHUNKED:
        /* len / w whole chunks of w and one of the rest */
        whole = (double)(len / window);
        rest = (double)(len % window);
        return half ? whole * w * (w + 1.0) / 2.0 + rest * (rest + 1.0) / 2.0
                    : whole * w * w + rest * rest;
    case MFU_SPAN_FULL:
    default:
        return half ? s * s / 2.0 : s * s;
    }
}

mfu_status mfu_span_pairs(const mfu_batch *batch, mfu_span_kind kind,
                          int64_t window, mfu_causal causal, double *pairs)
{
    double sum = 0.0;
    if (!batch_ok(batch) || pairs == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (kind != MFU_SPAN_FULL && kind != MFU_SPAN_SLIDING &&
        kind != MFU_SPAN_CHUNKED)
        return MFU_ERR_INVALID_ARGUMENT;
    if (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF)
        return MFU_ERR_INVALID_ARGUMENT;
    if (kind != MFU_SPAN_FULL && window < 1)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < batch->count; i++)
        sum += sequence_pairs(batch->lengths[i], kind, window, causal);
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
