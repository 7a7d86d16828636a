/*
 * op_linear.c -- counting the matmul family and convolutions (forward and
 * backward) from an op call (see op_internal.h): their shapes read from the
 * call, a convolution's output size derived, flops.h's formula applied.
 */
#include "op_internal.h"

/* ---- matmul family ---------------------------------------------------------- */

mfu_status mfu_op_count_matmul(const mfu_op_spec *spec, const mfu_op_call *call,
                               mfu_op_flops *out, mfu_op_error *error)
{
    const size_t rank = spec->kind == MFU_OP_MM ? 2 : spec->kind == MFU_OP_BMM ? 3 : 0;
    const mfu_op_arg *a, *b;
    int64_t flops = 0;
    mfu_status st;

    if ((st = mfu_op_tensor_of(spec, call, MFU_ROLE_A, rank, &a, error)) != MFU_OK ||
        (st = mfu_op_tensor_of(spec, call, MFU_ROLE_B, rank, &b, error)) != MFU_OK)
        return st;
    if (spec->kind == MFU_OP_MM) {
        /* a: [m, k] @ b: [k, n] */
        if (a->ints[1] != b->ints[0])
            return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "b",
                               "has an inner dim unlike a's");
        st = mfu_mm_flop(a->ints[0], a->ints[1], b->ints[1], &flops);
    } else if (spec->kind == MFU_OP_BMM) {
        /* a: [b, m, k] @ b: [b, k, n] */
        if (a->ints[0] != b->ints[0] || a->ints[2] != b->ints[1])
            return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "b",
                               "has a batch or inner dim unlike a's");
        st = mfu_bmm_flop(a->ints[0], a->ints[1], a->ints[2], b->ints[2], &flops);
    } else {
        st = mfu_grouped_mm_flop(a->ints, a->count, b->ints, b->count, &flops);
    }
    if (st != MFU_OK)
        return mfu_op_formula_status(st, error);
    mfu_op_set_flops(out, flops, mfu_op_per_operand(a, b), 0);
    return MFU_OK;
}

/* ---- convolution ---------------------------------------------------------- */

/* One spatial output size: (in + 2p - d(k - 1) - 1) / s + 1, 0 when the
 * kernel does not fit. Sizes >= 0, p >= 0, d >= 1, s >= 1. */
static mfu_status conv_out_size(int64_t in, int64_t k, int64_t s, int64_t p,
                                int64_t d, int64_t *out)
{
    int64_t span, reach;
    if (p > (INT64_MAX - in) / 2)
        return MFU_ERR_OVERFLOW;
    span = in + 2 * p; /* >= 0 */
    if (k == 0) {
        /* d(k - 1) = -d: the span grows by d */
        if (d > INT64_MAX - span)
            return MFU_ERR_OVERFLOW;
        span += d;
    } else {
        if (k - 1 > 0 && d > INT64_MAX / (k - 1))
            reach = INT64_MAX; /* beyond any span: the kernel does not fit */
        else
            reach = d * (k - 1);
        span = reach > span ? -1 : span - reach;
    }
    span -= 1; /* >= -2: no overflow */
    *out = span < 0 ? 0 : span / s + 1;
    return MFU_OK;
}

