/* steps.c -- step accounting (see steps.h): the tracker's lifetime, its
 * boundaries, late booking and the window's figures, all read from and
 * written to the step records (records.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mfu_limits.h"
#include "steps_internal.h"

/* ---- a step's work --------------------------------------------------- */

/* The fields `report` gives: their bits set, and a caller gives them (one
 * the tracker measures is never taken from a report). */
static unsigned given_of(const mfu_step_report *report)
{
    return report->given & MFU_STEP_GIVEN;
}

/* Each given field of `report` into *w (steps.h, "The work of a step"): its
 * value when usable, else the field's unknown value and its bit in the
 * returned bad mask. */
static unsigned take_given(const mfu_step_report *report, mfu_work *w)
{
    const unsigned given = given_of(report);
    unsigned bad = 0;
    /* One test per field, unrolled (a step gives a few, often none); a
     * field not given is not read: the report's value may be unset. */
#define MFU_TAKE_GIVEN_(ID, name, unit, flags, unknown, loss, meaning) \
    if (given & MFU_STEP_##ID) {                                        \
        if (mfu_steps_usable(report->work.name)) {                      \
            w->name = report->work.name;                                \
        } else {                                                        \
            w->name = (unknown);                                        \
            bad |= MFU_STEP_##ID;                                       \
        }                                                               \
    }
    MFU_STEP_FIELDS(MFU_TAKE_GIVEN_)
#undef MFU_TAKE_GIVEN_
    return bad;
}

/* The closed step's work from the defaults and `report`. Returns the bad
 * bits. */
static unsigned boundary_work(const mfu_steps *s, const mfu_step_report *report, mfu_work *w)
{
    *w = s->config.per_step; /* the defaults; the unknown value where none */
    if (given_of(report) & MFU_STEP_MODEL_FLOPS)
        for (int f = 0; f < MFU_FIELD_COUNT; f++) /* no longer pairs with the defaults */
            if (MFU_STEP_PAIRS_STEP & (1u << f))
                w->v[f] = NAN;
    return take_given(report, w);
}

/* ---- boundaries ------------------------------------------------------ */

/* Seconds since the epoch (C11 timespec_get); NaN when unavailable. Read
 * once per tracker, at its first boundary: where the run's startup ends. */
