/*
 * py_phases.h -- the phase methods of _C.StepTracker (py_phases.c), which
 * py_step_tracker.c puts in the type's method table.
 */
#ifndef MFU_PY_PHASES_H
#define MFU_PY_PHASES_H

#include "py_step_object.h"

/* The phase methods of StepTracker (py_phases.c): begin_phase(name),
 * switch_phase(name), end_phase(), _exclude_begin(), _exclude_end(),
 * phase_depth(), phase(name), phases() and ledger(). The four public marking methods
 * are METH_FASTCALL | METH_KEYWORDS: they check their own arguments, so a
 * wrong call names Tracker's method, not this base type's. */
PyObject *mfu_py_step_begin_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames);
PyObject *mfu_py_step_switch_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames);
PyObject *mfu_py_step_end_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames);
PyObject *mfu_py_step_exclude_begin(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_exclude_end(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_phase_depth(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);
PyObject *mfu_py_step_phases(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_ledger(PyObject *self, PyObject *ignored);

/* {phase name: seconds[p] / divisor} for each phase whose bit is set in
 * `marked`; NULL with an exception set on failure. */
PyObject *mfu_py_phase_dict(const step_object *s, const double *seconds, unsigned marked,
                            double divisor);

#endif /* MFU_PY_PHASES_H */
