// convert.cpp -- one op call's torch arguments -> the core's mfu_op_call,
// or a custom formula's Python arguments (see mfu_torch.h). No FLOP rule
// lives here: mfu_op_count (csrc/core/ops/ops.c) and the registry's
// formula_count (csrc/python/py_ops.c) decide what a call costs.
#include "mfu_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include <utility>
#include <vector>

namespace mfu_torch {
namespace {

using Inputs = c10::ArrayRef<const c10::IValue>;

// A failure inside this file: the message, thrown and caught in count_op
// (never out of it).
struct CountError {
  std::string message;
};

[[noreturn]] void fail(const mfu_op_input &in, const char *what) {
  throw CountError{std::string(ops().core.role_name(in.role)) + " " + what};
}

// Storage the converted arguments point into, for one call.
struct Scratch {
  int64_t lists[MFU_ROLE_COUNT][MFU_CONV_MAX_NDIM];
  size_t nlists = 0;
  std::vector<at::Tensor> host; // cumulative lengths copied to the host
};

// A tensor's dtype as mfu_op_arg.dtype holds it (ops.h); the names are
// mfu_tracker/_dtypes.py's for the same torch dtypes.
int dtype_code(c10::ScalarType type) {
  using S = c10::ScalarType;
  static const std::pair<S, mfu_dtype> kTypes[] = {
      {S::Double, MFU_DTYPE_FP64},         {S::Float, MFU_DTYPE_FP32},
      {S::Half, MFU_DTYPE_FP16},           {S::BFloat16, MFU_DTYPE_BF16},
      {S::Float8_e4m3fn, MFU_DTYPE_FP8},   {S::Float8_e5m2, MFU_DTYPE_FP8},
      {S::Float8_e4m3fnuz, MFU_DTYPE_FP8}, {S::Float8_e5m2fnuz, MFU_DTYPE_FP8},
      {S::Float8_e8m0fnu, MFU_DTYPE_FP8},  {S::Float4_e2m1fn_x2, MFU_DTYPE_FP4},
      {S::Char, MFU_DTYPE_INT8},
  };
  for (const auto &entry : kTypes)
    if (entry.first == type)
      return MFU_OP_DTYPE(entry.second);
  return 0;
}

int64_t concrete(const c10::SymInt &value, const mfu_op_input &in) {
  auto maybe = value.maybe_as_int();
  if (!maybe)
    fail(in, "is symbolic");
  return *maybe;
}

// Cumulative lengths (1-D) or a values tensor (any rank, row-major) as
// host int64 values, or nullptr where they cannot be read: on meta, or a
// tensor with the Python key (a fake tensor: its values are unknown; the
// core then counts the worst case, max_seqlen per sequence, as
// FlopCounterMode does, and flags the call approximate).
const int64_t *tensor_values(const at::Tensor &t, mfu_arg_need need, Scratch &s) {
  if ((need == MFU_NEED_OFFSETS && t.dim() != 1) || t.is_meta() ||
      t.key_set().has(c10::DispatchKey::Python))
    return nullptr;
  const at::Tensor *host = &t;
  if (!t.device().is_cpu() || t.scalar_type() != at::kLong || !t.is_contiguous()) {
    // NB: a device tensor is copied to the host: this waits for the device
    // (FlopCounterMode does the same with .tolist()).
    at::DisableRecordFunctionGuard no_observe;
    s.host.push_back(t.to(at::kCPU, at::kLong).contiguous());
    host = &s.host.back();
  }
  return host->const_data_ptr<int64_t>();
}

void tensor_arg(const at::Tensor &t, const mfu_op_input &in, mfu_op_arg *a,
                Scratch &s) {
  if (t.is_nested())
    fail(in, "is a nested tensor");
  if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides())
    fail(in, "has symbolic sizes");
  const auto sizes = t.sizes();
  a->type = MFU_ARG_TENSOR;
  a->ints = sizes.data(); // the tensor's own sizes: no copy
  a->count = sizes.size();
  a->requires_grad = t.requires_grad();
  a->dtype = dtype_code(t.scalar_type());
  if (in.need == MFU_NEED_OFFSETS || in.need == MFU_NEED_VALUES)
    a->values = tensor_values(t, in.need, s);
}

// An int list (ints, SymInts or bools) into the call's scratch.
void int_list_arg(const c10::IValue &v, const mfu_op_input &in, mfu_op_arg *a,
                  Scratch &s) {
  int64_t *out = s.lists[s.nlists++];
  size_t n = 0;
  auto push = [&](int64_t value) {
    if (n == MFU_CONV_MAX_NDIM)
      fail(in, "has too many values");
    out[n++] = value;
  };
  if (v.isIntList()) {
    for (int64_t value : v.toIntList())
      push(value);
  } else if (v.isBoolList()) {
    for (bool value : v.toBoolList())
      push(value ? 1 : 0);
  } else if (v.isList()) {
    for (const c10::IValue &item : v.toListRef()) {
      if (item.isInt())
        push(item.toInt());
      else if (item.isSymInt())
        push(concrete(item.toSymInt(), in));
      else if (item.isBool())
        push(item.toBool() ? 1 : 0);
      else
        fail(in, "holds a value that is not an int");
    }
  } else {
    return; // None or another type: absent
  }
  a->type = MFU_ARG_INT_LIST;
  a->ints = out;
  a->count = n;
}

// One argument as its role needs it; left MFU_ARG_NONE when it is absent,
// None or of another type.
void convert(const c10::IValue &v, const mfu_op_input &in, mfu_op_arg *a,
             Scratch &s) {
  *a = mfu_op_arg{};
  switch (in.need) {
  case MFU_NEED_TENSOR:
  case MFU_NEED_OFFSETS:
  case MFU_NEED_VALUES:
    if (v.isTensor() && v.toTensor().defined())
      tensor_arg(v.toTensor(), in, a, s);
    break;
  case MFU_NEED_INT:
    if (v.isInt() || v.isSymInt() || v.isBool()) {
      a->type = MFU_ARG_INT;
      a->value = v.isInt() ? v.toInt()
                 : v.isBool() ? (v.toBool() ? 1 : 0)
                              : concrete(v.toSymInt(), in);
    }
    break;
  case MFU_NEED_INT_LIST:
    int_list_arg(v, in, a, s);
    break;
  }
}

void count_row(const OpSpec &spec, Inputs in, mfu_op_call *call,
               mfu_op_flops *out) {
  mfu_op_arg args[MFU_OP_ARGS_MAX]; // only the row's positions are written
  Scratch scratch;
  call->args = args;
  call->nargs = 0;
  for (size_t i = 0; i < spec.ninputs; i++) {
    const mfu_op_input &input = spec.inputs[i];
    const size_t pos = static_cast<size_t>(input.position);
    if (pos >= in.size())
      break; // positions increase: the rest are absent too
    convert(in[pos], input, &args[pos], scratch);
    call->nargs = pos + 1;
  }
  mfu_op_error error{};
  const mfu_status st = ops().core.count(spec.row, call, out, &error);
  if (st != MFU_OK) {
    std::string message = error.reason != nullptr ? error.reason : ops().core.status_str(st);
    throw CountError{error.argument != nullptr ? std::string(error.argument) + ": " + message
                                               : message};
  }
}

// ---- custom formulas (Python) ---------------------------------------------

PyObject *ints_to_tuple(c10::IntArrayRef values) {
  PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(values.size()));
  if (tuple == nullptr)
    return nullptr;
  for (size_t i = 0; i < values.size(); i++) {
    PyObject *item = PyLong_FromLongLong(values[i]);
    if (item == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), item);
  }
  return tuple;
}

