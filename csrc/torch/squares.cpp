// squares.cpp -- the autograd nodes of causal math-path attention calls
// counted under causal_attention="half" (see mfu_torch.h): the math path
// (aten::_scaled_dot_product_attention_math, a full_square row) computes the
// full square with matmuls, forward and, through their autograd, backward.
// Its forward is counted as one attention call, at the convention's share;
// its backward's matmuls are plain bmms, which the core counts at that share
// too when told (mfu_op_call.square_model, ops.h "Causal attention"). The
// nodes a call creates are told by their (forward thread, sequence number):
// autograd numbers the nodes of a thread in creation order, so the call's
// nodes are the numbers it took while it ran.
#include "mfu_torch.h"

#include <atomic>
#include <deque>
#include <map>
#include <utility>

namespace mfu_torch {
namespace {

// A call's node numbers [first, end) on its thread, and its share.
struct Span {
  uint64_t end = 0;
  int64_t model = 0;
  int64_t executed = 0;
};
using Key = std::pair<uint64_t, uint64_t>; // (forward thread, first number)

// Calls kept at most: a training step notes one per math-path attention
// layer; the oldest are dropped beyond this (their graph long gone).
constexpr size_t kMaxSpans = 1 << 16;

struct SquareRegistry {
  std::mutex mutex;
  std::map<Key, Span> spans;
  std::deque<Key> order; // oldest first
  std::atomic<bool> any{false};
};

SquareRegistry &square_registry() {
  static SquareRegistry *r = new SquareRegistry(); // never destroyed: backward threads may outlive exit
  return *r;
}

} // namespace

void square_note(uint64_t thread, uint64_t first, uint64_t end, int64_t model,
                 int64_t executed) {
  if (end <= first || executed <= 0 || model < 0 || model >= executed)
    return;
  SquareRegistry &r = square_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const Key key{thread, first};
  if (!r.spans.emplace(key, Span{end, model, executed}).second)
    return;
  r.order.push_back(key);
  if (r.order.size() > kMaxSpans) {
    r.spans.erase(r.order.front());
    r.order.pop_front();
  }
  r.any.store(true, std::memory_order_relaxed);
}

bool square_share(uint64_t thread, uint64_t sequence_nr, int64_t *model, int64_t *executed) {
  SquareRegistry &r = square_registry();
  if (!r.any.load(std::memory_order_relaxed))
    return false;
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.spans.upper_bound(Key{thread, sequence_nr});
  if (it == r.spans.begin())
    return false;
  --it;
  if (it->first.first != thread || sequence_nr >= it->second.end)
    return false;
  *model = it->second.model;
  *executed = it->second.executed;
  return true;
}

void square_clear() {
  SquareRegistry &r = square_registry();
  if (!r.any.load(std::memory_order_relaxed))
    return; // nothing noted (the common case: no math path under "half")
  std::lock_guard<std::mutex> lock(r.mutex);
  r.spans.clear();
  r.order.clear();
  r.any.store(false, std::memory_order_relaxed);
}

} // namespace mfu_torch
