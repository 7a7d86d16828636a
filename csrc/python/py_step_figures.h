/*
 * py_step_figures.h -- the methods of _C.StepTracker that read and book its
 * step records (py_step_figures.c), which py_step_tracker.c puts in the
 * type's method table.
 */
#ifndef MFU_PY_STEP_FIGURES_H
#define MFU_PY_STEP_FIGURES_H

#include "py_step_object.h"

/* The work fields of a step and of a window's totals, as summary() and
 * book() name them (module state's summary_kwnames). */
enum { MFU_PY_WORK_FIELDS = 6 };

/* summary(*, model_flops=None, executed_flops=None, num_tokens=None,
 * ideal_s=None, overcompute_flops=None, language_flops=None) -> dict */
PyObject *mfu_py_step_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* book(step, /, *, <the same six>) -> bool: booked (False: no such step
 * held). Bad values: one warning, recorded as unknown. */
PyObject *mfu_py_step_book(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);

/* window_steps() -> [dict per step in the window, oldest first] */
PyObject *mfu_py_step_window_steps(PyObject *self, PyObject *ignored);


#endif /* MFU_PY_STEP_FIGURES_H */
