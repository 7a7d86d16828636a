// comm.cpp -- the communication observer: every collective the process
// issues, seen where ProcessGroup dispatches it, and every wait the
// dispatcher or autograd runs for one (mfu_torch.h, "Communication").
//
// How it sees collectives
//   A dispatch key of its own (kCommKey, just below the FLOP counter's)
//   carries a boxed kernel for each c10d operator of the core's table
//   (core/comm/comm.h: "c10d::allreduce_", "c10d::_allgather_base_", ...) and for
//   "_c10d_functional::wait_tensor", with a fallthrough for every other
//   operator, so an unobserved op costs nothing (the dispatcher drops
//   fallthrough keys from an op's key set before picking its kernel). The
//   key is in the "included" set of the thread that started the observer;
//   autograd copies it into the threads that run its backward passes. Every
//   ProcessGroup collective -- DDP's reducer, FSDP1 and FSDP2, DTensor's
//   functional collectives, pipelining's p2p -- dispatches one of these ops.
//
// What a collective records, in every sink (csrc/python/mfu_capsules.h):
//   - at launch: its kind, payload bytes (comm.h's conventions), bus bytes
//     (x nccl-tests' factor for the group's size) and the group's link peak
//     (set from Python per group name); the host time inside the launch is
//     exposed communication on CPU-clock sinks (a blocking launch);
//   - at completion: a callback on the Work's future takes the end mark, on
//     the stream the callback runs on (it waits for the collective's events:
//     ivalue::Future runs callbacks on streams synchronized with them); a
//     host collective's callback, on the backend's thread, reads the time and
//     queues it (mfu_capsules.h, done_at);
//   - waits: wait_tensor (functional collectives, DTensor) is bracketed by
//     the kind's phase; a collective launched inside a backward pass queues
//     autograd final callbacks around the callbacks queued after it, which
//     is where DDP's reducer waits for its buckets (finalize_backward): that
//     interval is the kind's exposed phase; Work.wait (Python's waits) is
//     replaced by an observed method while observing (comm_wait.cpp).
//   Tensors with the Python key (FakeTensor while tracing) or on `meta` are
//   not real collectives: passed through unrecorded.
//
// Never throws into the op: a failure to read an argument records the
// collective without the figure that needs it.
#include "mfu_torch.h"

// torch's autograd and c10d headers are not clean under -Wextra: their
// warnings are theirs, ours stay errors.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#pragma GCC diagnostic pop
#include <torch/library.h>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <array>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace torch::autograd {
// libtorch_cpu (graph_task.h): the id of the backward running on this
// thread, -1 outside one.
int get_current_graph_task_id();
} // namespace torch::autograd

