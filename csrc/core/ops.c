/*
 * ops.c -- one op call -> executed and model FLOPs (see ops.h).
 *
 * Per kind: read the row's arguments from the call, derive what the formula
 * needs (a convolution's output size, attention dims from the layout,
 * per-sequence lengths), call flops.h, then apply the backward rule. Every
 * failure names the argument it is about.
 */
#include "ops.h"

/* A failure: fill *error (may be NULL) and return `status`. */
static mfu_status fail(mfu_op_error *error, mfu_status status,
                       const char *argument, const char *reason)
{
    if (error != NULL) {
        error->argument = argument;
        error->reason = reason;
    }
    return status;
}

/* A formula's status, for the call as a whole. */
static mfu_status formula_status(mfu_status st, mfu_op_error *error)
{
    if (st == MFU_OK)
        return MFU_OK;
    if (st == MFU_ERR_OVERFLOW)
        return fail(error, st, NULL, "the FLOP count does not fit in int64");
    return fail(error, st, NULL, "the argument shapes are inconsistent");
}

/* ---- reading arguments ---------------------------------------------------- */

/* The role's argument, or NULL when the row reads none, it is past the
 * call's arguments, or it is None. */
static const mfu_op_arg *arg_of(const mfu_op_spec *spec,
                                const mfu_op_call *call, mfu_op_role role)
{
    const int pos = mfu_op_position(spec, role);
    if (pos < 0 || call->args == NULL || (size_t)pos >= call->nargs)
        return NULL;
    const mfu_op_arg *arg = &call->args[pos];
    return arg->type == MFU_ARG_NONE ? NULL : arg;
}

/* A tensor argument of rank `ndim` (0: any rank) with non-negative sizes. */
static mfu_status tensor_of(const mfu_op_spec *spec, const mfu_op_call *call,
                            mfu_op_role role, size_t ndim,
                            const mfu_op_arg **out, mfu_op_error *error)
{
    const char *name = mfu_op_role_name(role);
    const mfu_op_arg *arg = arg_of(spec, call, role);
    if (arg == NULL || arg->type != MFU_ARG_TENSOR)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, name, "is not a tensor");
    if (ndim != 0 && arg->count != ndim)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, name,
                    "has the wrong number of dims");
    if (arg->count > 0 && arg->ints == NULL)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, name, "has no sizes");
    for (size_t i = 0; i < arg->count; i++)
        if (arg->ints[i] < 0)
            return fail(error, MFU_ERR_INVALID_ARGUMENT, name,
                        "has a negative size");
    *out = arg;
    return MFU_OK;
}

/* An int argument, or `fallback` when absent or not an int. */
static int64_t int_of(const mfu_op_spec *spec, const mfu_op_call *call,
                      mfu_op_role role, int64_t fallback)
{
    const mfu_op_arg *arg = arg_of(spec, call, role);
    return arg != NULL && arg->type == MFU_ARG_INT ? arg->value : fallback;
}

/* An int list argument as `n` values: absent -> `fallback` each; one value
 * (or a plain int) -> that value each, as aten's expand_param_if_needed. */
static mfu_status int_list_of(const mfu_op_spec *spec, const mfu_op_call *call,
                              mfu_op_role role, size_t n, int64_t fallback,
                              int64_t *out, mfu_op_error *error)
{
    const mfu_op_arg *arg = arg_of(spec, call, role);
    const char *name = mfu_op_role_name(role);
    const int64_t *values = NULL;
    size_t count = 0;

    if (arg != NULL && arg->type == MFU_ARG_INT) {
        values = &arg->value;
        count = 1;
    } else if (arg != NULL && arg->type == MFU_ARG_INT_LIST) {
        values = arg->ints;
        count = arg->count;
        if (count > 0 && values == NULL)
            return fail(error, MFU_ERR_INVALID_ARGUMENT, name, "has no values");
    }
    if (count > 1 && count != n)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, name,
                    "has a value count that is not 1 or the spatial rank");
    for (size_t i = 0; i < n; i++)
        out[i] = count == 0 ? fallback : values[count == 1 ? 0 : i];
    return MFU_OK;
}

