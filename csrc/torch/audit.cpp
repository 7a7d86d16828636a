// audit.cpp -- the ops a count did not cover (FlopCounter(audit=True), see
// mfu_torch.h): a thread-local RecordFunction callback per auditing slot
// sees every op of the threads the count covers; an op that took tensors
// and during which no call was counted is recorded with its largest input.
#include "mfu_torch.h"

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include <vector>

namespace mfu_torch {
namespace {

thread_local uint64_t tl_counted_calls = 0;

// What an op's start hands its end: the counted calls then, its largest
// tensor input.
struct Frame final : at::ObserverContext {
  uint64_t counted = 0;
  std::vector<int64_t> largest;
};

// Note `t` if it is the largest tensor so far; false for a tensor of a
// subclass or a fake one (the op it becomes is the one that runs).
bool consider(const at::Tensor &t, int64_t *best, Frame *frame) {
  if (!t.defined())
    return true;
  if (t.key_set().has(c10::DispatchKey::Python))
    return false;
  if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides())
    return true;
  const int64_t numel = t.numel();
  if (numel > *best) {
    *best = numel;
    frame->largest.assign(t.sizes().begin(), t.sizes().end());
  }
  return true;
}

std::unique_ptr<at::ObserverContext> enter_op(const at::RecordFunction &fn) {
  if (in_counted_op() || !fn.operator_name().has_value())
    return nullptr; // covered by the counted op that runs it, or not an op
  auto frame = std::make_unique<Frame>();
  int64_t best = -1;
  for (const c10::IValue &v : fn.inputs()) {
    if (v.isTensor()) {
      if (!consider(v.toTensor(), &best, frame.get()))
        return nullptr;
    } else if (v.isTensorList()) {
      for (const at::Tensor &t : v.toTensorVector())
        if (!consider(t, &best, frame.get()))
          return nullptr;
    }
  }
  if (best < 0)
    return nullptr; // no tensor input
  frame->counted = tl_counted_calls;
  return frame;
}

template <int S>
std::unique_ptr<at::ObserverContext> audit_enter(const at::RecordFunction &fn) {
  return slot_counts_here(S) ? enter_op(fn) : nullptr;
}

template <int S>
void audit_exit(const at::RecordFunction &fn, at::ObserverContext *ctx) {
  const auto *frame = static_cast<const Frame *>(ctx);
  if (frame != nullptr && frame->counted == tl_counted_calls)
    record_uncounted(S, fn.name(), frame->largest, false);
}

template <size_t... I>
constexpr std::array<at::RecordFunctionCallback::StartCallback, kMaxSlots>
make_enters(std::index_sequence<I...>) {
  return {{&audit_enter<static_cast<int>(I)>...}};
}

template <size_t... I>
constexpr std::array<at::RecordFunctionCallback::EndCallback, kMaxSlots>
make_exits(std::index_sequence<I...>) {
  return {{&audit_exit<static_cast<int>(I)>...}};
}

constexpr auto kEnters = make_enters(std::make_index_sequence<kMaxSlots>{});
constexpr auto kExits = make_exits(std::make_index_sequence<kMaxSlots>{});

} // namespace

uint64_t &counted_calls() { return tl_counted_calls; }

at::RecordFunctionCallback audit_callback(int slot) {
  return at::RecordFunctionCallback(kEnters[slot], kExits[slot])
      .needsInputs(true)
      .scopes({at::RecordScope::FUNCTION});
}

} // namespace mfu_torch
