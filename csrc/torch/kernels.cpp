// kernels.cpp -- the counting dispatch key (see mfu_torch.h): a fallthrough
// for every operator, a boxed kernel for the counted ones, the thread-local
// switch that puts the key in an op's dispatch, and the checks that the key
// is still ours (docs/dispatch_keys.md).
#include "mfu_torch.h"

#include <torch/library.h>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <atomic>
#include <memory>
#include <unordered_set>
#include <vector>

namespace mfu_torch {
namespace {

// Above autograd (an op is seen as the user called it, grad mode and
// requires_grad as they are) and unused by torch outside its own C++ tests.
constexpr c10::DispatchKey kCountKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

// Every key below ours: what a kernel re-dispatches to.
const c10::DispatchKeySet kAfter(c10::DispatchKeySet::FULL_AFTER, kCountKey);

// Counters alive in the process (key_hold): with none, or once the key was
// refused, the key leaves the dispatch of a thread that still has it at its
// next counted op outside a count.
std::atomic<int> g_holders{0};
std::atomic<bool> g_refused{false};

void kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks, torch::jit::Stack *stack) {
  const c10::DispatchKeySet after = ks & kAfter;
  // Autocast re-runs the op with cast arguments (and itself excluded):
  // that call is the one to count.
  if (!(after & c10::autocast_dispatch_keyset).empty()) {
    op.redispatchBoxed(after, stack);
    return;
  }
  const OpSpec &spec = classify(op);
  if (!spec.counted()) {
    op.redispatchBoxed(after, stack);
    return;
  }
  count_and_run(spec, op, after, stack);
}

// Operators defined in the process, as the dispatcher reports them (the
// listener runs under the dispatcher's lock, where no kernel can be
// registered: it only queues the name).
// Lock order: never hold `mutex` while calling the dispatcher (its lock
// is held while it calls the listener, which takes `mutex`).
struct Registry {
  std::mutex mutex;                       // guards `pending` only
  std::vector<c10::OperatorName> pending; // defined, not yet looked at
  std::mutex sync_mutex;                  // guards the rest (sync_kernels)
  std::vector<c10::OperatorName> uncounted; // looked at: no formula yet
  std::unordered_set<c10::OperatorName> registered;
  std::vector<c10::OperatorHandle> handles; // of `registered`, for foreign_kernel()
  std::vector<std::unique_ptr<torch::Library>> libraries;
  uint64_t generation = ~uint64_t{0}; // of the formula registry, last sync
  bool ready = false;
  std::unique_ptr<c10::RegistrationHandleRAII> listener_handle;
};

Registry &registry() {
  static Registry *r = new Registry(); // never destroyed: kernels outlive it
  return *r;
}

struct Listener final : c10::OpRegistrationListener {
  void onOperatorRegistered(const c10::OperatorHandle &op) override {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.pending.push_back(op.operator_name());
  }
  void onOperatorDeregistered(const c10::OperatorHandle &) override {}
};

// Register the kernel for `name` if it counts; false when it does not.
bool register_if_counted(Registry &r, const c10::OperatorName &name) {
  if (r.registered.count(name))
    return true;
  if (!lookup(name.name.c_str()).counted())
    return false;
  const auto sep = name.name.find("::");
  const std::string ns = name.name.substr(0, sep);
  std::string op = name.name.substr(sep + 2);
  if (!name.overload_name.empty())
    op += "." + name.overload_name;
  r.libraries.push_back(std::make_unique<torch::Library>(
      torch::Library::IMPL, ns, kCountKey, kRegisteredBy, __LINE__));
  r.libraries.back()->impl(op.c_str(), torch::CppFunction::makeFromBoxedFunction<&kernel>());
  r.registered.insert(name);
  auto handle = c10::Dispatcher::singleton().findOp(name);
  if (handle.has_value())
    r.handles.push_back(*handle);
  return true;
}

} // namespace

int sync_kernels() {
  Registry &r = registry();
  const mfu_ops_api &api = ops();
  try {
    std::lock_guard<std::mutex> sync_lock(r.sync_mutex);
    if (!r.ready) {
      // Two fallbacks on one key throw; one registered by another library
      // first would see every op of a counted region instead of ours.
      if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(kCountKey)) {
        PyErr_Format(PyExc_RuntimeError,
                     "another library registered a fallback on the dispatch key %s first",
                     c10::toString(kCountKey));
        return -1;
      }
      r.libraries.push_back(std::make_unique<torch::Library>(
          torch::Library::IMPL, "_", kCountKey, kRegisteredBy, __LINE__));
      r.libraries.back()->fallback(torch::CppFunction::makeFallthrough());
      r.ready = true;
    }
    const uint64_t generation = api.formulas.generation(api.formulas.registry);
    std::vector<c10::OperatorName> todo;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      todo.swap(r.pending);
    }
    if (generation == r.generation && todo.empty())
      return 0;
    if (generation != r.generation) {
      todo.insert(todo.end(), r.uncounted.begin(), r.uncounted.end());
      r.uncounted.clear();
      r.generation = generation;
    }
    for (const c10::OperatorName &name : todo)
      if (!register_if_counted(r, name))
        r.uncounted.push_back(name);
  } catch (const std::exception &e) {
    PyErr_Format(PyExc_RuntimeError, "registering the FLOP counting kernels failed: %s",
                 one_line(e).c_str());
    return -1;
  }
  return 0;
}

int listen_for_ops() {
  Registry &r = registry();
  try {
    // Reports every operator defined so far, then each new one.
    r.listener_handle = std::make_unique<c10::RegistrationHandleRAII>(
        c10::Dispatcher::singleton().addRegistrationListener(std::make_unique<Listener>()));
  } catch (const std::exception &e) {
    PyErr_Format(PyExc_ImportError, "cannot watch operator registrations: %s", one_line(e).c_str());
    return -1;
  }
  return 0;
}

void include_key(bool on) { c10::impl::tls_set_dispatch_key_included(kCountKey, on); }

int count_key() { return static_cast<int>(kCountKey); }

std::string foreign_kernel() {
  Registry &r = registry();
  std::lock_guard<std::mutex> sync_lock(r.sync_mutex);
  return first_foreign(r.handles, kCountKey);
}

void key_hold(int delta, bool off_here) {
  if (delta == 0)
    g_refused.store(true);
  g_holders.fetch_add(delta);
  if (delta > 0 && !g_refused.load())
    include_key(true);
  else if (off_here && !counting_here()) // a count going on here keeps it to its end
    include_key(false);
}

bool key_wanted() {
  return g_holders.load(std::memory_order_relaxed) > 0 &&
         !g_refused.load(std::memory_order_relaxed);
}

} // namespace mfu_torch
