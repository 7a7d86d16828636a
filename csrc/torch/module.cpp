// module.cpp -- the CPython module mfu_tracker._torch: the counting and key
// entry points, the method table and init; the communication entry points are
// in module_comm.cpp; the work in observer.cpp, classify.cpp, convert.cpp. Import it
// after `import torch` (it links libtorch); mfu_tracker/_native/_observer.py does.
#include "mfu_torch.h"

#include <cstring>

#ifndef MFU_TRACKER_VERSION
#define MFU_TRACKER_VERSION "unknown"
#endif
#ifndef MFU_TORCH_VERSION
#define MFU_TORCH_VERSION "unknown"
#endif

namespace mfu_torch {
namespace {
const mfu_ops_api *g_ops = nullptr;
} // namespace

const mfu_ops_api &ops() { return *g_ops; }

int slot_arg(PyObject *obj, int *slot) {
  long value = PyLong_AsLong(obj);
  if (value == -1 && PyErr_Occurred())
    return -1;
  *slot = static_cast<int>(value);
  return 0;
}
} // namespace mfu_torch

namespace {

using namespace mfu_torch;

PyObject *py_start(PyObject *, PyObject *args) {
  PyObject *arg;
  int modules = 0;
  if (!PyArg_ParseTuple(args, "O|p:start", &arg, &modules))
    return nullptr;
  if (!PyUnicode_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "causal_attention must be a str, not %.80s",
                 Py_TYPE(arg)->tp_name);
    return nullptr;
  }
  mfu_causal causal;
  if (PyUnicode_CompareWithASCIIString(arg, "full") == 0) {
    causal = MFU_CAUSAL_FULL;
  } else if (PyUnicode_CompareWithASCIIString(arg, "half") == 0) {
    causal = MFU_CAUSAL_HALF;
  } else {
    PyErr_Format(PyExc_ValueError,
                 "causal_attention must be 'full' or 'half', not %R", arg);
    return nullptr;
  }
  const int slot = start(causal, modules != 0);
  return slot < 0 ? nullptr : PyLong_FromLong(slot);
}