/* ---- the backward rule ------------------------------------------------------ */

/* Model backward is counted for forward-phase calls with grad mode on. */
static int counts_model_backward(const mfu_op_call *call)
{
    return !call->backward_phase && call->grad_enabled;
}

/* Matmul and convolution: one forward's worth of model backward per
 * operand (a and b; input and weight) that needs a gradient. */
static unsigned per_operand(const mfu_op_call *call, const mfu_op_arg *x,
                            const mfu_op_arg *y)
{
    if (!counts_model_backward(call))
        return 0;
    return (unsigned)(x->requires_grad != 0) + (unsigned)(y->requires_grad != 0);
}

/* executed = flops; model_backward = `times` x flops (times <= 2: fits in
 * uint64 since flops <= INT64_MAX). */
static void set_flops(mfu_op_flops *out, int64_t flops, unsigned times,
                      int approximate)
{
    out->executed = flops;
    out->model_backward = (uint64_t)flops * times;
    out->approximate = approximate;
}

/* ---- matmul family ---------------------------------------------------------- */

static mfu_status count_matmul(const mfu_op_spec *spec, const mfu_op_call *call,
                               mfu_op_flops *out, mfu_op_error *error)
{
    const size_t rank = spec->kind == MFU_OP_MM ? 2 : spec->kind == MFU_OP_BMM ? 3 : 0;
    const mfu_op_arg *a, *b;
    int64_t flops = 0;
    mfu_status st;

    if ((st = tensor_of(spec, call, MFU_ROLE_A, rank, &a, error)) != MFU_OK ||
        (st = tensor_of(spec, call, MFU_ROLE_B, rank, &b, error)) != MFU_OK)
        return st;
    if (spec->kind == MFU_OP_MM) {
        /* a: [m, k] @ b: [k, n] */
        if (a->ints[1] != b->ints[0])
            return fail(error, MFU_ERR_INVALID_ARGUMENT, "b",
                        "has an inner dim unlike a's");
        st = mfu_mm_flop(a->ints[0], a->ints[1], b->ints[1], &flops);
    } else if (spec->kind == MFU_OP_BMM) {
        /* a: [b, m, k] @ b: [b, k, n] */
        if (a->ints[0] != b->ints[0] || a->ints[2] != b->ints[1])
            return fail(error, MFU_ERR_INVALID_ARGUMENT, "b",
                        "has a batch or inner dim unlike a's");
        st = mfu_bmm_flop(a->ints[0], a->ints[1], a->ints[2], b->ints[2], &flops);
    } else {
        st = mfu_grouped_mm_flop(a->ints, a->count, b->ints, b->count, &flops);
    }
    if (st != MFU_OK)
        return formula_status(st, error);
    set_flops(out, flops, per_operand(call, a, b), 0);
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

static mfu_status count_convolution(const mfu_op_spec *spec,
                                    const mfu_op_call *call, mfu_op_flops *out,
                                    mfu_op_error *error)
{
    int64_t stride[MFU_CONV_MAX_NDIM], padding[MFU_CONV_MAX_NDIM];
    int64_t dilation[MFU_CONV_MAX_NDIM], ys[MFU_CONV_MAX_NDIM];
    const mfu_op_arg *x, *w;
    int64_t flops = 0;
    size_t ndim, sp;
    mfu_status st;

    if ((st = tensor_of(spec, call, MFU_ROLE_INPUT, 0, &x, error)) != MFU_OK)
        return st;
    ndim = x->count;
    if (ndim < 3 || ndim > MFU_CONV_MAX_NDIM)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, "input",
                    "is not [n, c, *spatial] with 1 to 6 spatial dims");
    if ((st = tensor_of(spec, call, MFU_ROLE_WEIGHT, ndim, &w, error)) != MFU_OK)
        return st;
    sp = ndim - 2;
    const int transposed = int_of(spec, call, MFU_ROLE_TRANSPOSED, 0) != 0;
    for (size_t i = 0; i < ndim; i++)
        ys[i] = x->ints[i];
    if (!transposed) {
        /* out: [n, c_out, *spatial]; a transposed count visits input
         * points and does not read it */
        if ((st = int_list_of(spec, call, MFU_ROLE_STRIDE, sp, 1, stride, error)) != MFU_OK ||
            (st = int_list_of(spec, call, MFU_ROLE_PADDING, sp, 0, padding, error)) != MFU_OK ||
            (st = int_list_of(spec, call, MFU_ROLE_DILATION, sp, 1, dilation, error)) != MFU_OK)
            return st;
        ys[1] = w->ints[0];
        for (size_t i = 0; i < sp; i++) {
            if (stride[i] < 1)
                return fail(error, MFU_ERR_INVALID_ARGUMENT, "stride", "must be >= 1");
            if (padding[i] < 0)
                return fail(error, MFU_ERR_INVALID_ARGUMENT, "padding", "must be >= 0");
            if (dilation[i] < 1)
                return fail(error, MFU_ERR_INVALID_ARGUMENT, "dilation", "must be >= 1");
            st = conv_out_size(x->ints[i + 2], w->ints[i + 2], stride[i],
                               padding[i], dilation[i], &ys[i + 2]);
            if (st != MFU_OK)
                return fail(error, st, "padding", "makes the output size overflow");
        }
    }
    st = mfu_convolution_flop(x->ints, w->ints, ys, ndim, transposed, &flops);
    if (st != MFU_OK)
        return formula_status(st, error);
    /* the input and the weight gradient each cost the forward */
    set_flops(out, flops, per_operand(call, x, w), 0);
    return MFU_OK;
}