// A formula's argument: a tensor as its shape, scalars and int lists as
// they are, anything else None (as mfu_tracker.counter documents).
PyObject *to_python(const c10::IValue &v) {
  if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    if (!t.defined())
      Py_RETURN_NONE;
    if (t.is_nested() || t.unsafeGetTensorImpl()->has_symbolic_sizes_strides())
      throw CountError{"a tensor argument has no concrete shape"};
    return ints_to_tuple(t.sizes());
  }
  if (v.isBool())
    return PyBool_FromLong(v.toBool());
  if (v.isInt())
    return PyLong_FromLongLong(v.toInt());
  if (v.isDouble())
    return PyFloat_FromDouble(v.toDouble());
  if (v.isIntList())
    return ints_to_tuple(v.toIntVector());
  Py_RETURN_NONE;
}

// The pending Python exception's text (and cleared).
std::string python_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  std::string text = "a Python error";
  PyObject *s = value != nullptr ? PyObject_Str(value) : nullptr;
  const char *c = s != nullptr ? PyUnicode_AsUTF8(s) : nullptr;
  if (c != nullptr)
    text = c;
  PyErr_Clear();
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

void count_custom(const OpSpec &spec, Inputs in, const mfu_op_call *call,
                  mfu_op_flops *out) {
  // The formula is Python: its arguments are built under the GIL.
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string error;
  PyObject *args = PyTuple_New(static_cast<Py_ssize_t>(in.size()));
  bool any_grad = false;
  int dtype = 0;
  try {
    if (args == nullptr)
      throw CountError{python_error()};
    for (size_t i = 0; i < in.size(); i++) {
      PyObject *item = to_python(in[i]);
      if (item == nullptr)
        throw CountError{python_error()};
      PyTuple_SET_ITEM(args, static_cast<Py_ssize_t>(i), item);
      if (in[i].isTensor() && in[i].toTensor().defined()) {
        const at::Tensor &t = in[i].toTensor();
        any_grad = any_grad || t.requires_grad();
        if (dtype == 0)
          dtype = dtype_code(t.scalar_type());
      }
    }
    mfu_op_call with_dtype = *call;
    with_dtype.input_dtype = dtype;
    if (ops().formulas.count(spec.formula, args, any_grad ? 1 : 0, &with_dtype, out) < 0)
      throw CountError{python_error()};
  } catch (const CountError &e) {
    error = e.message;
  } catch (const std::exception &e) { // never leave with the GIL held
    error = one_line(e);
  }
  Py_XDECREF(args);
  PyGILState_Release(gil);
  if (!error.empty())
    throw CountError{error};
}

} // namespace

