// observer.cpp -- the counters: their slots, which of them an op counts for,
// the count of one op and the totals (see mfu_torch.h for what is counted
// and how phases are told apart).
#include "mfu_torch.h"

// ATen/Context.h (torch's TF32 settings) trips -Wunused-parameter.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <ATen/Context.h>
#pragma GCC diagnostic pop
#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <thread>
#include <unordered_set>
#include <utility>

namespace torch {
namespace autograd {
// libtorch_cpu (graph_task.h): the id of the graph task (backward call)
// running on this thread, -1 outside backward.
int get_current_graph_task_id();
} // namespace autograd
} // namespace torch

namespace mfu_torch {
namespace {

struct Slot {
  std::atomic<bool> taken{false};  // owned by a counter (start..stop)
  std::atomic<bool> active{false}; // counts
  mfu_causal causal = MFU_CAUSAL_FULL;
  at::CallbackHandle marker = 0;
  at::CallbackHandle auditor = 0;   // 0: no audit
  std::atomic<bool> auditing{false}; // an audit records into the totals
  std::thread::id owner;
  std::mutex mutex; // guards totals
  Totals totals;
};

Slot g_slots[kMaxSlots];

// Per thread: counts started and not stopped (the key is included while
// > 0), and whether a counted op is running (ops it calls are not counted).
thread_local int tl_counts = 0;
thread_local int tl_depth = 0;

// The marker of slot S: a thread-local RecordFunction callback on a scope
// that no op uses (it never runs). at::ThreadLocalState copies it into the
// autograd engine's threads with the dispatch key set, so "which counters
// does this thread count for" is "which markers are in its callbacks".
constexpr at::RecordScope kMarkerScope = at::RecordScope::BUILD_FEATURE;

template <int S>
std::unique_ptr<at::ObserverContext> marker(const at::RecordFunction &) {
  return nullptr;
}

template <size_t... I>
constexpr std::array<at::RecordFunctionCallback::StartCallback, kMaxSlots>
make_markers(std::index_sequence<I...>) {
  return {{&marker<static_cast<int>(I)>...}};
}

constexpr auto kMarkers = make_markers(std::make_index_sequence<kMaxSlots>{});

// The slots this thread counts for, as a bit mask.
unsigned active_slots() {
  auto callbacks = at::getStepCallbacksUnlessEmpty(kMarkerScope);
  if (!callbacks)
    return 0;
  unsigned mask = 0;
  for (const auto &pair : callbacks->callbacks_)
    for (int i = 0; i < kMaxSlots; i++)
      if (pair.start_ == kMarkers[i] && g_slots[i].active.load(std::memory_order_relaxed))
        mask |= 1u << i;
  return mask;
}

bool has_python_key(c10::ArrayRef<const c10::IValue> inputs) {
  for (const c10::IValue &v : inputs) {
    if (!v.isTensor())
      continue;
    const at::Tensor &t = v.toTensor();
    if (t.defined() && t.key_set().has(c10::DispatchKey::Python))
      return true;
  }
  return false;
}

// Where fp32 may run as TF32 for this call (mfu_op_call.tf32): CUDA and
// meta (a meta run stands for a GPU run) follow torch's settings; CPU has
// no TF32.
int tf32_bits(c10::ArrayRef<const c10::IValue> inputs) {
  for (const c10::IValue &v : inputs) {
    if (!v.isTensor() || !v.toTensor().defined())
      continue;
    const auto type = v.toTensor().device().type();
    if (type != c10::DeviceType::CUDA && type != c10::DeviceType::Meta)
      return 0;
    const auto &ctx = at::globalContext();
    return (ctx.allowTF32CuBLAS() ? MFU_TF32_MATMUL : 0) |
           (ctx.allowTF32CuDNN() ? MFU_TF32_CONV : 0);
  }
  return 0;
}

void accumulate(Slot &slot, const char *name, bool backward_phase, bool ok,
                const mfu_op_flops &c, const std::string &error) {
  counted_calls()++; // the ops running around this one are covered
  std::lock_guard<std::mutex> lock(slot.mutex);
  Totals &t = slot.totals;
  if (!ok) {
    if (t.errors++ == 0)
      t.first_error = std::string(name) + ": " + error;
    return;
  }
  t.counted_calls++;
  t.executed += c.executed;
  t.executed_by_dtype[c.dtype] += c.executed;
  if (backward_phase) {
    t.backward += c.executed;
  } else {
    const __int128 model = static_cast<__int128>(c.executed) + c.model_backward;
    t.forward += c.executed;
    t.model += model;
    t.model_by_dtype[c.dtype] += model;
  }
  if (c.approximate)
    t.approximate_calls++;
  auto &op = t.per_op[name];
  op.first++;
  op.second += c.executed;
}

struct DepthGuard {
  DepthGuard() { tl_depth++; }
  ~DepthGuard() { tl_depth--; }
};

Slot *slot_at(int index) {
  if (index < 0 || index >= kMaxSlots || !g_slots[index].taken.load()) {
    PyErr_Format(PyExc_ValueError, "no active FLOP count in slot %d", index);
    return nullptr;
  }
  return &g_slots[index];
}

void copy_totals(Slot &slot, bool with_ops, Totals *out) {
  std::lock_guard<std::mutex> lock(slot.mutex);
  const Totals &t = slot.totals;
  out->executed = t.executed;
  out->forward = t.forward;
  out->model = t.model;
  out->backward = t.backward;
  for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
    out->model_by_dtype[d] = t.model_by_dtype[d];
    out->executed_by_dtype[d] = t.executed_by_dtype[d];
  }
  out->counted_calls = t.counted_calls;
  out->errors = t.errors;
  out->approximate_calls = t.approximate_calls;
  out->first_error = t.first_error;
  if (with_ops) {
    out->per_op = t.per_op;
    out->uncounted = t.uncounted;
  }
}

// Names of ops counted outside the dispatcher, kept for good: per_op keys
// must outlive the slots' totals.
const char *interned(const char *name) {
  static std::mutex mutex;
  static auto *names = new std::unordered_set<std::string>(); // never freed
  std::lock_guard<std::mutex> lock(mutex);
  return names->insert(name).first->c_str();
}

} // namespace