static mfu_status count_convolution_backward(const mfu_op_spec *spec,
                                             const mfu_op_call *call,
                                             mfu_op_flops *out,
                                             mfu_op_error *error)
{
    const mfu_op_arg *go, *x, *w, *mask;
    int64_t flops = 0;
    int want_input = 1, want_weight = 1;
    mfu_status st;

    if ((st = tensor_of(spec, call, MFU_ROLE_GRAD_OUTPUT, 0, &go, error)) != MFU_OK)
        return st;
    if (go->count < 3 || go->count > MFU_CONV_MAX_NDIM)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, "grad_output",
                    "is not [n, c, *spatial] with 1 to 6 spatial dims");
    if ((st = tensor_of(spec, call, MFU_ROLE_INPUT, go->count, &x, error)) != MFU_OK ||
        (st = tensor_of(spec, call, MFU_ROLE_WEIGHT, go->count, &w, error)) != MFU_OK)
        return st;
    mask = arg_of(spec, call, MFU_ROLE_OUTPUT_MASK);
    if (mask != NULL && mask->type == MFU_ARG_INT_LIST && mask->count >= 2 &&
        mask->ints != NULL) {
        want_input = mask->ints[0] != 0;
        want_weight = mask->ints[1] != 0;
    }
    /* NB: the real groups (FlopCounterMode counts the weight gradient
     * `groups` times too high; flops.h) */
    st = mfu_convolution_backward_flop(
        go->ints, x->ints, w->ints, go->count,
        int_of(spec, call, MFU_ROLE_TRANSPOSED, 0) != 0,
        int_of(spec, call, MFU_ROLE_GROUPS, 1), want_input, want_weight, &flops);
    if (st != MFU_OK)
        return formula_status(st, error);
    set_flops(out, flops, 0, 0); /* backward work: no model backward */
    return MFU_OK;
}

/* ---- attention ------------------------------------------------------------ */

/* The call's mask: causal (is_causal, or custom_mask_type != 0 for the
 * efficient kernels), a window and a chunk (flops.h mfu_attention_mask). */
