/*
 * mfu_torch.h -- mfu_tracker._torch: a libtorch op observer that counts
 * FLOPs at C speed with the core's formulas (csrc/core/flops.h), which it
 * takes from mfu_tracker._C as a function table (a PyCapsule) so both
 * extensions count with the same compiled code. C++20: torch 2.13's headers
 * need it.
 *
 * How it sees ops
 *   A thread-local RecordFunction callback (at::addThreadLocalCallback, with
 *   inputs, FUNCTION scope) runs at every Dispatcher::call of an observed op
 *   on the thread that started the count. libtorch copies thread-local
 *   callbacks into the autograd engine's worker threads for the duration of
 *   a backward (at::ThreadLocalState), so backward ops on device threads are
 *   seen as well. Ops run by *other* user threads are not seen.
 *
 * What it counts (DESIGN.md §3)
 *   The op table (op_table.cpp) maps an op name ("aten::mm") to a kind: the
 *   matmul family, grouped matmul, convolution forward and backward, every
 *   attention kernel aten exposes (SDPA flash / flash-for-cpu / efficient /
 *   cudnn / overrideable and their backwards, _flash_attention_*,
 *   _efficient_attention_*, torch_attn::_varlen_attn*), and custom formulas
 *   registered from Python. Everything else counts 0.
 *   - Once per op: while a counted op runs on a thread, ops it calls are not
 *     classified at all (aten::convolution -> _convolution -> mkldnn; the
 *     SDPA wrapper -> _flash_attention_forward). Composite ops that are not
 *     counted (linear, matmul, scaled_dot_product_attention, einsum) are
 *     seen through: the counted ops they call count.
 *   - Tensors with the Python dispatch key (FakeTensor during torch.compile
 *     tracing, DTensor, other subclasses) are skipped: the op they turn into
 *     on plain tensors is the one that counts (once, per rank).
 *   - Phase: an op run while an autograd graph task is active on its thread
 *     (torch::autograd::get_current_graph_task_id() != -1) is a backward-
 *     phase op: it adds to executed FLOPs only (backward formulas,
 *     activation-checkpoint recompute, hooks). Any other op is a forward-
 *     phase op: it adds its FLOPs to executed and forward FLOPs, and to model
 *     FLOPs its forward plus the backward that its inputs requiring grad will
 *     need (grad mode on): matmul / conv +1x forward per such input,
 *     attention +2x forward (the PaLM convention).
 *   - Causal attention: the kernels' is_causal flag (custom_mask_type for
 *     the efficient kernels) with MFU_CAUSAL_HALF halves that call's count;
 *     FULL (the default) counts the whole rectangle.
 *   - Varlen attention sums per sequence of cu_seqlens when their values are
 *     readable (CPU tensors; other devices are copied to the host, which
 *     waits for the device); on `meta` every sequence counts max_seqlen (as
 *     FlopCounterMode does) and the result is flagged approximate.
 *   - A formula failure (overflow, inconsistent shapes, symbolic sizes, a
 *     custom formula raising) never throws into the op: it is counted in
 *     `errors` with the first message kept.
 *
 * What it cannot see
 *   CUDA graph replay (kernels launched without the dispatcher), opaque
 *   custom kernels that are not torch ops (register a formula for a custom
 *   torch op instead), ops on threads that did not start the count.
 *
 * Concurrency
 *   kMaxSlots counters can be active at once in the process (nested
 *   counters each take one); each has its own callback (a template instance
 *   per slot), totals under a mutex, and a per-thread nesting depth.
 */
#ifndef MFU_TORCH_H
#define MFU_TORCH_H

#include <Python.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/core/ivalue.h>

#include "flops.h"