static double wall_clock_s(void)
{
    struct timespec now;
    if (timespec_get(&now, TIME_UTC) != TIME_UTC)
        return NAN;
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* The boundary's side of the records: the open step (if any) closes with
 * work `w` and waits for its time; step `id` opens. The ring is sized so
 * that a full one's oldest record is pushed (steps.h, "The ring's size"):
 * it leaves, into the ledger's totals. */
static void open_step(mfu_steps *s, const mfu_work *w, uint64_t id)
{
    mfu_step_record *open = s->step_open
        ? mfu_step_ring_at(s->records, mfu_step_ring_count(s->records) - 1) : NULL;
    if (open != NULL) {
        /* The fields a caller gives; what the drain measured stays. */
#define MFU_COPY_GIVEN_(ID, name, unit, flags, unknown, loss, meaning) \
    if ((flags) & MFU_FIELD_GIVEN)                                      \
        open->work.name = w->name;
        MFU_STEP_FIELDS(MFU_COPY_GIVEN_)
#undef MFU_COPY_GIVEN_
        open->state = MFU_STEP_PENDING;
        s->pending++;
    }
    if (mfu_step_ring_count(s->records) == mfu_step_ring_capacity(s->records)) {
        mfu_steps_ledger_retire(s, mfu_step_ring_at(s->records, 0));
        mfu_step_ring_pop_oldest(s->records);
        if (s->pushed_held > 0)
            s->pushed_held--;
    }
    (void)mfu_step_ring_append(s->records, id); /* room made above; ids grow */
}

/* A boundary's mark `id` is taken: account for what resolved, then close
 * the open step and open the next. */
static void record_boundary(mfu_steps *s, const mfu_work *w, uint64_t id)
{
    mfu_mark *m;
    /* A pool-full wait inside the mark resolves older marks: account for
     * them before a poll resolves more and the timer's history forgets
     * their times (steps.h, "The ring's size"). */
    if (s->marks_count > 0)
        mfu_steps_drain(s);
    if (!s->step_open && s->boundaries > 0)
        s->dropped++; /* the clock restarted: the step this call closes is lost */
    if (s->boundaries == 0)
        s->ledger.first_boundary_unix_s = wall_clock_s();
    open_step(s, w, s->boundaries + 1);
    m = mfu_steps_mark_append(s);
    m->id = id;
    m->kind = MFU_MARK_BOUNDARY;
    m->phase = MFU_PHASE_NONE;
    m->closes = (uint8_t)s->step_open;
    s->step_open = 1;
    s->boundaries++;
    s->phase_depth = 0; /* the boundary's mark ends the running phase */
    s->excluding = 0;
}

mfu_status mfu_steps_step(mfu_steps *s, const mfu_step_report *report,
                          mfu_step_outcome *outcome)
{
    mfu_work w;
    uint64_t id;
    mfu_status status;

    outcome->bad = boundary_work(s, report, &w);
    outcome->phases_closed = 0;
    if (s->closed)
        status = MFU_ERR_UNAVAILABLE;
    else if (s->timer == NULL)
        status = MFU_ERR_NO_MEMORY;
    else
        status = mfu_steps_take_mark(s, s->config.stream, &id);
    if (status == MFU_OK) {
        outcome->phases_closed = s->phase_depth;
        record_boundary(s, &w, id);
        mfu_steps_catch_up(s);
    }
    outcome->fallbacks = s->fallbacks;
    return status;
}

/* ---- booking --------------------------------------------------------- */

mfu_status mfu_steps_book(mfu_steps *s, uint64_t step, const mfu_step_report *report,
                          unsigned *bad)
{
    mfu_step_record *r = mfu_step_ring_find(s->records, step);
    mfu_work w = r != NULL ? r->work : MFU_WORK_UNKNOWN;
    *bad = take_given(report, &w);
    if (r == NULL || r->state == MFU_STEP_OPEN)
        return MFU_ERR_NOT_FOUND;
    r->work = w;
    return MFU_OK;
}

/* ---- figures --------------------------------------------------------- */

/* The `parts` of the window: the newest min(window, pushed - warmup)
 * pushed steps. */
static void window_sums(const mfu_steps *s, unsigned parts, mfu_step_sums *out)
{
    uint64_t steps = s->pushed > s->config.warmup ? s->pushed - s->config.warmup : 0;
    mfu_step_view view;
    if (steps > s->config.window)
        steps = s->config.window;
    if (steps > s->pushed_held) /* cannot happen: the ring keeps the window */
        steps = s->pushed_held;
    view.ring = s->records;
    view.first = s->pushed_held - (uint32_t)steps;
    view.steps = (uint32_t)steps;
    mfu_step_view_sum(&view, parts, out);
}

void mfu_steps_summarize(mfu_steps *s, mfu_steps_summary *out)
{
    static const mfu_step_report no_totals = {0};
    mfu_steps_summarize_with(s, &no_totals, out);
}

/* The window's sums with the given totals in place of its own (steps.h,
 * mfu_steps_summarize_with). */
static void take_totals(const mfu_step_report *totals, mfu_work *w)
{
    const unsigned given = given_of(totals);
    if (given & MFU_STEP_MODEL_FLOPS)
        for (int f = 0; f < MFU_FIELD_COUNT; f++) /* they no longer pair with it */
            if (MFU_STEP_PAIRS_WINDOW & (1u << f))
                w->v[f] = NAN;
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        if (given & (1u << f)) /* else the total's value is not read */
            w->v[f] = mfu_steps_usable(totals->work.v[f]) ? totals->work.v[f] : NAN;
}

void mfu_steps_summarize_with(mfu_steps *s, const mfu_step_report *totals,
                              mfu_steps_summary *out)
{
    mfu_step_sums sums;
    mfu_steps_catch_up(s);
    window_sums(s, MFU_SUM_WORK | MFU_SUM_PHASES, &sums);
    /* An empty window has no figures, whatever was given. */
    if (sums.steps > 0)
        take_totals(totals, &sums.work);
    /* The peak was validated at create. */
    mfu_step_sums_window(&sums, &s->config.peak, &out->window);
    out->window.steps_seen = s->pushed;
    out->window.steps_skipped = s->pushed < s->config.warmup ? s->pushed : s->config.warmup;
    out->phases = sums.phases;
    out->peak_flops_per_sec =
        s->config.peak.flops_per_sec * (double)s->config.peak.num_devices;
    out->clock = s->clock;
    out->boundaries = s->boundaries;
    out->dropped = s->dropped;
    out->pending = s->pending;
}

void mfu_steps_phases(mfu_steps *s, mfu_phase_summary *out)
{
    mfu_step_sums sums;
    mfu_steps_catch_up(s);
    window_sums(s, MFU_SUM_PHASES, &sums);
    *out = sums.phases;
}

void mfu_steps_comm(mfu_steps *s, uint32_t *steps, mfu_comm_times *out)
{
    mfu_step_sums sums;
    mfu_steps_catch_up(s);
    window_sums(s, MFU_SUM_COMM, &sums);
    *steps = sums.steps;
    *out = sums.comm;
}

uint32_t mfu_steps_window(mfu_steps *s, uint32_t max, mfu_step_record *out)
{
    mfu_step_sums sums;
    mfu_steps_catch_up(s);
    window_sums(s, 0, &sums); /* the count */
    for (uint32_t i = 0; i < sums.steps && i < max; i++)
        out[i] = *mfu_step_ring_at(s->records, s->pushed_held - sums.steps + i);
    return sums.steps;
}

void mfu_steps_get_counters(const mfu_steps *s, mfu_steps_counters *out)
{
    memset(out, 0, sizeof *out);
    if (s->timer != NULL)
        mfu_timer_get_counters(s->timer, &out->timer);
    out->boundaries = s->boundaries;
    out->pushed = s->pushed;
    out->dropped = s->dropped;
    out->pending = s->pending;
    out->fallbacks = s->fallbacks;
}

int mfu_steps_closed(const mfu_steps *s)
{
    return s->closed;
}

const mfu_steps_config *mfu_steps_get_config(const mfu_steps *s)
{
    return &s->config;
}

/* ---- lifetime -------------------------------------------------------- */

/* The config's domains (steps.h); the field name, or NULL when valid. */
static const char *config_error(const mfu_steps_config *c)
{
    const char *bad = NULL;
    mfu_clock_kind clock = c->timer.clock;
    if (clock != MFU_CLOCK_CPU && clock != MFU_CLOCK_CUDA && clock != MFU_CLOCK_HIP)
        return "clock";
    if (c->window < 1 || c->window > MFU_WINDOW_MAX)
        return "window";
    if (c->warmup > MFU_WARMUP_MAX)
        return "warmup";
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        if ((MFU_STEP_DEFAULTED & (1u << f)) && !mfu_steps_usable_or_unknown(c->per_step.v[f]))
            return mfu_step_fields[f].name;
    if (mfu_peak_validate(&c->peak, &bad) != MFU_OK)
        return bad;
    if (c->peak.num_devices > MFU_NUM_GPUS_MAX)
        return "num_gpus";
    return NULL;
}

void mfu_steps_destroy(mfu_steps *s)
{
    if (s == NULL)
        return;
    mfu_timer_destroy(s->timer);
    mfu_step_ring_destroy(s->records);
    free(s->inflight);
    free(s->marks);
    free(s);
}

void mfu_steps_close(mfu_steps *s)
{
    mfu_steps_flush(s);
    mfu_timer_destroy(s->timer);
    s->timer = NULL;
    s->closed = 1;
}

/* The timer on the configured clock, else (steps.h, "Failures") on the CPU
 * clock. MFU_ERR_INVALID_ARGUMENT: the sizes are out of order. */
static mfu_status start_clock(mfu_steps *s)
{
    mfu_gpu_error error;
    mfu_status status;
    s->clock = s->config.timer.clock;
    status = mfu_steps_make_timer(s, s->clock, &s->timer, &error);
    if (status == MFU_OK || status == MFU_ERR_NO_MEMORY
        || (status == MFU_ERR_INVALID_ARGUMENT && error.call == NULL))
        return status;
    mfu_steps_note_failure(s, s->clock, &error);
    s->clock = MFU_CLOCK_CPU;
    return mfu_steps_make_timer(s, MFU_CLOCK_CPU, &s->timer, NULL);
}

/* The two rings, sized from the timer's actual cap (steps.h, "The ring's
 * size"): a mark per unresolved mark and one more; a record per step that
 * may be pending (one per unresolved mark), the open one, the window and
 * MFU_STEPS_KEPT more pushed ones to book late. */
static mfu_status make_rings(mfu_steps *s)
{
    const uint32_t events_max = mfu_timer_events_max(s->timer);
    s->marks_capacity = events_max + 1;
    s->marks = calloc(s->marks_capacity, sizeof *s->marks);
    if (s->marks == NULL)
        return MFU_ERR_NO_MEMORY;
    return mfu_step_ring_create(s->config.window + MFU_STEPS_KEPT + events_max + 2, &s->records);
}

mfu_status mfu_steps_create(const mfu_steps_config *config, mfu_steps **out,
                            const char **bad_field)
{
    const char *bad = config_error(config);
    mfu_steps *s;
    mfu_status status;

    *out = NULL;
    if (bad != NULL) {
        if (bad_field != NULL)
            *bad_field = bad;
        return MFU_ERR_INVALID_ARGUMENT;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return MFU_ERR_NO_MEMORY;
    s->config = *config;
    for (int f = 0; f < MFU_FIELD_COUNT; f++) /* no default: the unknown value */
        if (!(MFU_STEP_DEFAULTED & (1u << f)))
            s->config.per_step.v[f] = MFU_WORK_UNKNOWN.v[f];
    s->running = MFU_PHASE_NONE;
    s->ledger.first_boundary_unix_s = NAN;
    s->ledger.first_step_s = NAN;
    status = start_clock(s);
    if (status == MFU_ERR_INVALID_ARGUMENT && bad_field != NULL)
        *bad_field = "timer";
    if (status == MFU_OK)
        status = make_rings(s);
    if (status != MFU_OK) {
        mfu_steps_destroy(s);
        return status;
    }
    *out = s;
    return MFU_OK;
}