namespace mfu_torch::comm {
namespace {

// Testing-only and unused by torch outside its C++ tests (borrowed, and
// checked: keys.cpp, docs/dispatch_keys.md); below the FLOP counter's key,
// so a counted region sees the collective as well.
constexpr c10::DispatchKey kCommKey = c10::DispatchKey::TESTING_ONLY_GenericWrapper;
static_assert(kCommKey < c10::DispatchKey::TESTING_ONLY_GenericMode,
              "the communication key must sit below the counting key (kernels.cpp)");
const c10::DispatchKeySet kAfter(c10::DispatchKeySet::FULL_AFTER, kCommKey);

const mfu_comm_api *g_api = nullptr;

// The kind of the last collective launched on this thread: what a wait on
// a Work without an op type (one made from a future: gloo's reduce-scatter)
// waits for when it follows its launch.
thread_local int t_last_kind = MFU_COMM_OTHER;

// > 0 while this thread runs a tracker's own collectives (its aggregation,
// the hosts' gather): they pass through unrecorded.
thread_local int t_suspended = 0;

// The last collective this thread launched whose Work has no future (gloo's
// reduce-scatter): its completion is the end of the next wait for a Work
// without an op type on this thread (comm_wait.cpp).
thread_local mfu_comm_ticket t_untimed{};
thread_local bool t_has_untimed = false;

struct Counters {
  std::atomic<int64_t> collectives{0}, skipped{0}, waits{0}, backward_waits{0},
      completions{0}, errors{0};
};
Counters g_counters;
std::atomic<int64_t> g_waits_python{0}; // Work.wait calls observed (comm_wait.cpp)

// ---- per-group links, set from Python --------------------------------------

struct Links {
  std::mutex mutex;
  std::unordered_map<std::string, double> by_group; // group name -> bytes/s
  double fallback = NAN;                              // link_bandwidth_gbs=
};
Links &links() {
  static Links *l = new Links(); // never destroyed: kernels outlive it
  return *l;
}

double link_of(const std::string &group) {
  Links &l = links();
  std::lock_guard<std::mutex> guard(l.mutex);
  if (!std::isnan(l.fallback))
    return l.fallback;
  auto it = l.by_group.find(group);
  return it == l.by_group.end() ? NAN : it->second;
}

// ---- results a later wait_tensor waits on: data pointer -> kind -------------

constexpr size_t kResults = 1024;
struct Result {
  std::atomic<const void *> ptr{nullptr};
  std::atomic<int> kind{MFU_COMM_OTHER};
};
std::array<Result, kResults> g_results;

size_t result_slot(const void *ptr) {
  return (reinterpret_cast<uintptr_t>(ptr) >> 6) % kResults;
}

void remember_result(const c10::IValue &value, mfu_comm_kind kind) {
  auto put = [kind](const at::Tensor &t) {
    if (!t.defined() || !t.has_storage())
      return;
    const void *ptr = t.data_ptr();
    Result &r = g_results[result_slot(ptr)];
    r.kind.store(kind, std::memory_order_relaxed);
    r.ptr.store(ptr, std::memory_order_release);
  };
  if (value.isTensor()) {
    put(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor &t : value.toTensorList().vec())
      put(t);
  }
}

mfu_comm_kind result_kind(const at::Tensor &t) {
  if (!t.defined() || !t.has_storage())
    return MFU_COMM_OTHER;
  const void *ptr = t.data_ptr();
  const Result &r = g_results[result_slot(ptr)];
  if (r.ptr.load(std::memory_order_acquire) != ptr)
    return MFU_COMM_OTHER;
  return static_cast<mfu_comm_kind>(r.kind.load(std::memory_order_relaxed));
}

// ---- streams collectives were launched on (FSDP2 waits on their events) ----
//
// A device collective launched while stream S was current (FSDP2 launches
// its all-gathers on its own all-gather stream, its reduce-scatters on its
// reduce-scatter stream) makes S wait for it; an event recorded on S after
// it completes with it, and the compute stream waiting on that event waits
// for the collective (mfu_tracker/distributed/_comm_observer.py).

constexpr size_t kStreams = 32;
struct LaunchStream {
  std::atomic<uintptr_t> handle{0};
  std::atomic<int> kind{MFU_COMM_OTHER};
};
std::array<LaunchStream, kStreams> g_streams;

void remember_stream(const c10::Device &device, mfu_comm_kind kind) {
  const auto *impl = c10::impl::getDeviceGuardImpl(device.type());
  const auto handle = reinterpret_cast<uintptr_t>(impl->getStream(device).native_handle());
  LaunchStream &slot = g_streams[(handle >> 4) % kStreams];
  slot.kind.store(kind, std::memory_order_relaxed);
  slot.handle.store(handle, std::memory_order_release);
}

// ---- reading a collective's arguments ---------------------------------------

struct Payload {
  double bytes = 0.0;
  bool real = true;  // no fake (Python key) or meta tensor
  bool host = false; // every payload tensor is a CPU tensor
  bool any = false;
  c10::Device device{c10::kCPU}; // the first payload tensor's
};

void add_tensor(const at::Tensor &t, Payload *p) {
  if (!t.defined())
    return;
  if (t.key_set().has(c10::DispatchKey::Python) || t.is_meta()) {
    p->real = false;
    return;
  }
  if (!p->any)
    p->device = t.device();
  p->host = p->any ? (p->host && t.is_cpu()) : t.is_cpu();
  p->any = true;
  if (!t.unsafeGetTensorImpl()->has_symbolic_sizes_strides())
    p->bytes += static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
}

// A Tensor, a Tensor[] or a Tensor[][].
void add_value(const c10::IValue &v, Payload *p) {
  if (v.isTensor()) {
    add_tensor(v.toTensor(), p);
  } else if (v.isTensorList()) {
    for (const at::Tensor &t : v.toTensorList().vec())
      add_tensor(t, p);
  } else if (v.isList()) {
    for (const c10::IValue &inner : v.toListRef())
      add_value(inner, p);
  }
}

// The group's size and name; size 0 when the argument is not a group.
std::pair<int64_t, std::string> group_of(const c10::IValue &v) {
  try {
    auto group = v.toCustomClass<c10d::ProcessGroup>();
    return {group->getSize(), group->getGroupName()};
  } catch (const std::exception &) {
    g_counters.errors++;
    return {0, std::string()};
  }
}

mfu_comm_launch describe(const mfu_comm_op &row, c10::ArrayRef<c10::IValue> args,
                         const Payload &payload) {
  mfu_comm_launch launch{};
  launch.kind = row.kind;
  launch.bytes = payload.bytes;
  launch.host = payload.host ? 1 : 0;
  launch.bus_bytes = NAN;
  launch.link_bytes_per_sec = NAN;
  if (row.group_arg >= 0 && static_cast<size_t>(row.group_arg) < args.size()) {
    auto [size, name] = group_of(args[row.group_arg]);
    double factor;
    if (size > 0 && g_api->busbw_factor(row.kind, size, &factor) == MFU_OK)
      launch.bus_bytes = payload.bytes * factor;
    if (size > 0)
      launch.link_bytes_per_sec = link_of(name);
  }
  return launch;
}

// ---- completion ------------------------------------------------------------

// The raw handle of the stream a future's callback runs on (it waits for
// the future's events); 0 for a host future.
uintptr_t callback_stream(const c10::ivalue::Future &future) {
  for (const c10::Device &device : future.devices()) {
    if (device.is_cpu())
      continue;
    const auto *impl = c10::impl::getDeviceGuardImpl(device.type());
    return reinterpret_cast<uintptr_t>(impl->getStream(device).native_handle());
  }
  return 0;
}

bool timed(const mfu_comm_ticket &ticket) {
  for (uint32_t g : ticket.generation)
    if (g != 0)
      return true;
  return false;
}

// The Work among the op's returns (now on the stack): end marks when its
// future completes.
void on_completion(torch::jit::Stack *stack, size_t nreturns, const mfu_comm_ticket &ticket) {
  if (!timed(ticket))
    return;
  for (size_t i = stack->size() - std::min(nreturns, stack->size()); i < stack->size(); i++) {
    const c10::IValue &value = (*stack)[i];
    if (!value.isObject())
      continue;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    try {
      future = value.toCustomClass<c10d::Work>()->getFuture();
    } catch (const std::exception &) {
      t_untimed = ticket; // timed at its wait (comm_wait.cpp)
      t_has_untimed = true;
      return;
    }
    try {
      future->addCallback([ticket](c10::ivalue::Future &future) {
        g_counters.completions++;
        const uintptr_t stream = callback_stream(future);
        uint64_t now_ns;
        // A host collective completes on the backend's thread: its time is
        // queued, not recorded here (no lock shared with the training
        // thread); a device one marks the stream the callback runs on.
        if (stream == 0 && g_api->now_ns(&now_ns) == MFU_OK)
          g_api->done_at(g_api->registry, &ticket, now_ns);
        else
          g_api->done(g_api->registry, &ticket, stream);
      });
    } catch (const std::exception &) {
      g_counters.errors++; // no future: the collective has bytes, no duration
    }
    return;
  }
}

// ---- waits inside a backward pass (DDP's reducer) ---------------------------

struct Backward {
  std::mutex mutex;
  std::unordered_map<int64_t, mfu_comm_kind> last_kind; // graph task -> kind
};
Backward &backward() {
  static Backward *b = new Backward();
  return *b;
}

void backward_end(int64_t id) {
  mfu_comm_kind kind = MFU_COMM_OTHER;
  {
    Backward &b = backward();
    std::lock_guard<std::mutex> guard(b.mutex);
    auto it = b.last_kind.find(id);
    if (it != b.last_kind.end())
      kind = it->second;
  }
  // The callbacks queued after the first collective (DDP's finalize waits
  // for its buckets there) run between this one and the next.
  auto wait = std::make_shared<mfu_comm_wait>();
  g_api->wait_begin(g_api->registry, g_api->kind_phase(kind), MFU_COMM_WAIT_ANY_THREAD,
                    wait.get());
  g_counters.backward_waits++;
  auto close = [id, wait] {
    g_api->wait_end(g_api->registry, wait.get());
    Backward &b = backward();
    std::lock_guard<std::mutex> guard(b.mutex);
    b.last_kind.erase(id);
  };
  try {
    torch::autograd::Engine::get_default_engine().queue_callback(close);
  } catch (const std::exception &) {
    g_counters.errors++;
    close();
  }
}

void in_backward(mfu_comm_kind kind) {
  const int64_t id = torch::autograd::get_current_graph_task_id();
  if (id == -1)
    return;
  Backward &b = backward();
  {
    std::lock_guard<std::mutex> guard(b.mutex);
    auto [it, inserted] = b.last_kind.emplace(id, kind);
    if (!inserted) {
      it->second = kind;
      return;
    }
  }
  try {
    torch::autograd::Engine::get_default_engine().queue_callback([id] { backward_end(id); });
  } catch (const std::exception &) {
    g_counters.errors++;
    std::lock_guard<std::mutex> guard(b.mutex);
    b.last_kind.erase(id);
  }
}

// ---- the kernels -----------------------------------------------------------

// Run the op on, then end the wait the caller opened -- also when the op
// throws, so no exposed-communication phase is left open.
void redispatch_then_end(const c10::OperatorHandle &op, c10::DispatchKeySet after,
                         torch::jit::Stack *stack, const mfu_comm_wait *wait) {
  try {
    op.redispatchBoxed(after, stack);
  } catch (...) {
    g_api->wait_end(g_api->registry, wait);
    throw;
  }
  g_api->wait_end(g_api->registry, wait);
}

// No tracker observes (every sink gone): the key leaves this thread's
// dispatch, as comm_stop() does on the thread that closed the last one.
void leave_if_unobserved() {
  if (!t_suspended && !g_api->active(g_api->registry))
    c10::impl::tls_set_dispatch_key_included(kCommKey, false);
}

struct CollectiveKernel final : c10::OperatorKernel {
  explicit CollectiveKernel(const mfu_comm_op *r) : row(r) {}
  const mfu_comm_op *row;

