/*
 * ops.h -- one op call -> FLOPs: the table of counted ops and mfu_op_count.
 *
 * This is the only place that knows how an op's arguments become FLOPs.
 * Both FLOP counters (the libtorch observer in csrc/torch and the
 * TorchDispatchMode fallback in mfu_tracker/flops/counter/_dispatch.py) only turn
 * torch arguments into an mfu_op_call -- shapes, requires-grad flags, ints,
 * int lists, the values of cumulative-length tensors -- and add up what
 * mfu_op_count returns. The arithmetic underneath is flops.h's.
 *
 * The table (op_table.c) has one row per aten op: its name as the
 * dispatcher spells it ("aten::mm"), its kind, and where in the op's schema
 * each argument the count reads is (its *role*). tests/flops/counter/test_dispatch.py
 * checks every position against torch's schemas; mfu_tracker._C.op_table()
 * shows the rows to Python.
 *
 * What one call counts (docs/conventions.md):
 *   executed        the FLOPs the call runs (flops.h's formula for its kind,
 *                   as the kernel computes it: see "Causal attention").
 *   model_self      the call's own FLOPs under the model convention: equal
 *                   to executed, except attention (below) and the matmuls
 *                   of a causal math-path attention's backward under "half"
 *                   (mfu_op_call.square_model); 0 at a site that does not
 *                   count them (see "Sites").
 *   model_backward  the backward the call anticipates for its inputs that
 *                   require grad, at the forward site with grad mode on:
 *                     matmul / convolution: +1x executed per such input
 *                                           (a and b; input and weight);
 *                     attention:            +2x model_self if any of q, k,
 *                                           v requires grad (PaLM),
 *                                           whatever the kernel recomputes;
 *                     backward kernels:     0 (they are backward work);
 *                   0 elsewhere and with grad mode off (no_grad,
 *                   inference_mode). A count adds it to its model FLOPs
 *                   only when no counted call of it ran in a backward (see
 *                   "Reaching the loss"); the module table charges it to the
 *                   module that ran the call.
 *   overcompute     FLOPs the call executes beyond the model convention that
 *                   are *not* recompute: a kernel that computes the full
 *                   square of a causal attention the model counts half. The
 *                   waterfall books them to compute, never to recompute.
 *   overcompute_backward  the over-compute its anticipated backward will
 *                   execute (a full_square row's matmuls), added with
 *                   model_backward.
 *   approximate     varlen attention whose cumulative lengths could not be
 *                   read (meta tensors): every sequence counted as
 *                   max_seqlen (FlopCounterMode does the same), an upper
 *                   bound; a block mask whose blocks could not be read
 *                   (meta): every block of the grid, an upper bound.
 *   mask_read / mask_tensor  an attention forward call whose keys follow a
 *                   mask the count reads (a causal flag, a window, a chunk,
 *                   a block mask) / one given a mask tensor and none of
 *                   those, counted whole under either convention: its
 *                   values (causal, padding, a window) are data the count
 *                   does not read (on a GPU that would wait for it).
 *   square_model    a full_square row (the math path): its forward FLOPs
 *                   under the call's convention, at any site; its backward's
 *                   matmuls count that share of what they execute
 *                   (square_model / executed). 0 for other rows.
 * A caller adds executed to its executed total (to its forward total at
 * MFU_SITE_FORWARD, to its backward total elsewhere, and to its recompute
 * total at the two recompute sites), model_self to its model total,
 * model_backward and overcompute_backward to its anticipated totals and
 * overcompute to its over-compute total: the site rules live here, once,
 * for both counters.
 *
 * Reaching the loss. Model FLOPs count the backward that ran: a backward
 * call counts its own model FLOPs (model_self) where it runs, so an op
 * whose output never reaches the loss (an unused vision layer, a cache
 * update) charges no backward, a frozen input none, and the backward of an
 * op the table does not count (linalg_solve_triangular, cholesky, inv:
 * matmuls) counts its matmuls. A count in which no counted call ran in a
 * backward (a forward under grad whose backward runs outside the count, or
 * never) adds instead each forward call's model_backward: the training
 * step it stands for. Custom formulas are the exception: their declared
 * backward is charged at the forward, in model_self, since the count
 * cannot see an opaque backward run (mfu_op_custom_flops).
 *
 * Sites (mfu_op_site_of): where a call runs decides what it adds.
 *   FORWARD             forward phase: model_self, and model_backward
 *                       anticipated with grad mode on.
 *   BACKWARD            autograd's backward (and a backward with
 *                       create_graph=True, which runs with grad mode on):
 *                       executed and model_self, as it runs (an attention
 *                       backward kernel: 2x its forward).
 *   CUSTOM_BACKWARD     inside the backward of a custom autograd Function
 *                       (torch.autograd.Function: Liger, flash-attn's Python
 *                       API, a compiled region's AOTAutograd backward),
 *                       whose forward ran with grad mode off: as BACKWARD.
 *   RECOMPUTE           activation-checkpoint recompute whose graph autograd
 *                       discards (non-reentrant checkpoint, a custom
 *                       Function's forward inside a recompute, a recomputed
 *                       node of a compiled backward): executed only.
 *   RECOMPUTE_BACKPROP  recompute whose graph a nested backward then runs
 *                       (reentrant checkpoint, whose forward ran without
 *                       grad; a custom Function's backward run with grad
 *                       mode on): executed only; the nested backward counts
 *                       its own model FLOPs where it runs.
 * So model FLOPs with checkpointing (either mode) equal those without, and
 * executed FLOPs include the recompute.
 *
 * Causal attention: a call made causal (is_causal, or custom_mask_type != 0
 * for the efficient kernels) counts half in model FLOPs with
 * MFU_CAUSAL_HALF in the call; every other call, and every call with
 * MFU_CAUSAL_FULL, the full rectangle. Executed FLOPs are what the kernel
 * computes: under MFU_CAUSAL_HALF the fused kernels (flash, efficient,
 * cudnn, varlen) skip the masked half and count half, while a row marked
 * full_square (the math path: matmuls, then a mask) computes the full
 * rectangle forward and, through its matmuls' autograd, backward: its
 * executed FLOPs stay full and the difference is overcompute. Its
 * backward's matmuls are told apart by the caller (the C++ observer: the
 * autograd nodes the call created) and passed back as square_model /
 * square_executed.
 * A call with a window or a chunk (flash-attn window_size, attention_chunk)
 * counts its window under either convention (flops.h
 * mfu_masked_attention_flop); a call with a block mask (flex_attention)
 * the blocks it computes, whatever the convention
 * (mfu_block_attention_flop).
 *
 * Rows that are not dispatcher ops: higher-order operators
 * ("higher_order::flex_attention") take structured arguments (a BlockMask
 * tuple); their row's positions are those of the flat argument list the
 * callers build (op_table.c says which).
 */
