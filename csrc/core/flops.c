/* flops.c -- FLOP formulas (see flops.h for the conventions). */
#include <math.h>

#include "flops.h"

/* ------------------------------------------------------------------------
 * Checked int64 arithmetic on non-negative operands. Overflow is detected
 * before it happens; nothing ever wraps.
 * ------------------------------------------------------------------------ */

static mfu_status mul_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    if (a != 0 && b > INT64_MAX / a)
        return MFU_ERR_OVERFLOW;
    *out = a * b;
    return MFU_OK;
}

static mfu_status add_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    if (b > INT64_MAX - a)
        return MFU_ERR_OVERFLOW;
    *out = a + b;
    return MFU_OK;
}

/* The product of `count` factors (1 for count == 0). A zero factor makes
 * it 0 however large the others: overflow is judged on the exact result,
 * never on a partial product. */
static mfu_status product_i64(const int64_t *factors, size_t count,
                              int64_t *out)
{
    int64_t acc = 1;
    int zero = 0;
    for (size_t i = 0; i < count; i++) {
        if (factors[i] < 0)
            return MFU_ERR_INVALID_ARGUMENT;
        zero |= factors[i] == 0;
    }
    if (zero) {
        *out = 0;
        return MFU_OK;
    }
    for (size_t i = 0; i < count; i++) {
        mfu_status st = mul_i64(acc, factors[i], &acc);
        if (st != MFU_OK)
            return st;
    }
    *out = acc;
    return MFU_OK;
}

/* ------------------------------------------------------------------------
 * Matmul family
 * ------------------------------------------------------------------------ */

