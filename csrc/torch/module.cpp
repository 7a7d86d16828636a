// module.cpp -- the CPython module mfu_tracker._torch: method table and init
// only; the work is in observer.cpp, classify.cpp, convert.cpp. Import it
// after `import torch` (it links libtorch); mfu_tracker/flops/counter/_counter.py does.
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
} // namespace mfu_torch

namespace {

using namespace mfu_torch;

// An exact Python int from a 128-bit count.
PyObject *int128_to_py(__int128 value) {
  if (value >= INT64_MIN && value <= INT64_MAX)
    return PyLong_FromLongLong(static_cast<long long>(value));
  const bool negative = value < 0;
  unsigned __int128 mag = negative ? -static_cast<unsigned __int128>(value)
                                   : static_cast<unsigned __int128>(value);
  PyObject *high = PyLong_FromUnsignedLongLong(static_cast<unsigned long long>(mag >> 64));
  PyObject *low = PyLong_FromUnsignedLongLong(static_cast<unsigned long long>(mag));
  PyObject *shift = PyLong_FromLong(64);
  PyObject *shifted = nullptr, *sum = nullptr, *result = nullptr;
  if (high && low && shift && (shifted = PyNumber_Lshift(high, shift)) &&
      (sum = PyNumber_Or(shifted, low)))
    result = negative ? PyNumber_Negative(sum) : (Py_INCREF(sum), sum);
  Py_XDECREF(high);
  Py_XDECREF(low);
  Py_XDECREF(shift);
  Py_XDECREF(shifted);
  Py_XDECREF(sum);
  return result;
}

int set_item(PyObject *dict, const char *key, PyObject *value) {
  if (value == nullptr)
    return -1;
  const int rc = PyDict_SetItemString(dict, key, value);
  Py_DECREF(value);
  return rc;
}

// FLOPs by dtype: a tuple indexed by mfu_dtype (_C.dtype_names() order).
PyObject *by_dtype(const __int128 (&values)[MFU_DTYPE_COUNT]) {
  PyObject *tuple = PyTuple_New(MFU_DTYPE_COUNT);
  if (tuple == nullptr)
    return nullptr;
  for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
    PyObject *item = int128_to_py(values[d]);
    if (item == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, d, item);
  }
  return tuple;
}

// The audit: {name: (calls, largest input shape)}.
PyObject *uncounted_dict(const Totals &t) {
  PyObject *dict = PyDict_New();
  if (dict == nullptr)
    return nullptr;
  for (const auto &kv : t.uncounted) {
    PyObject *shape = PyTuple_New(static_cast<Py_ssize_t>(kv.second.largest.size()));
    if (shape == nullptr) {
      Py_DECREF(dict);
      return nullptr;
    }
    for (size_t i = 0; i < kv.second.largest.size(); i++)
      PyTuple_SET_ITEM(shape, static_cast<Py_ssize_t>(i),
                       PyLong_FromLongLong(kv.second.largest[i]));
    PyObject *pair = Py_BuildValue("(LN)", static_cast<long long>(kv.second.calls), shape);
    if (pair == nullptr || PyDict_SetItemString(dict, kv.first.c_str(), pair) < 0) {
      Py_XDECREF(pair);
      Py_DECREF(dict);
      return nullptr;
    }
    Py_DECREF(pair);
  }
  return dict;
}

