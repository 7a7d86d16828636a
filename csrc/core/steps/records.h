/*
 * records.h -- one record per step: every fact a step tracker (steps.h)
 * knows about one training step, in one ring keyed by the step's id; a
 * window is a view over that ring.
 *
 * ## The record
 *
 * A step is the time between two step boundaries. Its id is its number: the
 * k-th boundary a tracker takes opens step k (and closes step k - 1), so the
 * ids count 1, 2, 3, ... in the order the steps ran. The record of step k
 * is made when step k opens and holds, as they become known:
 *
 *   work        its sums, one per field of step_fields.h (model, executed,
 *               over-compute and language FLOPs, parameter bytes, tokens,
 *               ideal seconds, ...) -- from the boundary that closes it
 *               (mfu_steps_step), booked later by id (mfu_steps_book: FLOPs
 *               an integration resolves at logging time), or measured by
 *               the tracker; NaN = unknown
 *   phases      the seconds of each phase marked in it, its excluded time
 *   comm        its communication: bytes, calls, durations per kind (zero
 *               while communication is not recorded)
 *   period_s    its period, once its closing boundary resolved (pushed)
 *
 * Nothing about a step is kept anywhere else: the window's figures, the
 * phase and communication sums and the job ledger's step totals are sums
 * over records.
 *
 * ## The ring
 *
 * Records are kept oldest first in a ring of fixed capacity, allocated once
 * (memory stays bounded over any number of steps). Their ids increase from
 * the oldest to the newest; a step lost to a clock failure is removed, so
 * ids may skip. The ring holds, oldest first, the pushed steps (their
 * period known), then the closed steps waiting for their boundary's time
 * (pending), then the open step; steps.c sizes it so that a record is only
 * ever evicted once pushed (steps.h, "The ring's size").
 *
 * ## Windows are views
 *
 * A window is `steps` consecutive records of the ring, from index `first`
 * (0 = the oldest). mfu_step_view_sum() sums the parts of a view asked for,
 * oldest first; the step tracker's window is the view of its newest pushed
 * steps after warm-up.
 */
#ifndef MFU_RECORDS_H
#define MFU_RECORDS_H

#include <stdint.h>

#include "comm.h"
#include "mfu_status.h"
#include "phases.h"
#include "stats.h"

/* Where a step is in its life. */
typedef enum mfu_step_state {
    MFU_STEP_OPEN = 0,    /* its closing boundary is not marked yet */
    MFU_STEP_PENDING = 1, /* closed; its closing boundary's time not known yet */
    MFU_STEP_PUSHED = 2   /* closed and timed: period_s is known */
} mfu_step_state;

typedef struct mfu_step_record {
    uint64_t id;              /* the step's number (see "The record") */
    uint8_t state;            /* mfu_step_state */
    double period_s;          /* its period (pushed); NaN before */
    mfu_work work;            /* every field of step_fields.h; NaN = unknown */
    mfu_phase_times phases;   /* phases.h */
    mfu_comm_times comm;      /* comm.h; zeros until communication is on */
} mfu_step_record;

typedef struct mfu_step_ring mfu_step_ring;

/* A ring of `capacity` records (1 .. MFU_STEP_RING_MAX).
 * MFU_ERR_INVALID_ARGUMENT for a capacity out of range, MFU_ERR_NO_MEMORY. */
#define MFU_STEP_RING_MAX (1u << 26)
mfu_status mfu_step_ring_create(uint32_t capacity, mfu_step_ring **ring);

/* NULL is a no-op. */
void mfu_step_ring_destroy(mfu_step_ring *ring);

/* From now on every new record's communication starts at zero. Until then a
 * new record leaves it as the slot has it -- zero: nothing writes a record's
 * communication before this call (the step tracker calls it when it starts
 * recording communication) -- so a step of a tracker without communication
 * does not clear the 240 bytes it never uses. */
void mfu_step_ring_track_comm(mfu_step_ring *ring);

uint32_t mfu_step_ring_capacity(const mfu_step_ring *ring);

/* The records held (0 .. capacity). */
uint32_t mfu_step_ring_count(const mfu_step_ring *ring);

/* A new newest record for step `id`: open, every field of its work at its
 * `unknown` value (step_fields.h), no phases or communication.
 * NULL when the ring is full (pop the oldest first) or `id` is not above
 * the newest record's. */
mfu_step_record *mfu_step_ring_append(mfu_step_ring *ring, uint64_t id);

/* The i-th oldest record (i < count), else NULL. */
mfu_step_record *mfu_step_ring_at(const mfu_step_ring *ring, uint32_t i);

/* The record of step `id`, else NULL (never made, evicted or removed).
 * O(1) while no step between it and the newest was removed, O(log count)
 * otherwise. */
mfu_step_record *mfu_step_ring_find(const mfu_step_ring *ring, uint64_t id);

/* Forget the oldest record (none: a no-op). */
void mfu_step_ring_pop_oldest(mfu_step_ring *ring);

/* Forget the i-th oldest record (i < count; else a no-op); the newer ones
 * keep their order. O(count - i). */
void mfu_step_ring_remove(mfu_step_ring *ring, uint32_t i);

/* Keep only the `count` oldest records (a larger count: a no-op). */
void mfu_step_ring_truncate(mfu_step_ring *ring, uint32_t count);

/* ---- views ------------------------------------------------------------ */

/* Records first .. first + steps - 1 of a ring (see "Windows are views"). */
typedef struct mfu_step_view {
    const mfu_step_ring *ring;
    uint32_t first;
    uint32_t steps;
} mfu_step_view;

/* Sums over a view, formed oldest first. An unknown (NaN) value of any
 * record makes its sum NaN; an empty view has every sum NaN, its phase and
 * communication sums 0. */
typedef struct mfu_step_sums {
    uint32_t steps;           /* records in the view */
    double period_s;          /* sum of their periods */
    double period_min_s;
    double period_max_s;
    mfu_work work;            /* summed field by field */
    mfu_phase_summary phases; /* phases.h */
    mfu_comm_times comm;
} mfu_step_sums;

/* The parts of the records a sum reads (the others are not summed). */
enum {
    MFU_SUM_WORK = 1u << 0,   /* periods and every field of the work */
    MFU_SUM_PHASES = 1u << 1, /* phases */
    MFU_SUM_COMM = 1u << 2,   /* communication */
    MFU_SUM_ALL = MFU_SUM_WORK | MFU_SUM_PHASES | MFU_SUM_COMM
};

/* Sum the `parts` of a view (records past the ring's count are not read).
 * A part not asked for reads as an empty view's. O(steps) per part. */
void mfu_step_view_sum(const mfu_step_view *view, unsigned parts, mfu_step_sums *out);

/* The window's figures from a view's sums: window_s, step time mean / min /
 * max, the work totals, and mfu_figures_form(totals, window_s, the peak's
 * ceilings): every ratio, and the waterfall of the sums' phases (not
 * formed when they were not summed).
 * `peak` is taken as valid (mfu_peak_validate). steps_seen and
 * steps_skipped are the caller's (they count steps outside the view). */
void mfu_step_sums_window(const mfu_step_sums *sums, const mfu_peak *peak,
                          mfu_window_summary *out);

/* What the waterfall of a window is formed from (waterfall.h): its mean
 * step period, its phases' and its per-step fields' seconds per step. */
void mfu_step_sums_waterfall_in(const mfu_step_sums *sums, double step_s,
                                mfu_waterfall_in *out);

#endif /* MFU_RECORDS_H */