unsigned thread_slots() { return tl_depth == 0 ? active_slots() : 0; }

mfu_causal slot_causal(int slot) { return g_slots[slot].causal; }

bool slot_counts_here(int slot) { return tl_depth == 0 && (active_slots() & (1u << slot)); }

bool in_counted_op() { return tl_depth > 0; }

void nest(int delta) { tl_depth = std::max(0, tl_depth + delta); }

void add_external(unsigned mask, const char *name, bool backward_phase,
                  const mfu_op_flops counts[2], const bool ok[2],
                  const std::string errors[2]) {
  const char *stable = interned(name);
  for (int i = 0; i < kMaxSlots; i++) {
    Slot &slot = g_slots[i];
    if ((mask & (1u << i)) && slot.active.load(std::memory_order_relaxed)) {
      const int c = slot.causal == MFU_CAUSAL_HALF ? 1 : 0;
      accumulate(slot, stable, backward_phase, ok[c], counts[c], errors[c]);
    }
  }
}

void record_uncounted(int index, const char *name, const std::vector<int64_t> &largest,
                      bool always) {
  Slot &slot = g_slots[index];
  if (!slot.active.load(std::memory_order_relaxed) || !(always || slot.auditing.load()))
    return;
  int64_t numel = 1;
  for (int64_t d : largest)
    numel *= d;
  std::lock_guard<std::mutex> lock(slot.mutex);
  Totals::Uncounted &entry = slot.totals.uncounted[name];
  entry.calls++;
  if (numel > entry.numel) {
    entry.numel = numel;
    entry.largest = largest;
  }
}

int audit(int index) {
  Slot *slot = slot_at(index);
  if (slot == nullptr)
    return -1;
  if (slot->owner != std::this_thread::get_id()) {
    PyErr_SetString(PyExc_RuntimeError, "an audit starts on the thread that entered the counter");
    return -1;
  }
  if (slot->auditor != 0)
    return 0;
  try {
    slot->auditor = at::addThreadLocalCallback(audit_callback(index));
    slot->auditing.store(true);
  } catch (const std::exception &e) {
    PyErr_Format(PyExc_RuntimeError, "at::addThreadLocalCallback failed: %s", e.what());
    return -1;
  }
  return 0;
}

