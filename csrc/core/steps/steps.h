/*
 * steps.h -- step accounting: a training loop's step boundaries, timed on one
 * clock without ever stalling the GPU, turned into windowed figures (MFU,
 * HFU, MBU, tokens/s, step time).
 *
 * A step tracker (mfu_steps) owns three things:
 *   - a mark timer (timing.h) on the CUDA, HIP or CPU clock;
 *   - the *step records* (records.h): one per step, keyed by the step's id,
 *     holding every fact of that step -- its period, its work, its phases,
 *     its communication; the window (the last `window` steps timed after
 *     `warmup`) is a view over them, and so are the job ledger's FLOPs;
 *   - the *marks ring*: one entry per mark taken but not yet accounted
 *     for, keyed by the mark's id and carrying its kind.
 *
 * ## Boundaries and periods
 *
 * mfu_steps_step() takes one mark, a *step boundary*, and appends its record.
 * The first boundary opens the first step; every later one closes the open
 * step and opens the next. A step's period is
 *
 *     time(closing boundary) - time(opening boundary)
 *
 * on the tracker's clock: everything the loop did between the two calls
 * (data loading, forward, backward, optimizer, logging), i.e. the
 * end-to-end utilization the run gets. On a GPU clock the boundary is an
 * event recorded on `stream`, so the period is GPU time between two points
 * of the stream.
 *
 * The call describes the step it *closes* (mfu_step_report): that goes to
 * the step's record at once. Its mark waits in the marks ring until the
 * timer has resolved it (the GPU got there); the *drain* then accounts for
 * marks in id order, charging each mark's time to the record of the step it
 * falls in, and a closing boundary's to the step's period: the step is then
 * *pushed* (timed) and joins the window. Read every step on a GPU clock,
 * the figures therefore lag by about one step.
 *
 * Step ids: the k-th boundary opens step k, so the step a call closes is
 * the number of boundaries before it (the first call closes none). A step
 * lost to a clock failure keeps its id; the ids after it skip it.
 *
 * ## The work of a step (the masking rules)
 *
 * A step's work is one value per field of the record (step_fields.h). A
 * boundary's report gives some of them (its MFU_STEP_* bit in `given`); the
 * others are measured by the tracker (a report's bit for a field the tracker
 * measures is ignored) or absent. A given value must be finite
 * and >= 0; one that is not is *bad*: the step records the field's
 * `unknown` value, its bit is set in the outcome's `bad` mask (the caller
 * warns), and nothing fails. An absent field takes, in order:
 *
 *   - unknown, when the field pairs with the model FLOPs
 *     (MFU_FIELD_PAIRS_STEP: executed FLOPs, ideal seconds) and the
 *     boundary gives model FLOPs (even bad): a per-step model count no
 *     longer pairs with the fixed per-step default;
 *   - the tracker's per-step default (MFU_FIELD_DEFAULTED: model and
 *     executed FLOPs, parameter bytes, ideal seconds; NaN when the
 *     configuration has none);
 *   - the field's `unknown` value (NaN; over-compute: 0, i.e. all of
 *     hfu - mfu is recompute).
 *
 * An unknown field (NaN) of any step in the window makes its sum and the
 * figures made from it unavailable (NaN) for as long as the step is among
 * the window's steps: tokens/s for tokens, mfu, achieved FLOP/s and the
 * model-FLOPs sum for model FLOPs, and so on (stats.h).
 *
 * ## Booking: work learned after the boundary
 *
 * A caller that learns a step's work only later (the integrations resolve
 * a step's FLOPs at logging time, from token counts still on the device at
 * the boundary) books it onto the step by id: mfu_steps_book(). The given
 * fields replace the record's, one by one; a pending step keeps them when it
 * is pushed; a pushed one changes the window's figures and the ledger's
 * FLOPs from the next reading on. A step is bookable from its closing
 * boundary until its record leaves the ring: at least MFU_STEPS_KEPT pushed
 * steps after it left the window.
 *
 * ## Never stalls
 *
 * mfu_steps_step, mfu_steps_poll and mfu_steps_summarize never wait for the
 * GPU: a mark is an event record, resolution uses non-blocking queries. The
 * one exception is the timer's own pool-full wait (timing.h), when the host
 * runs events_max marks ahead of the GPU. Only mfu_steps_flush and
 * mfu_steps_close wait (once, for the newest mark): release any lock a
 * caller's other threads need around them.
 *
 * ## Failures: the CPU clock takes over
 *
 * When the GPU clock cannot be used -- at create (no driver library, no
 * CUDA context, a failing cuEventCreate) or later (any driver call fails;
 * the timer's failure is sticky) -- the tracker continues on the CPU clock:
 *   - at create: the figures are simply timed on the CPU clock;
 *   - later: the GPU timer is destroyed, the records in the ring are
 *     dropped (each closed step among them counts in `dropped`), a CPU timer
 *     takes over, and the next boundary restarts the clock: it opens a step,
 *     and the step it would have closed is dropped too.
 * Every call still returns MFU_OK. mfu_steps_fallback() says whether it
 * happened, which clock failed and why (mfu_gpu_error): the caller warns
 * once. Accounting stays exact: once a boundary was taken, boundaries - 1
 * = pushed (warm-up included) + dropped + pending (mfu_steps_counters).
 *
 * ## The rings' sizes, derived
 *
 * After every drain each entry in the marks ring is for an unresolved mark,
 * and the timer never has more than mfu_timer_events_max() unresolved
 * marks; a call appends one entry before draining again. So events_max + 1
 * entries always suffice, and the ring is allocated once with that size
 * from the timer's actual cap (a fallback timer gets the same sizes). A
 * full ring (which the bound says cannot happen) drops its oldest entry,
 * counted.
 *
 * The same bound keeps every mark's time readable: the timer keeps the
 * newest `history` >= events_max times, and a boundary drains what its own
 * mark resolved (a pool-full wait resolves older marks) before it appends,
 * so the marks resolved between two drains never outnumber the history.
 *
 * The step records: each pending step has its own unresolved closing mark,
 * so at most events_max steps are pending, and one is open. A ring of
 * window + MFU_STEPS_KEPT + events_max + 2 records therefore always holds
 * the open step, every pending one, the window and MFU_STEPS_KEPT pushed
 * steps more: a full ring's oldest record is a pushed step outside the
 * window, which leaves (its model FLOPs stay in the ledger's totals).
 *
 * ## Phases (docs/waterfall.md)
 *
 * Inside a step the loop may mark *phases* (phases.h: data, forward,
 * backward, optimizer, exposed communication) on the same mark timer:
 *   mfu_steps_phase_begin(p)   opens p; an open phase is suspended (the
 *                              inner phase wins) and resumes when p ends;
 *   mfu_steps_phase_end()      closes the innermost phase;
 *   mfu_steps_phase_switch(p)  relabels the innermost phase (opens p when
 *                              none is open) -- one mark, for hooks that
 *                              move from one phase to the next (and for
 *                              the communication hook, which turns the
 *                              rest of backward into communication).
 * Each call takes one mark whose record says which phase runs from it on
 * (or none), so the time between two consecutive marks is charged to the
 * phase that ran between them: a phase's seconds are differences of marks
 * on one clock. On a GPU clock these are GPU-timeline seconds: a phase
 * lasts as long as the GPU took from the event opening it to the one
 * closing it, so a host stall (a data wait) while the GPU still works
 * through queued kernels costs nothing, and only the part after the GPU
 * drained counts. Never synchronizing, as for boundaries.
 *
 * A boundary closes every phase left open (outcome->phases_closed says how
 * many, for the caller's warning). Phase calls before the first boundary,
 * or after a fallback before the next one, track the nesting but take no
 * mark (no step is open to charge). More than MFU_PHASE_DEPTH_MAX nested
 * phases, or an end without an open phase, are refused with
 * MFU_ERR_INVALID_ARGUMENT and change nothing.
 *
 * ## Excluded intervals: the tracker stays out of its own measurement
 *
 * mfu_steps_exclude_begin() / _end() bracket the tracker's own work (the
 * aggregation collective of a distributed metrics() call). The interval
 * between the two marks is subtracted from the period of the step it falls
 * in and from whatever phase was running, on either clock (on a GPU clock:
 * as far as the GPU sat idle meanwhile). Nesting is not counted: a begin
 * while excluding, or an end while not, is a no-op.
 *
 * A step's record keeps, beside its period and work, its phase seconds
 * and excluded seconds (phases.h); mfu_steps_phases() gives the window's
 * sums.
 *
 * ## Communication (comm.h; docs/communication.md)
 *
 * Once enabled (mfu_steps_comm_enable), the tracker also records the
 * collectives the process issues, on the same mark timer:
 *   mfu_steps_comm_begin(launch)  one mark on the tracker's stream when a
 *                                 collective is launched; its record carries
 *                                 the kind, payload bytes, bus bytes and the
 *                                 link's peak, and the call returns a token;
 *   mfu_steps_comm_end(token, s)  one mark on stream `s` (one that the GPU
 *                                 reaches only once the collective is done;
 *                                 the CPU clock: now) when it completed.
 * The drain adds a begin's bytes and call to the step its mark falls in, and
 * an end's duration -- time(end) - time(begin), GPU-timeline seconds on a GPU
 * clock -- with its bus bytes (and link capacity, duration x link peak, when
 * the link is known) to the step the end falls in. Exposed seconds are not
 * recorded here: they are the kinds' phases (phases.h), marked around waits.
 * A collective launched before the first boundary, or inside an excluded
 * interval (the tracker's own aggregation), is not recorded; nor is one
 * launched while a badput phase is the innermost open phase (phases.h: a
 * checkpoint's gathers are the checkpoint's, which the ledger books, not the
 * step's communication), and the observer opens no wait phase inside one
 * (mfu_steps_phase_innermost). A host (CPU)
 * collective under a GPU clock has bytes but no duration. Up to
 * MFU_COMM_INFLIGHT_MAX timed collectives may be in flight; an end whose
 * begin was overwritten (or lost to a fallback) is not paired, and counted.
 * Any thread may call these (the bindings hold the tracker's lock), so a
 * backend's completion thread takes the end mark itself.

 * ## Badput phases (docs/goodput.md)
 *
 * The badput phases (phases.h: checkpoint, eval, compile) are excluded
 * intervals with a name: while one runs (innermost), its time goes to its
 * seconds *and* to the step's excluded seconds, so it leaves the period
 * exactly as the tracker's own time does. Outside an exclusion, that is;
 * the tracker's own time inside a badput phase is the tracker's.
 *
 * ## The job ledger's totals (docs/goodput.md)
 *
 * mfu_steps_get_ledger() gives running sums since the tracker was created,
 * for the job ledger (mfu_tracker/job/): the closed steps accounted for
 * (warm-up included), their periods, their step phases' seconds, their model
 * FLOPs (read from their records: booked ones included); the badput phases'
 * seconds and the tracker's own excluded seconds
 * as each interval ends (so a checkpoint after the last boundary counts,
 * once its marks resolve: at the latest at flush / close); the wall-clock
 * time of the first boundary (read once, with timespec_get), where the
 * run's startup ends; and the first pushed step's period, whose excess over
 * a normal step the ledger books as startup. Differences of two readings
 * are an interval's.
 *
 * ## The marks ring holds one entry per mark
 *
 * Every call that takes a mark appends exactly one entry (a boundary that
 * closes open phases closes them with its own entry: the drain ends the
 * running phase at every boundary), so the bound of "The rings' sizes"
 * holds for phase and exclusion marks as for boundaries: events_max + 1.
 *
 * A tracker is used by one thread at a time (the bindings hold a lock).
 */
