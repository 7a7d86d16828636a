/*
 * mfu_torch.h -- mfu_tracker._torch: a libtorch op observer that counts
 * FLOPs at C speed with the core's op table and mfu_op_count
 * (csrc/core/ops/ops.h), which it takes from mfu_tracker._C as a function table
 * (a PyCapsule, csrc/python/mfu_capsules.h) together with the one registry of
 * custom formulas, so both FLOP counters count with the same compiled code.
 * C++20: torch 2.13's headers need it.
 *
 * What this extension does is turn torch arguments into an mfu_op_call
 * (convert.cpp) and add up the answers (observer.cpp); which ops count and
 * what a call costs is the core's (ops.h).
 *
 * How it sees ops
 *   Boxed kernels on one dispatch key of its own (kCountKey, above autograd),
 *   registered for the counted operators only -- every overload of every
 *   row of the core's table, and every operator with a custom formula --
 *   with a fallthrough for all others. The key is in the thread-local
 *   "included" dispatch key set of a thread from its first count until no
 *   counter is alive (key_hold), so uncounted ops cost nothing (the
 *   dispatcher skips fallthrough keys when it computes an op's kernel) and a
 *   counted op outside a count only passes through. The key is borrowed
 *   from torch's tests: keys.cpp and mfu_tracker/_native/_observer.py check
 *   it is still ours (docs/dispatch_keys.md). The
 *   thread-local dispatch key set and debug info are copied into the
 *   autograd engine's worker threads for the duration of a backward
 *   (at::ThreadLocalState), so backward ops on device threads are seen as
 *   well. Which counters an op counts for is an entry of the thread's debug
 *   info (c10::ThreadLocalDebugInfo, a kind of our own: the slots and their
 *   generations), which travels the same way for the price of a shared
 *   pointer. Ops run by *other* user threads are not seen.
 *   - Autocast: a call that autocast will re-run with cast arguments is not
 *     counted; its re-run is (so the dtype is the one the kernel computes in).
 *
 * What it counts (docs/conventions.md, ops.h)
 *   The ops of the core's table and those with a custom formula registered
 *   from Python. Everything else counts 0.
 *   - Once per op: while a counted op runs on a thread, ops it calls are not
 *     classified at all (aten::convolution -> _convolution -> mkldnn; the
 *     SDPA wrapper -> _flash_attention_forward). Composite ops that are not
 *     counted (linear, matmul, scaled_dot_product_attention, einsum) are
 *     seen through: the counted ops they call count.
 *   - Tensors with the Python dispatch key (FakeTensor during torch.compile
 *     tracing, DTensor, other subclasses) are skipped: the op they turn into
 *     on plain tensors is the one that counts (once, per rank). Except fake
 *     tensors under the user's own FakeTensorMode, entered outside the
 *     counter or inside it: they count while a fake mode is active, no proxy
 *     (tracing) mode is and torch.compile is not at work (set_compiling_check),
 *     as real tensors would; their cumulative
 *     lengths are unknown (the worst case counts, flagged approximate).
 *   - Site (site.cpp): an op run while an autograd graph task is active on
 *     its thread (torch::autograd::get_current_graph_task_id() != -1) is a
 *     backward-phase op; any other op a forward-phase op. For a
 *     backward-phase op it also reads the node being evaluated (autograd's,
 *     a custom Function's, a reentrant checkpoint's), the default
 *     saved-tensor hooks and, in a compiled backward, the planner's
 *     recomputed calls; mfu_op_count applies the site rules (ops.h).
 *   - Varlen attention reads cu_seqlens when their values are readable (CPU
 *     tensors; other devices are copied to the host, which waits for the
 *     device); on `meta` they are not (the core's max_seqlen bound).
 *   - A failure (overflow, inconsistent shapes, symbolic sizes, a custom
 *     formula raising) never throws into the op: it is counted in `errors`
 *     with the first message kept.
 *
 * Higher-order operators (flex_attention, cond, ...) are not dispatcher
 *   ops: they dispatch in Python, and with the counting key included they
 *   reach the Python kernels mfu_tracker/flops/counter/_hops.py registers
 *   for it, which count through the core (conventions(), add_count()) or
 *   pass the call on, never failing it.
 *
 * The audit (FlopCounter(audit=True); audit.cpp)
 *   A thread-local RecordFunction callback (FUNCTION scope, with inputs)
 *   per auditing slot, travelling with the thread's state: every op run on the
 *   count's threads that took a tensor, outside a counted op, and during
 *   which no call was counted (counted_calls() did not move: ops that are
 *   composites of counted ones are covered) is an uncounted op, recorded
 *   by name with its calls and its largest input. Only while an audit is
 *   on does any uncounted op pay for being seen.
 *
 * What it cannot see
 *   CUDA graph replay (kernels launched without the dispatcher), opaque
 *   custom kernels that are not torch ops (register a formula for a custom
 *   torch op instead), ops on threads that did not start the count.
 *
 * Communication (comm.cpp)
 *   A second dispatch key, below the counting one, with a boxed kernel for
 *   every c10d collective of the core's table (core/comm/comm.h) and for
 *   _c10d_functional::wait_tensor, a fallthrough for everything else:
 *   collectives and their waits go to the communication sinks of
 *   mfu_tracker._C through its capsule (csrc/python/mfu_capsules.h). Started
 *   by mfu_tracker/distributed/_comm_observer.py (the key included on its
 *   thread); details in comm.cpp's header.
 *
 * Concurrency
 *   MFU_COUNTERS_MAX counters can be active at once in the process (nested
 *   counters each take one); each has its bit in the threads' debug info
 *   entries and totals under a mutex; one kernel serves them all,
 *   with a per-thread nesting depth and count of active counters.
 */
