/*
 * op_args.c -- reading one op call's arguments by role, and the shape of
 * its result (see op_internal.h). Every failure names the argument it is
 * about.
 */
#include "op_internal.h"

mfu_status mfu_op_fail(mfu_op_error *error, mfu_status status,
                       const char *argument, const char *reason)
{
    if (error != NULL) {
        error->argument = argument;
        error->reason = reason;
    }
    return status;
}

mfu_status mfu_op_formula_status(mfu_status st, mfu_op_error *error)
{
    if (st == MFU_OK)
        return MFU_OK;
    if (st == MFU_ERR_OVERFLOW)
        return mfu_op_fail(error, st, NULL, "the FLOP count does not fit in int64");
    return mfu_op_fail(error, st, NULL, "the argument shapes are inconsistent");
}

/* ---- reading arguments ---------------------------------------------------- */

const mfu_op_arg *mfu_op_arg_of(const mfu_op_spec *spec,
                                const mfu_op_call *call, mfu_op_role role)
{
    const int pos = mfu_op_position(spec, role);
    if (pos < 0 || call->args == NULL || (size_t)pos >= call->nargs)
        return NULL;
    const mfu_op_arg *arg = &call->args[pos];
    return arg->type == MFU_ARG_NONE ? NULL : arg;
}

mfu_status mfu_op_tensor_of(const mfu_op_spec *spec, const mfu_op_call *call,
                            mfu_op_role role, size_t ndim,
                            const mfu_op_arg **out, mfu_op_error *error)
{
    const char *name = mfu_op_role_name(role);
    const mfu_op_arg *arg = mfu_op_arg_of(spec, call, role);
    if (arg == NULL || arg->type != MFU_ARG_TENSOR)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, name, "is not a tensor");
    if (ndim != 0 && arg->count != ndim)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, name,
                           "has the wrong number of dims");
    if (arg->count > 0 && arg->ints == NULL)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, name, "has no sizes");
    for (size_t i = 0; i < arg->count; i++)
        if (arg->ints[i] < 0)
            return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, name,
                               "has a negative size");
    *out = arg;
    return MFU_OK;
}

/* An int argument, or `fallback` when absent or not an int. */
int64_t mfu_op_int_of(const mfu_op_spec *spec, const mfu_op_call *call,
                      mfu_op_role role, int64_t fallback)
{
    const mfu_op_arg *arg = mfu_op_arg_of(spec, call, role);
    return arg != NULL && arg->type == MFU_ARG_INT ? arg->value : fallback;
}

mfu_status mfu_op_int_list_of(const mfu_op_spec *spec, const mfu_op_call *call,
                              mfu_op_role role, size_t n, int64_t fallback,
                              int64_t *out, mfu_op_error *error)
{
    const mfu_op_arg *arg = mfu_op_arg_of(spec, call, role);
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
            return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, name, "has no values");
    }
    if (count > 1 && count != n)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, name,
                           "has a value count that is not 1 or the spatial rank");
    for (size_t i = 0; i < n; i++)
        out[i] = count == 0 ? fallback : values[count == 1 ? 0 : i];
    return MFU_OK;
}

unsigned mfu_op_per_operand(const mfu_op_arg *x, const mfu_op_arg *y)
{
    return (unsigned)(x->requires_grad != 0) + (unsigned)(y->requires_grad != 0);
}

void mfu_op_set_flops(mfu_op_flops *out, int64_t flops, unsigned times,
                      int approximate)
{
    out->executed = flops;
    out->model_self = flops;
    out->model_backward = (uint64_t)flops * times;
    out->overcompute = 0;
    out->approximate = approximate;
}