void count_and_run(const OpSpec &spec, const c10::OperatorHandle &op,
                   c10::DispatchKeySet after, torch::jit::Stack *stack) {
  const size_t nargs = std::min(op.schema().arguments().size(), stack->size());
  const c10::ArrayRef<const c10::IValue> inputs(stack->data() + stack->size() - nargs, nargs);
  const unsigned mask = tl_depth == 0 ? active_slots() : 0;
  if (mask == 0 || has_python_key(inputs)) {
    // inside a counted op (counted by it), no counter on this thread, or a
    // subclass / fake tensor (the op it becomes counts)
    op.redispatchBoxed(after, stack);
    return;
  }
  // The count, before the op consumes its arguments: once per causal
  // convention in use.
  const bool backward_phase = torch::autograd::get_current_graph_task_id() != -1;
  const bool grad_mode = c10::GradMode::is_enabled();
  const int tf32 = tf32_bits(inputs);
  mfu_op_flops counts[2] = {};
  bool ok[2] = {false, false}, done[2] = {false, false};
  std::string errors[2];
  for (int i = 0; i < kMaxSlots; i++) {
    if (!(mask & (1u << i)))
      continue;
    const int c = g_slots[i].causal == MFU_CAUSAL_HALF ? 1 : 0;
    if (!done[c]) {
      ok[c] = count_op(spec, inputs, g_slots[i].causal, backward_phase, grad_mode, tf32,
                       &counts[c], &errors[c]);
      done[c] = true;
    }
  }
  {
    DepthGuard depth;
    op.redispatchBoxed(after, stack); // an exception: the op did not complete
  }
  const char *name = op.operator_name().name.c_str();
  for (int i = 0; i < kMaxSlots; i++) {
    Slot &slot = g_slots[i];
    if ((mask & (1u << i)) && slot.active.load(std::memory_order_relaxed)) {
      const int c = slot.causal == MFU_CAUSAL_HALF ? 1 : 0;
      accumulate(slot, name, backward_phase, ok[c], counts[c], errors[c]);
    }
  }
}

int start(mfu_causal causal) {
  if (sync_kernels() < 0)
    return -1;
  for (int i = 0; i < kMaxSlots; i++) {
    bool expected = false;
    if (!g_slots[i].taken.compare_exchange_strong(expected, true))
      continue;
    Slot &slot = g_slots[i];
    {
      std::lock_guard<std::mutex> lock(slot.mutex);
      slot.totals = Totals{};
    }
    slot.causal = causal;
    slot.owner = std::this_thread::get_id();
    try {
      slot.marker = at::addThreadLocalCallback(
          at::RecordFunctionCallback(kMarkers[i]).scopes({kMarkerScope}));
    } catch (const std::exception &e) {
      slot.taken.store(false);
      PyErr_Format(PyExc_RuntimeError, "at::addThreadLocalCallback failed: %s", e.what());
      return -1;
    }
    if (tl_counts++ == 0) {
      tl_depth = 0;
      include_key(true);
    }
    slot.active.store(true);
    return i;
  }
  PyErr_Format(PyExc_RuntimeError,
               "too many FLOP counters active at once (at most %d, nested or on "
               "other threads)",
               kMaxSlots);
  return -1;
}

int stop(int index, Totals *out) {
  Slot *slot = slot_at(index);
  if (slot == nullptr)
    return -1;
  if (slot->owner != std::this_thread::get_id()) {
    PyErr_SetString(PyExc_RuntimeError,
                    "a FlopCounter must be exited on the thread that entered it "
                    "(its libtorch observer is thread-local)");
    return -1;
  }
  slot->active.store(false);
  at::removeCallback(slot->marker);
  if (slot->auditor != 0) {
    slot->auditing.store(false);
    at::removeCallback(slot->auditor);
    slot->auditor = 0;
  }
  if (tl_counts > 0 && --tl_counts == 0)
    include_key(false);
  copy_totals(*slot, true, out);
  slot->taken.store(false);
  return 0;
}

int read(int index, bool with_ops, Totals *out) {
  Slot *slot = slot_at(index);
  if (slot == nullptr)
    return -1;
  copy_totals(*slot, with_ops, out);
  return 0;
}

int reset(int index) {
  Slot *slot = slot_at(index);
  if (slot == nullptr)
    return -1;
  std::lock_guard<std::mutex> lock(slot->mutex);
  slot->totals = Totals{};
  return 0;
}

int snapshot(int index, __int128 *forward, __int128 *model) {
  Slot *slot = slot_at(index);
  if (slot == nullptr)
    return -1;
  std::lock_guard<std::mutex> lock(slot->mutex);
  *forward = slot->totals.forward;
  *model = slot->totals.model;
  return 0;
}

} // namespace mfu_torch