  void operator()(const c10::OperatorHandle &op, c10::DispatchKeySet ks,
                  torch::jit::Stack *stack) {
    const c10::DispatchKeySet after = ks & kAfter;
    if (t_suspended || !g_api->active(g_api->registry)) {
      leave_if_unobserved();
      op.redispatchBoxed(after, stack);
      return;
    }
    const size_t nargs = op.schema().arguments().size();
    const auto args = torch::jit::last(*stack, nargs);
    Payload payload;
    if (row->payload_arg >= 0 && static_cast<size_t>(row->payload_arg) < nargs)
      add_value(args[row->payload_arg], &payload);
    if (!payload.real) {
      g_counters.skipped++;
      op.redispatchBoxed(after, stack);
      return;
    }
    g_counters.collectives++;
    t_last_kind = row->kind;
    const mfu_comm_launch launch = describe(*row, args, payload);
    c10::IValue result;
    if (row->result_arg >= 0 && static_cast<size_t>(row->result_arg) < nargs)
      result = args[row->result_arg]; // a reference: the op pops its arguments
    // Host time inside a blocking launch: its kind's phase -- or, a p2p
    // transfer inside a pipeline schedule, the bubble.
    const mfu_phase phase = row->kind == MFU_COMM_P2P && in_schedule()
                                ? MFU_PHASE_PIPELINE_BUBBLE
                                : g_api->kind_phase(row->kind);
    mfu_comm_ticket ticket;
    mfu_comm_wait wait;
    g_api->launch(g_api->registry, &launch, phase,
                  MFU_COMM_WAIT_ANY_THREAD | MFU_COMM_WAIT_CPU_CLOCK_ONLY, &ticket, &wait);
    redispatch_then_end(op, after, stack, &wait);
    on_completion(stack, op.schema().returns().size(), ticket);
    remember_result(result, row->kind);
    in_backward(row->kind);
    if (!payload.host && payload.any) {
      try {
        remember_stream(payload.device, row->kind);
      } catch (const std::exception &) {
        g_counters.errors++;
      }
    }
  }
};

void wait_tensor_kernel(const c10::OperatorHandle &op, c10::DispatchKeySet ks,
                        torch::jit::Stack *stack) {
  const c10::DispatchKeySet after = ks & kAfter;
  if (t_suspended || !g_api->active(g_api->registry) || stack->empty() ||
      !stack->back().isTensor()) {
    leave_if_unobserved();
    op.redispatchBoxed(after, stack);
    return;
  }
  const at::Tensor &t = stack->back().toTensor();
  if (t.key_set().has(c10::DispatchKey::Python) || t.is_meta()) {
    op.redispatchBoxed(after, stack);
    return;
  }
  g_counters.waits++;
  mfu_comm_wait wait;
  g_api->wait_begin(g_api->registry, g_api->kind_phase(result_kind(t)),
                    MFU_COMM_WAIT_ANY_THREAD, &wait);
  redispatch_then_end(op, after, stack, &wait);
}

// The kernels are registered once and never removed (the libraries live as
// long as the process): with no sink they only redispatch.
std::once_flag g_registered;
std::vector<std::unique_ptr<torch::Library>> *g_libraries = nullptr;
std::vector<c10::OperatorHandle> *g_handles = nullptr; // the ops with a kernel of ours

void register_kernels() {
  // Two fallbacks on one key throw; one another library registered first
  // would see every op of an observed thread instead of ours.
  if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(kCommKey))
    throw std::runtime_error(std::string("another library registered a fallback on the "
                                         "dispatch key ") +
                             c10::toString(kCommKey) + " first");
  auto *libs = new std::vector<std::unique_ptr<torch::Library>>();
  auto *handles = new std::vector<c10::OperatorHandle>();
  auto keep = [handles](const char *name) {
    auto handle = c10::Dispatcher::singleton().findOp(c10::OperatorName(name, ""));
    if (handle.has_value())
      handles->push_back(*handle);
  };
  libs->push_back(std::make_unique<torch::Library>(torch::Library::IMPL, "_", kCommKey,
                                                   kRegisteredBy, __LINE__));
  libs->back()->fallback(torch::CppFunction::makeFallthrough());
  libs->push_back(std::make_unique<torch::Library>(torch::Library::IMPL, "c10d", kCommKey,
                                                   kRegisteredBy, __LINE__));
  for (size_t i = 0; i < g_api->op_count(); i++) {
    const mfu_comm_op *row = g_api->op_get(i);
    const char *name = row->name + sizeof("c10d::") - 1;
    libs->back()->impl(name, torch::CppFunction::makeFromBoxedFunctor(
                                 std::make_unique<CollectiveKernel>(row)));
    keep(row->name);
  }
  libs->push_back(std::make_unique<torch::Library>(
      torch::Library::IMPL, "_c10d_functional", kCommKey, kRegisteredBy, __LINE__));
  libs->back()->impl("wait_tensor",
                     torch::CppFunction::makeFromBoxedFunction<&wait_tensor_kernel>());
  keep("_c10d_functional::wait_tensor");
  g_handles = handles;
  g_libraries = libs;
}

} // namespace

