// op_flops.cpp -- one op call's inputs -> FLOPs, through the C core's
// formulas (csrc/core/flops.c). Shapes in comments follow flops.h.
#include "mfu_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <cstring>

namespace mfu_torch {
namespace {

using Inputs = c10::ArrayRef<const c10::IValue>;

// A failure inside this file: the message, thrown and caught in count_op
// (never out of it).
struct CountError {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) { throw CountError{message}; }

void check(mfu_status st, const char *formula) {
  if (st == MFU_OK)
    return;
  fail(std::string(formula) + ": " + core().status_str(st));
}

// The tensor at `index`, or nullptr when absent / None / not a tensor.
const at::Tensor *tensor_at(Inputs in, int index) {
  if (index < 0 || static_cast<size_t>(index) >= in.size() || !in[index].isTensor())
    return nullptr;
  const at::Tensor &t = in[index].toTensor();
  return t.defined() ? &t : nullptr;
}

const at::Tensor &need_tensor(Inputs in, int index, const char *what) {
  const at::Tensor *t = tensor_at(in, index);
  if (t == nullptr)
    fail(std::string("argument ") + std::to_string(index) + " (" + what +
         ") is not a tensor");
  return *t;
}

// Concrete sizes of `t` with exactly `ndim` dims (0 = any rank).
std::vector<int64_t> dims(const at::Tensor &t, size_t ndim, const char *what) {
  if (t.is_nested())
    fail(std::string(what) + " is a nested tensor");
  if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides())
    fail(std::string(what) + " has symbolic sizes");
  auto sizes = t.sizes();
  if (ndim != 0 && sizes.size() != ndim)
    fail(std::string(what) + ": expected " + std::to_string(ndim) +
         " dims, got " + std::to_string(sizes.size()));
  return std::vector<int64_t>(sizes.begin(), sizes.end());
}

bool grad_of(const at::Tensor *t) { return t != nullptr && t->requires_grad(); }

int64_t int_at(Inputs in, int index, int64_t fallback) {
  if (index < 0 || static_cast<size_t>(index) >= in.size())
    return fallback;
  const c10::IValue &v = in[index];
  if (v.isInt())
    return v.toInt();
  if (v.isSymInt()) {
    auto maybe = v.toSymInt().maybe_as_int();
    if (maybe)
      return *maybe;
    fail("argument " + std::to_string(index) + " is a symbolic int");
  }
  if (v.isBool())
    return v.toBool() ? 1 : 0;
  return fallback;
}

bool bool_at(Inputs in, int index, bool fallback) {
  if (index < 0 || static_cast<size_t>(index) >= in.size())
    return fallback;
  const c10::IValue &v = in[index];
  if (v.isBool())
    return v.toBool();
  if (v.isInt())
    return v.toInt() != 0;
  return fallback;
}

// An int list argument expanded to `n` values (a one-element list applies to
// every spatial dim, as aten's expand_param_if_needed does).
std::vector<int64_t> int_list_at(Inputs in, int index, size_t n,
                                 int64_t fallback) {
  std::vector<int64_t> out(n, fallback);
  if (index < 0 || static_cast<size_t>(index) >= in.size())
    return out;
  const c10::IValue &v = in[index];
  std::vector<int64_t> values;
  if (v.isIntList()) {
    values = v.toIntVector();
  } else if (v.isList()) {
    for (const c10::IValue &item : v.toListRef()) {
      if (item.isInt()) {
        values.push_back(item.toInt());
      } else if (item.isSymInt()) {
        auto maybe = item.toSymInt().maybe_as_int();
        if (!maybe)
          fail("a symbolic convolution parameter");
        values.push_back(*maybe);
      } else {
        fail("a convolution parameter list holds a non-int");
      }
    }
  } else {
    return out;
  }
  if (values.size() == 1)
    return std::vector<int64_t>(n, values[0]);
  if (values.size() != n)
    fail("a convolution parameter has " + std::to_string(values.size()) +
         " values for " + std::to_string(n) + " spatial dims");
  return values;
}

// ---- matmul family ------------------------------------------------------

void count_matmul(const OpSpec &spec, Inputs in, bool grad, OpCount *out) {
  int64_t flops = 0;
  const at::Tensor *a = nullptr, *b = nullptr;
  switch (spec.kind) {
  case OpKind::Mm:
  case OpKind::Addmm: {
    // a: [m, k] @ b: [k, n]; addmm(bias, a, b)
    const int first = spec.kind == OpKind::Addmm ? 1 : 0;
    a = &need_tensor(in, first, "a");
    b = &need_tensor(in, first + 1, "b");
    auto as = dims(*a, 2, "a"), bs = dims(*b, 2, "b");
    if (as[1] != bs[0])
      fail("matmul: inner dims differ");
    check(core().mm_flop(as[0], as[1], bs[1], &flops), "mfu_mm_flop");
    break;
  }
  case OpKind::Bmm:
  case OpKind::Baddbmm: {
    // a: [b, m, k] @ b: [b, k, n]; baddbmm(self, a, b)
    const int first = spec.kind == OpKind::Baddbmm ? 1 : 0;
    a = &need_tensor(in, first, "a");
    b = &need_tensor(in, first + 1, "b");
    auto as = dims(*a, 3, "a"), bs = dims(*b, 3, "b");
    if (as[0] != bs[0] || as[2] != bs[1])
      fail("bmm: batch or inner dims differ");
    check(core().bmm_flop(as[0], as[1], as[2], bs[2], &flops), "mfu_bmm_flop");
    break;
  }
  case OpKind::GroupedMm: {
    a = &need_tensor(in, 0, "a");
    b = &need_tensor(in, 1, "b");
    auto as = dims(*a, 0, "a"), bs = dims(*b, 0, "b");
    check(core().grouped_mm_flop(as.data(), as.size(), bs.data(), bs.size(), &flops),
          "mfu_grouped_mm_flop");
    break;
  }
  default:
    fail("not a matmul");
  }
  out->executed = flops;
  // Model backward: one forward's worth per input that needs a gradient.
  if (grad)
    out->model_backward = static_cast<__int128>(flops) * (int{grad_of(a)} + int{grad_of(b)});
}

// ---- convolution --------------------------------------------------------

void count_conv(const OpSpec &spec, Inputs in, bool grad, OpCount *out) {
  const at::Tensor &x = need_tensor(in, 0, "input");
  const at::Tensor &w = need_tensor(in, 1, "weight");
  auto xs = dims(x, 0, "input"), ws = dims(w, xs.size(), "weight");
  const size_t ndim = xs.size();
  if (ndim < 3 || ndim > MFU_CONV_MAX_NDIM)
    fail("convolution input has " + std::to_string(ndim) + " dims");
  const size_t sp = ndim - 2;
  const ConvArgs &c = spec.conv;
  const bool transposed = bool_at(in, c.transposed, false);
  std::vector<int64_t> ys(xs);
  if (!transposed) {
    // out: [n, c_out, *spatial], spatial = (in + 2p - d(k - 1) - 1) / s + 1
    auto stride = int_list_at(in, c.stride, sp, 1);
    auto padding = int_list_at(in, c.padding, sp, 0);
    auto dilation = int_list_at(in, c.dilation, sp, 1);
    ys[1] = ws[0];
    for (size_t i = 0; i < sp; i++) {
      if (stride[i] < 1)
        fail("convolution stride < 1");
      const int64_t span = xs[i + 2] + 2 * padding[i] - dilation[i] * (ws[i + 2] - 1) - 1;
      ys[i + 2] = span < 0 ? 0 : span / stride[i] + 1;
    }
  }
  // (transposed: the formula visits input points; out is not read)
  int64_t flops = 0;
  check(core().convolution_flop(xs.data(), ws.data(), ys.data(), ndim,
                             transposed ? 1 : 0, &flops),
        "mfu_convolution_flop");
  out->executed = flops;
  // Input gradient and (true-groups) weight gradient each equal the forward.
  if (grad)
    out->model_backward = static_cast<__int128>(flops) * (int{grad_of(&x)} + int{grad_of(&w)});
}

void count_conv_backward(Inputs in, OpCount *out) {
  // convolution_backward(grad_output, input, weight, bias_sizes, stride,
  //   padding, dilation, transposed, output_padding, groups, output_mask)
  const at::Tensor &go = need_tensor(in, 0, "grad_output");
  const at::Tensor &x = need_tensor(in, 1, "input");
  const at::Tensor &w = need_tensor(in, 2, "weight");
  auto gs = dims(go, 0, "grad_output");
  const size_t ndim = gs.size();
  auto xs = dims(x, ndim, "input"), ws = dims(w, ndim, "weight");
  const bool transposed = bool_at(in, 7, false);
  const int64_t groups = int_at(in, 9, 1);
  bool want_input = true, want_weight = true;
  if (in.size() > 10 && in[10].isBoolList()) {
    auto mask = in[10].toBoolList();
    if (mask.size() >= 2) {
      want_input = mask.get(0);
      want_weight = mask.get(1);
    }
  }
  int64_t flops = 0;
  // NB: the real `groups` (FlopCounterMode counts the weight gradient
  // `groups` times too high; flops.h).
  check(core().convolution_backward_flop(gs.data(), xs.data(), ws.data(), ndim,
                                      transposed ? 1 : 0, groups, want_input ? 1 : 0,
                                      want_weight ? 1 : 0, &flops),
        "mfu_convolution_backward_flop");
  out->executed = flops;
}

// ---- attention ------------------------------------------------------------

// Cumulative lengths as host int64 values; empty when unreadable (meta).
std::vector<int64_t> read_offsets(const at::Tensor &t) {
  if (t.dim() != 1)
    fail("cumulative sequence lengths are not 1-D");
  if (t.is_meta())
    return {};
  at::Tensor host = t;
  if (!t.device().is_cpu() || t.scalar_type() != at::kLong || !t.is_contiguous()) {
    // NB: a device tensor is copied to the host: this waits for the device
    // (FlopCounterMode does the same with .tolist()).
    at::DisableRecordFunctionGuard no_observe;
    host = t.to(at::kCPU, at::kLong).contiguous();
  }
  const int64_t *p = host.const_data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

void count_attention(const OpSpec &spec, Inputs in, mfu_causal convention,
                     bool grad, OpCount *out) {
  const AttnArgs &a = spec.attn;
  const at::Tensor &q = need_tensor(in, a.q, "query");
  const at::Tensor &k = need_tensor(in, a.k, "key");
  const at::Tensor &v = need_tensor(in, a.v, "value");
  bool causal_call;
  if (a.causal_is_mask_type)
    causal_call = int_at(in, a.causal, 0) != 0; // 0: no mask, 1/2: causal
  else
    causal_call = bool_at(in, a.causal, false);
  const mfu_causal causal =
      causal_call && convention == MFU_CAUSAL_HALF ? MFU_CAUSAL_HALF : MFU_CAUSAL_FULL;

  const at::Tensor *cu_q = tensor_at(in, a.cu_q);
  int64_t flops = 0;
  if (cu_q != nullptr) {
    // Packed: q [total, h, d] (efficient: [1, total, h, d]); one attention
    // per sequence of the cumulative lengths.
    const at::Tensor *cu_k = tensor_at(in, a.cu_k);
    auto qs = dims(q, 0, "query"), ks = dims(k, qs.size(), "key"),
         vs = dims(v, qs.size(), "value");
    if (qs.size() != 3 && qs.size() != 4)
      fail("packed attention query has " + std::to_string(qs.size()) + " dims");
    const size_t hd = qs.size() - 2; // index of the heads dim
    std::vector<int64_t> oq = read_offsets(*cu_q);
    std::vector<int64_t> ok = cu_k != nullptr ? read_offsets(*cu_k) : oq;
    if (oq.empty() || ok.empty()) {
      // meta: the lengths are unknown; every sequence counts max_seqlen.
      const int64_t n = cu_q->size(0);
      const int64_t max_q = int_at(in, a.max_q, 0), max_k = int_at(in, a.max_k, max_q);
      oq.assign(static_cast<size_t>(n), 0);
      ok.assign(static_cast<size_t>(n), 0);
      for (int64_t i = 1; i < n; i++) {
        oq[i] = oq[i - 1] + max_q;
        ok[i] = ok[i - 1] + max_k;
      }
      out->approximate = true;
    }
    if (oq.size() != ok.size())
      fail("cu_seqlens_q and cu_seqlens_k differ in length");
    const auto fn = a.backward ? core().varlen_attention_backward_flop : core().varlen_attention_flop;
    check(fn(oq.data(), ok.data(), oq.size(), qs[hd], ks[hd], qs[hd + 1], vs[hd + 1],
             causal, &flops),
          a.backward ? "mfu_varlen_attention_backward_flop" : "mfu_varlen_attention_flop");
  } else {
    if (a.layout == AttnLayout::THD)
      fail("varlen attention without cumulative lengths");
    auto qs = dims(q, 4, "query"), ks = dims(k, 4, "key"), vs = dims(v, 4, "value");
    mfu_attention_shape shape{};
    if (a.layout == AttnLayout::BHSD) {
      // q: [b, h, s_q, d_qk], k: [b, h_kv, s_kv, d_qk], v: [b, h_kv, s_kv, d_v]
      shape = {qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3]};
    } else {
      // q: [b, s_q, h, d_qk], k: [b, s_kv, h_kv, d_qk], v: [b, s_kv, h_kv, d_v]
      shape = {qs[0], qs[2], ks[2], qs[1], ks[1], qs[3], vs[3]};
    }
    if (ks[0] != qs[0] || vs[0] != qs[0] || ks[3] != qs[3])
      fail("attention: query / key / value shapes disagree");
    const auto fn = a.backward ? core().sdpa_backward_flop : core().sdpa_flop;
    check(fn(&shape, causal, &flops), a.backward ? "mfu_sdpa_backward_flop" : "mfu_sdpa_flop");
  }
  out->executed = flops;
  // Model backward of attention: 2x its forward (PaLM), whatever the kernel
  // recomputes.
  if (!a.backward && grad && (grad_of(&q) || grad_of(&k) || grad_of(&v)))
    out->model_backward = 2 * static_cast<__int128>(flops);
}

// ---- custom formulas (Python) ---------------------------------------------

PyObject *to_python(const c10::IValue &v) {
  if (v.isTensor()) {
    const at::Tensor &t = v.toTensor();
    if (!t.defined())
      Py_RETURN_NONE;
    auto sizes = dims(t, 0, "a tensor argument");
    PyObject *tuple = PyTuple_New(static_cast<Py_ssize_t>(sizes.size()));
    if (tuple == nullptr)
      return nullptr;
    for (size_t i = 0; i < sizes.size(); i++) {
      PyObject *item = PyLong_FromLongLong(sizes[i]);
      if (item == nullptr) {
        Py_DECREF(tuple);
        return nullptr;
      }
      PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), item);
    }
    return tuple;
  }
  if (v.isBool())
    return PyBool_FromLong(v.toBool());
  if (v.isInt())
    return PyLong_FromLongLong(v.toInt());
  if (v.isDouble())
    return PyFloat_FromDouble(v.toDouble());
  if (v.isIntList()) {
    auto values = v.toIntVector();
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
  Py_RETURN_NONE;
}

