/* flops_conv.c -- convolution FLOP formulas, forward and backward (see
 * flops.h). */
#include "checked.h"
#include "flops.h"

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
 * product (so a zero anywhere gives 0, see mfu_product_i64). */
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
    return mfu_product_i64(factors, n, flops);
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
        if ((st = mfu_add_i64(total, part, &total)) != MFU_OK)
            return st;
    }
    *flops = total;
    return MFU_OK;
}