static mfu_attention_mask attention_mask(const mfu_op_spec *spec,
                                         const mfu_op_call *call)
{
    mfu_attention_mask mask = {
        .window_left = int_of(spec, call, MFU_ROLE_WINDOW_LEFT, -1),
        .window_right = int_of(spec, call, MFU_ROLE_WINDOW_RIGHT, -1),
        .chunk = int_of(spec, call, MFU_ROLE_ATTENTION_CHUNK, 0),
    };
    if (int_of(spec, call, MFU_ROLE_IS_CAUSAL, 0) != 0 ||
        int_of(spec, call, MFU_ROLE_CUSTOM_MASK_TYPE, 0) != 0)
        mask.window_right = 0; /* causal: flash-attn sets right = 0 too */
    return mask;
}

/* A cumulative-lengths argument: a 1-D tensor; NULL when absent. */
static mfu_status offsets_of(const mfu_op_spec *spec, const mfu_op_call *call,
                             mfu_op_role role, const mfu_op_arg **out,
                             mfu_op_error *error)
{
    const mfu_op_arg *arg = arg_of(spec, call, role);
    *out = NULL;
    if (arg == NULL || arg->type != MFU_ARG_TENSOR)
        return MFU_OK;
    if (arg->count != 1 || arg->ints == NULL || arg->ints[0] < 0)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, mfu_op_role_name(role),
                    "is not a 1-D tensor");
    *out = arg;
    return MFU_OK;
}

static mfu_status masked_flops(const mfu_attention_shape *shape,
                               const mfu_attention_mask *mask, mfu_causal causal,
                               int backward, int64_t *flops)
{
    return backward ? mfu_masked_attention_backward_flop(shape, mask, causal, flops)
                    : mfu_masked_attention_flop(shape, mask, causal, flops);
}

/* Packed attention: one attention of batch 1 per sequence of the
 * cumulative lengths; q: [total, h, d] (or [1, total, h, d]). */
static mfu_status count_varlen(const mfu_op_spec *spec, const mfu_op_call *call,
                               const mfu_op_arg *const qkv[3],
                               const mfu_op_arg *cu_q,
                               const mfu_attention_mask *mask, int backward,
                               int64_t *flops, int *approximate,
                               mfu_op_error *error)
{
    const mfu_op_arg *q = qkv[0], *k = qkv[1], *v = qkv[2], *cu_k;
    const size_t rank = q->count;
    mfu_status st;

    if (rank != 3 && rank != 4)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, "query",
                    "is not [total, h, d] or [1, total, h, d]");
    if (k->count != rank || v->count != rank)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, "key",
                    "has a rank unlike query's");
    if ((st = offsets_of(spec, call, MFU_ROLE_CU_SEQLENS_K, &cu_k, error)) != MFU_OK)
        return st;
    const size_t hd = rank - 2; /* the heads dim; the head dim follows */
    const int64_t hq = q->ints[hd], hkv = k->ints[hd];
    const int64_t dqk = q->ints[hd + 1], dv = v->ints[hd + 1];
    const size_t n = (size_t)cu_q->ints[0];

    if (cu_q->values == NULL || (cu_k != NULL && cu_k->values == NULL)) {
        /* Lengths unknown (meta): each of the n - 1 sequences counts
         * max_seqlen, i.e. one attention of batch n - 1. */
        const int64_t max_q = int_of(spec, call, MFU_ROLE_MAX_SEQLEN_Q, 0);
        const mfu_attention_shape shape = {
            .batch = n > 0 ? (int64_t)n - 1 : 0,
            .heads_q = hq,
            .heads_kv = hkv,
            .seq_q = max_q,
            .seq_kv = int_of(spec, call, MFU_ROLE_MAX_SEQLEN_K, max_q),
            .head_dim_qk = dqk,
            .head_dim_v = dv,
        };
        *approximate = 1;
        st = masked_flops(&shape, mask, call->causal, backward, flops);
    } else {
        if (cu_k != NULL && (size_t)cu_k->ints[0] != n)
            return fail(error, MFU_ERR_INVALID_ARGUMENT, "cu_seqlens_k",
                        "has a length unlike cu_seqlens_q's");
        const int64_t *ck = cu_k != NULL ? cu_k->values : NULL;
        st = backward ? mfu_varlen_masked_attention_backward_flop(
                            cu_q->values, ck, n, hq, hkv, dqk, dv, mask, call->causal, flops)
                      : mfu_varlen_masked_attention_flop(
                            cu_q->values, ck, n, hq, hkv, dqk, dv, mask, call->causal, flops);
    }
    return formula_status(st, error);
}

