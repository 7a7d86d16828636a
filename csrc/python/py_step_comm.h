/*
 * py_step_comm.h -- communication inside mfu_tracker._C: the sink methods
 * of _C.StepTracker and the module functions of py_comm.c (the registry
 * and its capsule, py_comm.h) and py_links.c (the link table, kinds and
 * bus factors for Python).
 */
#ifndef MFU_PY_STEP_COMM_H
#define MFU_PY_STEP_COMM_H

#include "py_comm.h"
#include "py_step_object.h"

/* StepTracker methods (py_comm.c): _comm_subscribe(), _comm_unsubscribe(),
 * comm(), _comm_begin(kind, bytes, bus_bytes, link_bytes_per_sec, host),
 * _comm_end(token, stream). */
PyObject *mfu_py_step_comm_subscribe(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_comm_unsubscribe(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_comm(PyObject *self, PyObject *ignored);
PyObject *mfu_py_step_comm_begin(PyObject *self, PyObject *args);
PyObject *mfu_py_step_comm_end(PyObject *self, PyObject *args);

/* The tracker is going away: leave the registry (its dealloc calls this;
 * the GIL is held). */
void mfu_py_comm_forget(step_object *s);


#endif /* MFU_PY_STEP_COMM_H */
