/*
 * py_step_object.h -- the _C.StepTracker object, as its files share it:
 * py_step_tracker.c (construction, step(), the figures), py_phases.c (the
 * phase marks of the waterfall and the phase() block) and py_step_object.c
 * (the lock and the warnings below).
 *
 * Every call on a StepTracker takes its lock (the core tracker is
 * single-threaded), and a warning found under the lock is queued and
 * emitted after it is released (mfu_py_step_unlock), one per kind.
 */
#ifndef MFU_PY_STEP_OBJECT_H
#define MFU_PY_STEP_OBJECT_H

#include "mfu_module.h"

typedef struct {
    PyObject_HEAD
    mfu_module_state *state;
    /* The module's communication registry (py_comm.c), never freed: kept here
     * so that the object's dealloc, which may run after the module's state is
     * gone (interpreter finalization clears cycles in any order), never reads
     * that state. */
    void *comm_registry;
    PyThread_type_lock lock;
    mfu_steps *steps; /* NULL until __init__ succeeds */
    /* Mixed precision (core/steps/mixed.h): the per-device peak of each dtype,
     * FLOP/s, NaN = none; fixed at __init__. */
    double dtype_peaks[MFU_DTYPE_COUNT];
    int any_peak; /* some dtype has a peak: else no peak is known at all
                     (warned by the peak lookup) and mfu_mixed is silently out */

    int warn_pending; /* message holds a warning to emit after the lock */
    int warned_failure, warned_args, warned_closed, warned_mfu, warned_mixed;
    int warned_phase_open, warned_phase_misuse;
    char message[400];
} step_object;

/* Queue `message` unless its kind (`*flag`) warned already or another
 * waits (that kind then warns on a later call). Lock held. */
void mfu_py_step_queue_warning(step_object *s, int *flag, const char *message);
/* The clock failed since the last look: one warning, ever. Lock held. */
void mfu_py_step_check_fallback(step_object *s);
/* Release the lock, then emit the queued warning (if any). */
void mfu_py_step_unlock(step_object *s);
/* 0, or -1 with RuntimeError when __init__ never succeeded. */
int mfu_py_step_require_init(const step_object *s);

#endif /* MFU_PY_STEP_OBJECT_H */