PyObject *py_reset(PyObject *, PyObject *arg) {
  int slot;
  if (slot_arg(arg, &slot) < 0 || reset(slot) < 0)
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_module_enter(PyObject *, PyObject *arg) {
  const long token = PyLong_AsLong(arg);
  if (token == -1 && PyErr_Occurred())
    return nullptr;
  return PyLong_FromLong(module_enter(static_cast<int32_t>(token)));
}

PyObject *py_module_exit(PyObject *, PyObject *arg) {
  const long token = PyLong_AsLong(arg);
  if (token == -1 && PyErr_Occurred())
    return nullptr;
  module_exit(static_cast<int32_t>(token));
  Py_RETURN_NONE;
}

PyObject *py_set_recompute_planner(PyObject *, PyObject *planner) {
  set_recompute_planner(planner);
  Py_RETURN_NONE;
}

PyObject *py_set_compiling_check(PyObject *, PyObject *check) {
  if (check != Py_None && !PyCallable_Check(check)) {
    PyErr_Format(PyExc_TypeError, "check must be callable or None, not %.80s",
                 Py_TYPE(check)->tp_name);
    return nullptr;
  }
  set_compiling_check(check);
  Py_RETURN_NONE;
}

PyObject *py_audit(PyObject *, PyObject *arg) {
  int slot;
  if (slot_arg(arg, &slot) < 0 || audit(slot) < 0)
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_conventions(PyObject *, PyObject *) {
  const unsigned mask = thread_slots();
  bool seen[2] = {false, false};
  for (int i = 0; i < kMaxSlots; i++)
    if (mask & (1u << i))
      seen[slot_causal(i) == MFU_CAUSAL_HALF ? 1 : 0] = true;
  PyObject *out = PyTuple_New((seen[0] ? 1 : 0) + (seen[1] ? 1 : 0));
  if (out == nullptr)
    return nullptr;
  Py_ssize_t n = 0;
  if (seen[0])
    PyTuple_SET_ITEM(out, n++, PyUnicode_FromString("full"));
  if (seen[1])
    PyTuple_SET_ITEM(out, n++, PyUnicode_FromString("half"));
  return out;
}

// One convention's result as add_count takes it: None (not asked), a str
// (the call could not be counted) or (executed, model_backward,
// approximate, dtype index, model_self, overcompute, site name[, mask_read]):
// an _C.op_count result (ops.h mfu_op_flops), the site rules already applied.
int result_arg(PyObject *obj, mfu_op_flops *out, bool *ok, std::string *error) {
  *ok = false;
  if (obj == Py_None)
    return 0;
  if (PyUnicode_Check(obj)) {
    const char *text = PyUnicode_AsUTF8(obj);
    if (text == nullptr)
      return -1;
    *error = text;
    return 0;
  }
  long long executed = 0, model_self = 0;
  unsigned long long model_backward = 0, overcompute = 0;
  int approximate = 0, dtype = 0, mask_read = 0;
  const char *site_name = nullptr;
  if (!PyArg_ParseTuple(obj, "LKpiLKs|p:add_count", &executed, &model_backward, &approximate,
                        &dtype, &model_self, &overcompute, &site_name, &mask_read))
    return -1;
  int site = -1;
  for (int i = MFU_SITE_FORWARD; i <= MFU_SITE_RECOMPUTE_BACKPROP; i++) {
    const char *known = ops().core.site_name(static_cast<mfu_op_site>(i));
    if (known != nullptr && std::strcmp(known, site_name) == 0)
      site = i;
  }
  if (executed < 0 || model_self < 0 || dtype < 0 || dtype >= MFU_DTYPE_COUNT || site < 0) {
    PyErr_SetString(PyExc_ValueError,
                    "add_count: a negative count, an unknown dtype index or an unknown site");
    return -1;
  }
  *out = mfu_op_flops{};
  out->executed = executed;
  out->model_backward = model_backward;
  out->approximate = approximate;
  out->dtype = static_cast<mfu_dtype>(dtype);
  out->model_self = model_self;
  out->overcompute = overcompute;
  out->site = static_cast<mfu_op_site>(site);
  out->mask_read = mask_read;
  *ok = true;
  return 0;
}

PyObject *py_add_count(PyObject *, PyObject *args) {
  const char *name;
  PyObject *results[2];
  if (!PyArg_ParseTuple(args, "sOO:add_count", &name, &results[0], &results[1]))
    return nullptr;
  mfu_op_flops counts[2] = {};
  bool ok[2] = {false, false};
  std::string errors[2];
  for (int c = 0; c < 2; c++)
    if (result_arg(results[c], &counts[c], &ok[c], &errors[c]) < 0)
      return nullptr;
  add_external(thread_slots(), name, counts, ok, errors);
  Py_RETURN_NONE;
}

PyObject *py_audit_record(PyObject *, PyObject *args) {
  const char *name;
  PyObject *shape_obj;
  if (!PyArg_ParseTuple(args, "sO:audit_record", &name, &shape_obj))
    return nullptr;
  std::vector<int64_t> shape;
  PyObject *seq = PySequence_Fast(shape_obj, "audit_record: shape must be a sequence");
  if (seq == nullptr)
    return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    const long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (d == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return nullptr;
    }
    shape.push_back(d);
  }
  Py_DECREF(seq);
  const unsigned mask = thread_slots();
  for (int i = 0; i < kMaxSlots; i++)
    if (mask & (1u << i))
      record_uncounted(i, name, shape, true);
  Py_RETURN_NONE;
}

PyObject *py_nest(PyObject *, PyObject *arg) {
  const long delta = PyLong_AsLong(arg);
  if (delta == -1 && PyErr_Occurred())
    return nullptr;
  nest(delta > 0 ? 1 : -1);
  Py_RETURN_NONE;
}

PyObject *py_counted_calls(PyObject *, PyObject *) {
  return PyLong_FromUnsignedLongLong(counted_calls());
}

PyObject *py_sync_kernels(PyObject *, PyObject *) {
  if (sync_kernels() < 0)
    return nullptr;
  Py_RETURN_NONE;
}

// ---- the borrowed dispatch keys (keys.cpp, docs/dispatch_keys.md) ----

PyObject *text_or_none(const std::string &text) {
  if (text.empty())
    Py_RETURN_NONE;
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}

// The key of a value of COUNT_KEY / COMM_KEY; -1 + exception for another.
int which_key(PyObject *arg) {
  const long value = PyLong_AsLong(arg);
  if (value == -1 && PyErr_Occurred())
    return -1;
  if (value == count_key())
    return 0;
  if (value == comm::key())
    return 1;
  PyErr_Format(PyExc_ValueError, "key must be COUNT_KEY (%d) or COMM_KEY (%d), not %ld",
               count_key(), comm::key(), value);
  return -1;
}

PyObject *py_foreign_kernel(PyObject *, PyObject *arg) {
  const int which = which_key(arg);
  if (which < 0)
    return nullptr;
  try {
    return text_or_none(which == 0 ? foreign_kernel() : comm::foreign_kernel());
  } catch (const std::exception &e) {
    return PyUnicode_FromFormat("the key's kernels cannot be read (%s)", one_line(e).c_str());
  }
}

PyObject *py_key_hold(PyObject *, PyObject *args) {
  int delta, off_here;
  if (!PyArg_ParseTuple(args, "ip:key_hold", &delta, &off_here))
    return nullptr;
  if (delta < -1 || delta > 1) {
    PyErr_Format(PyExc_ValueError, "delta must be 1, -1 or 0, not %d", delta);
    return nullptr;
  }
  key_hold(delta, off_here != 0);
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"start", py_start, METH_VARARGS,
     "start(causal_attention, modules=False, /)\n--\n\nStart counting "
     "on this thread; returns a slot. modules: keep per-module totals (read()'s "
     "'modules': token -> (forward, model, calls))."},
    {"set_recompute_planner", py_set_recompute_planner, METH_O,
     "set_recompute_planner(fn, /)\n--\n\nfn(node) plans the recomputed calls of a "
     "compiled backward node: None, or [(op name, (shape, ...)), ...] (-1: any size). "
     "None: no planner."},
    {"set_compiling_check", py_set_compiling_check, METH_O,
     "set_compiling_check(fn, /)\n--\n\nfn() tells whether torch.compile is compiling "
     "(its fake tensors are not counted); None: fake tensors never count."},
    {"foreign_kernel", py_foreign_kernel, METH_O,
     "foreign_kernel(key, /)\n--\n\nThe first operator whose kernel on the key (COUNT_KEY "
     "or COMM_KEY) another library registered over ours, with its registration, or None."},
    {"key_hold", py_key_hold, METH_VARARGS,
     "key_hold(delta, off_here, /)\n--\n\nA counter came alive (1: the counting key goes on "
     "this thread) or died (-1; off_here: the key leaves this thread's dispatch); 0: the "
     "key is refused for good (off here with off_here)."},
    {"reset", py_reset, METH_O, "reset(slot, /)\n--\n\nZero the slot's totals."},
    {"sync_kernels", py_sync_kernels, METH_NOARGS,
     "sync_kernels()\n--\n\nRegister the counting kernels of ops defined or given a "
     "custom formula since the last count started (start() does it too)."},
    {"module_enter", py_module_enter, METH_O,
     "module_enter(token, /)\n--\n\nThe module `token` is now this thread's innermost; "
     "counts one call of it for the active counts with a module table. Returns the "
     "previous token (module_exit restores it)."},
    {"module_exit", py_module_exit, METH_O,
     "module_exit(previous, /)\n--\n\nRestore the innermost module token."},
    {"audit", py_audit, METH_O,
     "audit(slot, /)\n--\n\nRecord the ops of the slot's count that no count covers "
     "(on its thread; until stop())."},
    {"conventions", py_conventions, METH_NOARGS,
     "conventions()\n--\n\nThe causal conventions ('full', 'half') of the counts active on "
     "this thread; () outside a count or inside a counted op."},
    {"add_count", py_add_count, METH_VARARGS,
     "add_count(name, full, half, /)\n--\n\nAdd a call counted outside the dispatcher (a "
     "higher-order operator) to this thread's counts: per convention None, an error "
     "message, or (executed, model_backward, approximate, dtype index, model_self, "
     "overcompute, site) of _C.op_count."},
    {"audit_record", py_audit_record, METH_VARARGS,
     "audit_record(name, largest_shape, /)\n--\n\nRecord an uncounted call (a higher-order "
     "op with nothing counted inside) in this thread's counts, auditing or not."},
    {"nest", py_nest, METH_O,
     "nest(delta, /)\n--\n\nA call counted outside the dispatcher starts (1) / ends (-1) "
     "on this thread: the ops it runs are its own (not counted, not audited)."},
    {"counted_calls", py_counted_calls, METH_NOARGS,
     "counted_calls()\n--\n\nCalls counted on this thread so far (it moves when a count "
     "covers an op)."},
    {nullptr, nullptr, 0, nullptr},
};

