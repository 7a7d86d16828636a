/*
 * mfu_capsules.h -- what mfu_tracker._C publishes to other extensions: two
 * tables of function pointers, each a PyCapsule of _C, which the C++
 * observer (mfu_tracker._torch, csrc/torch/mfu_torch.h) imports at init.
 * This header is the whole contract between the two extensions; how _C
 * fills the tables is its own business (py_ops.h / py_ops.c: the op table
 * and the registry of custom formulas; py_comm.h / py_comm.c: the
 * communication sinks).
 *
 * A table carries the version of this header its publisher was built with;
 * an importer refuses a table of another layout (a stale build) with the
 * command that fixes it.
 */
#ifndef MFU_CAPSULES_H
#define MFU_CAPSULES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>

#include "../core/comm/comm.h"
#include "../core/base/mfu_limits.h"
#include "../core/ops/nodes.h"
#include "../core/ops/ops.h"
#include "../core/base/phases.h"
#include "../core/steps/steps.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the op table and the custom formulas (filled by py_ops.c) ---------- */

/* Version 1 was the per-formula table of flops.h (mfu_flops_api); 2 had
 * no dtype in mfu_op_call / mfu_op_flops; 3 had fewer roles (no windows,
 * no block masks: a smaller mfu_op_input array); 4 no sites (node,
 * model_self, overcompute, site; ops.h); 5 no node_kind (nodes.h). */
#define MFU_OPS_API_VERSION 6u
#define MFU_OPS_API_CAPSULE "mfu_tracker._C._ops_api"

/* A registered custom formula (opaque). */
typedef struct mfu_formula mfu_formula;

typedef struct mfu_ops_api {
    unsigned abi_version; /* MFU_OPS_API_VERSION of the publisher */

    struct { /* core/ops/ops.h (and mfu_status_str); any thread */
        const char *(*status_str)(mfu_status status);
        const mfu_op_spec *(*find)(const char *name);
        size_t (*inputs)(const mfu_op_spec *spec, mfu_op_input *inputs);
        const char *(*role_name)(mfu_op_role role);
        const char *(*kind_name)(mfu_op_kind kind);
        const char *(*site_name)(mfu_op_site site);
        mfu_status (*count)(const mfu_op_spec *spec, const mfu_op_call *call,
                            mfu_op_flops *out, mfu_op_error *error);
        /* core/ops/nodes.h: which autograd node a backward call runs in */
        mfu_op_node (*node_kind)(int custom_function, const char *name,
                                 const char *forward_module, int higher_order_call);
    } core;

    struct { /* the custom formulas of this _C; pass `registry` to each */
        void *registry;
        /* Any thread, no GIL needed. */
        uint64_t (*generation)(void *registry);
        const mfu_formula *(*find)(void *registry, const char *name);
        /* GIL held. Call `formula` with `args` (a tuple: the op's arguments
         * in schema order, tensors as shape tuples) and turn its answer into
         * *out (mfu_op_custom_flops' rule). 0, or -1 with an exception set
         * whose text says what went wrong ("custom formula raised: ..."). */
        int (*count)(const mfu_formula *formula, PyObject *args,
                     int any_input_requires_grad, const mfu_op_call *call,
                     mfu_op_flops *out);
    } formulas;
} mfu_ops_api;

/* ---- the communication sinks (filled by py_comm.c) ------------------------ */

#define MFU_COMM_API_VERSION 3u
#define MFU_COMM_API_CAPSULE "mfu_tracker._C._comm_api"

/* One collective in every sink: the sinks' tokens for its end. */
typedef struct mfu_comm_ticket {
    uint32_t generation[MFU_COMM_SINKS_MAX]; /* 0: not recorded in that slot */
    uint64_t token[MFU_COMM_SINKS_MAX];
} mfu_comm_ticket;

/* One wait: the sinks whose exposed-communication phase it opened. */
typedef struct mfu_comm_wait {
    uint32_t generation[MFU_COMM_SINKS_MAX]; /* 0: not opened in that slot */
} mfu_comm_wait;

/* mfu_comm_api.wait_begin flags. */
enum {
    /* every sink, whatever thread it belongs to (autograd's threads run a
     * backward for the thread that called it); else only the sinks created
     * on the calling thread */
    MFU_COMM_WAIT_ANY_THREAD = 1u << 0,
    /* only sinks on the CPU clock (host time inside a launch: on a GPU clock
     * the compute stream does not wait for it) */
    MFU_COMM_WAIT_CPU_CLOCK_ONLY = 1u << 1
};

typedef struct mfu_comm_api {
    unsigned abi_version; /* MFU_COMM_API_VERSION of the publisher */
    void *registry;       /* pass to every sink function */

    /* ---- sinks: any thread, GIL or not ---- */
    /* The number of sinks now (a hint for skipping work: read without the
     * lock). */
    int (*active)(void *registry);
    /* A collective launched: mfu_steps_comm_begin in every sink, and, as
     * wait_begin(phase, flags) does, the phase of the launch's own time in
     * the sinks the flags select (its end: wait_end). One pass. */
    void (*launch)(void *registry, const mfu_comm_launch *launch, mfu_phase phase,
                   unsigned flags, mfu_comm_ticket *ticket, mfu_comm_wait *wait);
    /* ... completed: mfu_steps_comm_end(token, stream) in the sinks of the
     * ticket still there. */
    void (*done)(void *registry, const mfu_comm_ticket *ticket, uintptr_t stream);
    /* ... completed at `monotonic_ns` (mfu_clock_monotonic_ns), seen on a
     * backend's own thread (a host collective): queued without a lock, and
     * recorded (mfu_steps_comm_end_at) by the next call of any thread into
     * the sinks, or by StepTracker.comm(). So a completion never contends
     * with the training thread for a lock. A full queue drops it (the
     * collective keeps its bytes, not its duration). */
    void (*done_at)(void *registry, const mfu_comm_ticket *ticket, uint64_t monotonic_ns);
    /* CLOCK_MONOTONIC now, ns (core/device/timing.h), for done_at. */
    mfu_status (*now_ns)(uint64_t *now_ns);
    /* A wait (or a blocking launch) begins: open `phase` in the sinks the
     * flags select; ends: close it in those. */
    void (*wait_begin)(void *registry, mfu_phase phase, unsigned flags, mfu_comm_wait *wait);
    void (*wait_end)(void *registry, const mfu_comm_wait *wait);

    /* ---- the core (comm.h); any thread ---- */
    size_t (*op_count)(void);
    const mfu_comm_op *(*op_get)(size_t index);
    mfu_status (*busbw_factor)(mfu_comm_kind kind, int64_t group_size, double *factor);
    mfu_phase (*kind_phase)(mfu_comm_kind kind);
} mfu_comm_api;

#ifdef __cplusplus
}
#endif

#endif /* MFU_CAPSULES_H */
