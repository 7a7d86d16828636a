// module.cpp -- the CPython module mfu_tracker._torch: method table and init
// only; the work is in observer.cpp, op_table.cpp, op_flops.cpp. Import it
// after `import torch` (it links libtorch); mfu_tracker/counter.py does.
#include "mfu_torch.h"

#include <algorithm>

#ifndef MFU_TRACKER_VERSION
#define MFU_TRACKER_VERSION "unknown"
#endif
#ifndef MFU_TORCH_VERSION
#define MFU_TORCH_VERSION "unknown"
#endif

namespace mfu_torch {
namespace {
const mfu_flops_api *g_core = nullptr;
} // namespace

const mfu_flops_api &core() { return *g_core; }
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

PyObject *totals_to_dict(const Totals &t) {
  PyObject *dict = PyDict_New();
  if (dict == nullptr)
    return nullptr;
  if (set_item(dict, "executed_flops", int128_to_py(t.executed)) < 0 ||
      set_item(dict, "forward_flops", int128_to_py(t.forward)) < 0 ||
      set_item(dict, "model_flops", int128_to_py(t.model)) < 0 ||
      set_item(dict, "backward_flops", int128_to_py(t.backward)) < 0 ||
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
    for (const auto &kv : t.per_op) {
      PyObject *pair = Py_BuildValue("(LN)", static_cast<long long>(kv.second.first),
                                     int128_to_py(kv.second.second));
      if (pair == nullptr || PyDict_SetItemString(ops, kv.first, pair) < 0) {
        Py_XDECREF(pair);
        Py_DECREF(ops);
        goto error;
      }
      Py_DECREF(pair);
    }
    if (set_item(dict, "ops", ops) < 0)
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

PyObject *py_start(PyObject *, PyObject *arg) {
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
  const int slot = start(causal);
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

PyObject *py_snapshot(PyObject *, PyObject *arg) {
  int slot;
  __int128 forward = 0, model = 0;
  if (slot_arg(arg, &slot) < 0 || snapshot(slot, &forward, &model) < 0)
    return nullptr;
  return Py_BuildValue("(NN)", int128_to_py(forward), int128_to_py(model));
}

PyObject *py_register_formula(PyObject *, PyObject *args) {
  const char *name;
  PyObject *fn;
  if (!PyArg_ParseTuple(args, "sO:register_formula", &name, &fn))
    return nullptr;
  if (!PyCallable_Check(fn)) {
    PyErr_Format(PyExc_TypeError, "register_flop_formula: fn must be callable, not %.80s",
                 Py_TYPE(fn)->tp_name);
    return nullptr;
  }
  if (register_custom(name, fn) < 0)
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_unregister_formula(PyObject *, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (name == nullptr || unregister_custom(name) < 0)
    return nullptr;
  Py_RETURN_NONE;
}

// One OP_TABLE row: (name, kind, params) with params as _dispatch_counter.py
// documents them; false + exception on a malformed row.
bool parse_row(PyObject *row, std::pair<std::string, OpSpec> *out) {
  const char *name;
  int kind;
  PyObject *params;
  if (!PyArg_ParseTuple(row, "siO!:load_builtins row", &name, &kind, &PyTuple_Type, &params))
    return false;
  std::vector<int> p;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(params); i++) {
    long v = PyLong_AsLong(PyTuple_GET_ITEM(params, i));
    if (v == -1 && PyErr_Occurred())
      return false;
    if (v < -1 || v > 127) {
      PyErr_Format(PyExc_ValueError, "load_builtins: %s: parameter %ld out of range", name, v);
      return false;
    }
    p.push_back(static_cast<int>(v));
  }
  OpSpec spec;
  auto bad = [&](const char *what) {
    PyErr_Format(PyExc_ValueError, "load_builtins: %s: %s", name, what);
    return false;
  };
  switch (static_cast<OpKind>(kind)) {
  case OpKind::Mm:
  case OpKind::Addmm:
  case OpKind::Bmm:
  case OpKind::Baddbmm:
  case OpKind::GroupedMm:
  case OpKind::ConvBackward:
    if (!p.empty())
      return bad("takes no parameters");
    break;
  case OpKind::Conv:
    if (p.size() != 5)
      return bad("a convolution row has 5 parameters");
    spec.conv = ConvArgs{static_cast<int8_t>(p[0]), static_cast<int8_t>(p[1]),
                         static_cast<int8_t>(p[2]), static_cast<int8_t>(p[3]),
                         static_cast<int8_t>(p[4])};
    break;
  case OpKind::Attention:
    if (p.size() != 12 || p[1] < 0 || p[1] > 2)
      return bad("an attention row has 12 parameters, layout 0..2");
    spec.attn = AttnArgs{p[0] != 0,
                         static_cast<AttnLayout>(p[1]),
                         static_cast<int8_t>(p[2]),
                         static_cast<int8_t>(p[3]),
                         static_cast<int8_t>(p[4]),
                         static_cast<int8_t>(p[5]),
                         static_cast<int8_t>(p[6]),
                         static_cast<int8_t>(p[7]),
                         static_cast<int8_t>(p[8]),
                         static_cast<int8_t>(p[9]),
                         static_cast<int8_t>(p[10]),
                         p[11] != 0};
    break;
  default:
    return bad("unknown kind");
  }
  spec.kind = static_cast<OpKind>(kind);
  *out = {name, spec};
  return true;
}

PyObject *py_load_builtins(PyObject *, PyObject *arg) {
  PyObject *seq = PySequence_Fast(arg, "load_builtins: rows must be a sequence");
  if (seq == nullptr)
    return nullptr;
  std::vector<std::pair<std::string, OpSpec>> rows;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    std::pair<std::string, OpSpec> row;
    if (!parse_row(PySequence_Fast_GET_ITEM(seq, i), &row)) {
      Py_DECREF(seq);
      return nullptr;
    }
    rows.push_back(row);
  }
  Py_DECREF(seq);
  for (int i = 0; i < kMaxSlots; i++) {
    Totals unused;
    if (read(i, false, &unused) == 0) {
      PyErr_SetString(PyExc_RuntimeError, "load_builtins: a count is active");
      return nullptr;
    }
    PyErr_Clear();
  }
  load_builtins(std::move(rows));
  Py_RETURN_NONE;
}

PyObject *py_builtin_ops(PyObject *, PyObject *) {
  std::vector<std::string> names = builtin_names();
  std::sort(names.begin(), names.end());
  PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(names.size()));
  if (tuple == nullptr)
    return nullptr;
  for (size_t i = 0; i < names.size(); i++) {
    PyObject *s = PyUnicode_FromString(names[i].c_str());
    if (s == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), s);
  }
  return tuple;
}

PyMethodDef methods[] = {
    {"start", py_start, METH_O,
     "start(causal_attention, /)\n--\n\nStart counting on this thread; returns a slot."},
    {"stop", py_stop, METH_O,
     "stop(slot, /)\n--\n\nStop the count (on its thread); returns its final totals."},
    {"read", py_read, METH_O, "read(slot, /)\n--\n\nThe slot's totals so far, as a dict."},
    {"reset", py_reset, METH_O, "reset(slot, /)\n--\n\nZero the slot's totals."},
    {"snapshot", py_snapshot, METH_O,
     "snapshot(slot, /)\n--\n\n(forward_flops, model_flops) so far."},
    {"register_formula", py_register_formula, METH_VARARGS,
     "register_formula(name, fn, /)\n--\n\nCount op `name` with fn(*shapes)."},
    {"unregister_formula", py_unregister_formula, METH_O,
     "unregister_formula(name, /)\n--\n\nForget a registered formula."},
    {"load_builtins", py_load_builtins, METH_O,
     "load_builtins(rows, /)\n--\n\nSet the built-in op table (name, kind, params) rows."},
    {"builtin_ops", py_builtin_ops, METH_NOARGS,
     "builtin_ops()\n--\n\nThe op names with a built-in formula."},
    {nullptr, nullptr, 0, nullptr},
};

int exec_module(PyObject *module) {
  auto *api = static_cast<const mfu_flops_api *>(PyCapsule_Import(MFU_FLOPS_API_CAPSULE, 0));
  if (api == nullptr)
    return -1;
  if (api->abi_version < MFU_FLOPS_API_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "mfu_tracker._torch needs the formula table version %u, mfu_tracker._C "
                 "has %u; rebuild both (make build)",
                 MFU_FLOPS_API_VERSION, api->abi_version);
    return -1;
  }
  mfu_torch::g_core = api;
  if (PyModule_AddStringConstant(module, "__version__", MFU_TRACKER_VERSION) < 0 ||
      PyModule_AddStringConstant(module, "torch_version", MFU_TORCH_VERSION) < 0 ||
      PyModule_AddIntConstant(module, "max_counters", kMaxSlots) < 0)
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
    "libtorch op observer counting FLOPs with the C core's formulas.",
    0,
    methods,
    slots,
    nullptr,
    nullptr,
    nullptr,
};

} // namespace

PyMODINIT_FUNC PyInit__torch(void) { return PyModuleDef_Init(&moduledef); }