/* q, k, v of a dense call as an attention shape, by the row's layout. */
static mfu_status dense_shape(const mfu_op_spec *spec, const mfu_op_arg *const qkv[3],
                              mfu_attention_shape *shape, mfu_op_error *error)
{
    const int64_t *q = qkv[0]->ints, *k = qkv[1]->ints, *v = qkv[2]->ints;
    if (spec->layout == MFU_LAYOUT_THD)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, "cu_seqlens_q",
                    "is required by varlen attention");
    if (qkv[0]->count != 4 || qkv[1]->count != 4 || qkv[2]->count != 4)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, NULL,
                    "query, key and value are not all 4-D");
    if (k[0] != q[0] || v[0] != q[0] || k[3] != q[3])
        return fail(error, MFU_ERR_INVALID_ARGUMENT, "key",
                    "has a batch or head dim unlike query's");
    if (spec->layout == MFU_LAYOUT_BHSD)
        /* q: [b, h, s_q, d_qk], k: [b, h_kv, s_kv, d_qk], v: [b, h_kv, s_kv, d_v] */
        *shape = (mfu_attention_shape){q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
    else
        /* q: [b, s_q, h, d_qk], k: [b, s_kv, h_kv, d_qk], v: [b, s_kv, h_kv, d_v] */
        *shape = (mfu_attention_shape){q[0], q[2], k[2], q[1], k[1], q[3], v[3]};
    return MFU_OK;
}

/* A block mask's counts ([b, h, q_blocks]) and indices ([b, h, q_blocks,
 * kv_blocks]) of one kind (partial or full); both NULL when absent. */
static mfu_status blocks_of(const mfu_op_spec *spec, const mfu_op_call *call,
                            mfu_op_role counts_role, int optional,
                            const mfu_op_arg **counts, const mfu_op_arg **indices,
                            mfu_op_error *error)
{
    mfu_status st;
    *counts = *indices = NULL;
    if (optional && arg_of(spec, call, counts_role) == NULL &&
        arg_of(spec, call, (mfu_op_role)(counts_role + 1)) == NULL)
        return MFU_OK;
    if ((st = tensor_of(spec, call, counts_role, 3, counts, error)) != MFU_OK ||
        (st = tensor_of(spec, call, (mfu_op_role)(counts_role + 1), 4, indices, error)) != MFU_OK)
        return st;
    for (size_t i = 0; i < 3; i++)
        if ((*indices)->ints[i] != (*counts)->ints[i])
            return fail(error, MFU_ERR_INVALID_ARGUMENT,
                        mfu_op_role_name((mfu_op_role)(counts_role + 1)),
                        "has leading dims unlike its block counts'");
    return MFU_OK;
}

/* flex_attention's BlockMask: the computed blocks; unreadable (meta):
 * every block of the grid, the whole rectangle (exact for one block). */