int init(const mfu_comm_api *api) {
  g_api = api;
  return 0;
}

int start() {
  try {
    std::call_once(g_registered, register_kernels);
  } catch (const std::exception &e) {
    PyErr_Format(PyExc_RuntimeError, "registering the communication kernels failed: %s",
                 one_line(e).c_str());
    return -1;
  }
  c10::impl::tls_set_dispatch_key_included(kCommKey, true);
  return 0;
}

void stop() { c10::impl::tls_set_dispatch_key_included(kCommKey, false); }

bool observing() { return c10::impl::tls_is_dispatch_key_included(kCommKey); }

std::string foreign_kernel() {
  return g_handles == nullptr ? std::string() : first_foreign(*g_handles, kCommKey);
}

int key() { return static_cast<int>(kCommKey); }

void set_link(const std::string &group, double bytes_per_sec) {
  Links &l = links();
  std::lock_guard<std::mutex> guard(l.mutex);
  if (std::isnan(bytes_per_sec))
    l.by_group.erase(group);
  else
    l.by_group[group] = bytes_per_sec;
}

void set_fallback_link(double bytes_per_sec) {
  Links &l = links();
  std::lock_guard<std::mutex> guard(l.mutex);
  l.fallback = bytes_per_sec;
}

void suspend(bool on) { t_suspended += on ? 1 : (t_suspended > 0 ? -1 : 0); }