mfu_status mfu_op_count_convolution(const mfu_op_spec *spec,
                                    const mfu_op_call *call, mfu_op_flops *out,
                                    mfu_op_error *error)
{
    int64_t stride[MFU_CONV_MAX_NDIM], padding[MFU_CONV_MAX_NDIM];
    int64_t dilation[MFU_CONV_MAX_NDIM], ys[MFU_CONV_MAX_NDIM];
    const mfu_op_arg *x, *w;
    int64_t flops = 0;
    size_t ndim, sp;
    mfu_status st;

    if ((st = mfu_op_tensor_of(spec, call, MFU_ROLE_INPUT, 0, &x, error)) != MFU_OK)
        return st;
    ndim = x->count;
    if (ndim < 3 || ndim > MFU_CONV_MAX_NDIM)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "input",
                           "is not [n, c, *spatial] with 1 to 6 spatial dims");
    if ((st = mfu_op_tensor_of(spec, call, MFU_ROLE_WEIGHT, ndim, &w, error)) != MFU_OK)
        return st;
    sp = ndim - 2;
    const int transposed = mfu_op_int_of(spec, call, MFU_ROLE_TRANSPOSED, 0) != 0;
    for (size_t i = 0; i < ndim; i++)
        ys[i] = x->ints[i];
    if (!transposed) {
        /* out: [n, c_out, *spatial]; a transposed count visits input
         * points and does not read it */
        if ((st = mfu_op_int_list_of(spec, call, MFU_ROLE_STRIDE, sp, 1, stride, error)) !=
                MFU_OK ||
            (st = mfu_op_int_list_of(spec, call, MFU_ROLE_PADDING, sp, 0, padding, error)) !=
                MFU_OK ||
            (st = mfu_op_int_list_of(spec, call, MFU_ROLE_DILATION, sp, 1, dilation, error)) !=
                MFU_OK)
            return st;
        ys[1] = w->ints[0];
        for (size_t i = 0; i < sp; i++) {
            if (stride[i] < 1)
                return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "stride", "must be >= 1");
            if (padding[i] < 0)
                return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "padding", "must be >= 0");
            if (dilation[i] < 1)
                return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "dilation", "must be >= 1");
            st = conv_out_size(x->ints[i + 2], w->ints[i + 2], stride[i],
                               padding[i], dilation[i], &ys[i + 2]);
            if (st != MFU_OK)
                return mfu_op_fail(error, st, "padding", "makes the output size overflow");
        }
    }
    st = mfu_convolution_flop(x->ints, w->ints, ys, ndim, transposed, &flops);
    if (st != MFU_OK)
        return mfu_op_formula_status(st, error);
    /* the input and the weight gradient each cost the forward */
    mfu_op_set_flops(out, flops, mfu_op_per_operand(x, w), 0);
    return MFU_OK;
}

mfu_status mfu_op_count_convolution_backward(const mfu_op_spec *spec,
                                             const mfu_op_call *call,
                                             mfu_op_flops *out,
                                             mfu_op_error *error)
{
    const mfu_op_arg *go, *x, *w, *mask;
    int64_t flops = 0;
    int want_input = 1, want_weight = 1;
    mfu_status st;

    if ((st = mfu_op_tensor_of(spec, call, MFU_ROLE_GRAD_OUTPUT, 0, &go, error)) != MFU_OK)
        return st;
    if (go->count < 3 || go->count > MFU_CONV_MAX_NDIM)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "grad_output",
                           "is not [n, c, *spatial] with 1 to 6 spatial dims");
    if ((st = mfu_op_tensor_of(spec, call, MFU_ROLE_INPUT, go->count, &x, error)) != MFU_OK ||
        (st = mfu_op_tensor_of(spec, call, MFU_ROLE_WEIGHT, go->count, &w, error)) != MFU_OK)
        return st;
    mask = mfu_op_arg_of(spec, call, MFU_ROLE_OUTPUT_MASK);
    if (mask != NULL && mask->type == MFU_ARG_INT_LIST && mask->count >= 2 &&
        mask->ints != NULL) {
        want_input = mask->ints[0] != 0;
        want_weight = mask->ints[1] != 0;
    }
    /* NB: the real groups (FlopCounterMode counts the weight gradient
     * `groups` times too high; flops.h) */
    st = mfu_convolution_backward_flop(
        go->ints, x->ints, w->ints, go->count,
        mfu_op_int_of(spec, call, MFU_ROLE_TRANSPOSED, 0) != 0,
        mfu_op_int_of(spec, call, MFU_ROLE_GROUPS, 1), want_input, want_weight, &flops);
    if (st != MFU_OK)
        return mfu_op_formula_status(st, error);
    mfu_op_set_flops(out, flops, 0, 0); /* backward work: no model backward */
    return MFU_OK;
}