static mfu_status count_blocks(const mfu_op_spec *spec, const mfu_op_call *call,
                               const mfu_attention_shape *shape, int backward,
                               int64_t *flops, int *approximate, mfu_op_error *error)
{
    const mfu_op_arg *num, *idx, *full_num, *full_idx;
    const int64_t q_size = int_of(spec, call, MFU_ROLE_Q_BLOCK_SIZE, 0);
    const int64_t kv_size = int_of(spec, call, MFU_ROLE_KV_BLOCK_SIZE, 0);
    mfu_status st;

    if ((st = blocks_of(spec, call, MFU_ROLE_KV_NUM_BLOCKS, 0, &num, &idx, error)) != MFU_OK ||
        (st = blocks_of(spec, call, MFU_ROLE_FULL_KV_NUM_BLOCKS, 1, &full_num, &full_idx,
                        error)) != MFU_OK)
        return st;
    if (q_size < 1 || kv_size < 1)
        return fail(error, MFU_ERR_INVALID_ARGUMENT,
                    q_size < 1 ? "q_block_size" : "kv_block_size", "must be >= 1");
    if (num->values == NULL || idx->values == NULL ||
        (full_num != NULL && (full_num->values == NULL || full_idx->values == NULL))) {
        const mfu_attention_mask none = {-1, -1, 0};
        *approximate = q_size < shape->seq_q || kv_size < shape->seq_kv;
        return formula_status(masked_flops(shape, &none, MFU_CAUSAL_FULL, backward, flops),
                              error);
    }
    const mfu_block_mask mask = {
        .batch = num->ints[0], .heads = num->ints[1], .q_blocks = num->ints[2],
        .q_block_size = q_size, .kv_block_size = kv_size,
        .num_blocks = num->values, .indices = idx->values, .kv_blocks = idx->ints[3],
        .full_num_blocks = full_num != NULL ? full_num->values : NULL,
        .full_indices = full_idx != NULL ? full_idx->values : NULL,
        .full_kv_blocks = full_idx != NULL ? full_idx->ints[3] : 0,
    };
    st = backward ? mfu_block_attention_backward_flop(shape, &mask, flops)
                  : mfu_block_attention_flop(shape, &mask, flops);
    if (st == MFU_ERR_INVALID_ARGUMENT)
        return fail(error, st, "kv_num_blocks",
                    "has counts, indices or dims that do not fit the query and key");
    return formula_status(st, error);
}

static mfu_status count_attention(const mfu_op_spec *spec,
                                  const mfu_op_call *call, mfu_op_flops *out,
                                  mfu_op_error *error)
{
    const int backward = spec->kind == MFU_OP_ATTENTION_BACKWARD;
    const mfu_attention_mask mask = attention_mask(spec, call);
    const mfu_op_arg *qkv[3], *cu_q;
    mfu_attention_shape shape;
    int64_t flops = 0;
    int approximate = 0;
    mfu_status st;

    if ((st = tensor_of(spec, call, MFU_ROLE_QUERY, 0, &qkv[0], error)) != MFU_OK ||
        (st = tensor_of(spec, call, MFU_ROLE_KEY, 0, &qkv[1], error)) != MFU_OK ||
        (st = tensor_of(spec, call, MFU_ROLE_VALUE, 0, &qkv[2], error)) != MFU_OK ||
        (st = offsets_of(spec, call, MFU_ROLE_CU_SEQLENS_Q, &cu_q, error)) != MFU_OK)
        return st;
    if (cu_q != NULL)
        st = count_varlen(spec, call, qkv, cu_q, &mask, backward, &flops, &approximate, error);
    else if ((st = dense_shape(spec, qkv, &shape, error)) == MFU_OK)
        st = mfu_op_position(spec, MFU_ROLE_KV_NUM_BLOCKS) >= 0
                 ? count_blocks(spec, call, &shape, backward, &flops, &approximate, error)
                 : formula_status(masked_flops(&shape, &mask, call->causal, backward, &flops),
                                  error);
    if (st != MFU_OK)
        return st;
    /* model backward of attention: MFU_ATTENTION_MODEL_BACKWARD (2) x its
     * forward (PaLM), whatever the kernel recomputes; a backward kernel is
     * backward work */
    const int any_grad = qkv[0]->requires_grad || qkv[1]->requires_grad ||
                         qkv[2]->requires_grad;
    set_flops(out, flops,
              !backward && counts_model_backward(call) && any_grad
                  ? (unsigned)MFU_ATTENTION_MODEL_BACKWARD : 0u,
              approximate);
    return MFU_OK;
}