namespace mfu_torch {

constexpr int kMaxSlots = 8;

/* ---- module.cpp: the C core's formulas ---- */

/* The formula table imported from mfu_tracker._C at module init (the
 * PyCapsule MFU_FLOPS_API_CAPSULE); never null once the module loaded. */
const mfu_flops_api &core();

/* ---- op_table.cpp: which ops count, and where their arguments are ---- */

/* Values shared with mfu_tracker/_dispatch_counter.py (OP_TABLE). */
enum class OpKind : uint8_t {
  None = 0,
  Mm,          /* mm(a, b), _scaled_mm(a, b, ...) */
  Addmm,       /* addmm(bias, a, b) */
  Bmm,         /* bmm(a, b) */
  Baddbmm,     /* baddbmm(self, a, b) */
  GroupedMm,   /* _grouped_mm(a, b, offs), _scaled_grouped_mm(a, b, ...) */
  Conv,        /* convolution-like forward, see ConvArgs */
  ConvBackward,/* convolution_backward */
  Attention,   /* an attention kernel, see AttnArgs */
  Custom,      /* a formula registered from Python */
};

/* Attention tensor layouts. */
enum class AttnLayout : uint8_t { /* values shared with Python too */
  BHSD, /* q: [b, h, s, d] (the SDPA family) */
  BSHD, /* q: [b, s, h, d] (_flash / _efficient_attention_*); with
         * cumulative lengths: [total, h, d] (flash) or [1, total, h, d]
         * (efficient) */
  THD,  /* q: [total, h, d] with cumulative lengths (varlen) */
};

/* Argument positions of an attention kernel; -1 = absent. */
struct AttnArgs {
  bool backward;
  AttnLayout layout;
  int8_t grad_out, q, k, v;
  int8_t cu_q, cu_k, max_q, max_k;
  int8_t causal;        /* bool is_causal, or int custom_mask_type */
  bool causal_is_mask_type;
};

/* Argument positions of a convolution-like forward; -1 = absent (then
 * stride / dilation 1, padding 0, not transposed, output_padding 0). */
struct ConvArgs {
  int8_t stride, padding, dilation, transposed, output_padding;
};

struct OpSpec {
  OpKind kind = OpKind::None;
  AttnArgs attn{};
  ConvArgs conv{};
  PyObject *custom = nullptr; /* Custom: the Python formula (a new ref) */
};

/* The spec of `name` (a RecordFunction name, "aten::mm"); kind None when the
 * op does not count. Cached per thread by name pointer; the cache is
 * dropped when a custom formula is (un)registered. */
const OpSpec &classify(const char *name);

/* Replace the built-in rows (done once at load, before any count). */
void load_builtins(std::vector<std::pair<std::string, OpSpec>> rows);

/* Custom formulas (Python callables), keyed by op name. 0 / -1 + exception. */
int register_custom(const std::string &name, PyObject *fn);
int unregister_custom(const std::string &name);
bool is_builtin(const std::string &name);
std::vector<std::string> builtin_names();

/* ---- op_flops.cpp: inputs -> FLOPs through the C core ---- */

struct OpCount {
  int64_t executed = 0;     /* what this call runs */
  __int128 model_backward = 0; /* forward phase: the backward its grad-
                                * requiring inputs need (model convention) */
  bool approximate = false; /* varlen lengths unknown (meta): upper bound */
};

/* Count one call. `grad_enabled`: autograd records this call (forward phase,
 * grad mode on). Returns false and sets *error on a failure. */
bool count_op(const OpSpec &spec, c10::ArrayRef<const c10::IValue> inputs,
              mfu_causal causal, bool grad_enabled, OpCount *out,
              std::string *error);

/* ---- observer.cpp: slots, callbacks, totals ---- */

struct Totals {
  __int128 executed = 0;
  __int128 forward = 0;
  __int128 model = 0;
  __int128 backward = 0; /* executed in the backward phase */
  int64_t counted_calls = 0;
  int64_t errors = 0;
  int64_t approximate_calls = 0;
  std::string first_error;
  /* per op (RecordFunction names are stable pointers): calls, executed */
  std::unordered_map<const char *, std::pair<int64_t, __int128>> per_op;
};

/* Start a count on the calling thread; the slot index, or -1 + exception. */
int start(mfu_causal causal);
/* Stop the count in `slot` (must be the starting thread) and copy its final
 * totals into *out: 0 / -1 + exception. */
int stop(int slot, Totals *out);
/* Copy the slot's totals (any thread); per_op only when `with_ops`. */
int read(int slot, bool with_ops, Totals *out);
/* Zero the slot's totals. */
int reset(int slot);
/* (forward, model) of the slot, cheaply (module hooks call this). */
int snapshot(int slot, __int128 *forward, __int128 *model);

} // namespace mfu_torch

#endif /* MFU_TORCH_H */
