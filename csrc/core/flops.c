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