/* ---- the compute dtype ---------------------------------------------------- */

/* An argument's dtype (MFU_OP_DTYPE), fp32 when it has none, TF32 where
 * the call allows it for `tf32_bit`. */
static mfu_dtype compute_dtype(int code, int tf32, int tf32_bit)
{
    mfu_dtype d = code >= 1 && code <= MFU_DTYPE_COUNT ? (mfu_dtype)(code - 1)
                                                        : MFU_DTYPE_FP32;
    return d == MFU_DTYPE_FP32 && (tf32 & tf32_bit) ? MFU_DTYPE_TF32 : d;
}

static mfu_dtype op_dtype(const mfu_op_spec *spec, const mfu_op_call *call)
{
    static const mfu_op_role first[] = {MFU_ROLE_A, MFU_ROLE_GRAD_OUTPUT,
                                        MFU_ROLE_INPUT, MFU_ROLE_QUERY};
    const int conv = spec->kind == MFU_OP_CONVOLUTION ||
                     spec->kind == MFU_OP_CONVOLUTION_BACKWARD;
    int code = 0;
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++) {
        const mfu_op_arg *arg = arg_of(spec, call, first[i]);
        if (arg != NULL && arg->type == MFU_ARG_TENSOR) {
            code = arg->dtype;
            break;
        }
    }
    return compute_dtype(code, call->tf32, conv ? MFU_TF32_CONV : MFU_TF32_MATMUL);
}

/* ---- entry points --------------------------------------------------------- */

mfu_status mfu_op_count(const mfu_op_spec *spec, const mfu_op_call *call,
                        mfu_op_flops *out, mfu_op_error *error)
{
    mfu_op_flops result = {0, 0, 0, MFU_DTYPE_FP32};
    mfu_status st;

    if (spec == NULL || call == NULL || out == NULL)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, NULL, "no op, call or output");
    if (call->causal != MFU_CAUSAL_FULL && call->causal != MFU_CAUSAL_HALF)
        return fail(error, MFU_ERR_INVALID_ARGUMENT, NULL,
                    "the causal convention is neither full nor half");
    switch (spec->kind) {
    case MFU_OP_MM:
    case MFU_OP_BMM:
    case MFU_OP_GROUPED_MM:
        st = count_matmul(spec, call, &result, error);
        break;
    case MFU_OP_CONVOLUTION:
        st = count_convolution(spec, call, &result, error);
        break;
    case MFU_OP_CONVOLUTION_BACKWARD:
        st = count_convolution_backward(spec, call, &result, error);
        break;
    case MFU_OP_ATTENTION:
    case MFU_OP_ATTENTION_BACKWARD:
        st = count_attention(spec, call, &result, error);
        break;
    default:
        return fail(error, MFU_ERR_INVALID_ARGUMENT, NULL, "unknown op kind");
    }
    if (st == MFU_OK) {
        result.dtype = op_dtype(spec, call);
        *out = result;
    }
    return st;
}

mfu_status mfu_op_custom_flops(int64_t flops, int64_t model_backward,
                               int any_input_requires_grad,
                               const mfu_op_call *call, mfu_op_flops *out)
{
    if (call == NULL || out == NULL || flops < 0 || model_backward < -1)
        return MFU_ERR_INVALID_ARGUMENT;
    out->executed = flops;
    out->approximate = 0;
    out->dtype = compute_dtype(call->input_dtype, call->tf32, MFU_TF32_MATMUL);
    if (!counts_model_backward(call) || !any_input_requires_grad)
        out->model_backward = 0;
    else if (model_backward >= 0)
        out->model_backward = (uint64_t)model_backward;
    else
        out->model_backward = (uint64_t)flops * 2u; /* as attention */
    return MFU_OK;
}
