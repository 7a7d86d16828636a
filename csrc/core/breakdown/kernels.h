/*
 * kernels.h -- kernel classes: which class a profiled kernel, op or
 * annotation belongs to, by one table of name rules (kernels.c).
 *
 * A profiled step (torch.profiler) names three kinds of events, each a
 * "source" of a name:
 *   KERNEL      device activity: a GPU kernel, a memcpy or a memset, named
 *               as Kineto writes it (CUPTI / roctracer, demangled);
 *   OP          a host op: aten::mm, c10d::allreduce_, an autograd node;
 *   ANNOTATION  a record_function span: Optimizer.step#AdamW.step, a
 *               compiled graph's call.
 *
 * The classes, in the priority order that settles overlap on the union
 * timeline (timeline.h): where two lanes (streams, threads) run at once, the
 * instant goes to the first class here -- compute before memory copies
 * before communication, so a copy or a collective hidden under compute
 * costs nothing and only the exposed part of either is charged:
 *
 *   gemm          matmuls and convolutions (cuBLAS / cuBLASLt / nvjet,
 *                 CUTLASS, hipBLASLt / Tensile, Triton templates)
 *   attention     fused attention (flash, fmha / mem-efficient, cuDNN SDPA,
 *                 flex / Triton attention)
 *   fused         a compiled region's generated code with no finer name
 *                 (CPU: the CompiledFxGraph call; inductor's C++ kernels)
 *   reduction     reductions and normalization (softmax, LayerNorm,
 *                 RMSNorm, cross-entropy, Triton reductions)
 *   elementwise   pointwise kernels and ops (Triton pointwise too)
 *   optimizer     multi_tensor_apply, fused Adam, foreach ops; and, by
 *                 scope, everything but gemm / attention run inside
 *                 torch's Optimizer.step annotation
 *   other         names no row matches (a kernel or an op: still work)
 *   memory        memory copies and sets
 *   communication collectives (NCCL / RCCL kernels, c10d / gloo ops)
 *
 * An annotation no row names is *transparent* (MFU_KCLASS_NONE): a user's
 * own record_function adds no interval, the ops inside it are what ran.
 *
 * Matching (mfu_kclass_of): an OP first goes through the FLOP op table
 * (ops.h): a counted op is gemm (matmul, convolution kinds) or attention,
 * so the class of every op the FLOP counter counts is decided by the same
 * row that counts it. Then the rows below, in table order, first match
 * wins. Before the rows, an OP name is normalized: a trailing "_" (the
 * in-place variant) is dropped, then a trailing "_backward_data" or
 * "_backward" (a backward is its forward's class): aten::add_ matches the
 * row aten::add, aten::gelu_backward the row aten::gelu.
 */
#ifndef MFU_KERNELS_H
#define MFU_KERNELS_H

#include <stddef.h>

#include "mfu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mfu_kclass {
    MFU_KCLASS_NONE = -1, /* a transparent annotation: no interval */
    MFU_KCLASS_GEMM = 0,
    MFU_KCLASS_ATTENTION = 1,
    MFU_KCLASS_FUSED = 2,
    MFU_KCLASS_REDUCTION = 3,
    MFU_KCLASS_ELEMENTWISE = 4,
    MFU_KCLASS_OPTIMIZER = 5,
    MFU_KCLASS_OTHER = 6,
    MFU_KCLASS_MEMORY = 7,
    MFU_KCLASS_COMMUNICATION = 8,
    MFU_KCLASS_COUNT = 9
} mfu_kclass;

/* Where a name comes from; a row applies to the sources in its mask. */
typedef enum mfu_ksource {
    MFU_KSOURCE_KERNEL = 1u << 0,
    MFU_KSOURCE_OP = 1u << 1,
    MFU_KSOURCE_ANNOTATION = 1u << 2
} mfu_ksource;

typedef enum mfu_kmatch {
    MFU_KMATCH_EXACT = 0,      /* the whole (normalized) name */
    MFU_KMATCH_PREFIX = 1,     /* the name starts with the pattern */
    MFU_KMATCH_CONTAINS = 2,   /* the pattern occurs in the name */
    MFU_KMATCH_CONTAINS_NOCASE = 3 /* ... ignoring ASCII case */
} mfu_kmatch;

/* One row: a name pattern, how it matches, the sources it applies to, the
 * class, whether the span *scopes* what runs inside it (scope: the ops
 * nested in it and the kernels they launch take its class, but gemm and
 * attention, whose FLOPs the counter books by op, keep theirs), and where
 * the name can be read. */
typedef struct mfu_krule {
    const char *pattern;
    mfu_kmatch match;
    unsigned sources; /* mfu_ksource mask */
    mfu_kclass kclass;
    int scope;
    const char *source;
} mfu_krule;

/* The class's name ("gemm", ..., "communication"); NULL out of range. */
const char *mfu_kclass_name(mfu_kclass kclass);

/* The table: rule i (i < mfu_krule_count()), or NULL. */
size_t mfu_krule_count(void);
const mfu_krule *mfu_krule_get(size_t i);

/* Row index reported for an OP decided by the FLOP op table. */
#define MFU_KRULE_OP_TABLE ((size_t)-1)
/* Row index reported when no row matched (the default class). */
#define MFU_KRULE_DEFAULT ((size_t)-2)

/*
 * The class of `name` from `source` (exactly one mfu_ksource bit) into
 * *kclass; *scope (may be NULL) receives the matched row's scope flag and
 * *rule (may be NULL) its index, MFU_KRULE_OP_TABLE or MFU_KRULE_DEFAULT.
 * No row: KERNEL and OP names are MFU_KCLASS_OTHER, ANNOTATION names
 * MFU_KCLASS_NONE. MFU_ERR_INVALID_ARGUMENT for a NULL name or output, or
 * a source that is not one bit of mfu_ksource.
 */
mfu_status mfu_kclass_of(const char *name, unsigned source, mfu_kclass *kclass, int *scope,
                         size_t *rule);

#ifdef __cplusplus
}
#endif

#endif /* MFU_KERNELS_H */
