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
#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

namespace torch {
namespace autograd {
int get_current_graph_task_id(); // libtorch_cpu (graph_task.h); site.cpp
} // namespace autograd
} // namespace torch

namespace mfu_torch {
namespace {

struct Slot {
  std::atomic<bool> taken{false};  // owned by a counter (start..stop)
  std::atomic<bool> active{false}; // counts
  mfu_causal causal = MFU_CAUSAL_FULL;
  bool modules = false;    // keeps per-module totals (start())
  std::atomic<uint64_t> generation{0}; // of the count in the slot (start())
  const void *pushed = nullptr;         // its debug info entry (push_slot())
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
// The innermost module of this thread's forward (module_enter), 0: none;
// and the slots this thread started with a module table (module calls are
// made on the thread that started the count).
thread_local int32_t tl_module = 0;
thread_local unsigned tl_module_slots = 0;

// Which counters a thread counts for travels with its debug info
// (c10::ThreadLocalDebugInfo, a kind of our own): at::ThreadLocalState
// copies it -- one shared pointer -- into the autograd engine's threads for
// a backward, as it copies the dispatch key set. An entry lists the slots
// counting there with each slot's generation at its start, so an entry left
// behind (a stop that could not pop it) never counts for a later count
// that reuses the slot. (A RecordFunction callback per slot, the first
// design, made every autograd node's thread-local state switch rebuild the
// callback lists: ~1/5 of the counter's cost per training step.)
constexpr std::string_view kSlotsInfoName = "mfu_tracker._torch counting slots";
const c10::DebugInfoKind kSlotsInfo(&kSlotsInfoName);

struct SlotsInfo final : c10::DebugInfoBase {
  unsigned mask = 0;
  uint64_t generation[kMaxSlots] = {};
};

// The slots this thread counts for, as a bit mask.
unsigned active_slots() {
  const auto *info = static_cast<const SlotsInfo *>(c10::ThreadLocalDebugInfo::get(kSlotsInfo));
  if (info == nullptr)
    return 0;
  unsigned mask = 0;
  for (int i = 0; i < kMaxSlots; i++)
    if ((info->mask & (1u << i)) && g_slots[i].active.load(std::memory_order_relaxed) &&
        g_slots[i].generation.load(std::memory_order_relaxed) == info->generation[i])
      mask |= 1u << i;
  return mask;
}

// This thread counts for `slot` too from now on (start).
void push_slot(int slot) {
  auto info = std::make_shared<SlotsInfo>();
  const unsigned live = active_slots();
  const auto *now = static_cast<const SlotsInfo *>(c10::ThreadLocalDebugInfo::get(kSlotsInfo));
  for (int i = 0; now != nullptr && i < kMaxSlots; i++)
    info->generation[i] = now->generation[i];
  info->mask = live | (1u << slot);
  info->generation[slot] = g_slots[slot].generation.load();
  g_slots[slot].pushed = info.get();
  c10::ThreadLocalDebugInfo::_push(kSlotsInfo, std::move(info));
}

// ... no longer (stop): its entry is popped when it is the newest debug
// info of the thread (else a later one, the profiler's, is on top: the entry
// stays, counting for nothing, until that one is gone).
void pop_slot(int slot) {
  try {
    if (c10::ThreadLocalDebugInfo::_peek(kSlotsInfo).get() == g_slots[slot].pushed)
      c10::ThreadLocalDebugInfo::_pop(kSlotsInfo);
  } catch (const std::exception &) {
    // the newest debug info is another kind
  }
  g_slots[slot].pushed = nullptr;
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

// Whether torch.compile is at work (set_compiling_check); the GIL guards it.
PyObject *g_compiling = nullptr;

// Whether a call on Python-key tensors counts: the user's fake run -- a fake
// mode active (entered around the counter or inside it), no proxy (tracing)
// mode, and torch.compile not at work (its tracing and its compiling of a
// graph run under a fake mode of its own) -- not a subclass, nor compile's.
bool user_fake_run() {
  using c10::impl::TorchDispatchModeKey;
  using c10::impl::TorchDispatchModeTLS;
  if (!TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::FAKE).has_value() ||
      TorchDispatchModeTLS::get_mode(TorchDispatchModeKey::PROXY).has_value())
    return false;
  PyGILState_STATE gil = PyGILState_Ensure();
  bool user = false;
  if (g_compiling != nullptr) {
    PyObject *answer = PyObject_CallNoArgs(g_compiling);
    user = answer != nullptr && answer == Py_False;
    Py_XDECREF(answer);
    PyErr_Clear(); // a failing check: not counted (as while compiling)
  }
  PyGILState_Release(gil);
  return user;
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

// Add one call by its site (ops.h: the core decided what it counts).
void accumulate(Slot &slot, const char *name, int32_t module, bool ok,
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
  (c.site == MFU_SITE_FORWARD ? t.forward : t.backward) += c.executed;
  if (c.site == MFU_SITE_RECOMPUTE || c.site == MFU_SITE_RECOMPUTE_BACKPROP)
    t.recompute += c.executed;
  t.model += c.model_self;
  t.model_by_dtype[c.dtype] += c.model_self;
  t.overcompute += c.overcompute;
  t.anticipated += c.model_backward;
  t.anticipated_by_dtype[c.dtype] += c.model_backward;
  t.anticipated_overcompute += c.overcompute_backward;
  t.mask_read_calls += c.mask_read;
  if (c.mask_tensor) {
    t.mask_tensor_calls++;
    t.mask_tensor_flops += c.executed;
  }
  if (c.approximate)
    t.approximate_calls++;
  auto &op = t.per_op[name];
  op.first++;
  op.second += c.executed;
  if (slot.modules && module != 0 && c.site == MFU_SITE_FORWARD) {
    // attributed at the forward: its own FLOPs and the backward it anticipates
    Totals::Module &m = t.per_module[module];
    m.forward += c.executed;
    m.model += static_cast<__int128>(c.model_self) + c.model_backward;
  }
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
  add_totals(slot.totals, with_ops, out);
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

void add_totals(const Totals &t, bool with_ops, Totals *out) {
  out->executed += t.executed;
  out->forward += t.forward;
  out->model += t.model;
  out->backward += t.backward;
  out->recompute += t.recompute;
  out->overcompute += t.overcompute;
  out->anticipated += t.anticipated;
  out->anticipated_overcompute += t.anticipated_overcompute;
  out->mask_read_calls += t.mask_read_calls;
  out->mask_tensor_calls += t.mask_tensor_calls;
  out->mask_tensor_flops += t.mask_tensor_flops;
  for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
    out->model_by_dtype[d] += t.model_by_dtype[d];
    out->executed_by_dtype[d] += t.executed_by_dtype[d];
    out->anticipated_by_dtype[d] += t.anticipated_by_dtype[d];
  }
  out->counted_calls += t.counted_calls;
  out->errors += t.errors;
  out->approximate_calls += t.approximate_calls;
  if (out->first_error.empty())
    out->first_error = t.first_error;
  if (!with_ops)
    return;
  for (const auto &kv : t.per_op) {
    auto &op = out->per_op[kv.first];
    op.first += kv.second.first;
    op.second += kv.second.second;
  }
  for (const auto &kv : t.per_module) {
    Totals::Module &m = out->per_module[kv.first];
    m.forward += kv.second.forward;
    m.model += kv.second.model;
    m.calls += kv.second.calls;
  }
  for (const auto &kv : t.uncounted) {
    Totals::Uncounted &u = out->uncounted[kv.first];
    u.calls += kv.second.calls;
    if (kv.second.numel > u.numel) {
      u.numel = kv.second.numel;
      u.largest = kv.second.largest;
    }
  }
}

unsigned thread_slots() { return tl_depth == 0 ? active_slots() : 0; }

mfu_causal slot_causal(int slot) { return g_slots[slot].causal; }

bool slot_counts_here(int slot) { return tl_depth == 0 && (active_slots() & (1u << slot)); }

bool in_counted_op() { return tl_depth > 0; }

bool counting_here() { return tl_counts > 0; }

void nest(int delta) { tl_depth = std::max(0, tl_depth + delta); }

void add_external(unsigned mask, const char *name, const mfu_op_flops counts[2],
                  const bool ok[2], const std::string errors[2]) {
  const char *stable = interned(name);
  for (int i = 0; i < kMaxSlots; i++) {
    Slot &slot = g_slots[i];
    if ((mask & (1u << i)) && slot.active.load(std::memory_order_relaxed)) {
      const int c = slot.causal == MFU_CAUSAL_HALF ? 1 : 0;
      accumulate(slot, stable, tl_module, ok[c], counts[c], errors[c]);
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
    PyErr_Format(PyExc_RuntimeError, "at::addThreadLocalCallback failed: %s", one_line(e).c_str());
    return -1;
  }
  return 0;
}

void count_and_run(const OpSpec &spec, const c10::OperatorHandle &op,
                   c10::DispatchKeySet after, torch::jit::Stack *stack) {
  const size_t nargs = std::min(op.schema().arguments().size(), stack->size());
  const c10::ArrayRef<const c10::IValue> inputs(stack->data() + stack->size() - nargs, nargs);
  unsigned mask = tl_depth == 0 ? active_slots() : 0;
  if (mask != 0 && has_python_key(inputs) && !user_fake_run())
    mask = 0;
  if (mask == 0) {
    // inside a counted op (counted by it), no counter on this thread, or a
    // subclass / fake tensor (the op it becomes counts). With no counter
    // alive anywhere the key leaves this thread's dispatch (key_hold).
    if (tl_depth == 0 && tl_counts == 0 && !key_wanted())
      include_key(false);
    op.redispatchBoxed(after, stack);
    return;
  }
  // The count, before the op consumes its arguments: once per causal
  // convention in use.
  const char *name = op.operator_name().name.c_str();
  const Site site = site_of(spec, inputs);
  const int32_t module = tl_module;
  const int tf32 = tf32_bits(inputs);
  mfu_op_flops counts[2] = {};
  bool ok[2] = {false, false}, done[2] = {false, false};
  std::string errors[2];
  for (int i = 0; i < kMaxSlots; i++) {
    if (!(mask & (1u << i)))
      continue;
    const int c = g_slots[i].causal == MFU_CAUSAL_HALF ? 1 : 0;
    if (!done[c]) {
      ok[c] = count_op(spec, inputs, g_slots[i].causal, site, tf32, &counts[c], &errors[c]);
      done[c] = true;
    }
  }
  // A causal math-path call under "half": the nodes it creates are noted,
  // so that its backward's matmuls count at its share (squares.cpp).
  const bool square = done[1] && ok[1] && spec.row != nullptr && spec.row->full_square &&
                      site.grad_mode && counts[1].square_model < counts[1].executed;
  const uint64_t first = square ? at::sequence_number::peek() : 0;
  {
    DepthGuard depth;
    op.redispatchBoxed(after, stack); // an exception: the op did not complete
  }
  if (square)
    square_note(at::RecordFunction::currentThreadId(), first, at::sequence_number::peek(),
                counts[1].square_model, counts[1].executed);
  for (int i = 0; i < kMaxSlots; i++) {
    Slot &slot = g_slots[i];
    if ((mask & (1u << i)) && slot.active.load(std::memory_order_relaxed)) {
      const int c = slot.causal == MFU_CAUSAL_HALF ? 1 : 0;
      accumulate(slot, name, module, ok[c], counts[c], errors[c]);
    }
  }
}

int start(mfu_causal causal, bool modules) {
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
    slot.modules = modules;
    if (modules)
      tl_module_slots |= 1u << i;
    slot.owner = std::this_thread::get_id();
    slot.generation.fetch_add(1);
    try {
      push_slot(i);
    } catch (const std::exception &e) {
      slot.taken.store(false);
      PyErr_Format(PyExc_RuntimeError, "cannot mark this thread's count: %s", one_line(e).c_str());
      return -1;
    }
    if (tl_counts++ == 0)
      tl_depth = 0;
    // Included from the thread's first count on while a counter lives
    // (key_hold), not per count: torch.compile's guards hash the thread's
    // included dispatch keys into every tensor check, so switching it per
    // count would recompile a compiled model between counted and uncounted
    // calls. Outside a count the kernel finds no active slot and passes the
    // op on (mfu_torch.h).
    include_key(true);
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
  tl_module_slots &= ~(1u << index);
  pop_slot(index);
  if (slot->auditor != 0) {
    slot->auditing.store(false);
    at::removeCallback(slot->auditor);
    slot->auditor = 0;
  }
  if (tl_counts > 0)
    --tl_counts; // the counting key stays included while a counter lives (start())
  copy_totals(*slot, true, out);
  slot->taken.store(false);
  bool alive = false;
  for (const Slot &other : g_slots)
    alive = alive || other.taken.load();
  if (!alive)
    square_clear(); // no backward of the noted calls counts any more
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

void set_compiling_check(PyObject *check) {
  PyObject *old = g_compiling;
  g_compiling = check == Py_None ? nullptr : Py_NewRef(check);
  Py_XDECREF(old);
}

int32_t module_enter(int32_t token) {
  const int32_t previous = tl_module;
  tl_module = token;
  // a module called in a backward (checkpoint recompute) is not a forward
  // call; its ops are not forward-site ops either
  const unsigned mask =
      tl_module_slots != 0 && torch::autograd::get_current_graph_task_id() == -1
          ? tl_module_slots
          : 0;
  for (int i = 0; mask != 0 && i < kMaxSlots; i++) {
    Slot &slot = g_slots[i];
    if (mask & (1u << i)) {
      std::lock_guard<std::mutex> lock(slot.mutex);
      slot.totals.per_module[token].calls++;
    }
  }
  return previous;
}

void module_exit(int32_t previous) { tl_module = previous; }

} // namespace mfu_torch
