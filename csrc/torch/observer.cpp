// observer.cpp -- the RecordFunction callbacks, their slots and totals (see
// mfu_torch.h for what is counted and how phases are told apart).
#include "mfu_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <array>
#include <atomic>
#include <exception>
#include <thread>
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
  std::atomic<bool> active{false}; // callbacks count
  mfu_causal causal = MFU_CAUSAL_FULL;
  at::CallbackHandle handle = 0;
  std::thread::id owner;
  std::mutex mutex; // guards totals
  Totals totals;
};

Slot g_slots[kMaxSlots];

// Per thread and slot: how many counted ops are running (0 or 1 in practice:
// ops called by a counted op are not classified).
thread_local int tl_depth[kMaxSlots];

// Returned by the start callback for a counted op, with its count; the end
// callback leaves the op and commits the count, unless the op is ending by
// an exception (it never ran: e.g. activation checkpointing's early stop
// throws from a saved-tensor hook before the kernel).
struct Counted final : at::ObserverContext {
  const char *name = nullptr;
  bool backward_phase = false;
  bool ok = false;
  int uncaught = 0;
  mfu_op_flops count{};
  std::string error;
};

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

void accumulate(Slot &slot, const char *name, bool backward_phase, bool ok,
                const mfu_op_flops &c, std::string &error) {
  std::lock_guard<std::mutex> lock(slot.mutex);
  Totals &t = slot.totals;
  if (!ok) {
    if (t.errors++ == 0)
      t.first_error = std::string(name) + ": " + error;
    return;
  }
  t.counted_calls++;
  t.executed += c.executed;
  if (backward_phase) {
    t.backward += c.executed;
  } else {
    t.forward += c.executed;
    t.model += static_cast<__int128>(c.executed) + c.model_backward;
  }
  if (c.approximate)
    t.approximate_calls++;
  auto &op = t.per_op[name];
  op.first++;
  op.second += c.executed;
}

template <int S>
std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn) {
  if (tl_depth[S] > 0)
    return nullptr; // inside a counted op: counted by it
  Slot &slot = g_slots[S];
  if (!slot.active.load(std::memory_order_relaxed))
    return nullptr;
  const char *name = fn.name();
  const OpSpec &spec = classify(name);
  if (!spec.counted())
    return nullptr;
  auto inputs = fn.inputs();
  if (has_python_key(inputs))
    return nullptr; // a subclass / fake tensor: the op it becomes counts
  tl_depth[S]++;
  auto ctx = std::make_unique<Counted>();
  ctx->name = name;
  ctx->uncaught = std::uncaught_exceptions();
  ctx->backward_phase = torch::autograd::get_current_graph_task_id() != -1;
  ctx->ok = count_op(spec, inputs, slot.causal, ctx->backward_phase,
                     c10::GradMode::is_enabled(), &ctx->count, &ctx->error);
  return ctx;
}

template <int S>
void on_end(const at::RecordFunction &, at::ObserverContext *ctx) {
  if (ctx == nullptr)
    return;
  if (tl_depth[S] > 0)
    tl_depth[S]--;
  auto *counted = static_cast<Counted *>(ctx);
  if (std::uncaught_exceptions() > counted->uncaught)
    return; // the op is unwinding: it did not complete
  Slot &slot = g_slots[S];
  if (slot.active.load(std::memory_order_relaxed))
    accumulate(slot, counted->name, counted->backward_phase, counted->ok, counted->count,
               counted->error);
}

using StartFn = at::RecordFunctionCallback::StartCallback;
using EndFn = at::RecordFunctionCallback::EndCallback;

template <size_t... I>
constexpr std::array<std::pair<StartFn, EndFn>, kMaxSlots>
make_callbacks(std::index_sequence<I...>) {
  return {{{&on_start<static_cast<int>(I)>, &on_end<static_cast<int>(I)>}...}};
}

constexpr auto kCallbacks = make_callbacks(std::make_index_sequence<kMaxSlots>{});

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
  out->counted_calls = t.counted_calls;
  out->errors = t.errors;
  out->approximate_calls = t.approximate_calls;
  out->first_error = t.first_error;
  if (with_ops)
    out->per_op = t.per_op;
}

} // namespace

int start(mfu_causal causal) {
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
    tl_depth[i] = 0;
    try {
      slot.handle = at::addThreadLocalCallback(
          at::RecordFunctionCallback(kCallbacks[i].first, kCallbacks[i].second)
              .needsInputs(true)
              .scopes({at::RecordScope::FUNCTION}));
    } catch (const std::exception &e) {
      slot.taken.store(false);
      PyErr_Format(PyExc_RuntimeError, "at::addThreadLocalCallback failed: %s", e.what());
      return -1;
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
  at::removeCallback(slot->handle);
  copy_totals(*slot, true, out);
  tl_depth[index] = 0;
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
