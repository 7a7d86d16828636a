// module_totals.cpp -- a counter's totals in the CPython module
// mfu_tracker._torch: held over its blocks in a capsule (stop() adds each
// block's, in C++), and read as a dict -- the tables (ops, modules, the
// audit's uncounted ops) only when asked, so reading model_flops after a
// block builds no Python object per op or module.
#include "mfu_torch.h"

#include <new>

namespace mfu_torch {
namespace {

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

// A counter's totals as a dict; the tables (ops, modules, uncounted) only
// with `tables` (reading model_flops after a block builds none of them).
PyObject *totals_to_dict(const Totals &t, bool tables) {
  PyObject *dict = PyDict_New();
  if (dict == nullptr)
    return nullptr;
  if (set_item(dict, "executed_flops", int128_to_py(t.executed)) < 0 ||
      set_item(dict, "forward_flops", int128_to_py(t.forward)) < 0 ||
      set_item(dict, "model_flops", int128_to_py(t.model)) < 0 ||
      set_item(dict, "backward_flops", int128_to_py(t.backward)) < 0 ||
      set_item(dict, "recompute_flops", int128_to_py(t.recompute)) < 0 ||
      set_item(dict, "overcompute_flops", int128_to_py(t.overcompute)) < 0 ||
      set_item(dict, "anticipated_flops", int128_to_py(t.anticipated)) < 0 ||
      set_item(dict, "anticipated_overcompute_flops",
               int128_to_py(t.anticipated_overcompute)) < 0 ||
      set_item(dict, "mask_read_calls", PyLong_FromLongLong(t.mask_read_calls)) < 0 ||
      set_item(dict, "mask_tensor_calls", PyLong_FromLongLong(t.mask_tensor_calls)) < 0 ||
      set_item(dict, "mask_tensor_flops", int128_to_py(t.mask_tensor_flops)) < 0 ||
      set_item(dict, "anticipated_flops_by_dtype", by_dtype(t.anticipated_by_dtype)) < 0 ||
      set_item(dict, "model_flops_by_dtype", by_dtype(t.model_by_dtype)) < 0 ||
      set_item(dict, "executed_flops_by_dtype", by_dtype(t.executed_by_dtype)) < 0 ||
      set_item(dict, "counted_calls", PyLong_FromLongLong(t.counted_calls)) < 0 ||
      set_item(dict, "errors", PyLong_FromLongLong(t.errors)) < 0 ||
      set_item(dict, "approximate_calls", PyLong_FromLongLong(t.approximate_calls)) < 0 ||
      set_item(dict, "first_error",
               t.first_error.empty() ? (Py_INCREF(Py_None), Py_None)
                                     : PyUnicode_FromString(t.first_error.c_str())) < 0)
    goto error;
  if (!tables)
    return dict;
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

// ---- a counter's totals over its blocks: a capsule holding a Totals ----

constexpr const char *kTotalsCapsule = "mfu_tracker._torch.Totals";

void totals_free(PyObject *capsule) {
  delete static_cast<Totals *>(PyCapsule_GetPointer(capsule, kTotalsCapsule));
}

Totals *totals_arg(PyObject *obj) {
  return static_cast<Totals *>(PyCapsule_GetPointer(obj, kTotalsCapsule));
}

PyObject *py_totals_new(PyObject *, PyObject *) {
  auto *totals = new (std::nothrow) Totals();
  if (totals == nullptr)
    return PyErr_NoMemory();
  PyObject *capsule = PyCapsule_New(totals, kTotalsCapsule, totals_free);
  if (capsule == nullptr)
    delete totals;
  return capsule;
}

PyObject *py_stop(PyObject *, PyObject *args) {
  int slot;
  PyObject *acc;
  Totals *totals;
  if (!PyArg_ParseTuple(args, "iO:stop", &slot, &acc) || (totals = totals_arg(acc)) == nullptr ||
      stop(slot, totals) < 0)
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *py_totals(PyObject *, PyObject *args) {
  PyObject *acc, *slot_obj = Py_None;
  int tables = 0;
  Totals *held;
  if (!PyArg_ParseTuple(args, "O|Op:totals", &acc, &slot_obj, &tables) ||
      (held = totals_arg(acc)) == nullptr)
    return nullptr;
  Totals sum;
  add_totals(*held, tables != 0, &sum);
  int slot;
  if (slot_obj != Py_None && (slot_arg(slot_obj, &slot) < 0 || read(slot, tables != 0, &sum) < 0))
    return nullptr;
  return totals_to_dict(sum, tables != 0);
}

PyObject *py_totals_reset(PyObject *, PyObject *acc) {
  Totals *totals = totals_arg(acc);
  if (totals == nullptr)
    return nullptr;
  *totals = Totals{};
  Py_RETURN_NONE;
}

PyObject *py_totals_error(PyObject *, PyObject *args) {
  PyObject *acc;
  const char *message;
  Totals *totals;
  if (!PyArg_ParseTuple(args, "Os:totals_error", &acc, &message) ||
      (totals = totals_arg(acc)) == nullptr)
    return nullptr;
  if (totals->errors++ == 0 || totals->first_error.empty())
    totals->first_error = message;
  Py_RETURN_NONE;
}

PyObject *py_read(PyObject *, PyObject *arg) {
  int slot;
  Totals totals;
  if (slot_arg(arg, &slot) < 0 || read(slot, true, &totals) < 0)
    return nullptr;
  return totals_to_dict(totals, true);
}

} // namespace

PyMethodDef totals_methods[] = {
    {"stop", py_stop, METH_VARARGS,
     "stop(slot, totals, /)\n--\n\nStop the count (on its thread); its final totals are "
     "added to `totals` (totals_new())."},
    {"totals_new", py_totals_new, METH_NOARGS,
     "totals_new()\n--\n\nEmpty totals: a counter's over its blocks (stop() adds to them)."},
    {"totals", py_totals, METH_VARARGS,
     "totals(totals, slot=None, tables=False, /)\n--\n\nThe totals as a dict (with the "
     "active slot's so far); the ops, modules and uncounted tables only with `tables`."},
    {"totals_reset", py_totals_reset, METH_O,
     "totals_reset(totals, /)\n--\n\nZero the totals."},
    {"totals_error", py_totals_error, METH_VARARGS,
     "totals_error(totals, message, /)\n--\n\nOne more call that could not be counted (the "
     "first message is kept)."},
    {"read", py_read, METH_O, "read(slot, /)\n--\n\nThe slot's totals so far, as a dict."},
    {nullptr, nullptr, 0, nullptr},
};

} // namespace mfu_torch