int exec_module(PyObject *module) {
  auto *api = static_cast<const mfu_ops_api *>(PyCapsule_Import(MFU_OPS_API_CAPSULE, 0));
  if (api == nullptr)
    return -1;
  if (api->abi_version != MFU_OPS_API_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "mfu_tracker._torch needs the op table version %u, mfu_tracker._C "
                 "has %u; rebuild both (make build)",
                 MFU_OPS_API_VERSION, api->abi_version);
    return -1;
  }
  mfu_torch::g_ops = api;
  auto *comm_api = static_cast<const mfu_comm_api *>(PyCapsule_Import(MFU_COMM_API_CAPSULE, 0));
  if (comm_api == nullptr)
    return -1;
  if (comm_api->abi_version < MFU_COMM_API_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "mfu_tracker._torch needs the communication table version %u, "
                 "mfu_tracker._C has %u; rebuild both (make build)",
                 MFU_COMM_API_VERSION, comm_api->abi_version);
    return -1;
  }
  comm::init(comm_api);
  if (listen_for_ops() < 0 || PyModule_AddFunctions(module, comm_methods) < 0 ||
      PyModule_AddFunctions(module, totals_methods) < 0)
    return -1;
  if (PyModule_AddStringConstant(module, "__version__", MFU_TRACKER_VERSION) < 0 ||
      PyModule_AddStringConstant(module, "torch_version", MFU_TORCH_VERSION) < 0 ||
      PyModule_AddIntConstant(module, "COUNT_KEY", count_key()) < 0 ||
      PyModule_AddIntConstant(module, "COMM_KEY", comm::key()) < 0 ||
      PyModule_AddStringConstant(module, "COUNT_KEY_NAME",
                                 c10::toString(static_cast<c10::DispatchKey>(count_key()))) < 0 ||
      PyModule_AddStringConstant(module, "COMM_KEY_NAME",
                                 c10::toString(static_cast<c10::DispatchKey>(comm::key()))) < 0)
    return -1;
  return 0;
}

PyModuleDef_Slot slots[] = {
    {Py_mod_exec, reinterpret_cast<void *>(exec_module)},
    {0, nullptr},
};

PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    "mfu_tracker._torch",
    "libtorch op observer counting FLOPs with the C core's op table.",
    0,
    methods,
    slots,
    nullptr,
    nullptr,
    nullptr,
};

} // namespace

PyMODINIT_FUNC PyInit__torch(void) { return PyModuleDef_Init(&moduledef); }
