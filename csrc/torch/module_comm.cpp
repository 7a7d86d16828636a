// module_comm.cpp -- the communication observer's entry points of the
// CPython module mfu_tracker._torch (module.cpp adds them at init); the work
// is in comm.cpp and comm_wait.cpp.
#include "mfu_torch.h"

#include <cmath>

namespace mfu_torch {
namespace {

PyObject *py_comm_start(PyObject *, PyObject *) {
  if (comm::start() < 0)
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_comm_stop(PyObject *, PyObject *) {
  comm::stop();
  Py_RETURN_NONE;
}

PyObject *py_comm_observing(PyObject *, PyObject *) { return PyBool_FromLong(comm::observing()); }

// A bytes/s argument: a number, or None (NaN).
int bytes_arg(PyObject *obj, double *out) {
  if (obj == Py_None) {
    *out = NAN;
    return 0;
  }
  *out = PyFloat_AsDouble(obj);
  return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

PyObject *py_comm_set_link(PyObject *, PyObject *args) {
  const char *group;
  PyObject *value;
  double bytes_per_sec;
  if (!PyArg_ParseTuple(args, "sO:comm_set_link", &group, &value) ||
      bytes_arg(value, &bytes_per_sec) < 0)
    return nullptr;
  comm::set_link(group, bytes_per_sec);
  Py_RETURN_NONE;
}

PyObject *py_comm_set_fallback_link(PyObject *, PyObject *arg) {
  double bytes_per_sec;
  if (bytes_arg(arg, &bytes_per_sec) < 0)
    return nullptr;
  comm::set_fallback_link(bytes_per_sec);
  Py_RETURN_NONE;
}

PyObject *py_comm_suspend(PyObject *, PyObject *arg) {
  const int on = PyObject_IsTrue(arg);
  if (on < 0)
    return nullptr;
  comm::suspend(on != 0);
  Py_RETURN_NONE;
}

PyObject *py_comm_wait_descriptor(PyObject *, PyObject *args) {
  PyObject *work_type, *original, *phases, *p2p_types;
  int unknown;
  if (!PyArg_ParseTuple(args, "OOOOi:comm_wait_descriptor", &work_type, &original, &phases,
                        &p2p_types, &unknown))
    return nullptr;
  return comm::install_wait(work_type, original, phases, p2p_types, unknown);
}

PyObject *py_comm_schedule(PyObject *, PyObject *arg) {
  const int enter = PyObject_IsTrue(arg);
  if (enter < 0)
    return nullptr;
  comm::schedule(enter != 0);
  Py_RETURN_NONE;
}

PyObject *py_comm_stream_phase(PyObject *, PyObject *arg) {
  const unsigned long long handle = PyLong_AsUnsignedLongLong(arg);
  if (handle == static_cast<unsigned long long>(-1) && PyErr_Occurred())
    return nullptr;
  return PyLong_FromLong(comm::stream_phase(static_cast<uintptr_t>(handle)));
}

PyObject *py_comm_last_phase(PyObject *, PyObject *) {
  return PyLong_FromLong(comm::last_phase());
}

PyObject *py_comm_counters(PyObject *, PyObject *) {
  const comm::CommCounters c = comm::counters();
  return Py_BuildValue("{sLsLsLsLsLsL}", "collectives", static_cast<long long>(c.collectives),
                       "skipped", static_cast<long long>(c.skipped), "waits",
                       static_cast<long long>(c.waits), "backward_waits",
                       static_cast<long long>(c.backward_waits), "completions",
                       static_cast<long long>(c.completions), "errors",
                       static_cast<long long>(c.errors));
}

} // namespace

PyMethodDef comm_methods[] = {
    {"comm_start", py_comm_start, METH_NOARGS,
     "comm_start()\n--\n\nObserve collectives on this thread (and its backward passes)."},
    {"comm_stop", py_comm_stop, METH_NOARGS,
     "comm_stop()\n--\n\nStop observing collectives on this thread."},
    {"comm_observing", py_comm_observing, METH_NOARGS,
     "comm_observing()\n--\n\nWhether collectives are observed on this thread."},
    {"comm_set_link", py_comm_set_link, METH_VARARGS,
     "comm_set_link(group_name, bytes_per_sec, /)\n--\n\nThe link peak of a process group "
     "(per direction); None forgets it."},
    {"comm_set_fallback_link", py_comm_set_fallback_link, METH_O,
     "comm_set_fallback_link(bytes_per_sec, /)\n--\n\nOne link peak for every group; None: "
     "per group."},
    {"comm_suspend", py_comm_suspend, METH_O,
     "comm_suspend(on, /)\n--\n\nA tracker's own collectives begin (True) / end (False) on "
     "this thread: not recorded meanwhile."},
    {"comm_wait_descriptor", py_comm_wait_descriptor, METH_VARARGS,
     "comm_wait_descriptor(work_type, original, phases, p2p_types, unknown, /)\n--\n\n"
     "An observed Work.wait (a method descriptor of work_type) calling `original`."},
    {"comm_schedule", py_comm_schedule, METH_O,
     "comm_schedule(enter, /)\n--\n\nA pipeline schedule's step() begins (True) / ends on "
     "this thread: its p2p waits are the bubble."},
    {"comm_stream_phase", py_comm_stream_phase, METH_O,
     "comm_stream_phase(handle, /)\n--\n\nThe exposed phase of the last collective launched "
     "while the stream with this raw handle was current, or -1."},
    {"comm_last_phase", py_comm_last_phase, METH_NOARGS,
     "comm_last_phase()\n--\n\nThe exposed phase (an index of _C.phase_names()) of the last "
     "collective launched on this thread."},
    {"comm_counters", py_comm_counters, METH_NOARGS,
     "comm_counters()\n--\n\nCollectives seen, skipped (fake tensors), waits, backward waits, "
     "completions, errors."},
    {nullptr, nullptr, 0, nullptr},
};

} // namespace mfu_torch
