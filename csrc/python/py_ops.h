/*
 * py_ops.h -- what mfu_tracker._C shares about op counting (py_ops.c).
 *
 * Two things live here, once for the whole package:
 *   - the core's op table and mfu_op_count (core/ops.h), and
 *   - the registry of custom FLOP formulas: Python callables, keyed by op
 *     name ("mylib::op"), for ops the table does not know.
 * Python reaches them as _C functions (op_table, op_count,
 * register_flop_formula, ...); the C++ observer (mfu_tracker._torch)
 * through the table of function pointers below, which _C publishes as the
 * PyCapsule MFU_OPS_API_CAPSULE. So both FLOP counters classify, count and
 * call custom formulas with the same compiled code.
 *
 * The registry: register / unregister under the GIL; lookups from any
 * thread without the GIL (a lock of its own, never held while calling
 * Python). An unregistered formula stays alive until _C goes away, so an
 * observer that looked it up just before can still call it; every
 * (un)registration bumps a generation, so per-thread caches of lookups
 * know when to drop them.
 */
#ifndef MFU_PY_OPS_H
#define MFU_PY_OPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../core/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 1 was the per-formula table of flops.h (mfu_flops_api); 2 had
 * no dtype in mfu_op_call / mfu_op_flops; 3 had fewer roles (no windows,
 * no block masks: a smaller mfu_op_input array). */
#define MFU_OPS_API_VERSION 4u
#define MFU_OPS_API_CAPSULE "mfu_tracker._C._ops_api"

/* A registered custom formula (opaque). */
typedef struct mfu_formula mfu_formula;

typedef struct mfu_ops_api {
    unsigned abi_version; /* MFU_OPS_API_VERSION of the publisher */

    struct { /* core/ops.h (and mfu_status_str); any thread */
        const char *(*status_str)(mfu_status status);
        const mfu_op_spec *(*find)(const char *name);
        size_t (*inputs)(const mfu_op_spec *spec, mfu_op_input *inputs);
        const char *(*role_name)(mfu_op_role role);
        mfu_status (*count)(const mfu_op_spec *spec, const mfu_op_call *call,
                            mfu_op_flops *out, mfu_op_error *error);
    } core;

    struct { /* the custom formulas of this _C; pass `registry` to each */
        void *registry;
        /* Any thread, no GIL needed. */
        uint64_t (*generation)(void *registry);
        const mfu_formula *(*find)(void *registry, const char *name);
        /* GIL held. Call `formula` with `args` (a tuple: the op's arguments
         * in schema order, tensors as shape tuples) and turn its answer into
         * *out (mfu_op_custom_flops' rule). 0, or -1 with an exception set
         * whose text says what went wrong ("custom formula raised: ..."). */
        int (*count)(const mfu_formula *formula, PyObject *args,
                     int any_input_requires_grad, const mfu_op_call *call,
                     mfu_op_flops *out);
    } formulas;
} mfu_ops_api;

/* Add the op functions and the capsule to the module (py_flops.c calls it
 * from its exec); 0 / -1. */
int mfu_py_ops_exec(PyObject *module);

#ifdef __cplusplus
}
#endif

#endif /* MFU_PY_OPS_H */