// The pending Python exception as text (and cleared).
std::string python_error() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  std::string text = "custom formula raised";
  if (value != nullptr) {
    PyObject *s = PyObject_Str(value);
    if (s != nullptr) {
      const char *c = PyUnicode_AsUTF8(s);
      if (c != nullptr)
        text += std::string(": ") + (type ? reinterpret_cast<PyTypeObject *>(type)->tp_name : "?") + ": " + c;
      Py_DECREF(s);
    }
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return text;
}

bool int_from_python(PyObject *obj, int64_t *out) {
  if (PyBool_Check(obj) || !PyLong_Check(obj))
    return false;
  long long value = PyLong_AsLongLong(obj);
  if (value == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (value < 0)
    return false;
  *out = static_cast<int64_t>(value);
  return true;
}

void count_custom(const OpSpec &spec, Inputs in, bool grad, OpCount *out) {
  // The formula is Python: shapes are handed over as tuples under the GIL.
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string error;
  PyObject *args = PyTuple_New(static_cast<Py_ssize_t>(in.size()));
  PyObject *result = nullptr;
  bool any_grad = false;
  int64_t flops = 0, backward = -1;
  try {
    if (args == nullptr)
      throw CountError{python_error()};
    for (size_t i = 0; i < in.size(); i++) {
      PyObject *item = to_python(in[i]);
      if (item == nullptr)
        throw CountError{python_error()};
      PyTuple_SET_ITEM(args, static_cast<Py_ssize_t>(i), item);
      if (in[i].isTensor() && grad_of(&in[i].toTensor()))
        any_grad = true;
    }
    result = PyObject_CallObject(spec.custom, args);
    if (result == nullptr)
      throw CountError{python_error()};
    // int: executed FLOPs; (int, int): (executed, model backward).
    if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 2) {
      if (!int_from_python(PyTuple_GET_ITEM(result, 0), &flops) ||
          !int_from_python(PyTuple_GET_ITEM(result, 1), &backward))
        throw CountError{"custom formula must return an int >= 0 or a pair of them"};
    } else if (!int_from_python(result, &flops)) {
      throw CountError{"custom formula must return an int >= 0 or a pair of them"};
    }
  } catch (const CountError &e) {
    error = e.message;
  }
  Py_XDECREF(args);
  Py_XDECREF(result);
  PyGILState_Release(gil);
  if (!error.empty())
    fail(error);
  out->executed = flops;
  if (grad && any_grad)
    out->model_backward = backward >= 0 ? backward : 2 * static_cast<__int128>(flops);
}

} // namespace

bool count_op(const OpSpec &spec, Inputs inputs, mfu_causal causal,
              bool grad_enabled, OpCount *out, std::string *error) {
  try {
    switch (spec.kind) {
    case OpKind::Mm:
    case OpKind::Addmm:
    case OpKind::Bmm:
    case OpKind::Baddbmm:
    case OpKind::GroupedMm:
      count_matmul(spec, inputs, grad_enabled, out);
      break;
    case OpKind::Conv:
      count_conv(spec, inputs, grad_enabled, out);
      break;
    case OpKind::ConvBackward:
      count_conv_backward(inputs, out);
      break;
    case OpKind::Attention:
      count_attention(spec, inputs, causal, grad_enabled, out);
      break;
    case OpKind::Custom:
      count_custom(spec, inputs, grad_enabled, out);
      break;
    case OpKind::None:
      break;
    }
    return true;
  } catch (const CountError &e) {
    *error = e.message;
  } catch (const std::exception &e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown C++ exception";
  }
  *out = OpCount{};
  return false;
}

} // namespace mfu_torch
