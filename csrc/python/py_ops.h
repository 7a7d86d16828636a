/*
 * py_ops.h -- what mfu_tracker._C shares about op counting (py_ops.c).
 *
 * Two things live here, once for the whole package:
 *   - the core's op table and mfu_op_count (core/ops/ops.h), and
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

#include "../core/ops/ops.h"
#include "mfu_capsules.h" /* the table _C publishes: mfu_ops_api */

#ifdef __cplusplus
extern "C" {
#endif


#ifdef __cplusplus
}
#endif

#endif /* MFU_PY_OPS_H */