std::string one_line(const std::exception &e) {
  const auto *c10_error = dynamic_cast<const c10::Error *>(&e);
  std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

bool count_op(const OpSpec &spec, Inputs inputs, mfu_causal causal, const Site &site,
              int tf32, mfu_op_flops *out, std::string *error) {
  mfu_op_call call{};
  call.causal = causal;
  call.backward_phase = site.backward_phase ? 1 : 0;
  call.grad_enabled = site.grad_mode ? 1 : 0;
  call.tf32 = tf32;
  call.node = site.node;
  call.saved_tensor_hooks = site.saved_tensor_hooks ? 1 : 0;
  call.recomputed = site.recomputed ? 1 : 0;
  if (causal == MFU_CAUSAL_HALF) {
    call.square_model = site.square_model;
    call.square_executed = site.square_executed;
  }
  try {
    if (spec.row != nullptr)
      count_row(spec, inputs, &call, out);
    else if (spec.formula != nullptr)
      count_custom(spec, inputs, &call, out);
    return true;
  } catch (const CountError &e) {
    *error = e.message;
  } catch (const std::exception &e) {
    *error = one_line(e);
  } catch (...) {
    *error = "unknown C++ exception";
  }
  *out = mfu_op_flops{};
  return false;
}

} // namespace mfu_torch