#ifndef MFU_STEPS_H
#define MFU_STEPS_H

#include <stdint.h>

#include "comm.h"
#include "mfu_status.h"
#include "phases.h"
#include "records.h"
#include "stats.h"
#include "timing.h"

typedef struct mfu_steps_config {
    mfu_timer_config timer; /* clock, driver, pool sizes (0 = defaults) */
    uintptr_t stream;       /* raw stream handle GPU marks go to; 0 = null */
    uint32_t window;        /* steps the figures cover: 1 .. MFU_WINDOW_MAX */
    uint64_t warmup;        /* closed steps ignored first: 0 .. MFU_WARMUP_MAX */
    mfu_work per_step;      /* the per-step defaults of the MFU_FIELD_DEFAULTED
                               fields (NaN = none); the others are ignored */
    mfu_peak peak;          /* the MFU / MBU denominator (mfu_peak_validate) */
} mfu_steps_config;

/* What a boundary says about the step it closes, a booking about a closed
 * step, a caller about a window's totals: the fields whose MFU_STEP_* bit
 * (step_fields.h) is in `given`; the others are not read. */
typedef struct mfu_step_report {
    unsigned given;
    mfu_work work;
} mfu_step_report;

typedef struct mfu_steps_counters {
    mfu_timer_counters timer; /* the current timer's; zeros after close */
    uint64_t boundaries;      /* boundaries marked (mfu_steps_step calls that
                                 took a mark) */
    uint64_t pushed;          /* closed steps that reached the window,
                                 warm-up included */
    uint64_t dropped;         /* closed steps lost to a clock failure */
    uint32_t pending;         /* closed steps waiting for their mark */
    uint32_t fallbacks;       /* times the clock failed and the CPU clock
                                 took over */
} mfu_steps_counters;

