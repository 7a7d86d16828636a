/*
 * steps_internal.h -- the step tracker's state (steps.h), shared by the
 * files that implement it, one concept each:
 *
 *   steps.c         lifetime and configuration, boundaries, booking, figures
 *   steps_marks.c   the marks ring and the drain over its six mark kinds
 *   steps_clock.c   marks on the timer, polls, the fallback to the CPU clock
 *   steps_phases.c  phases and excluded intervals
 *   steps_comm.c    communication: launches, completions, the in-flight table
 *   steps_ledger.c  the job ledger's totals
 *
 * Every fact of a step lives in its record (records.h), in `records`; the
 * rest of the state is the marking side (what the host has asked for) and
 * the draining side (where the accounting of resolved marks has got to).
 * Not part of the core's interface: callers include steps.h.
 */
#ifndef MFU_STEPS_INTERNAL_H
#define MFU_STEPS_INTERNAL_H

#include <math.h>

#include "mfu_limits.h"
#include "records.h"
#include "steps.h"

/* The kind of mark a mark record is for (steps.h, "Phases", "Excluded
 * intervals", "Communication"). */
enum mfu_mark_kind {
    MFU_MARK_BOUNDARY = 0,
    MFU_MARK_PHASE = 1,         /* `phase` runs from this mark on (NONE: none) */
    MFU_MARK_EXCLUDE_BEGIN = 2,
    MFU_MARK_EXCLUDE_END = 3,
    MFU_MARK_COMM_BEGIN = 4,    /* a collective launched */
    MFU_MARK_COMM_END = 5       /* the collective of `token` completed */
};

/* One mark waiting to be accounted for. What it tells about a step goes to
 * the step's record when the mark resolves. */
typedef struct mfu_mark {
    uint64_t id;            /* the mark */
    uint8_t kind;           /* enum mfu_mark_kind */
    uint8_t phase;          /* MFU_MARK_PHASE: the phase running from it on */
    uint8_t closes;         /* a boundary that closes a step (else it opens
                               the first step of its clock) */
    uint64_t token;         /* MFU_MARK_COMM_*: the collective (0: not timed) */
    mfu_comm_launch launch; /* MFU_MARK_COMM_BEGIN: what was launched */
} mfu_mark;

/* A timed collective between its begin's drain and its end's. */
typedef struct mfu_inflight {
    uint64_t token;         /* 0: free */
    int known;              /* the begin's time is known */
    double begin_s;
    mfu_comm_launch launch;
} mfu_inflight;

struct mfu_steps {
    mfu_steps_config config;
    mfu_timer *timer;     /* NULL after close, or when no fallback timer
                             could be made */
    mfu_clock_kind clock; /* the timer's clock */
    int closed;

    /* The step records, oldest first: `pushed_held` pushed ones, then the
     * pending ones, then the open one (records.h, "The ring"). */
    mfu_step_ring *records;
    uint32_t pushed_held;

    /* The marks ring: one per mark taken and not yet accounted for. */
    mfu_mark *marks;
    uint32_t marks_capacity, marks_head, marks_count;
    uint32_t pending;    /* closed steps whose boundary is in the ring */

    /* The marking side: a boundary on the current timer opened a step. */
    int step_open;
    /* The draining side: the time of the last boundary accounted for, when
     * known (unknown at a clock's start and after a lost mark). */
    int open_known;
    double open_s;

    /* Phases, the marking side: the open phases, innermost last. */
    uint8_t phase_stack[MFU_PHASE_DEPTH_MAX];
    uint32_t phase_depth;
    int excluding;
    /* Phases, the draining side: the phase running since segment_s (when
     * segment_known) and the exclusion running since exclude_s. */
    uint8_t running;
    int segment_known, drain_excluding, exclude_known;
    double segment_s, exclude_s;

    /* The job ledger's running totals of what outlives the records: the
     * badput phases and the tracker's own time as each interval ends, the
     * periods and step phases of every pushed step, and the model FLOPs of
     * the pushed steps evicted from the ring (steps_ledger.c). */
    mfu_steps_ledger ledger;
    double retired_model_flops;
    uint64_t retired_unknown_flops;

    uint64_t boundaries;
    uint64_t pushed;
    uint64_t dropped;

    /* Communication: NULL until enabled. The timed collectives in flight
     * (slot = token % MFU_COMM_INFLIGHT_MAX). */
    mfu_inflight *inflight;
    uint64_t comm_next_token;
    uint64_t comm_unpaired;

    uint32_t fallbacks;
    mfu_clock_kind failed_clock;
    mfu_gpu_error failure;
};

static inline int mfu_steps_usable(double value)
{
    return isfinite(value) && value >= 0.0;
}

/* NaN (unknown) or usable. */
static inline int mfu_steps_usable_or_unknown(double value)
{
    return isnan(value) || mfu_steps_usable(value);
}

/* ---- steps_marks.c ----------------------------------------------------- */

/* The record the drain charges marks to: the oldest step not pushed (NULL:
 * none is open). */
mfu_step_record *mfu_steps_draining(const mfu_steps *s);

/* The slot for a new mark at the ring's end; the caller fills it in. */
mfu_mark *mfu_steps_mark_append(mfu_steps *s);

/* Account for every mark whose time is resolved, in id order. */
void mfu_steps_drain(mfu_steps *s);

/* A mark of `kind` (filled in from `proto`) on a new mark on `stream` (or
 * at `at_ns` on the CPU clock), when a step is open to charge; *appended
 * (may be NULL) says whether it was taken. */
mfu_status mfu_steps_mark_within_step(mfu_steps *s, enum mfu_mark_kind kind,
                                      const mfu_mark *proto, uintptr_t stream,
                                      const uint64_t *at_ns, int *appended);

/* ---- steps_clock.c ----------------------------------------------------- */

/* A timer on `clock` with the configured sizes. */
mfu_status mfu_steps_make_timer(const mfu_steps *s, mfu_clock_kind clock, mfu_timer **timer,
                                mfu_gpu_error *error);

/* Note a failure of the `clock` clock (steps.h, "Failures"). */
void mfu_steps_note_failure(mfu_steps *s, mfu_clock_kind clock, const mfu_gpu_error *error);

/* Poll (GPU clocks) and drain; a failing poll hands over to the CPU. */
void mfu_steps_catch_up(mfu_steps *s);

/* Take a mark on `stream` of the current timer, falling back once if it
 * fails. */
mfu_status mfu_steps_take_mark(mfu_steps *s, uintptr_t stream, uint64_t *id);

/* ---- steps_ledger.c ---------------------------------------------------- */

/* The record of a step just timed: its period and step phases in the
 * ledger's running totals. */
void mfu_steps_ledger_push(mfu_steps *s, const mfu_step_record *r);

/* The oldest record leaves the ring: its model FLOPs (or that they were
 * unknown) stay in the ledger's totals. */
void mfu_steps_ledger_retire(mfu_steps *s, const mfu_step_record *r);

#endif /* MFU_STEPS_INTERNAL_H */
