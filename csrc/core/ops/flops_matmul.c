/* flops_matmul.c -- the matmul family's FLOP formulas (see flops.h). */
#include "checked.h"
#include "flops.h"

mfu_status mfu_mm_flop(int64_t m, int64_t k, int64_t n, int64_t *flops)
{
    /* a: [m, k] @ b: [k, n]: 2 * m * n * k */
    const int64_t factors[4] = {2, m, n, k};
    if (m < 0 || k < 0 || n < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    return mfu_product_i64(factors, 4, flops);
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
    return mfu_product_i64(factors, 5, flops);
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
