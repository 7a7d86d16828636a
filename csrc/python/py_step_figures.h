/*
 * py_step_figures.h -- the methods of _C.StepTracker that read and book its
 * step records (py_step_figures.c), which py_step_tracker.c puts in the
 * type's method table.
 */
#ifndef MFU_PY_STEP_FIGURES_H
#define MFU_PY_STEP_FIGURES_H

#include "py_step_object.h"

/* summary(*, **totals) -> dict: the window's figures, each given field of
 * the record (core/step_fields.h) replacing the window's sum. */
PyObject *mfu_py_step_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* book(step, /, **fields) -> bool: the given fields booked onto a closed
 * step (False: no such step held). Bad values: one warning, recorded as
 * the field's unknown value. */
PyObject *mfu_py_step_book(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);

/* window_steps() -> [dict per step in the window, oldest first] */
PyObject *mfu_py_step_window_steps(PyObject *self, PyObject *ignored);


#endif /* MFU_PY_STEP_FIGURES_H */