#ifndef MFU_OPS_H
#define MFU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "dtypes.h"
#include "flops.h"
#include "mfu_status.h"

#ifdef __cplusplus
extern "C" { /* the C++ observer (csrc/torch) reads these types */
#endif

/* ---- the table -------------------------------------------------------- */

/* What an op computes, and so which formula and backward rule apply. */
typedef enum mfu_op_kind {
    MFU_OP_MM = 1,                   /* a: [m, k] @ b: [k, n] */
    MFU_OP_BMM = 2,                  /* a: [b, m, k] @ b: [b, k, n] */
    MFU_OP_GROUPED_MM = 3,           /* a, b of rank 2 or 3 (flops.h) */
    MFU_OP_CONVOLUTION = 4,          /* a convolution forward */
    MFU_OP_CONVOLUTION_BACKWARD = 5, /* aten::convolution_backward */
    MFU_OP_ATTENTION = 6,            /* an attention kernel, forward */
    MFU_OP_ATTENTION_BACKWARD = 7    /* an attention kernel, backward */
} mfu_op_kind;

/* Where the dims of an attention kernel's q, k, v are. */
typedef enum mfu_attn_layout {
    MFU_LAYOUT_NONE = 0, /* not an attention kernel */
    MFU_LAYOUT_BHSD = 1, /* q: [b, h, s, d] (the SDPA family) */
    MFU_LAYOUT_BSHD = 2, /* q: [b, s, h, d] (_flash / _efficient_attention_*);
                          * with cumulative lengths: [total, h, d] (flash)
                          * or [1, total, h, d] (efficient) */
    MFU_LAYOUT_THD = 3   /* q: [total, h, d], always with cumulative lengths
                          * (torch.nn.attention.varlen) */
} mfu_attn_layout;

/* The arguments a count reads, by what they mean. */
typedef enum mfu_op_role {
    MFU_ROLE_A = 0,             /* matmul: left operand (tensor) */
    MFU_ROLE_B,                 /* matmul: right operand (tensor) */
    MFU_ROLE_INPUT,             /* convolution: x [n, c_in, *spatial] */
    MFU_ROLE_WEIGHT,            /* convolution: w (flops.h) */
    MFU_ROLE_GRAD_OUTPUT,       /* convolution_backward: shaped like out */
    MFU_ROLE_STRIDE,            /* int list (one value: every spatial dim) */
    MFU_ROLE_PADDING,           /* int list */
    MFU_ROLE_DILATION,          /* int list */
    MFU_ROLE_TRANSPOSED,        /* bool */
    MFU_ROLE_GROUPS,            /* int */
    MFU_ROLE_OUTPUT_MASK,       /* bool list: (input, weight, bias) grads */
    MFU_ROLE_QUERY,             /* attention: q, k, v (tensors) */
    MFU_ROLE_KEY,
    MFU_ROLE_VALUE,
    MFU_ROLE_CU_SEQLENS_Q,      /* cumulative lengths (tensor + values) */
    MFU_ROLE_CU_SEQLENS_K,
    MFU_ROLE_MAX_SEQLEN_Q,      /* int: the longest sequence */
    MFU_ROLE_MAX_SEQLEN_K,
    MFU_ROLE_IS_CAUSAL,         /* bool */
    MFU_ROLE_CUSTOM_MASK_TYPE,  /* int: 0 none, 1 / 2 causal (efficient) */
    MFU_ROLE_WINDOW_LEFT,       /* int: flash-attn window_size_left (-1: none) */
    MFU_ROLE_WINDOW_RIGHT,      /* int: window_size_right (-1: none) */
    MFU_ROLE_ATTENTION_CHUNK,   /* int: FlashAttention-3 attention_chunk */
    MFU_ROLE_KV_NUM_BLOCKS,     /* values: a BlockMask's partial blocks per
                                 * row, [b, h, q_blocks] */
    MFU_ROLE_KV_INDICES,        /* values: their key blocks, [b, h, q_blocks,
                                 * kv_blocks] */
    MFU_ROLE_FULL_KV_NUM_BLOCKS, /* values: the unmasked blocks (optional) */
    MFU_ROLE_FULL_KV_INDICES,
    MFU_ROLE_Q_BLOCK_SIZE,      /* int: tokens per query block */
    MFU_ROLE_KV_BLOCK_SIZE,     /* int: tokens per key block */
    MFU_ROLE_ATTN_MASK,         /* tensor (optional): an SDPA attn_mask or a
                                 * kernel's attn_bias; only its presence is
                                 * read (mask_tensor) */
    MFU_ROLE_COUNT
} mfu_op_role;

/* What a caller must hand over for a role. */
typedef enum mfu_arg_need {
    MFU_NEED_TENSOR = 1,  /* shape, requires_grad, dtype */
    MFU_NEED_OFFSETS = 2, /* a 1-D tensor: its shape and, where readable
                           * (not meta), its values */
    MFU_NEED_INT = 3,     /* an int or a bool (0 / 1) */
    MFU_NEED_INT_LIST = 4, /* a list of ints or bools */
    MFU_NEED_VALUES = 5   /* a tensor of any rank: its shape and, where
                           * readable (not meta), all its values */
} mfu_arg_need;

/* Schema positions are below this (a call's args array never needs more). */
#define MFU_OP_ARGS_MAX 32

/*
 * One row. `at[role]` is the role's position in the op's schema PLUS ONE,
 * so that a role a row does not name is 0 ("not read") -- a missing
 * designated initializer can never silently mean position 0. Read it with
 * mfu_op_position().
 */
typedef struct mfu_op_spec {
    const char *name;       /* "aten::mm", as the dispatcher names the op */
    mfu_op_kind kind;
    mfu_attn_layout layout; /* attention kinds; NONE otherwise */
    uint8_t at[MFU_ROLE_COUNT];
    uint8_t full_square;    /* attention: the kernel computes the whole
                             * s_q x s_kv rectangle even when causal (the
                             * math path); 0: it skips masked blocks */
} mfu_op_spec;

/* The row of `name`, or NULL when the op is not counted (NULL name too). */
const mfu_op_spec *mfu_op_find(const char *name);

/* Row i of the table (i < mfu_op_table_size()), or NULL. */
size_t mfu_op_table_size(void);
const mfu_op_spec *mfu_op_table_row(size_t i);

/* The position of `role` in the row's schema, or -1 when it reads none. */
int mfu_op_position(const mfu_op_spec *spec, mfu_op_role role);

/* Names, as _C.op_table() shows them; NULL for a value out of range. */
const char *mfu_op_kind_name(mfu_op_kind kind);     /* "mm", "attention", ... */
const char *mfu_op_layout_name(mfu_attn_layout l);  /* "bhsd", ...; NONE: NULL */
const char *mfu_op_role_name(mfu_op_role role);     /* "query", "stride", ... */
mfu_arg_need mfu_op_role_need(mfu_op_role role);    /* 0 out of range */
const char *mfu_op_need_name(mfu_arg_need need);    /* "tensor", ... */

/* One argument the count of a row reads. */
typedef struct mfu_op_input {
    int position; /* in the schema */
    mfu_op_role role;
    mfu_arg_need need;
} mfu_op_input;

/* The arguments `spec` reads, by increasing position, into
 * inputs[0 .. MFU_ROLE_COUNT-1]; returns how many (0 for NULL). A caller
 * converts exactly these (and may cache the list per row). */
size_t mfu_op_inputs(const mfu_op_spec *spec, mfu_op_input *inputs);

/* ---- one call ---------------------------------------------------------- */

typedef enum mfu_arg_type {
    MFU_ARG_NONE = 0,   /* absent, None, or not a value the role reads */
    MFU_ARG_TENSOR = 1,
    MFU_ARG_INT = 2,    /* ints and bools (0 / 1) */
    MFU_ARG_INT_LIST = 3
} mfu_arg_type;

/*
 * One argument, as plain data (no torch). Pointers are borrowed for the
 * duration of the mfu_op_count call: a caller may point into a tensor's
 * own sizes.
 */
typedef struct mfu_op_arg {
    mfu_arg_type type;
    const int64_t *ints;   /* TENSOR: its sizes; INT_LIST: the values */
    size_t count;          /* TENSOR: its rank; INT_LIST: its length */
    int64_t value;         /* INT */
    int requires_grad;     /* TENSOR */
    int dtype;             /* TENSOR: its element type as 1 + an mfu_dtype
                            * (MFU_OP_DTYPE), 0 when it has none of them
                            * (integers other than int8, bool, complex) */
    const int64_t *values; /* TENSOR in an OFFSETS or VALUES role: its
                            * values in row-major order (as many as its
                            * sizes' product: ints[0] for 1-D offsets),
                            * or NULL when they cannot be read */
} mfu_op_arg;

/* An argument's dtype as mfu_op_arg.dtype holds it. */
#define MFU_OP_DTYPE(d) (1 + (int)(d))

/* mfu_op_call.tf32: where the caller's framework lets fp32 run as TF32. */
#define MFU_TF32_MATMUL 1 /* matmuls and attention (cuBLAS) */
#define MFU_TF32_CONV 2   /* convolutions (cuDNN) */

/* The autograd node a backward-phase call runs under, as the caller sees
 * it (mfu_op_call.node). */
typedef enum mfu_op_node {
    MFU_NODE_UNKNOWN = 0,   /* not said: a backward-phase call is BACKWARD */
    MFU_NODE_BUILTIN = 1,   /* none, or one of autograd's own nodes */
    MFU_NODE_CUSTOM = 2,    /* a custom autograd Function's backward */
    MFU_NODE_CHECKPOINT = 3 /* a reentrant checkpoint Function's backward
                             * (torch.utils.checkpoint, Megatron's and
                             * DeepSpeed's CheckpointFunction): it recomputes */
} mfu_op_node;

/* Where a call runs (see "Sites" above). */
typedef enum mfu_op_site {
    MFU_SITE_FORWARD = 0,
    MFU_SITE_BACKWARD = 1,
    MFU_SITE_CUSTOM_BACKWARD = 2,
    MFU_SITE_RECOMPUTE = 3,
    MFU_SITE_RECOMPUTE_BACKPROP = 4
} mfu_op_site;

typedef struct mfu_op_call {
    const mfu_op_arg *args; /* args[i] is schema argument i; only the
                             * positions mfu_op_inputs lists are read */
    size_t nargs;           /* positions >= nargs count as NONE */
    mfu_causal causal;      /* the counter's convention (see above) */
    int backward_phase;     /* the call runs inside a backward pass */
    int grad_enabled;       /* grad mode was on */
    int tf32;               /* MFU_TF32_* bits allowed for this call's
                             * device (0 on CPU: no TF32 there) */
    int input_dtype;        /* custom formulas only: the op's first
                             * floating tensor argument, as
                             * mfu_op_arg.dtype */
    /* Backward phase only (mfu_op_site_of); zeros keep the plain rule. */
    mfu_op_node node;       /* the node being evaluated */
    int saved_tensor_hooks; /* default saved-tensor hooks are set (the
                             * non-reentrant checkpoint's recompute) */
    int recomputed;         /* the caller knows the call recomputes (a
                             * recomputed node of a compiled backward) */
    /* Backward phase, MFU_CAUSAL_HALF: the call is a matmul of the backward
     * of a full_square attention call whose mfu_op_flops.square_model was
     * square_model of its executed square_executed: the call's model_self
     * is that share of its executed FLOPs, the rest overcompute. 0: none. */
    int64_t square_model;
    int64_t square_executed;
} mfu_op_call;

/*
 * The site of a call:
 *   not in the backward phase                     FORWARD
 *   node UNKNOWN                                  BACKWARD
 *   recomputed                                    RECOMPUTE
 *   saved_tensor_hooks (the non-reentrant
 *   checkpoint's recompute, grad on or off)       RECOMPUTE
 *   a CHECKPOINT node: grad on (its recompute) /
 *   off (a custom Function's forward in it)       RECOMPUTE_BACKPROP / RECOMPUTE
 *   a CUSTOM node: grad on (a Function that
 *   recomputes, then backpropagates) / off        RECOMPUTE_BACKPROP / CUSTOM_BACKWARD
 *   otherwise (autograd's own nodes; grad on:
 *   a backward with create_graph=True)            BACKWARD
 */
mfu_op_site mfu_op_site_of(const mfu_op_call *call);

/* "forward", "backward", ...; NULL for a value out of range. */
const char *mfu_op_site_name(mfu_op_site site);

/*
 * The compute dtype of a call (FLOPs by dtype, docs/conventions.md): the
 * dtype of its first operand -- matmul a, convolution input (grad_output for
 * convolution_backward), attention query; a custom formula's
 * call->input_dtype -- with fp32 counted as TF32 where call->tf32 allows it
 * for the op's kind (matmul and attention: MFU_TF32_MATMUL; convolutions:
 * MFU_TF32_CONV). An operand without a dtype counts as fp32.
 */
typedef struct mfu_op_flops {
    int64_t executed;        /* FLOPs the call runs */
    uint64_t model_backward; /* see above: anticipated (at most 2 x
                              * executed) */
    int approximate;         /* 1: varlen lengths unknown, upper bound */
    mfu_dtype dtype;         /* the compute dtype (see above) */
    int64_t model_self;      /* see above (at most executed, except an
                              * attention backward kernel's 2x forward,
                              * which is below its executed count, and a
                              * custom formula's declared backward) */
    uint64_t overcompute;    /* see above (at most executed) */
    mfu_op_site site;        /* mfu_op_site_of(call) */
    uint64_t overcompute_backward; /* see above: anticipated (at most 2 x
                              * executed) */
    int64_t square_model;    /* see above; 0 for other rows */
    int mask_read;           /* see above: 0 / 1 */
    int mask_tensor;         /* see above: 0 / 1 */
} mfu_op_flops;

/* Why a call could not be counted: the argument (a role name, or NULL for
 * the call as a whole) and what is wrong with it. Static strings. */
typedef struct mfu_op_error {
    const char *argument;
    const char *reason;
} mfu_op_error;

/*
 * Count one call of `spec`. MFU_OK with *out set; otherwise *out untouched,
 * *error (if not NULL) set, and:
 *   MFU_ERR_INVALID_ARGUMENT  a missing or malformed argument (a tensor of
 *                             the wrong rank, negative dims, shapes that
 *                             disagree, offsets that decrease, ...)
 *   MFU_ERR_OVERFLOW          the count does not fit in int64.
 * Missing optional arguments take the schema's defaults: stride 1,
 * padding 0, dilation 1, not transposed, groups 1, every gradient wanted,
 * not causal, max_seqlen_k = max_seqlen_q.
 */
mfu_status mfu_op_count(const mfu_op_spec *spec, const mfu_op_call *call,
                        mfu_op_flops *out, mfu_op_error *error);

/*
 * A custom formula's answer (registered from Python for an op the table
 * does not know) under the same site rules: `flops` executed (and its
 * model_self where the site counts it). At the forward site, with grad mode
 * on and a tensor input requiring grad, its declared backward --
 * `model_backward` (when >= 0) or 2 x flops (when -1, the attention
 * convention: a formula that knows better returns it) -- is added to
 * model_self, charged as it runs: the count cannot see an opaque backward
 * run ("Reaching the loss"); model_backward stays 0.
 * MFU_ERR_INVALID_ARGUMENT for flops < 0 or model_backward < -1.
 */
mfu_status mfu_op_custom_flops(int64_t flops, int64_t model_backward,
                               int any_input_requires_grad,
                               const mfu_op_call *call, mfu_op_flops *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MFU_OPS_H */
