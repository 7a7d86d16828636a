// site.cpp -- where a counted call runs, for the core's site rules (ops.h
// "Sites"): the backward phase, grad mode, the autograd node being
// evaluated (autograd's own, a custom Function's, a reentrant checkpoint's),
// whether default saved-tensor hooks are set (the non-reentrant checkpoint
// recomputes under them), and whether the call is a recomputed node of a
// compiled (AOTAutograd) backward. What each site counts is the core's;
// this file only looks (see mfu_torch.h); which node is which is the core's
// rule too (core/ops/nodes.h), shared with the fallback.
#include "mfu_torch.h"

#include <ATen/SavedTensorHooks.h>
#include <c10/core/GradMode.h>
// torch's autograd headers trip -Wunused-parameter.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <torch/csrc/autograd/python_cpp_function.h>
#pragma GCC diagnostic pop

#include <cstring>
#include <memory>
#include <typeinfo>
#include <unordered_map>
#include <vector>

namespace torch {
namespace autograd {
// libtorch_cpu (graph_task.h): the id of the graph task (backward call)
// running on this thread, -1 outside backward.
int get_current_graph_task_id();
} // namespace autograd
} // namespace torch

namespace mfu_torch {
namespace {

namespace ag = torch::autograd;
using NodePtr = decltype(ag::get_current_node());
using Node = ag::Node;


// One recomputed call of a compiled backward, as the planner described it:
// the op's kind (ops.h: inductor may run an addmm as an mm) and the shapes
// of the tensors its count reads (-1: a symbolic size, any; a shape {-2}:
// the graph carries none, any tensor).
struct Signature {
  std::string kind;
  std::vector<std::vector<int64_t>> shapes;
};
using Plan = std::vector<Signature>;

// Python's planner (mfu_tracker/flops/counter/_compiled.py), set at import;
// and the plans of the compiled backward classes seen (their types are kept
// alive: a type's address is never reused while its plan is cached). Both
// are read and written with the GIL held, which guards them.
PyObject *g_planner = nullptr;
std::unordered_map<PyTypeObject *, std::shared_ptr<const Plan>> g_plans;

// The node being evaluated on this thread, what it is and what of its
// compiled backward is still to recompute. A node is known by its address
// and sequence number: no reference is held (a PyNode must die under the
// GIL, not in a thread's exit), and a later node at the same address has
// another sequence number.
struct NodeCache {
  const Node *node = nullptr;
  uint64_t sequence_nr = 0;
  mfu_op_node kind = MFU_NODE_BUILTIN;
  Plan budget;
  int64_t square_model = 0; // squares.cpp: a causal math-path call's node
  int64_t square_executed = 0;
};

// The planner's answer, [(op kind, (shape, ...)), ...], or nullptr (an
// exception set) when it is malformed; GIL held.
std::shared_ptr<const Plan> parse_plan(PyObject *answer) {
  auto plan = std::make_shared<Plan>();
  PyObject *seq = PySequence_Fast(answer, "plan");
  if (seq == nullptr)
    return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i), *kind, *shapes;
    const char *text;
    if (!PyArg_ParseTuple(item, "UO", &kind, &shapes) ||
        (text = PyUnicode_AsUTF8(kind)) == nullptr)
      break;
    Signature sig{text, {}};
    PyObject *shape_seq = PySequence_Fast(shapes, "shapes");
    for (Py_ssize_t j = 0; shape_seq != nullptr && j < PySequence_Fast_GET_SIZE(shape_seq); j++) {
      PyObject *dims = PySequence_Fast(PySequence_Fast_GET_ITEM(shape_seq, j), "shape");
      std::vector<int64_t> shape;
      for (Py_ssize_t k = 0; dims != nullptr && k < PySequence_Fast_GET_SIZE(dims); k++)
        shape.push_back(PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dims, k)));
      Py_XDECREF(dims);
      sig.shapes.push_back(std::move(shape));
    }
    Py_XDECREF(shape_seq);
    plan->push_back(std::move(sig));
  }
  Py_DECREF(seq);
  if (PyErr_Occurred())
    return nullptr;
  return plan;
}

// The plan of a compiled backward node (empty: it recomputes nothing);
// takes the GIL. A planner failure is counted as no plan (the planner
// warns).
std::shared_ptr<const Plan> plan_of(const NodePtr &node) {
  static const auto none = std::make_shared<const Plan>();
  PyGILState_STATE gil = PyGILState_Ensure();
  std::shared_ptr<const Plan> plan = none;
  PyObject *obj = ag::functionToPyObject(node);
  if (obj != nullptr) {
    PyTypeObject *type = Py_TYPE(obj);
    auto hit = g_plans.find(type);
    if (hit != g_plans.end()) {
      plan = hit->second;
    } else if (g_planner != nullptr) {
      PyObject *answer = PyObject_CallOneArg(g_planner, obj);
      if (answer != nullptr && answer != Py_None) {
        auto parsed = parse_plan(answer);
        plan = parsed != nullptr ? parsed : none;
      }
      Py_XDECREF(answer);
      // the planner may have let another thread in: the first plan stays
      if (g_plans.emplace(type, plan).second)
        Py_INCREF(type); // kept: its address stays its own
    }
  }
  PyErr_Clear();
  Py_XDECREF(obj);
  PyGILState_Release(gil);
  return plan;
}