#ifndef MFU_TORCH_H
#define MFU_TORCH_H

#include <Python.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <vector>

#include "../python/mfu_capsules.h" /* _C's published tables, nothing else of it */
#include "mfu_limits.h"

namespace mfu_torch {

constexpr int kMaxSlots = MFU_COUNTERS_MAX;

/* ---- module.cpp: the core, through mfu_tracker._C ---- */

/* The table imported from mfu_tracker._C at module init (the PyCapsule
 * MFU_OPS_API_CAPSULE); valid once the module loaded. */
const mfu_ops_api &ops();

/* ---- classify.cpp: which ops count ---- */

/* How an op counts: a row of the core's table, with the arguments its
 * count reads, or a custom formula; neither when it does not count. */
struct OpSpec {
  const mfu_op_spec *row = nullptr;
  const mfu_formula *formula = nullptr;
  size_t ninputs = 0;
  mfu_op_input inputs[MFU_ROLE_COUNT] = {};
  bool counted() const { return row != nullptr || formula != nullptr; }
};

/* The spec of the op named `name` ("aten::mm"), uncached. */
OpSpec lookup(const char *name);

/* The spec of `op`. Cached per thread by operator; the cache is dropped
 * when a custom formula is (un)registered. */
const OpSpec &classify(const c10::OperatorHandle &op);

/* ---- site.cpp: where a call runs (ops.h "Sites") ---- */

/* The autograd situation of a call, as mfu_op_call carries it. */
struct Site {
  bool backward_phase = false;
  bool grad_mode = true;
  mfu_op_node node = MFU_NODE_UNKNOWN; /* backward phase: never UNKNOWN */
  bool saved_tensor_hooks = false;
  bool recomputed = false;
  /* the node is one of a causal math-path attention call's (squares.cpp):
   * its matmuls count square_model / square_executed of what they compute
   * under "half"; 0: none */
  int64_t square_model = 0;
  int64_t square_executed = 0;
};

/* The site of the call of `spec` about to run with `inputs`. A recomputed
 * node of a compiled backward is consumed from its plan as it is seen, so
 * call it once per call. */
Site site_of(const OpSpec &spec, c10::ArrayRef<const c10::IValue> inputs);

/* Set the Python callable that plans a compiled backward's recomputed
 * calls (mfu_tracker/flops/counter/_compiled.py; None: none); GIL held. */
void set_recompute_planner(PyObject *planner);

/* ---- squares.cpp: the nodes of causal math-path attention calls ---- */

/* A math-path attention call counted under "half" created the autograd
 * nodes numbered [first, end) on forward thread `thread`
 * (at::RecordFunction::currentThreadId()); its forward FLOPs under the
 * convention were `model` of the `executed` it computed. Calls whose share
 * is whole are not noted. */
void square_note(uint64_t thread, uint64_t first, uint64_t end, int64_t model,
                 int64_t executed);
/* The share of the node (thread, sequence_nr), when a noted call made it. */
bool square_share(uint64_t thread, uint64_t sequence_nr, int64_t *model, int64_t *executed);
/* Forget every noted call (no counter is active any more). */
void square_clear();

/* ---- convert.cpp: torch arguments -> mfu_op_count ---- */

/* One line for a failure: a c10::Error's message without its C++ backtrace
 * (no "frame #..." ever reaches a user's log), else what(); its first line. */
std::string one_line(const std::exception &e);

/* Count one call. Returns false and sets *error on a failure. */
bool count_op(const OpSpec &spec, c10::ArrayRef<const c10::IValue> inputs,
              mfu_causal causal, const Site &site, int tf32, mfu_op_flops *out,
              std::string *error);

/* ---- kernels.cpp: the counting dispatch key ---- */

/* Register the kernels of ops defined since the last call, and of ops that
 * gained a custom formula (start() calls it). 0 / -1 + exception. */
int sync_kernels();
/* Start watching operator definitions (module init). 0 / -1 + exception. */
int listen_for_ops();
/* Include the counting key in this thread's dispatch / leave it out. */
void include_key(bool on);
/* The counting key's value (c10::DispatchKey), for the Python kernels of
 * higher-order operators. */
int count_key();
/* The first counted operator whose kernel on the counting key is not ours
 * ("aten::mm (registered at ...)"), or "" (keys.cpp). */
std::string foreign_kernel();
/* A counter came alive (+1: the key is included on this thread) or died
 * (-1; `off_here`: the last of this thread, the key leaves its dispatch);
 * 0: the key is refused for good (counting fell back; off here when
 * `off_here`). Without a live counter, or refused, a thread that still has
 * the key drops it at its next counted op outside a count (observer.cpp). */
void key_hold(int delta, bool off_here);
bool key_wanted();

/* ---- keys.cpp: the borrowed keys, checked (docs/dispatch_keys.md) ---- */

/* The debug text ("registered at <this>:<line>") of every kernel and
 * fallback this extension registers. */
extern const char *const kRegisteredBy;
/* The first of `handles` whose computed kernel on `key` is not ours, as
 * "ns::op.overload (its registration)", or "". */
std::string first_foreign(const std::vector<c10::OperatorHandle> &handles, c10::DispatchKey key);
/* Called by the kernel for a counted op (observer.cpp): count it for the
 * counters active on this thread, run it, and add the count when it
 * completes. */
void count_and_run(const OpSpec &spec, const c10::OperatorHandle &op,
                   c10::DispatchKeySet after, torch::jit::Stack *stack);

/* ---- observer.cpp: slots, their threads, totals ---- */

struct Totals {
  __int128 executed = 0;
  __int128 forward = 0;
  __int128 model = 0;       /* model_self of every call: the forward and the
                             * backward that ran (ops.h "Reaching the loss") */
  __int128 anticipated = 0; /* model_backward: the backward the forward
                             * calls anticipate (charged by the Python layer
                             * to a count without a backward) */
  __int128 anticipated_overcompute = 0; /* its over-compute */
  __int128 anticipated_by_dtype[MFU_DTYPE_COUNT] = {};
  int64_t mask_read_calls = 0;   /* attention calls whose mask was read */
  int64_t mask_tensor_calls = 0; /* ... given a mask tensor, counted whole */
  __int128 mask_tensor_flops = 0; /* their executed FLOPs */
  __int128 backward = 0;    /* executed in the backward phase */
  __int128 recompute = 0;   /* executed at a recompute site (ops.h) */
  __int128 overcompute = 0; /* executed beyond the model convention, not
                             * recompute (ops.h) */
  /* model / executed FLOPs by compute dtype (mfu_dtype index) */
  __int128 model_by_dtype[MFU_DTYPE_COUNT] = {};
  __int128 executed_by_dtype[MFU_DTYPE_COUNT] = {};
  int64_t counted_calls = 0;
  int64_t errors = 0;
  int64_t approximate_calls = 0;
  std::string first_error;
  /* per op (dispatcher entries' names are stable pointers, one per
   * overload; merged by name when read): calls, executed */
  std::unordered_map<const char *, std::pair<int64_t, __int128>> per_op;
  /* per module token (module_enter), for a count with a module table: the
   * forward and model FLOPs of the forward-site calls run while it was the
   * innermost module, and its calls */
  struct Module {
    __int128 forward = 0;
    __int128 model = 0;
    int64_t calls = 0;
  };
  std::unordered_map<int32_t, Module> per_module;
  /* the audit: uncounted op name -> calls, its largest input */
  struct Uncounted {
    int64_t calls = 0;
    int64_t numel = -1;
    std::vector<int64_t> largest;
  };
  std::unordered_map<std::string, Uncounted> uncounted;
};

/* ---- audit.cpp: the ops a count did not cover ---- */

/* Per thread: calls counted so far (any slot). An op during which it does
 * not move was not covered by a count. */
uint64_t &counted_calls();
/* The audit callback of `slot` (registered by audit()). */
at::RecordFunctionCallback audit_callback(int slot);

/* Start a count on the calling thread; the slot index, or -1 + exception.
 * With `modules`, its forward-site calls are also added per module token
 * (module_enter). */
int start(mfu_causal causal, bool modules);
/* The Python callable telling whether torch.compile is at work on the
 * thread (tracing, or compiling a graph: _args.compiling_internally): fake
 * tensors then are its own, not the user's, and are not counted. GIL held;
 * None: none (fake tensors never count). */
void set_compiling_check(PyObject *check);
/* Stop the count in `slot` (must be the starting thread) and add its final
 * totals to *out (a counter's totals over its blocks): 0 / -1 + exception. */
int stop(int slot, Totals *out);
/* Add the slot's totals so far to *out (any thread); per_op, per_module and
 * uncounted only when `with_ops`. */
int read(int slot, bool with_ops, Totals *out);
/* Add `from` to *out (the tables only when `with_ops`; the first error
 * kept). */
void add_totals(const Totals &from, bool with_ops, Totals *out);
/* Zero the slot's totals. */
int reset(int slot);
/* The module table's cheap stack (mfu_tracker/flops/counter/_module_table.py):
 * `token` (> 0) is now this thread's innermost module; counts one call of it
 * for every active count with `modules` on the thread. Returns the previous
 * token, which module_exit() restores. */
int32_t module_enter(int32_t token);
void module_exit(int32_t previous);
/* Audit the slot's ops (on its thread): 0 / -1 + exception. */
int audit(int slot);

/* The slots counting on this thread, as a bit mask: 0 inside a counted op
 * (what it calls is its own) or without a count. */
unsigned thread_slots();
/* The causal convention of slot i. */
mfu_causal slot_causal(int slot);
/* Whether slot `slot` counts on this thread. */
bool slot_counts_here(int slot);
/* Whether a counted op is running on this thread. */
bool in_counted_op();
/* Whether a count is active on this thread (started, not stopped). */
bool counting_here();
/* A counted op counted outside the dispatcher starts (+1) / ends (-1) on
 * this thread: what it runs is its own, as inside count_and_run. */
void nest(int delta);
/* Add a call counted outside the dispatcher (a higher-order operator) to
 * the slots of `mask`: counts[c] / ok[c] / errors[c] for convention c
 * (0 full, 1 half), as count_and_run adds (the site is in the counts). */
void add_external(unsigned mask, const char *name, const mfu_op_flops counts[2],
                  const bool ok[2], const std::string errors[2]);
/* Record an uncounted op of `slot`: only while it audits, or `always`
 * (a higher-order op passed on with nothing counted inside). */
void record_uncounted(int slot, const char *name, const std::vector<int64_t> &largest,
                      bool always);

/* ---- comm.cpp: the communication observer ---- */
namespace comm {

/* The sinks' table (module init). */
int init(const mfu_comm_api *api);
/* Register the kernels (once) and include the key on this thread; 0 / -1 +
 * exception. */
int start();
/* Leave the key out of this thread's dispatch. */
void stop();
/* Whether the key is included on this thread. */
bool observing();
/* The first collective whose kernel on the key is not ours, or "" (keys.cpp). */
std::string foreign_kernel();
/* The key's value (c10::DispatchKey): higher-order operators, which
 * dispatch in Python on the thread's keys, are made to fall through it. */
int key();
/* The link peak (bytes/s per direction) of the group named `group`; NaN
 * forgets it. */
void set_link(const std::string &group, double bytes_per_sec);
/* One peak for every group (link_bandwidth_gbs=); NaN: per group. */
void set_fallback_link(double bytes_per_sec);

/* A tracker's own collectives begin (on) / end on this thread: unrecorded
 * meanwhile (nests). */
void suspend(bool on);
/* The exposed phase (mfu_phase) of the last collective launched on this
 * thread. */
int last_phase();
/* Whether this thread runs a tracker's own collectives now. */
bool suspended();
/* A wait for a Work without an op type (nor a future) returned: the last
 * such collective this thread launched completed now. */
void complete_untimed();
/* The exposed phase of the last collective launched while the stream with
 * raw handle `handle` was current, or -1 (none, or a host stream). */
int stream_phase(uintptr_t handle);
/* Whether any sink observes (a hint). */
bool sinks_active();
/* A wait of this thread begins / ends: `phase` in the sinks created on it. */
void begin_wait(int phase, mfu_comm_wait *wait);
void end_wait(const mfu_comm_wait *wait);

/* ---- comm_wait.cpp: Work.wait observed ---- */
/* A method descriptor for `work_type` that calls `original` (Work's own
 * wait, unbound) inside the wait's phase: {op type: phase} for Works with
 * an op type, `p2p_types` the bubble inside a schedule, `unknown` the op
 * type that means "the last launched". New reference, or NULL + exception. */
PyObject *install_wait(PyObject *work_type, PyObject *original, PyObject *phases,
                       PyObject *p2p_types, int unknown);
/* A pipeline schedule's step() begins (enter) / ends on this thread; whether
 * one runs on it now (its p2p transfers are the bubble). */
void schedule(bool enter);
bool in_schedule();

struct CommCounters {
  int64_t collectives, skipped, waits, backward_waits, completions, errors;
};
CommCounters counters();

} // namespace comm

/* ---- module_comm.cpp, module_totals.cpp: entry points of the module ---- */
extern PyMethodDef comm_methods[];
extern PyMethodDef totals_methods[];
/* A slot index from a Python int (module.cpp); 0 / -1 + exception. */
int slot_arg(PyObject *obj, int *slot);

} // namespace mfu_torch

#endif /* MFU_TORCH_H */
