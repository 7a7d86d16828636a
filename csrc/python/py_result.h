/*
 * py_result.h -- the result of a timed block (py_result.c), shared with
 * track() (py_track.c).
 *
 * Free threading (module.c declares Py_MOD_GIL_NOT_USED): state shared
 * between threads is read and changed only inside a critical section on
 * its owner (the module for track()'s resolution cache, a result for its
 * own figures). Critical sections cost nothing with the GIL (they compile
 * to a plain block); Python versions before 3.13, which have no
 * free-threaded build, get the same plain block below.
 */
#ifndef MFU_PY_RESULT_H
#define MFU_PY_RESULT_H

#include "mfu_module.h"

#ifndef Py_BEGIN_CRITICAL_SECTION
/* Python < 3.13: no free-threaded build exists; the GIL serializes. */
#define Py_BEGIN_CRITICAL_SECTION(op) { (void)(op);
#define Py_END_CRITICAL_SECTION() }
#endif

/* A new, not yet entered result from its nine values (flop_count,
 * param_bytes, hfu_flop_count, num_tokens, peak_flops_per_sec,
 * peak_bytes_per_sec, num_gpus, dtype name, gpu_spec), timed on `timer` (a
 * MarkTimer; NULL: the CPU clock) on `stream`. Bad values raise, naming the
 * argument. New reference, or NULL. */
PyObject *mfu_py_result_new(mfu_module_state *state, PyObject *const *values,
                            PyObject *timer, uintptr_t stream);

/* Mixed precision: the block's ideal seconds (core/mixed.h; NaN =
 * unknown), for its mfu_mixed. Call before the block is entered. */
void mfu_py_result_set_ideal_s(PyObject *result, double ideal_s);

/* The UtilizationResult type, and the module functions new_track() and
 * compute_metrics(); py_track.c's exec adds them to the module. */
extern PyType_Spec mfu_py_result_spec;
extern PyMethodDef mfu_py_result_functions[];

#endif /* MFU_PY_RESULT_H */