// What `node` is: the facts torch shows (PyNode and CppNode -- custom
// Functions -- told by their C++ type, whose typeinfo is not exported to
// link against; the node's name) go to the core's one rule (core/ops/nodes.h;
// its Function's module matters to higher-order calls only, which the
// observer never sees: _hops.py counts them). A compiled (AOTAutograd)
// custom backward gets the plan of its recomputed calls.
void classify_node(const NodePtr &node, NodeCache &c) {
  const char *type = typeid(*node).name();
  const bool py = std::strcmp(type, "N5torch8autograd6PyNodeE") == 0;
  const bool cpp = std::strncmp(type, "N5torch8autograd7CppNodeI", 25) == 0;
  c.budget.clear();
  if (!py && !cpp) {
    c.kind = ops().core.node_kind(0, nullptr, nullptr, 0);
    return;
  }
  // A PyNode's name is its Python class name; it and is_aot_backward()
  // read Python objects: under the GIL.
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string name;
  bool compiled = false;
  try { // never into the op: a node that cannot say counts as custom
    name = node->name();
    compiled = py && node->is_aot_backward();
  } catch (...) {
  }
  PyErr_Clear();
  PyGILState_Release(gil);
  c.kind = ops().core.node_kind(1, name.c_str(), nullptr, 0);
  if (compiled && c.kind == MFU_NODE_CUSTOM)
    c.budget = *plan_of(node);
}

// Whether this call is one of the node's recomputed calls still to run
// (and then consume it).
bool take_recomputed(Plan &budget, const OpSpec &spec,
                     c10::ArrayRef<const c10::IValue> inputs) {
  const char *kind = ops().core.kind_name(spec.row->kind);
  for (auto it = budget.begin(); it != budget.end(); ++it) {
    if (kind == nullptr || it->kind != kind)
      continue;
    size_t t = 0;
    bool same = true;
    for (size_t i = 0; same && i < spec.ninputs; i++) {
      const mfu_op_input &in = spec.inputs[i];
      const size_t pos = static_cast<size_t>(in.position);
      if (in.need != MFU_NEED_TENSOR)
        continue;
      if (t >= it->shapes.size()) {
        same = false;
        break;
      }
      const auto &want = it->shapes[t++];
      if (want.size() == 1 && want[0] == -2)
        continue;
      if (pos >= inputs.size() || !inputs[pos].isTensor()) {
        same = want.empty();
        continue;
      }
      const at::Tensor &x = inputs[pos].toTensor();
      if (!x.defined() || x.unsafeGetTensorImpl()->has_symbolic_sizes_strides() ||
          static_cast<size_t>(x.dim()) != want.size()) {
        same = false;
        break;
      }
      for (size_t d = 0; same && d < want.size(); d++)
        same = want[d] < 0 || want[d] == x.size(static_cast<int64_t>(d));
    }
    if (same && t == it->shapes.size()) {
      budget.erase(it);
      return true;
    }
  }
  return false;
}

} // namespace

Site site_of(const OpSpec &spec, c10::ArrayRef<const c10::IValue> inputs) {
  Site s;
  s.backward_phase = ag::get_current_graph_task_id() != -1;
  s.grad_mode = c10::GradMode::is_enabled();
  if (!s.backward_phase)
    return s;
  s.saved_tensor_hooks = !at::SavedTensorDefaultHooks::get_tls_state().stack.empty();
  NodePtr node = ag::get_current_node();
  if (!node) {
    s.node = MFU_NODE_BUILTIN;
    return s;
  }
  thread_local NodeCache cache;
  if (cache.node != node.get() || cache.sequence_nr != node->sequence_nr()) {
    cache.node = node.get();
    cache.sequence_nr = node->sequence_nr();
    classify_node(node, cache);
    if (!square_share(node->thread_id(), cache.sequence_nr, &cache.square_model,
                      &cache.square_executed))
      cache.square_model = cache.square_executed = 0;
  }
  s.node = cache.kind;
  s.square_model = cache.square_model;
  s.square_executed = cache.square_executed;
  if (spec.row != nullptr && !cache.budget.empty())
    s.recomputed = take_recomputed(cache.budget, spec, inputs);
  return s;
}

void set_recompute_planner(PyObject *planner) {
  PyObject *old = g_planner;
  g_planner = planner == Py_None ? nullptr : Py_NewRef(planner);
  Py_XDECREF(old);
  for (auto &entry : g_plans)
    Py_DECREF(entry.first);
  g_plans.clear();
}

} // namespace mfu_torch
