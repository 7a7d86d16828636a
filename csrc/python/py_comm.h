/*
 * py_comm.h -- communication in mfu_tracker._C (py_comm.c): the sinks that
 * receive the process's collectives, and the table of functions the C++
 * observer (mfu_tracker._torch, csrc/torch/comm.cpp) reaches them through,
 * published as the PyCapsule MFU_COMM_API_CAPSULE.
 *
 * A *sink* is a StepTracker that subscribed (StepTracker._comm_subscribe;
 * Tracker does at construction under a process group): every collective
 * launched, completed and waited for is recorded in each sink's step engine
 * (core/steps.h, "Communication"; waits as the kinds' phases). At most
 * MFU_COMM_SINKS_MAX at once. A sink unsubscribes when its tracker closes
 * or is freed.
 *
 * Threads. The functions below may be called from any thread, with or
 * without the GIL (the observer calls them from the training thread, from
 * autograd's device threads and from a backend's completion threads). They
 * take the registry's lock, then each sink's lock; a thread holding the GIL
 * waits for either with the GIL released, so no lock is ever awaited while
 * holding the GIL another lock holder needs. Nothing here calls Python or
 * raises. The registry lives until the process ends (an observer thread may
 * still call it at exit).
 *
 * Identity. A sink is a slot and the slot's generation at the time: a
 * ticket or a wait taken before a sink left (and another took its slot)
 * does not touch the newcomer.
 */
#ifndef MFU_PY_COMM_H
#define MFU_PY_COMM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../core/comm.h"
#include "../core/mfu_limits.h"
#include "../core/phases.h"
#include "../core/steps.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    /* CLOCK_MONOTONIC now, ns (core/timing.h), for done_at. */
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

#endif /* MFU_PY_COMM_H */
