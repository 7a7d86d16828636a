/*
 * op_internal.h -- what the files behind mfu_op_count (ops.h) share:
 *   op_args.c       reading a call's arguments by role, the error and the
 *                   result's shape;
 *   op_linear.c     counting the matmul family and convolutions;
 *   op_attention.c  counting attention (dense, packed, block masks);
 *   ops.c           the entry points, sites and the backward rule, the
 *                   compute dtype.
 * Private to csrc/core: not part of mfu_core.h (the C++ observer reads
 * ops.h only).
 */
#ifndef MFU_OP_INTERNAL_H
#define MFU_OP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* ---- op_args.c ------------------------------------------------------------ */

/* A failure: fill *error (may be NULL) and return `status`. */
mfu_status mfu_op_fail(mfu_op_error *error, mfu_status status, const char *argument,
                       const char *reason);

/* A formula's status, for the call as a whole (no argument named). */
mfu_status mfu_op_formula_status(mfu_status st, mfu_op_error *error);

/* The role's argument, or NULL when the row reads none, it is past the
 * call's arguments, or it is None. */
const mfu_op_arg *mfu_op_arg_of(const mfu_op_spec *spec, const mfu_op_call *call,
                                mfu_op_role role);

/* A tensor argument of rank `ndim` (0: any rank) with non-negative sizes. */
mfu_status mfu_op_tensor_of(const mfu_op_spec *spec, const mfu_op_call *call, mfu_op_role role,
                            size_t ndim, const mfu_op_arg **out, mfu_op_error *error);

/* An int argument, or `fallback` when absent or not an int. */
int64_t mfu_op_int_of(const mfu_op_spec *spec, const mfu_op_call *call, mfu_op_role role,
                      int64_t fallback);

/* An int list argument as `n` values: absent -> `fallback` each; one value
 * (or a plain int) -> that value each, as aten's expand_param_if_needed. */
mfu_status mfu_op_int_list_of(const mfu_op_spec *spec, const mfu_op_call *call,
                              mfu_op_role role, size_t n, int64_t fallback, int64_t *out,
                              mfu_op_error *error);

/* Matmul and convolution: one forward's worth of model backward per
 * operand (a and b; input and weight) that needs a gradient (applied only
 * where the site charges it: ops.c's apply_site). */
unsigned mfu_op_per_operand(const mfu_op_arg *x, const mfu_op_arg *y);

/* executed = model_self = flops; model_backward = `times` x flops (times
 * <= 2: fits in uint64 since flops <= INT64_MAX); no overcompute. */
void mfu_op_set_flops(mfu_op_flops *out, int64_t flops, unsigned times, int approximate);

/* ---- the counts per kind: *out's FLOPs before the site rule ---------------- */

/* op_linear.c: MFU_OP_MM, _BMM, _GROUPED_MM; _CONVOLUTION; _BACKWARD. */
mfu_status mfu_op_count_matmul(const mfu_op_spec *spec, const mfu_op_call *call,
                               mfu_op_flops *out, mfu_op_error *error);
mfu_status mfu_op_count_convolution(const mfu_op_spec *spec, const mfu_op_call *call,
                                    mfu_op_flops *out, mfu_op_error *error);
mfu_status mfu_op_count_convolution_backward(const mfu_op_spec *spec, const mfu_op_call *call,
                                             mfu_op_flops *out, mfu_op_error *error);

/* op_attention.c: MFU_OP_ATTENTION and _ATTENTION_BACKWARD; *oc_backward
 * is the over-compute the call's backward will repeat. */
mfu_status mfu_op_count_attention(const mfu_op_spec *spec, const mfu_op_call *call,
                                  mfu_op_flops *out, uint64_t *oc_backward,
                                  mfu_op_error *error);

#endif /* MFU_OP_INTERNAL_H */