typedef struct mfu_steps_summary {
    mfu_window_summary window; /* the window's figures: its sums (every field)
                                  and every ratio and the waterfall of them
                                  (stats.h) */
    mfu_phase_summary phases;  /* the window's phase sums (phases.h; as
                                  mfu_steps_phases gives them); its `marked`:
                                  the waterfall's phases when
                                  mfu_waterfall_marked */
    double peak_flops_per_sec; /* the MFU denominator: peak x num_devices;
                                  NaN = unknown */
    mfu_clock_kind clock;      /* the clock in use (CPU after a fallback) */
    uint64_t boundaries;
    uint64_t dropped;
    uint32_t pending;
} mfu_steps_summary;

typedef struct mfu_steps mfu_steps;

/* Create a tracker: its window and ring, and a timer on config->timer.clock
 * -- or, when that GPU clock is unavailable, on the CPU clock (see
 * "Failures"; mfu_steps_fallback tells). Status:
 *   MFU_ERR_INVALID_ARGUMENT  a config field out of its domain; *bad_field
 *                             (when bad_field is not NULL) names it: "clock",
 *                             "timer" (sizes), "window", "warmup",
 *                             a defaulted field's name ("model_flops",
 *                             "executed_flops", "param_bytes", "ideal_s"),
 *                             "peak_flops_per_sec", "peak_bytes_per_sec",
 *                             "num_gpus", "measured_flops_per_sec"
 *   MFU_ERR_NO_MEMORY */
