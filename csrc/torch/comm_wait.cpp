// comm_wait.cpp -- Work.wait observed: a method descriptor that replaces
// torch.distributed's Work.wait while communication is observed
// (mfu_tracker/distributed/_comm_observer.py installs and removes it).
//
// A wait is exposed communication of the kind its Work names (its OpType:
// the phase table given at install); a Work without one (UNKNOWN: gloo's
// reduce-scatter) waits for the last collective this thread launched, and,
// having no future to time it, completes when that wait returns; a p2p Work waited for inside a pipeline schedule's step()
// is the pipeline bubble. The wait is bracketed by that phase in the sinks
// created on this thread (csrc/python/mfu_capsules.h). In C++ because it runs for
// every collective: a method descriptor is called without a bound-method
// object, and nothing here allocates.
#include "mfu_torch.h"

#include <array>

namespace mfu_torch::comm {
namespace {

constexpr int kOpTypes = 128; // OpType values (0 .. 19, UNKNOWN = 100)

struct WaitState {
  PyObject *original = nullptr;       // Work.__dict__["wait"] (strong)
  PyObject *get_op_type = nullptr;    // "_get_op_type", interned (strong)
  std::array<int, kOpTypes> phase{};  // op type -> phase
  std::array<bool, kOpTypes> p2p{};   // op types that are the bubble in a schedule
  int unknown = -1;                   // OpType.UNKNOWN
  int bubble = MFU_PHASE_PIPELINE_BUBBLE;
  int other = MFU_PHASE_COMMUNICATION;
};
WaitState g_wait;
thread_local int t_schedule = 0; // inside a pipeline schedule's step()

// The phase of a wait for `work`; *untimed: a Work without an op type.
int phase_of(PyObject *work, bool *untimed) {
  PyObject *value = PyObject_CallMethodNoArgs(work, g_wait.get_op_type);
  if (value == nullptr) {
    PyErr_Clear();
    return g_wait.other;
  }
  const long op = PyLong_AsLong(value);
  Py_DECREF(value);
  if (op < 0 || op >= kOpTypes) {
    PyErr_Clear();
    return g_wait.other;
  }
  if (t_schedule > 0 && g_wait.p2p[op])
    return g_wait.bubble;
  if (op == g_wait.unknown) {
    *untimed = true;
    return last_phase();
  }
  return g_wait.phase[op];
}

// Work.wait(self, *args, **kwargs), observed.
PyObject *observed_wait(PyObject *self, PyObject *const *args, Py_ssize_t nargsf,
                        PyObject *kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  // The original, called unbound: self first, then the call's arguments.
  PyObject *small[8];
  PyObject **stack = small;
  if (1 + nargs + nkw > 8) {
    stack = static_cast<PyObject **>(PyMem_Malloc((1 + nargs + nkw) * sizeof(PyObject *)));
    if (stack == nullptr)
      return PyErr_NoMemory();
  }
  stack[0] = self;
  for (Py_ssize_t i = 0; i < nargs + nkw; i++)
    stack[1 + i] = args[i];
  mfu_comm_wait wait{};
  bool untimed = false;
  const bool observe = !suspended() && sinks_active();
  if (observe)
    begin_wait(phase_of(self, &untimed), &wait);
  PyObject *result = PyObject_Vectorcall(g_wait.original, stack, 1 + nargs, kwnames);
  if (observe) {
    if (untimed && result != nullptr)
      complete_untimed(); // it had no future: it is done when its wait returns
    end_wait(&wait);
  }
  if (stack != small)
    PyMem_Free(stack);
  return result;
}

PyMethodDef observed_wait_def = {
    "wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(observed_wait)),
    METH_FASTCALL | METH_KEYWORDS,
    "wait(timeout=...)\n--\n\nWork.wait, with its time recorded as exposed communication "
    "(mfu_tracker)."};

} // namespace

PyObject *install_wait(PyObject *work_type, PyObject *original, PyObject *phases,
                       PyObject *p2p_types, int unknown) {
  if (!PyType_Check(work_type) || !PyCallable_Check(original) || !PyDict_Check(phases) ||
      !PySequence_Check(p2p_types)) {
    PyErr_SetString(PyExc_TypeError,
                    "comm_wait_descriptor(work_type, original, {op_type: phase}, p2p_types, "
                    "unknown)");
    return nullptr;
  }
  g_wait.phase.fill(MFU_PHASE_COMMUNICATION);
  g_wait.p2p.fill(false);
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(phases, &pos, &key, &value)) {
    const long op = PyLong_AsLong(key), phase = PyLong_AsLong(value);
    if (PyErr_Occurred())
      return nullptr;
    if (op >= 0 && op < kOpTypes && phase >= 0 && phase < MFU_PHASE_COUNT)
      g_wait.phase[op] = static_cast<int>(phase);
  }
  const Py_ssize_t n = PySequence_Size(p2p_types);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_GetItem(p2p_types, i);
    const long op = item == nullptr ? -1 : PyLong_AsLong(item);
    Py_XDECREF(item);
    if (PyErr_Occurred())
      return nullptr;
    if (op >= 0 && op < kOpTypes)
      g_wait.p2p[op] = true;
  }
  g_wait.unknown = unknown;
  if (g_wait.get_op_type == nullptr &&
      (g_wait.get_op_type = PyUnicode_InternFromString("_get_op_type")) == nullptr)
    return nullptr;
  Py_INCREF(original);
  Py_XSETREF(g_wait.original, original);
  return PyDescr_NewMethod(reinterpret_cast<PyTypeObject *>(work_type), &observed_wait_def);
}

void schedule(bool enter) { t_schedule += enter ? 1 : (t_schedule > 0 ? -1 : 0); }

bool in_schedule() { return t_schedule > 0; }

} // namespace mfu_torch::comm
