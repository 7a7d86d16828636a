/*
 * mfu_module.h -- shared declarations of the CPython extension mfu_tracker._C.
 *
 * module.c holds only the module definition and its init; each topic lives in
 * its own py_<topic>.c, which exposes one exec function adding its functions
 * and types to the module. Every file of the extension includes this header.
 *
 * Errors cross from C in one call: mfu_py_raise() maps an mfu_status to an
 * exception whose message names the bad argument, and returns NULL.
 */
#ifndef MFU_MODULE_H
#define MFU_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../core/mfu_core.h"

/* Per-module state (multi-phase init: no C globals hold Python objects). */
typedef struct mfu_module_state {
    PyTypeObject *track_type; /* mfu_tracker._C.UtilizationResult */
    int warned_mfu_above_one; /* the "MFU > 1" warning is given once */
} mfu_module_state;

/* The state of `module` (never NULL for a module created by our init). */
mfu_module_state *mfu_module_get_state(PyObject *module);

/* Set an exception for `status` about `argument` with an optional detail
 * (printf-style, may be NULL) and return NULL:
 *   MFU_ERR_INVALID_ARGUMENT -> ValueError("argument: detail")
 *   MFU_ERR_OVERFLOW         -> OverflowError
 *   MFU_ERR_NOT_FOUND        -> LookupError
 *   MFU_ERR_NO_MEMORY        -> MemoryError
 *   anything else            -> RuntimeError */
PyObject *mfu_py_raise(mfu_status status, const char *argument,
                       const char *detail_format, ...);

/* A Python float, or None for NaN ("unavailable" in the core). */
PyObject *mfu_py_float_or_none(double value);

/* Convert an int/float argument (not bool) to double; None -> NaN when
 * `allow_none`. Returns -1 with TypeError naming `argument` otherwise. */
int mfu_py_number_arg(PyObject *obj, const char *argument, int allow_none,
                      double *out);

/* Topic exec functions: add functions and types to the module; 0 / -1. */
int mfu_py_track_exec(PyObject *module);
int mfu_py_gpu_specs_exec(PyObject *module);
int mfu_py_flops_exec(PyObject *module);

#endif /* MFU_MODULE_H */