mfu_status mfu_steps_create(const mfu_steps_config *config, mfu_steps **steps,
                            const char **bad_field);

/* Free the tracker and its timer's events, without waiting. NULL: no-op. */
void mfu_steps_destroy(mfu_steps *steps);

/* What a boundary call reports back, for the caller's warnings. */
typedef struct mfu_step_outcome {
    unsigned bad;       /* MFU_STEP_* bits of the given fields that were bad */
    uint32_t fallbacks; /* mfu_steps_fallback()'s count after the call */
    uint32_t phases_closed; /* phases left open that this boundary closed */
} mfu_step_outcome;

/* Mark a step boundary and record `report` for the step it closes, then
 * account, without blocking, for every step the GPU has finished. *outcome
 * (never NULL) is filled also when the boundary is not taken. Status:
 *   MFU_OK                boundary taken (possibly after a fallback)
 *   MFU_ERR_UNAVAILABLE   the tracker is closed: nothing recorded
 *   MFU_ERR_NO_MEMORY     no timer could be created after a fallback
 *   anything else         the CPU clock itself failed: nothing recorded */
mfu_status mfu_steps_step(mfu_steps *steps, const mfu_step_report *report,
                          mfu_step_outcome *outcome);

/* Account, without blocking, for every step the GPU has finished. */
void mfu_steps_poll(mfu_steps *steps);

/* Wait for every boundary taken so far (one wait on a GPU clock) and
 * account for all of them: afterwards nothing is pending. */
void mfu_steps_flush(mfu_steps *steps);