mfu_status mfu_mm_flop(int64_t m, int64_t k, int64_t n, int64_t *flops)
{
    /* a: [m, k] @ b: [k, n]: 2 * m * n * k */
    const int64_t factors[4] = {2, m, n, k};
    if (m < 0 || k < 0 || n < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    return product_i64(factors, 4, flops);
}

mfu_status mfu_addmm_flop(int64_t m, int64_t k, int64_t n, int64_t *flops)
{
    /* NB: the bias add (m * n FLOPs) is not counted, as in FlopCounterMode. */
    return mfu_mm_flop(m, k, n, flops);
}

mfu_status mfu_bmm_flop(int64_t batch, int64_t m, int64_t k, int64_t n,
                        int64_t *flops)
{
    /* a: [b, m, k] @ b: [b, k, n]: b * 2 * m * n * k */
    const int64_t factors[5] = {2, batch, m, n, k};
    if (batch < 0 || m < 0 || k < 0 || n < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    return product_i64(factors, 5, flops);
}

mfu_status mfu_baddbmm_flop(int64_t batch, int64_t m, int64_t k, int64_t n,
                            int64_t *flops)
{
    return mfu_bmm_flop(batch, m, k, n, flops);
}

mfu_status mfu_grouped_mm_flop(const int64_t *a_shape, size_t a_ndim,
                               const int64_t *b_shape, size_t b_ndim,
                               int64_t *flops)
{
    int64_t m, k, n, groups = 1;
    if (a_shape == NULL || b_shape == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (a_ndim == 2 && b_ndim == 3) {
        /* a: [M, K] rows split by offs, b: [G, K, N] */
        m = a_shape[0], k = a_shape[1], n = b_shape[2];
        if (b_shape[1] != k)
            return MFU_ERR_INVALID_ARGUMENT;
    } else if (a_ndim == 3 && b_ndim == 3) {
        /* a: [G, M, K], b: [G, K, N]: a batched matmul */
        groups = a_shape[0], m = a_shape[1], k = a_shape[2], n = b_shape[2];
        if (b_shape[0] != groups || b_shape[1] != k)
            return MFU_ERR_INVALID_ARGUMENT;
    } else if (a_ndim == 3 && b_ndim == 2) {
        /* a: [G, M, K], b: [K, N] columns split by offs */
        m = a_shape[1], k = a_shape[2], n = b_shape[1];
        if (b_shape[0] != k)
            return MFU_ERR_INVALID_ARGUMENT;
    } else if (a_ndim == 2 && b_ndim == 2) {
        /* a: [M, K], b: [K, N], the contraction K split by offs */
        m = a_shape[0], k = a_shape[1], n = b_shape[1];
        if (b_shape[0] != k)
            return MFU_ERR_INVALID_ARGUMENT;
    } else {
        return MFU_ERR_INVALID_ARGUMENT;
    }
    /* every dimension, including a G the count does not use */
    for (size_t i = 0; i < a_ndim; i++)
        if (a_shape[i] < 0)
            return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < b_ndim; i++)
        if (b_shape[i] < 0)
            return MFU_ERR_INVALID_ARGUMENT;
    return mfu_bmm_flop(groups, m, k, n, flops);
}

/* ------------------------------------------------------------------------
 * Convolution
 * ------------------------------------------------------------------------ */

static mfu_status conv_shapes_ok(const int64_t *const *shapes, size_t nshapes,
                                 size_t ndim)
{
    if (ndim < 3 || ndim > MFU_CONV_MAX_NDIM)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t s = 0; s < nshapes; s++) {
        if (shapes[s] == NULL)
            return MFU_ERR_INVALID_ARGUMENT;
        for (size_t i = 0; i < ndim; i++)
            if (shapes[s][i] < 0)
                return MFU_ERR_INVALID_ARGUMENT;
    }
    return MFU_OK;
}

/*
 * FlopCounterMode's conv_flop_count: for a regular convolution every
 * *output* point convolves the filter, for a transposed one every *input*
 * point does:
 *   2 * n * prod(points) * w[0] * w[1] * prod(kernel)
 * with points = out_spatial (regular) or x_spatial (transposed).
 */
/* 2 * a * b * c * prod(points[2..ndim)) * prod(kernel[2..ndim)) as one
 * product (so a zero anywhere gives 0, see product_i64). */
static mfu_status conv_product(int64_t a, int64_t b, int64_t c,
                               const int64_t *points, const int64_t *kernel,
                               size_t ndim, int64_t *flops)
{
    int64_t factors[4 + 2 * (MFU_CONV_MAX_NDIM - 2)] = {2, a, b, c};
    size_t n = 4;
    for (size_t i = 2; i < ndim; i++) {
        factors[n++] = points[i];
        factors[n++] = kernel[i];
    }
    return product_i64(factors, n, flops);
}

static mfu_status conv_count(const int64_t *x_shape, const int64_t *w_shape,
                             const int64_t *out_shape, size_t ndim,
                             int transposed, int64_t *flops)
{
    const int64_t *points = transposed ? x_shape : out_shape;
    return conv_product(x_shape[0], w_shape[0], w_shape[1], points, w_shape,
                        ndim, flops);
}

mfu_status mfu_convolution_flop(const int64_t *x_shape, const int64_t *w_shape,
                                const int64_t *out_shape, size_t ndim,
                                int transposed, int64_t *flops)
{
    const int64_t *const shapes[3] = {x_shape, w_shape, out_shape};
    mfu_status st = conv_shapes_ok(shapes, 3, ndim);
    if (st != MFU_OK)
        return st;
    return conv_count(x_shape, w_shape, out_shape, ndim, transposed, flops);
}

mfu_status mfu_convolution_backward_flop(const int64_t *grad_out_shape,
                                         const int64_t *x_shape,
                                         const int64_t *w_shape, size_t ndim,
                                         int transposed, int64_t groups,
                                         int want_input_grad,
                                         int want_weight_grad, int64_t *flops)
{
    const int64_t *const shapes[3] = {grad_out_shape, x_shape, w_shape};
    /* The points the filter visits: output points for a regular conv,
     * input points for a transposed one. */
    const int64_t *points = transposed ? x_shape : grad_out_shape;
    int64_t total = 0, part;
    mfu_status st = conv_shapes_ok(shapes, 3, ndim);

    if (st != MFU_OK)
        return st;
    if (groups < 1 || x_shape[1] % groups != 0 || grad_out_shape[1] % groups != 0)
        return MFU_ERR_INVALID_ARGUMENT;

    if (want_input_grad) {
        /* grad_x = conv_transpose(grad_out, w) (or conv for a transposed
         * forward): FlopCounterMode's conv_flop_count(grad_out, w, x,
         * !transposed), which equals the forward count. */
        st = conv_count(grad_out_shape, w_shape, x_shape, ndim, !transposed,
                        &part);
        if (st != MFU_OK)
            return st;
        total = part;
    }
    if (want_weight_grad) {
        /* grad_w = conv(x^T, grad_out^T): 2 * n * c_in * c_out * prod(points)
         * * prod(kernel) / groups, points = out_spatial (regular) or
         * in_spatial (transposed). NB: FlopCounterMode omits the / groups. */
        st = conv_product(x_shape[0], x_shape[1] / groups, grad_out_shape[1],
                          points, w_shape, ndim, &part);
        if (st != MFU_OK)
            return st;
        if ((st = add_i64(total, part, &total)) != MFU_OK)
            return st;
    }
    *flops = total;
    return MFU_OK;
}

/* ------------------------------------------------------------------------
 * Attention
 * ------------------------------------------------------------------------ */

static mfu_status attention_shape_ok(const mfu_attention_shape *s,
                                     mfu_causal causal)
{
    if (s == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF)
        return MFU_ERR_INVALID_ARGUMENT;
    if (s->batch < 0 || s->seq_q < 0 || s->seq_kv < 0 || s->head_dim_qk < 0 ||
        s->head_dim_v < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    /* GQA: h_kv >= 1 divides h (FlopCounterMode asserts the same). */
    if (s->heads_q < 1 || s->heads_kv < 1 || s->heads_q % s->heads_kv != 0)
        return MFU_ERR_INVALID_ARGUMENT;
    return MFU_OK;
}

/* 2 * b * h * s_q * s_kv * (qk_weight * d_qk + v_weight * d_v), halved for
 * HALF. Every term carries the factor 2, so HALF drops it: exact, and a
 * HALF count that fits is never refused because FULL would not. Each of
 * the two terms is at most the total, so overflow of either is overflow of
 * the count. */
static mfu_status attention_count(const mfu_attention_shape *s,
                                  mfu_causal causal, int64_t qk_weight,
                                  int64_t v_weight, int64_t *flops)
{
    const int64_t two = causal == MFU_CAUSAL_HALF ? 1 : 2;
    const int64_t qk_factors[7] = {two, s->batch, s->heads_q, s->seq_q,
                                   s->seq_kv, qk_weight, s->head_dim_qk};
    const int64_t v_factors[7] = {two, s->batch, s->heads_q, s->seq_q,
                                  s->seq_kv, v_weight, s->head_dim_v};
    int64_t qk, v;
    mfu_status st;

    if ((st = product_i64(qk_factors, 7, &qk)) != MFU_OK)
        return st;
    if ((st = product_i64(v_factors, 7, &v)) != MFU_OK)
        return st;
    return add_i64(qk, v, flops);
}

mfu_status mfu_sdpa_flop(const mfu_attention_shape *shape, mfu_causal causal,
                         int64_t *flops)
{
    mfu_status st = attention_shape_ok(shape, causal);
    if (st != MFU_OK)
        return st;
    /* QK^T (d_qk) + AV (d_v) */
    return attention_count(shape, causal, 1, 1, flops);
}

mfu_status mfu_sdpa_backward_flop(const mfu_attention_shape *shape,
                                  mfu_causal causal, int64_t *flops)
{
    mfu_status st = attention_shape_ok(shape, causal);
    if (st != MFU_OK)
        return st;
    /* recompute QK^T, dQ, dK: 3 * d_qk; dScores, dV: 2 * d_v */
    return attention_count(shape, causal, 3, 2, flops);
}

static mfu_status varlen_count(const int64_t *cu_q, const int64_t *cu_k,
                               size_t num_offsets, int64_t heads_q,
                               int64_t heads_kv, int64_t head_dim_qk,
                               int64_t head_dim_v, mfu_causal causal,
                               int backward, int64_t *flops)
{
    mfu_attention_shape shape = {
        .batch = 1,
        .heads_q = heads_q,
        .heads_kv = heads_kv,
        .seq_q = 0,
        .seq_kv = 0,
        .head_dim_qk = head_dim_qk,
        .head_dim_v = head_dim_v,
    };
    int64_t total = 0, part;
    mfu_status st;

    if (num_offsets > 0 && cu_q == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (cu_k == NULL)
        cu_k = cu_q;
    /* Validate the shape even when there is no sequence. */
    if ((st = attention_shape_ok(&shape, causal)) != MFU_OK)
        return st;
    for (size_t i = 0; i < num_offsets; i++)
        if (cu_q[i] < 0 || cu_k[i] < 0)
            return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i + 1 < num_offsets; i++) {
        if (cu_q[i + 1] < cu_q[i] || cu_k[i + 1] < cu_k[i])
            return MFU_ERR_INVALID_ARGUMENT;
        shape.seq_q = cu_q[i + 1] - cu_q[i];
        shape.seq_kv = cu_k[i + 1] - cu_k[i];
        st = backward ? mfu_sdpa_backward_flop(&shape, causal, &part)
                      : mfu_sdpa_flop(&shape, causal, &part);
        if (st != MFU_OK)
            return st;
        if ((st = add_i64(total, part, &total)) != MFU_OK)
            return st;
    }
    *flops = total;
    return MFU_OK;
}

mfu_status mfu_varlen_attention_flop(const int64_t *cu_seqlens_q,
                                     const int64_t *cu_seqlens_k,
                                     size_t num_offsets, int64_t heads_q,
                                     int64_t heads_kv, int64_t head_dim_qk,
                                     int64_t head_dim_v, mfu_causal causal,
                                     int64_t *flops)
{
    return varlen_count(cu_seqlens_q, cu_seqlens_k, num_offsets, heads_q,
                        heads_kv, head_dim_qk, head_dim_v, causal, 0, flops);
}

mfu_status mfu_varlen_attention_backward_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, mfu_causal causal, int64_t *flops)
{
    return varlen_count(cu_seqlens_q, cu_seqlens_k, num_offsets, heads_q,
                        heads_kv, head_dim_qk, head_dim_v, causal, 1, flops);
}

/* ------------------------------------------------------------------------
 * Masked attention: windows, chunks, block masks (flops.h)
 * ------------------------------------------------------------------------ */

/* Sequence lengths the span arithmetic accepts: every sum below stays in
 * int64 under it. */
#define SPAN_LIMIT ((int64_t)1 << 62)

static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* 2 * b * h * pairs * (qk_weight * d_qk + v_weight * d_v), given
 * `twice_pairs` = 2 * pairs (half of an odd product stays exact). Each term
 * is at most the total: overflow of a term is overflow of the count. */
static mfu_status pair_flops(int64_t twice_pairs, const mfu_attention_shape *s,
                             int64_t qk_weight, int64_t v_weight,
                             int64_t *flops)
{
    const int64_t qk_factors[5] = {twice_pairs, s->batch, s->heads_q,
                                   qk_weight, s->head_dim_qk};
    const int64_t v_factors[5] = {twice_pairs, s->batch, s->heads_q, v_weight,
                                  s->head_dim_v};
    int64_t qk, v;
    mfu_status st;
    if ((st = product_i64(qk_factors, 5, &qk)) != MFU_OK ||
        (st = product_i64(v_factors, 5, &v)) != MFU_OK)
        return st;
    return add_i64(qk, v, flops);
}

/* No work whatever the pairs (a zero batch or head dims): the pairs are
 * then not counted, so a count of 0 is never refused. */
static int no_work(const mfu_attention_shape *s)
{
    return s->batch == 0 || (s->head_dim_qk == 0 && s->head_dim_v == 0);
}

/* sum_{p = p0}^{p1} max(0, a * p + c), a in {-1, 0, 1}, |p|, |c| < 2^62:
 * n * (smallest term) + n (n - 1) / 2 (a != 0), each part at most the
 * sum, so a sum that fits is never refused. */
static mfu_status ramp_sum(int64_t p0, int64_t p1, int a, int64_t c,
                           int64_t *out)
{
    int64_t n, series, part;
    mfu_status st;
    *out = 0;
    if (a == 1)
        p0 = max_i64(p0, 1 - c); /* the terms from 1 up */
    else if (a == -1)
        p1 = min_i64(p1, c - 1); /* the terms down to 1 */
    else if (c <= 0)
        return MFU_OK;
    if (p1 < p0)
        return MFU_OK;
    n = p1 - p0 + 1;
    if ((st = mul_i64(n, a == 1 ? p0 + c : a == -1 ? c - p1 : c, &part)) != MFU_OK)
        return st;
    if (a == 0) {
        *out = part;
        return MFU_OK;
    }
    st = n % 2 == 0 ? mul_i64(n / 2, n - 1, &series)
                    : mul_i64(n, (n - 1) / 2, &series);
    return st != MFU_OK ? st : add_i64(part, series, out);
}

/* sum over p0..p1 of the keys [max(p - left, lo), min(p + right, hi)]
 * (left / right < 0: unbounded) of query position p. The count is linear
 * in p between x1 (after it the left edge is p - left) and x2 (after it
 * the right edge is hi): sum each piece. */
static mfu_status kept_pairs(int64_t p0, int64_t p1, int64_t left,
                             int64_t right, int64_t lo, int64_t hi,
                             int64_t *out)
{
    const int64_t x1 = left < 0 ? INT64_MAX : lo + left;
    const int64_t x2 = right < 0 ? INT64_MIN : hi - right;
    const int64_t cut[3] = {min_i64(x1, x2), max_i64(x1, x2), p1};
    int64_t start = p0, total = 0, part;
    mfu_status st;
    for (int k = 0; k < 3 && start <= p1; k++) {
        const int64_t end = min_i64(cut[k], p1);
        if (end < start)
            continue;
        const int low_moves = start > x1;   /* left edge p - left */
        const int high_moves = start <= x2; /* right edge p + right */
        const int a = high_moves - low_moves;
        const int64_t c = (high_moves ? right : hi) + 1 + (low_moves ? left : -lo);
        if ((st = ramp_sum(start, end, a, c, &part)) != MFU_OK ||
            (st = add_i64(total, part, &total)) != MFU_OK)
            return st;
        start = end + 1;
    }
    *out = total;
    return MFU_OK;
}

/* Pairs of the query positions q0..q1 whose keys lie in [lo, hi], by
 * convention: FULL min(span, region) each, HALF the kept ones. */
static mfu_status region_pairs(int64_t q0, int64_t q1, int64_t left,
                               int64_t right, int64_t lo, int64_t hi,
                               mfu_causal causal, int64_t *out)
{
    if (causal == MFU_CAUSAL_HALF)
        return kept_pairs(q0, q1, left, right, lo, hi, out);
    const int64_t region = max_i64(hi - lo + 1, 0);
    const int64_t span = left < 0 || right < 0 ? region : left + 1 + right;
    return mul_i64(max_i64(q1 - q0 + 1, 0), min_i64(span, region), out);
}

/* A chunked sequence: the chunks of the query positions p0..p1 (k0..k1).
 * The chunks strictly inside, at k >= 0, all count the same: one of them
 * times their number; chunks wholly before key 0 count nothing. */
static mfu_status chunk_pairs(int64_t p0, int64_t p1, int64_t s_k, int64_t left,
                              int64_t right, int64_t chunk, mfu_causal causal,
                              int64_t *out)
{
    const int64_t k0 = p0 >= 0 ? p0 / chunk : -((-p0 + chunk - 1) / chunk);
    const int64_t k1 = p1 / chunk;
    const int64_t edges[2] = {k0, k1};
    int64_t total = 0, part, inner;
    mfu_status st;
    for (int e = 0; e < (k0 == k1 ? 1 : 2); e++) {
        const int64_t start = edges[e] * chunk;
        st = region_pairs(max_i64(start, p0), min_i64(start + chunk - 1, p1), left,
                          right, max_i64(start, 0), min_i64(start + chunk - 1, s_k - 1),
                          causal, &part);
        if (st != MFU_OK || (st = add_i64(total, part, &total)) != MFU_OK)
            return st;
    }
    inner = k1 - max_i64(k0 + 1, 0);
    if (inner > 0) {
        if ((st = region_pairs(0, chunk - 1, left, right, 0, chunk - 1, causal,
                               &part)) != MFU_OK ||
            (st = mul_i64(inner, part, &part)) != MFU_OK ||
            (st = add_i64(total, part, &total)) != MFU_OK)
            return st;
    }
    *out = total;
    return MFU_OK;
}

/* Twice the pairs one sequence counts under `mask` (flops.h). */
static mfu_status sequence_pairs(int64_t s_q, int64_t s_k,
                                 const mfu_attention_mask *mask,
                                 mfu_causal causal, int64_t *twice)
{
    int64_t pairs;
    mfu_status st;

    if (s_q == 0 || s_k == 0) {
        *twice = 0;
        return MFU_OK;
    }
    if (mask->window_left < 0 && mask->chunk <= 0 && mask->window_right <= 0) {
        /* no mask, or plain causal: the whole rectangle (HALF of causal:
         * half of it) */
        if ((st = mul_i64(s_q, s_k, &pairs)) != MFU_OK)
            return st;
        if (mask->window_right == 0 && causal == MFU_CAUSAL_HALF) {
            *twice = pairs;
            return MFU_OK;
        }
        return mul_i64(2, pairs, twice);
    }
    if (s_q >= SPAN_LIMIT || s_k >= SPAN_LIMIT)
        return MFU_ERR_OVERFLOW;
    /* a side or a chunk past every key keeps them all, as any longer one
     * does: clamped, the span arithmetic stays in int64 */
    const int64_t left = mask->window_left < 0 ? -1 : min_i64(mask->window_left, s_k);
    const int64_t right = mask->window_right < 0 ? -1
                                                 : min_i64(mask->window_right, max_i64(s_q, s_k));
    st = mask->chunk > 0
             ? chunk_pairs(s_k - s_q, s_k - 1, s_k, left, right,
                           min_i64(mask->chunk, SPAN_LIMIT), causal, &pairs)
             : region_pairs(s_k - s_q, s_k - 1, left, right, 0, s_k - 1, causal, &pairs);
    return st != MFU_OK ? st : mul_i64(2, pairs, twice);
}

static mfu_status masked_count(const mfu_attention_shape *shape,
                               const mfu_attention_mask *mask, mfu_causal causal,
                               int backward, int64_t *flops)
{
    int64_t twice;
    mfu_status st = attention_shape_ok(shape, causal);
    if (st != MFU_OK)
        return st;
    if (mask == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (no_work(shape)) {
        *flops = 0;
        return MFU_OK;
    }
    if ((st = sequence_pairs(shape->seq_q, shape->seq_kv, mask, causal, &twice)) != MFU_OK)
        return st;
    /* QK^T (d_qk) + AV (d_v); backward: recompute QK^T, dQ, dK (3 d_qk),
     * dScores, dV (2 d_v), as mfu_sdpa_backward_flop */
    return backward ? pair_flops(twice, shape, 3, 2, flops)
                    : pair_flops(twice, shape, 1, 1, flops);
}

mfu_status mfu_masked_attention_flop(const mfu_attention_shape *shape,
                                     const mfu_attention_mask *mask,
                                     mfu_causal causal, int64_t *flops)
{
    return masked_count(shape, mask, causal, 0, flops);
}

mfu_status mfu_masked_attention_backward_flop(const mfu_attention_shape *shape,
                                              const mfu_attention_mask *mask,
                                              mfu_causal causal, int64_t *flops)
{
    return masked_count(shape, mask, causal, 1, flops);
}

static mfu_status varlen_masked(const int64_t *cu_q, const int64_t *cu_k,
                                size_t num_offsets, const mfu_attention_shape *heads,
                                const mfu_attention_mask *mask, mfu_causal causal,
                                int backward, int64_t *flops)
{
    int64_t total = 0, twice;
    mfu_status st;

    if ((num_offsets > 0 && cu_q == NULL) || mask == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (cu_k == NULL)
        cu_k = cu_q;
    if ((st = attention_shape_ok(heads, causal)) != MFU_OK)
        return st;
    for (size_t i = 0; i < num_offsets; i++)
        if (cu_q[i] < 0 || cu_k[i] < 0 || (i > 0 && (cu_q[i] < cu_q[i - 1] ||
                                                     cu_k[i] < cu_k[i - 1])))
            return MFU_ERR_INVALID_ARGUMENT;
    if (no_work(heads)) {
        *flops = 0;
        return MFU_OK;
    }
    for (size_t i = 0; i + 1 < num_offsets; i++) {
        st = sequence_pairs(cu_q[i + 1] - cu_q[i], cu_k[i + 1] - cu_k[i], mask, causal,
                            &twice);
        if (st != MFU_OK || (st = add_i64(total, twice, &total)) != MFU_OK)
            return st;
    }
    return backward ? pair_flops(total, heads, 3, 2, flops)
                    : pair_flops(total, heads, 1, 1, flops);
}

/* The shape varlen_masked checks: batch 1, the sequences come later. */
static mfu_attention_shape varlen_heads(int64_t heads_q, int64_t heads_kv,
                                        int64_t head_dim_qk, int64_t head_dim_v)
{
    const mfu_attention_shape s = {.batch = 1, .heads_q = heads_q, .heads_kv = heads_kv,
                                   .head_dim_qk = head_dim_qk, .head_dim_v = head_dim_v};
    return s;
}

mfu_status mfu_varlen_masked_attention_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, const mfu_attention_mask *mask, mfu_causal causal,
    int64_t *flops)
{
    const mfu_attention_shape heads = varlen_heads(heads_q, heads_kv, head_dim_qk, head_dim_v);
    return varlen_masked(cu_seqlens_q, cu_seqlens_k, num_offsets, &heads, mask, causal, 0,
                         flops);
}

mfu_status mfu_varlen_masked_attention_backward_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, const mfu_attention_mask *mask, mfu_causal causal,
    int64_t *flops)
{
    const mfu_attention_shape heads = varlen_heads(heads_q, heads_kv, head_dim_qk, head_dim_v);
    return varlen_masked(cu_seqlens_q, cu_seqlens_k, num_offsets, &heads, mask, causal, 1,
                         flops);
}

/* Whether every row lists 0..width blocks with indices >= 0. */
static int rows_ok(const int64_t *num, const int64_t *indices, int64_t rows, int64_t width)
{
    for (int64_t r = 0; r < rows; r++) {
        if (num[r] < 0 || num[r] > width)
            return 0;
        for (int64_t i = 0; i < num[r]; i++)
            if (indices[r * width + i] < 0)
                return 0;
    }
    return 1;
}

/* The key tokens of the listed blocks of one row (the first `num` of
 * `indices`), each clipped to s_kv; an index past the keys adds none. */
static mfu_status row_columns(const int64_t *indices, int64_t num, int64_t s_kv,
                              int64_t block, int64_t *out)
{
    int64_t cols = 0;
    mfu_status st;
    for (int64_t i = 0; i < num; i++) {
        const int64_t kb = indices[i];
        if (kb > (s_kv - 1) / block)
            continue;
        if ((st = add_i64(cols, min_i64(block, s_kv - kb * block), &cols)) != MFU_OK)
            return st;
    }
    *out = cols;
    return MFU_OK;
}

/* The pairs of every computed block, over the mask's rows. */
static mfu_status block_pairs(const mfu_attention_shape *s, const mfu_block_mask *m,
                              int64_t *out)
{
    int64_t rows_total, pairs = 0, cols, full_cols, part;
    mfu_status st;
    if ((st = mul_i64(m->batch * m->heads, m->q_blocks, &rows_total)) != MFU_OK)
        return st == MFU_ERR_OVERFLOW ? MFU_ERR_INVALID_ARGUMENT : st;
    if (rows_total > 0 && (m->num_blocks == NULL || (m->kv_blocks > 0 && m->indices == NULL) ||
                           (m->full_num_blocks != NULL && m->full_kv_blocks > 0 &&
                            m->full_indices == NULL)))
        return MFU_ERR_INVALID_ARGUMENT;
    /* every row checked before any sum: bad input is refused as such */
    if (!rows_ok(m->num_blocks, m->indices, rows_total, m->kv_blocks) ||
        (m->full_num_blocks != NULL &&
         !rows_ok(m->full_num_blocks, m->full_indices, rows_total, m->full_kv_blocks)))
        return MFU_ERR_INVALID_ARGUMENT;
    for (int64_t r = 0; r < rows_total; r++) {
        const int64_t qb = r % m->q_blocks;
        /* the query tokens of block qb, clipped to s_q */
        const int64_t rows = qb > (s->seq_q - 1) / m->q_block_size || s->seq_q == 0
                                 ? 0 : min_i64(m->q_block_size, s->seq_q - qb * m->q_block_size);
        st = row_columns(m->indices + r * m->kv_blocks, m->num_blocks[r], s->seq_kv,
                         m->kv_block_size, &cols);
        full_cols = 0;
        if (st == MFU_OK && m->full_num_blocks != NULL)
            st = row_columns(m->full_indices + r * m->full_kv_blocks, m->full_num_blocks[r],
                             s->seq_kv, m->kv_block_size, &full_cols);
        if (st != MFU_OK || (st = add_i64(cols, full_cols, &cols)) != MFU_OK ||
            (st = mul_i64(rows, cols, &part)) != MFU_OK ||
            (st = add_i64(pairs, part, &pairs)) != MFU_OK)
            return st;
    }
    *out = pairs;
    return MFU_OK;
}

static mfu_status block_count(const mfu_attention_shape *shape, const mfu_block_mask *m,
                              int backward, int64_t *flops)
{
    mfu_attention_shape per_row;
    int64_t pairs, twice;
    mfu_status st = attention_shape_ok(shape, MFU_CAUSAL_FULL);
    if (st != MFU_OK)
        return st;
    if (m == NULL || m->batch < 1 || m->heads < 1 || m->q_blocks < 0 || m->kv_blocks < 0 ||
        m->full_kv_blocks < 0 || m->q_block_size < 1 || m->kv_block_size < 1 ||
        shape->batch % m->batch != 0 || shape->heads_q % m->heads != 0 ||
        m->batch > INT64_MAX / m->heads)
        return MFU_ERR_INVALID_ARGUMENT;
    if (no_work(shape)) {
        *flops = 0;
        return MFU_OK;
    }
    if ((st = block_pairs(shape, m, &pairs)) != MFU_OK || (st = mul_i64(2, pairs, &twice)) != MFU_OK)
        return st;
    /* each of the mask's rows stands for (batch / mask batch) x (heads /
     * mask heads) of the query's */
    per_row = *shape;
    per_row.batch = shape->batch / m->batch;
    per_row.heads_q = shape->heads_q / m->heads;
    return backward ? pair_flops(twice, &per_row, 3, 2, flops)
                    : pair_flops(twice, &per_row, 1, 1, flops);
}

mfu_status mfu_block_attention_flop(const mfu_attention_shape *shape,
                                    const mfu_block_mask *mask, int64_t *flops)
{
    return block_count(shape, mask, 0, flops);
}

mfu_status mfu_block_attention_backward_flop(const mfu_attention_shape *shape,
                                             const mfu_block_mask *mask,
                                             int64_t *flops)
{
    return block_count(shape, mask, 1, flops);
}

mfu_status mfu_sdpa_model_flop(const mfu_attention_shape *shape,
                               mfu_causal causal, int with_backward,
                               int64_t *flops)
{
    int64_t forward = 0, total;
    mfu_status st;
    if (with_backward != 0 && with_backward != 1)
        return MFU_ERR_INVALID_ARGUMENT;
    st = mfu_sdpa_flop(shape, causal, &forward);
    if (st != MFU_OK)
        return st;
    st = mul_i64(forward, with_backward ? 1 + MFU_ATTENTION_MODEL_BACKWARD : 1,
                 &total);
    if (st == MFU_OK)
        *flops = total;
    return st;
}