PyObject *totals_to_dict(const Totals &t) {
  PyObject *dict = PyDict_New();
  if (dict == nullptr)
    return nullptr;
  if (set_item(dict, "executed_flops", int128_to_py(t.executed)) < 0 ||
      set_item(dict, "forward_flops", int128_to_py(t.forward)) < 0 ||
      set_item(dict, "model_flops", int128_to_py(t.model)) < 0 ||
      set_item(dict, "backward_flops", int128_to_py(t.backward)) < 0 ||
      set_item(dict, "recompute_flops", int128_to_py(t.recompute)) < 0 ||
      set_item(dict, "overcompute_flops", int128_to_py(t.overcompute)) < 0 ||
      set_item(dict, "model_flops_by_dtype", by_dtype(t.model_by_dtype)) < 0 ||
      set_item(dict, "executed_flops_by_dtype", by_dtype(t.executed_by_dtype)) < 0 ||
      set_item(dict, "counted_calls", PyLong_FromLongLong(t.counted_calls)) < 0 ||
      set_item(dict, "errors", PyLong_FromLongLong(t.errors)) < 0 ||
      set_item(dict, "approximate_calls", PyLong_FromLongLong(t.approximate_calls)) < 0 ||
      set_item(dict, "first_error",
               t.first_error.empty() ? (Py_INCREF(Py_None), Py_None)
                                     : PyUnicode_FromString(t.first_error.c_str())) < 0)
    goto error;
  {
    PyObject *ops = PyDict_New();
    if (ops == nullptr)
      goto error;
    // Overloads of one op (aten::mm, aten::mm.out) have their own name
    // pointers: merged here by name.
    std::unordered_map<std::string, std::pair<int64_t, __int128>> by_name;
    for (const auto &kv : t.per_op) {
      auto &entry = by_name[kv.first];
      entry.first += kv.second.first;
      entry.second += kv.second.second;
    }
    for (const auto &kv : by_name) {
      PyObject *pair = Py_BuildValue("(LN)", static_cast<long long>(kv.second.first),
                                     int128_to_py(kv.second.second));
      if (pair == nullptr || PyDict_SetItemString(ops, kv.first.c_str(), pair) < 0) {
        Py_XDECREF(pair);
        Py_DECREF(ops);
        goto error;
      }
      Py_DECREF(pair);
    }
    if (set_item(dict, "ops", ops) < 0 || set_item(dict, "uncounted", uncounted_dict(t)) < 0)
      goto error;
  }
  {
    // token -> (forward, model, calls)
    PyObject *modules = PyDict_New();
    if (modules == nullptr)
      goto error;
    for (const auto &kv : t.per_module) {
      PyObject *key = PyLong_FromLong(kv.first);
      PyObject *row = Py_BuildValue("(NNL)", int128_to_py(kv.second.forward),
                                    int128_to_py(kv.second.model),
                                    static_cast<long long>(kv.second.calls));
      const int rc = key && row ? PyDict_SetItem(modules, key, row) : -1;
      Py_XDECREF(key);
      Py_XDECREF(row);
      if (rc < 0) {
        Py_DECREF(modules);
        goto error;
      }
    }
    if (set_item(dict, "modules", modules) < 0)
      goto error;
  }
  return dict;
error:
  Py_DECREF(dict);
  return nullptr;
}

int slot_arg(PyObject *obj, int *slot) {
  long value = PyLong_AsLong(obj);
  if (value == -1 && PyErr_Occurred())
    return -1;
  *slot = static_cast<int>(value);
  return 0;
}

PyObject *py_start(PyObject *, PyObject *args) {
  PyObject *arg;
  int count_fake = 0, modules = 0;
  if (!PyArg_ParseTuple(args, "O|pp:start", &arg, &count_fake, &modules))
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
  const int slot = start(causal, count_fake != 0, modules != 0);
  return slot < 0 ? nullptr : PyLong_FromLong(slot);
}

PyObject *py_stop(PyObject *, PyObject *arg) {
  int slot;
  Totals totals;
  if (slot_arg(arg, &slot) < 0 || stop(slot, &totals) < 0)
    return nullptr;
  return totals_to_dict(totals);
}

PyObject *py_read(PyObject *, PyObject *arg) {
  int slot;
  Totals totals;
  if (slot_arg(arg, &slot) < 0 || read(slot, true, &totals) < 0)
    return nullptr;
  return totals_to_dict(totals);
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
// approximate, dtype index, model_self, overcompute, site name): an
// _C.op_count result (ops.h mfu_op_flops), the site rules already applied.
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
  int approximate = 0, dtype = 0;
  const char *site_name = nullptr;
  if (!PyArg_ParseTuple(obj, "LKpiLKs:add_count", &executed, &model_backward, &approximate,
                        &dtype, &model_self, &overcompute, &site_name))
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

// ---- the communication observer (comm.cpp) ----

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

PyMethodDef methods[] = {
    {"start", py_start, METH_VARARGS,
     "start(causal_attention, count_fake=False, modules=False, /)\n--\n\nStart counting "
     "on this thread; returns a slot. count_fake: count ops on fake tensors (the counter "
     "was entered under a FakeTensorMode); modules: keep per-module totals (read()'s "
     "'modules': token -> (forward, model, calls))."},
    {"set_recompute_planner", py_set_recompute_planner, METH_O,
     "set_recompute_planner(fn, /)\n--\n\nfn(node) plans the recomputed calls of a "
     "compiled backward node: None, or [(op name, (shape, ...)), ...] (-1: any size). "
     "None: no planner."},
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
    {"stop", py_stop, METH_O,
     "stop(slot, /)\n--\n\nStop the count (on its thread); returns its final totals."},
    {"read", py_read, METH_O, "read(slot, /)\n--\n\nThe slot's totals so far, as a dict."},
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
  if (listen_for_ops() < 0)
    return -1;
  if (PyModule_AddStringConstant(module, "__version__", MFU_TRACKER_VERSION) < 0 ||
      PyModule_AddStringConstant(module, "torch_version", MFU_TORCH_VERSION) < 0 ||
      PyModule_AddIntConstant(module, "COUNT_KEY", count_key()) < 0 ||
      PyModule_AddIntConstant(module, "COMM_KEY", comm::key()) < 0)
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
