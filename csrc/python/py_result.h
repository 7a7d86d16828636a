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

/* Mixed precision: the block's ideal seconds (core/steps/mixed.h; NaN =
 * unknown), for its mfu_mixed. Call before the block is entered. */
void mfu_py_result_set_ideal_s(PyObject *result, double ideal_s);

/* The UtilizationResult type, and the module functions new_track() and
 * compute_metrics(); py_track.c's exec adds them to the module. */
/* Core field names -> the argument names a caller used for them. */
typedef struct mfu_py_field_rename {
    const char *core;
    const char *python;
} mfu_py_field_rename;

/* track()'s: flop_count, hfu_flop_count (NULL-terminated). */
extern const mfu_py_field_rename mfu_py_track_renames[];

/* Validate the parsed work and peak (core/steps/stats.h); -1 with ValueError
 * naming the argument (as `renames`, may be NULL, call it). */
int mfu_py_check_work_and_peak(const mfu_work *work, const mfu_peak *peak,
                               const mfu_py_field_rename *renames);

/* num_gpus: devices behind one figure (core/base/mfu_limits.h); -1 raises. */
int mfu_py_num_gpus_arg(PyObject *obj, int *out);

extern PyType_Spec mfu_py_result_spec;

#endif /* MFU_PY_RESULT_H */
