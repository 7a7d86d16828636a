/*
 * ops.c -- one op call -> executed and model FLOPs (see ops.h): the entry
 * points, the sites and the backward rule, the compute dtype. Per kind the
 * count itself is op_linear.c's or op_attention.c's, over the argument
 * readers of op_args.c (op_internal.h).
 */
#include "op_internal.h"

/* ---- sites and the backward rule -------------------------------------------- */

mfu_op_site mfu_op_site_of(const mfu_op_call *call)
{
    if (call == NULL || !call->backward_phase)
        return MFU_SITE_FORWARD;
    if (call->node == MFU_NODE_UNKNOWN)
        return MFU_SITE_BACKWARD;
    if (call->recomputed || call->saved_tensor_hooks)
        return MFU_SITE_RECOMPUTE; /* the non-reentrant checkpoint discards its graph */
    if (call->node == MFU_NODE_CHECKPOINT)
        /* the reentrant checkpoint recomputes under enable_grad; a custom
         * Function's forward inside it runs without grad */
        return call->grad_enabled ? MFU_SITE_RECOMPUTE_BACKPROP : MFU_SITE_RECOMPUTE;
    if (call->node == MFU_NODE_CUSTOM)
        return call->grad_enabled ? MFU_SITE_RECOMPUTE_BACKPROP : MFU_SITE_CUSTOM_BACKWARD;
    return MFU_SITE_BACKWARD; /* grad on: a backward with create_graph=True */
}

const char *mfu_op_site_name(mfu_op_site site)
{
    switch (site) {
    case MFU_SITE_FORWARD: return "forward";
    case MFU_SITE_BACKWARD: return "backward";
    case MFU_SITE_CUSTOM_BACKWARD: return "custom_backward";
    case MFU_SITE_RECOMPUTE: return "recompute";
    case MFU_SITE_RECOMPUTE_BACKPROP: return "recompute_backprop";
    }
    return NULL;
}

/* The site counts the call's own model FLOPs: the forward, and a backward
 * where it runs ("Reaching the loss"). */
static int counts_self(mfu_op_site site)
{
    return site == MFU_SITE_FORWARD || site == MFU_SITE_BACKWARD ||
           site == MFU_SITE_CUSTOM_BACKWARD;
}

/* The call anticipates the backward its graph will run: the forward, with
 * grad on. */
static int anticipates_backward(const mfu_op_call *call, mfu_op_site site)
{
    return call->grad_enabled && site == MFU_SITE_FORWARD;
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
        const mfu_op_arg *arg = mfu_op_arg_of(spec, call, first[i]);
        if (arg != NULL && arg->type == MFU_ARG_TENSOR) {
            code = arg->dtype;
            break;
        }
    }
    return compute_dtype(code, call->tf32, conv ? MFU_TF32_CONV : MFU_TF32_MATMUL);
}

/* ---- entry points --------------------------------------------------------- */

/* One of the matmuls of a causal math-path attention's backward under
 * "half" (mfu_op_call.square_model): the model share of what it executes. */
static void apply_square_share(const mfu_op_call *call, mfu_op_flops *f)
{
    if (call->causal != MFU_CAUSAL_HALF || call->square_executed <= 0 ||
        call->square_model < 0 || call->square_model >= call->square_executed ||
        f->executed <= 0)
        return;
    const __int128 share = (__int128)f->executed * call->square_model / call->square_executed;
    f->model_self = (int64_t)share; /* <= executed */
    f->overcompute = (uint64_t)(f->executed - f->model_self);
}

/* Keep what the call's site counts (see "Sites" in ops.h). */
static void apply_site(const mfu_op_call *call, mfu_op_flops *f,
                       uint64_t oc_backward)
{
    f->site = mfu_op_site_of(call);
    if (f->site != MFU_SITE_FORWARD && counts_self(f->site))
        apply_square_share(call, f);
    if (!counts_self(f->site)) {
        f->model_self = 0;
        f->overcompute = 0;
        f->mask_read = f->mask_tensor = 0;
    }
    if (anticipates_backward(call, f->site)) {
        f->overcompute_backward = oc_backward;
    } else {
        f->model_backward = 0;
        f->overcompute_backward = 0;
    }
}

mfu_status mfu_op_count(const mfu_op_spec *spec, const mfu_op_call *call,
                        mfu_op_flops *out, mfu_op_error *error)
{
    mfu_op_flops result = {.dtype = MFU_DTYPE_FP32, .site = MFU_SITE_FORWARD};
    uint64_t oc_backward = 0;
    mfu_status st;

    if (spec == NULL || call == NULL || out == NULL)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, NULL, "no op, call or output");
    if (call->causal != MFU_CAUSAL_FULL && call->causal != MFU_CAUSAL_HALF)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, NULL,
                           "the causal convention is neither full nor half");
    if ((unsigned)call->node > MFU_NODE_CHECKPOINT)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, NULL, "unknown autograd node kind");
    switch (spec->kind) {
    case MFU_OP_MM:
    case MFU_OP_BMM:
    case MFU_OP_GROUPED_MM:
        st = mfu_op_count_matmul(spec, call, &result, error);
        break;
    case MFU_OP_CONVOLUTION:
        st = mfu_op_count_convolution(spec, call, &result, error);
        break;
    case MFU_OP_CONVOLUTION_BACKWARD:
        st = mfu_op_count_convolution_backward(spec, call, &result, error);
        break;
    case MFU_OP_ATTENTION:
    case MFU_OP_ATTENTION_BACKWARD:
        st = mfu_op_count_attention(spec, call, &result, &oc_backward, error);
        break;
    default:
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, NULL, "unknown op kind");
    }
    if (st == MFU_OK) {
        apply_site(call, &result, oc_backward);
        result.dtype = op_dtype(spec, call);
        *out = result;
    }
    return st;
}

mfu_status mfu_op_custom_flops(int64_t flops, int64_t model_backward,
                               int any_input_requires_grad,
                               const mfu_op_call *call, mfu_op_flops *out)
{
    if (call == NULL || out == NULL || flops < 0 || model_backward < -1 ||
        (unsigned)call->node > MFU_NODE_CHECKPOINT)
        return MFU_ERR_INVALID_ARGUMENT;
    *out = (mfu_op_flops){.dtype = MFU_DTYPE_FP32};
    mfu_op_set_flops(out, flops, 0, 0);
    const mfu_op_site site = mfu_op_site_of(call);
    /* the declared backward, charged where the forward (or a reentrant
     * recompute, whose forward ran without grad) runs with grad on: the
     * count cannot see an opaque backward run */
    uint64_t declared = 0;
    if (any_input_requires_grad && call->grad_enabled &&
        (site == MFU_SITE_FORWARD || site == MFU_SITE_RECOMPUTE_BACKPROP))
        declared = model_backward >= 0 ? (uint64_t)model_backward
                                       : (uint64_t)flops * MFU_ATTENTION_MODEL_BACKWARD;
    apply_site(call, out, 0);
    out->model_backward = 0;
    if (declared > (uint64_t)(INT64_MAX - out->model_self))
        return MFU_ERR_OVERFLOW;
    out->model_self += (int64_t)declared;
    out->dtype = compute_dtype(call->input_dtype, call->tf32, MFU_TF32_MATMUL);
    return MFU_OK;
}
