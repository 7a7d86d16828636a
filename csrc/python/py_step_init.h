/*
 * py_step_init.h -- the construction of _C.StepTracker (py_step_init.c),
 * which py_step_tracker.c puts in the type's slots.
 */
#ifndef MFU_PY_STEP_INIT_H
#define MFU_PY_STEP_INIT_H

#include "py_step_object.h"

PyObject *mfu_py_step_new(PyTypeObject *type, PyObject *args, PyObject *kwargs);

/* StepTracker(*, clock='cpu', stream=0, model_flops=None, executed_flops=None,
 *             param_bytes=None, peak_flops_per_sec=None,
 *             peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1,
 *             dtype_peaks=None, flops_by_dtype=None) */
int mfu_py_step_init(PyObject *self, PyObject *args, PyObject *kwargs);
void mfu_py_step_dealloc(PyObject *self);

/* clock, stream, window, warmup, closed. */
extern PyGetSetDef mfu_py_step_getset[];

/* dtype_peaks: None (no dtype has a peak) or a sequence of MFU_DTYPE_COUNT
 * per-device peaks in FLOP/s, None for a dtype without one, in dtype order
 * (core/base/dtypes.h; _C.dtype_names()). -1 with an exception naming it. */
int mfu_py_dtype_peaks_arg(PyObject *obj, double *out);

/* The warning for FLOPs of a dtype the device has no peak for. */
void mfu_py_no_peak_message(mfu_dtype dtype, char *message, size_t size);

#endif /* MFU_PY_STEP_INIT_H */