/* Flush, then release the timer (its GPU events). The figures stay
 * readable; later boundaries are refused (MFU_ERR_UNAVAILABLE). Twice: a
 * no-op. */
void mfu_steps_close(mfu_steps *steps);

/* Poll, then the windowed figures (see "The work of a step" for MFU). */
void mfu_steps_summarize(mfu_steps *steps, mfu_steps_summary *out);

/* The same figures with window *totals* a caller gives at logging time
 * (Tracker.metrics(model_flops=...): a loop that knows only a window's work,
 * not its steps'; one that knows a step's books it, mfu_steps_book). Each
 * field whose MFU_STEP_* bit is in totals->given replaces the window's sum
 * -- NaN, a negative or an infinite value as unknown -- and every ratio and
 * the waterfall are formed again from the sums by mfu_figures_form, as the
 * window's own. A model total given voids the sums of the fields that pair
 * with it for a window (MFU_FIELD_PAIRS_WINDOW: ideal seconds) unless they
 * are given too; sums not given keep the window's. An empty window has no
 * sums, whatever was given. Cannot fail. */
void mfu_steps_summarize_with(mfu_steps *steps, const mfu_step_report *totals,
                              mfu_steps_summary *out);

/* Book `report`'s given fields onto step `step` (see "Booking"): each
 * replaces the record's; a value not finite >= 0 is recorded as the field's
 * `unknown` value and sets its bit in *bad (never NULL; set also when the
 * step is not found). Status: MFU_OK; MFU_ERR_NOT_FOUND when the step is
 * not closed yet, was lost to a clock failure or has left the ring (nothing
 * changes). Never waits. */
mfu_status mfu_steps_book(mfu_steps *steps, uint64_t step, const mfu_step_report *report,
                          unsigned *bad);

/* Poll, then copy the records of the window's steps, oldest first, into
 * out[0 .. max - 1] (out may be NULL when max is 0). Returns the number of
 * steps in the window (more than were copied when max is smaller). */
uint32_t mfu_steps_window(mfu_steps *steps, uint32_t max, mfu_step_record *out);

void mfu_steps_get_counters(const mfu_steps *steps, mfu_steps_counters *out);

/* The clock timing the steps now (the CPU clock after a fallback). */
mfu_clock_kind mfu_steps_clock(const mfu_steps *steps);

/* The number of fallbacks so far (0: none); when there was one, *clock and
 * *error (each may be NULL) say which clock failed, in which call, with
 * which code -- the most recent failure. */
uint32_t mfu_steps_fallback(const mfu_steps *steps, mfu_clock_kind *clock,
                            mfu_gpu_error *error);

/* 1 after mfu_steps_close. */
int mfu_steps_closed(const mfu_steps *steps);

/* ---- phases and excluded intervals (see "Phases") ---------------------- */

/* Open `phase` (< MFU_PHASE_COUNT) inside the running one. Status: MFU_OK;
 * MFU_ERR_INVALID_ARGUMENT (a phase out of range, or MFU_PHASE_DEPTH_MAX
 * open already: nothing changes); MFU_ERR_UNAVAILABLE (closed) and a failed
 * mark as for mfu_steps_step. */
mfu_status mfu_steps_phase_begin(mfu_steps *steps, mfu_phase phase);

/* Close the innermost phase; the one it suspended resumes.
 * MFU_ERR_INVALID_ARGUMENT: none is open (nothing changes). */
mfu_status mfu_steps_phase_end(mfu_steps *steps);

/* Relabel the innermost phase `phase` (open it when none is). */
mfu_status mfu_steps_phase_switch(mfu_steps *steps, mfu_phase phase);

/* The phases open now (0 .. MFU_PHASE_DEPTH_MAX), innermost = the running one. */
uint32_t mfu_steps_phase_depth(const mfu_steps *steps);

/* The innermost open phase, as the marks left it (MFU_PHASE_NONE: none). */
mfu_phase mfu_steps_phase_innermost(const mfu_steps *steps);

/* Begin / end an interval left out of the step it falls in. */
mfu_status mfu_steps_exclude_begin(mfu_steps *steps);
mfu_status mfu_steps_exclude_end(mfu_steps *steps);