bool suspended() { return t_suspended > 0; }

void complete_untimed() {
  uint64_t now_ns;
  if (!t_has_untimed || g_api->now_ns(&now_ns) != MFU_OK)
    return;
  t_has_untimed = false;
  g_api->done_at(g_api->registry, &t_untimed, now_ns);
}

int stream_phase(uintptr_t handle) {
  const LaunchStream &slot = g_streams[(handle >> 4) % kStreams];
  if (handle == 0 || slot.handle.load(std::memory_order_acquire) != handle)
    return -1;
  return g_api->kind_phase(static_cast<mfu_comm_kind>(slot.kind.load(std::memory_order_relaxed)));
}

bool sinks_active() { return g_api != nullptr && g_api->active(g_api->registry) != 0; }

void begin_wait(int phase, mfu_comm_wait *wait) {
  g_waits_python++;
  g_api->wait_begin(g_api->registry, static_cast<mfu_phase>(phase), 0, wait);
}

void end_wait(const mfu_comm_wait *wait) { g_api->wait_end(g_api->registry, wait); }

int last_phase() { return g_api->kind_phase(static_cast<mfu_comm_kind>(t_last_kind)); }

CommCounters counters() {
  return CommCounters{g_counters.collectives.load(), g_counters.skipped.load(),
                      g_counters.waits.load() + g_waits_python.load(),
                      g_counters.backward_waits.load(), g_counters.completions.load(),
                      g_counters.errors.load()};
}

} // namespace mfu_torch::comm