/* Poll, then the phase sums over the window's steps (the same steps as
 * mfu_steps_summarize's). */
void mfu_steps_phases(mfu_steps *steps, mfu_phase_summary *out);

/* ---- communication (see "Communication") ------------------------------ */

/* One collective, as its launch describes it. */
typedef struct mfu_comm_launch {
    mfu_comm_kind kind;
    double bytes;              /* payload bytes (comm.h's conventions) */
    double bus_bytes;          /* bytes x the kind's bus factor; NaN: none */
    double link_bytes_per_sec; /* the group's link peak per direction;
                                  NaN: unknown */
    int host;                  /* 1: a host (CPU) collective, which a GPU
                                  clock does not time */
} mfu_comm_launch;

/* Start recording communication: allocates the window's record and the
 * in-flight table. Twice: a no-op. MFU_ERR_NO_MEMORY. */
mfu_status mfu_steps_comm_enable(mfu_steps *steps);

/* 1 once enabled (and not closed). */
int mfu_steps_comm_enabled(const mfu_steps *steps);

/* A collective launched: one mark on the tracker's stream. *token (never
 * NULL) is 0 when nothing will pair with an end (not enabled, no step open,
 * a host collective under a GPU clock), else the token mfu_steps_comm_end
 * takes. MFU_ERR_INVALID_ARGUMENT: a kind out of range, bytes not finite
 * >= 0, bus bytes or the link neither NaN nor finite >= 0 (nothing
 * recorded); a failed mark as for mfu_steps_step. An end timed before its
 * begin (a clock going back) gives no duration. Inside a badput phase
 * (see "Communication"): MFU_OK, *token 0, nothing recorded. */
mfu_status mfu_steps_comm_begin(mfu_steps *steps, const mfu_comm_launch *launch,
                                uint64_t *token);

/* The collective of `token` completed: one mark on `stream` (ignored by the
 * CPU clock). Token 0, or not enabled: a no-op. */
mfu_status mfu_steps_comm_end(mfu_steps *steps, uint64_t token, uintptr_t stream);

/* The collective of `token` completed at `monotonic_ns` (CLOCK_MONOTONIC,
 * read by the thread that saw it complete), recorded later by a caller of
 * this tracker: on the CPU clock only (MFU_ERR_UNAVAILABLE on a GPU clock,
 * which times completions with events). Token 0, or not enabled: a no-op. */
mfu_status mfu_steps_comm_end_at(mfu_steps *steps, uint64_t token, uint64_t monotonic_ns);

/* Poll, then the sums over the window's steps (the same steps as
 * mfu_steps_phases'): *steps is their number. Zeros before enabling. */
void mfu_steps_comm(mfu_steps *steps, uint32_t *steps_out, mfu_comm_times *out);

/* Ends that found no begin to pair with (see "Communication"). */
uint64_t mfu_steps_comm_unpaired(const mfu_steps *steps);

/* ---- the job ledger's totals (see "The job ledger's totals") ----------- */

typedef struct mfu_steps_ledger {
    uint64_t steps;          /* closed steps accounted for: pushed + dropped */
    uint64_t dropped;        /* of which lost to a clock failure (no period) */
    double step_s;           /* sum of the pushed steps' periods, s */
    double phase_s[MFU_PHASE_COUNT]; /* step phases: sums over the pushed
                                        steps; badput phases: every interval
                                        that ended, s */
    double own_s;            /* the tracker's own excluded time, s */
    double model_flops;      /* sum over the pushed steps whose model FLOPs
                                were known */
    uint64_t unknown_flops_steps; /* pushed steps whose model FLOPs were not */
    double first_boundary_unix_s; /* wall clock at the first boundary (seconds
                                     since the epoch); NaN before it */
    double first_step_s;     /* the first pushed step's period, s (the job
                                ledger books its excess over the run's
                                median step as startup); NaN before it */
} mfu_steps_ledger;

/* Poll, then the totals. */
void mfu_steps_get_ledger(mfu_steps *steps, mfu_steps_ledger *out);

/* The configuration in force (sizes as given, defaults not applied). */
const mfu_steps_config *mfu_steps_get_config(const mfu_steps *steps);

#endif /* MFU_STEPS_H */
