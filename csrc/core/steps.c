/* steps.c -- step accounting over a mark timer and a window (see steps.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mfu_limits.h"
#include "mixed.h"
#include "steps.h"

/* The kind of mark a record is for (steps.h, "Phases", "Excluded
 * intervals"). */
enum mark_kind {
    MARK_BOUNDARY = 0,
    MARK_PHASE = 1,         /* `phase` runs from this mark on (NONE: none) */
    MARK_EXCLUDE_BEGIN = 2,
    MARK_EXCLUDE_END = 3,
    MARK_COMM_BEGIN = 4,    /* a collective launched (steps.h, "Communication") */
    MARK_COMM_END = 5       /* the collective of `token` completed */
};

/* One mark waiting to be accounted for. */
struct record {
    uint64_t id;        /* the mark */
    uint8_t kind;       /* enum mark_kind */
    uint8_t phase;      /* MARK_PHASE: the phase running from the mark on */
    uint8_t closes;     /* a boundary that closes a step (else it opens the
                           first step of its clock) */
    uint8_t model_known; /* the closed step's model FLOPs are known */
    mfu_work work;      /* the closed step's work (model_flops 0 if unknown) */
    double ideal_s;     /* mixed precision: its ideal seconds; NaN = unknown */
    double overcompute; /* its overcompute FLOPs (steps.h), >= 0 */
    uint64_t token;     /* MARK_COMM_*: the collective (0: not timed) */
    mfu_comm_launch launch; /* MARK_COMM_BEGIN: what was launched */
};

/* A timed collective between its begin's drain and its end's. */
struct inflight {
    uint64_t token;     /* 0: free */
    int known;          /* the begin's time is known */
    double begin_s;
    mfu_comm_launch launch;
};

struct mfu_steps {
    mfu_steps_config config;
    mfu_timer *timer;     /* NULL after close, or when no fallback timer
                             could be made */
    mfu_clock_kind clock; /* the timer's clock */
    int closed;

    mfu_window *window;
    mfu_phase_window *phase_window; /* the window's steps' phase times */

    struct record *ring; /* the pending ring */
    uint32_t ring_capacity, ring_head, ring_count;
    uint32_t pending;    /* records in the ring that close a step */

    /* The marking side: a boundary on the current timer opened a step. */
    int step_open;
    /* The draining side: the time of the last boundary accounted for, when
     * known (unknown at a clock's start and after a lost record). */
    int open_known;
    double open_s;

    /* Phases, the marking side: the open phases, innermost last. */
    uint8_t phase_stack[MFU_PHASE_DEPTH_MAX];
    uint32_t phase_depth;
    int excluding;
    /* Phases, the draining side: the phase running since segment_s (when
     * segment_known), the exclusion running since exclude_s, and the open
     * step's phase times so far. */
    uint8_t running;
    int segment_known, drain_excluding, exclude_known;
    double segment_s, exclude_s;
    mfu_phase_times times;

    /* The job ledger's running totals (steps.h); steps and dropped are
     * filled in when read. */
    mfu_steps_ledger ledger;

    uint64_t boundaries;
    uint64_t pushed;             /* == the window's steps_seen */
    uint64_t last_unknown_model; /* push number of the newest step without
                                    model FLOPs; 0 = none */
    uint64_t dropped;

    /* Mixed precision (mixed.h): the ideal seconds of the window's steps,
     * a ring of `window` slots indexed by push number after warm-up. */
    double *ideal_ring;
    double *overcompute_ring; /* the same for overcompute FLOPs */

    /* Communication (steps.h, "Communication"): NULL until enabled. The
     * draining side's record of the open step, the window's, the timed
     * collectives in flight (slot = token % MFU_COMM_INFLIGHT_MAX). */
    mfu_comm_window *comm_window;
    struct inflight *inflight;
    mfu_comm_times comm;
    uint64_t comm_next_token;
    uint64_t comm_unpaired;

    uint32_t fallbacks;
    mfu_clock_kind failed_clock;
    mfu_gpu_error failure;
};

static int usable(double value)
{
    return isfinite(value) && value >= 0.0;
}

/* NaN (unknown) or usable. */
static int usable_or_unknown(double value)
{
    return isnan(value) || usable(value);
}

/* ---- the ring -------------------------------------------------------- */

static void ring_pop(mfu_steps *s)
{
    s->ring_head = (s->ring_head + 1) % s->ring_capacity;
    s->ring_count--;
}

/* A record that will never be accounted for: a closed step is dropped; an
 * opening boundary leaves the next step without a start. */
static void lose(mfu_steps *s, const struct record *r)
{
    if (r->kind == MARK_COMM_BEGIN || r->kind == MARK_COMM_END)
        return; /* its end finds no begin: counted as unpaired */
    if (r->kind != MARK_BOUNDARY) {
        s->segment_known = 0;
        s->exclude_known = 0;
        return;
    }
    if (r->closes) {
        s->pending--;
        s->dropped++;
    }
    s->open_known = 0;
}

/* The slot for a new record at the ring's end; the caller fills it in. */
static struct record *ring_append(mfu_steps *s)
{
    if (s->ring_count == s->ring_capacity) { /* cannot happen: see steps.h */
        lose(s, &s->ring[s->ring_head]);
        ring_pop(s);
    }
    s->ring_count++;
    return &s->ring[(s->ring_head + s->ring_count - 1) % s->ring_capacity];
}

/* ---- the drain ------------------------------------------------------- */

/* Charge the time from the running segment's start to `t` to the running
 * phase (none: nothing), and start a new segment at `t`. A badput phase's
 * time also leaves the step's period (steps.h, "Badput phases") and goes
 * to the ledger now. */
static void end_segment(mfu_steps *s, int known, double t)
{
    if (!s->drain_excluding && s->segment_known && known && s->running != MFU_PHASE_NONE) {
        const double seconds = t - s->segment_s;
        s->times.seconds[s->running] += seconds;
        if (mfu_phase_leaves_step((mfu_phase)s->running)) {
            s->times.excluded_s += seconds;
            s->ledger.phase_s[s->running] += seconds;
        }
    }
    s->segment_known = known;
    s->segment_s = t;
}

static void account_phase(mfu_steps *s, const struct record *r, int known, double t)
{
    end_segment(s, known, t);
    s->running = r->phase;
    /* A phase that runs only inside an excluded interval (a wait inside the
     * tracker's own aggregation) is not marked: it has no time in the step. */
    if (r->phase != MFU_PHASE_NONE && !s->drain_excluding)
        s->times.marked |= 1u << r->phase;
}

static void account_exclude(mfu_steps *s, int begin, int known, double t)
{
    if (begin) {
        end_segment(s, known, t);
        s->drain_excluding = 1;
        s->exclude_known = known;
        s->exclude_s = t;
    } else if (s->drain_excluding) {
        if (known && s->exclude_known) {
            s->times.excluded_s += t - s->exclude_s;
            s->ledger.own_s += t - s->exclude_s;
        }
        s->drain_excluding = 0;
        if (s->running != MFU_PHASE_NONE) /* it runs on, now charged */
            s->times.marked |= 1u << s->running;
        s->segment_known = known;
        s->segment_s = t;
    }
}

/* A collective's begin: its bytes and call count in the open step; a timed
 * one waits in the in-flight table for its end. Skipped inside an excluded
 * interval (the tracker's own aggregation). */
static void account_comm_begin(mfu_steps *s, const struct record *r, int known, double t)
{
    struct inflight *slot;
    const mfu_comm_kind kind = r->launch.kind;
    if (s->drain_excluding)
        return;
    s->comm.bytes[kind] += r->launch.bytes;
    s->comm.calls[kind] += 1.0;
    if (r->token == 0)
        return;
    slot = &s->inflight[r->token % MFU_COMM_INFLIGHT_MAX];
    slot->token = r->token;
    slot->known = known;
    slot->begin_s = t;
    slot->launch = r->launch;
}

/* A collective's end: its duration (and bus bytes, link capacity) in the
 * open step, when its begin is in the table with a known time. */
static void account_comm_end(mfu_steps *s, const struct record *r, int known, double t)
{
    struct inflight *slot = &s->inflight[r->token % MFU_COMM_INFLIGHT_MAX];
    double duration, bus, link;
    mfu_comm_kind kind;
    if (slot->token != r->token) {
        s->comm_unpaired++;
        return;
    }
    slot->token = 0;
    if (!known || !slot->known || !(t >= slot->begin_s))
        return; /* a completion timed before its launch is not a duration */
    kind = slot->launch.kind;
    duration = t - slot->begin_s;
    bus = slot->launch.bus_bytes;
    link = slot->launch.link_bytes_per_sec;
    s->comm.duration_s[kind] += duration;
    if (isfinite(bus)) {
        s->comm.bus_bytes[kind] += bus;
        if (isfinite(link) && link > 0.0) {
            s->comm.link_bus_bytes += bus;
            s->comm.link_capacity_bytes += duration * link;
        }
    }
}

/* A pushed step in the ledger's totals: its period, its step phases, its
 * model FLOPs (the badput phases and own time went there as they ended). */
static void ledger_push(mfu_steps *s, const struct record *r, double period_s)
{
    if (isnan(s->ledger.first_step_s))
        s->ledger.first_step_s = period_s;
    s->ledger.step_s += period_s;
    for (int p = 0; p < MFU_PHASE_COUNT; p++)
        if (!mfu_phase_leaves_step((mfu_phase)p))
            s->ledger.phase_s[p] += s->times.seconds[p];
    if (r->model_known)
        s->ledger.model_flops += r->work.model_flops;
    else
        s->ledger.unknown_flops_steps++;
}

/* A boundary whose mark is at `t` seconds (`known` = 0: its time is lost).
 * It ends the running phase and any exclusion: the step's period leaves
 * out the excluded time. */
static void account_boundary(mfu_steps *s, const struct record *r, int known,
                             double t)
{
    account_exclude(s, 0, known, t);
    end_segment(s, known, t);
    if (r->closes) {
        const double period_s = t - s->open_s - s->times.excluded_s;
        s->pending--;
        if (known && s->open_known
            && mfu_window_push(s->window, period_s, &r->work, NULL) == MFU_OK) {
            mfu_phase_window_push(s->phase_window, &s->times);
            if (s->comm_window != NULL)
                mfu_comm_window_push(s->comm_window, &s->comm);
            ledger_push(s, r, period_s);
            s->pushed++;
            if (!r->model_known)
                s->last_unknown_model = s->pushed;
            if (s->pushed > s->config.warmup) {
                const uint64_t slot = (s->pushed - s->config.warmup - 1) % s->config.window;
                s->ideal_ring[slot] = r->ideal_s;
                s->overcompute_ring[slot] = r->overcompute;
            }
        } else {
            s->dropped++;
        }
    }
    s->open_known = known;
    s->open_s = t;
    s->running = MFU_PHASE_NONE;
    memset(&s->times, 0, sizeof s->times);
    if (s->comm_window != NULL) /* untouched (zero) until communication is on */
        memset(&s->comm, 0, sizeof s->comm);
}

/* Account for every record whose mark is resolved, in id order. */
static void drain(mfu_steps *s)
{
    uint64_t resolved = mfu_timer_resolved(s->timer);
    while (s->ring_count > 0) {
        const struct record *r = &s->ring[s->ring_head];
        double t = NAN;
        int known;
        if (r->id >= resolved)
            break;
        known = mfu_timer_time_s(s->timer, r->id, MFU_WAIT_NEVER, &t) == MFU_OK;
        switch ((enum mark_kind)r->kind) {
        case MARK_BOUNDARY:
            account_boundary(s, r, known, t);
            break;
        case MARK_PHASE:
            account_phase(s, r, known, t);
            break;
        case MARK_EXCLUDE_BEGIN:
        case MARK_EXCLUDE_END:
            account_exclude(s, r->kind == MARK_EXCLUDE_BEGIN, known, t);
            break;
        case MARK_COMM_BEGIN:
            account_comm_begin(s, r, known, t);
            break;
        case MARK_COMM_END:
            account_comm_end(s, r, known, t);
            break;
        }
        ring_pop(s);
    }
}

/* ---- the clock ------------------------------------------------------- */

/* A timer on `clock` with the configured sizes. */
static mfu_status make_timer(const mfu_steps *s, mfu_clock_kind clock,
                             mfu_timer **timer, mfu_gpu_error *error)
{
    mfu_timer_config config = s->config.timer;
    config.clock = clock;
    if (clock == MFU_CLOCK_CPU)
        config.driver = NULL;
    return mfu_timer_create(&config, timer, error);
}

/* Note a failure of the `clock` clock (steps.h, "Failures"). */
static void note_failure(mfu_steps *s, mfu_clock_kind clock, const mfu_gpu_error *error)
{
    s->fallbacks++;
    s->failed_clock = clock;
    s->failure = *error;
}

/* The timer failed: drop what is in flight and continue on a CPU timer
 * (the next boundary restarts the clock). */
static void fall_back(mfu_steps *s)
{
    mfu_gpu_error error;
    mfu_timer_error(s->timer, &error);
    note_failure(s, s->clock, &error);
    s->dropped += s->pending;
    s->pending = 0;
    s->ring_count = 0;
    s->step_open = 0;
    s->open_known = 0;
    s->excluding = 0;
    /* The drain side too: an exclusion or a segment begun on the failed
     * clock must never be ended by a time of the new one. */
    s->drain_excluding = 0;
    s->exclude_known = 0;
    s->segment_known = 0;
    s->running = MFU_PHASE_NONE;
    memset(&s->times, 0, sizeof s->times);
    mfu_timer_destroy(s->timer);
    s->clock = MFU_CLOCK_CPU;
    if (make_timer(s, MFU_CLOCK_CPU, &s->timer, NULL) != MFU_OK)
        s->timer = NULL; /* out of memory: boundaries are refused */
}

/* Poll (GPU clocks) and drain; a failing poll hands over to the CPU. */
static void catch_up(mfu_steps *s)
{
    if (s->timer == NULL)
        return;
    if (s->clock != MFU_CLOCK_CPU && mfu_timer_poll(s->timer) != MFU_OK)
        fall_back(s);
    else
        drain(s);
}

/* Take a mark on `stream` of the current timer, falling back once if it
 * fails. */
static mfu_status take_mark_on(mfu_steps *s, uintptr_t stream, uint64_t *id)
{
    if (mfu_timer_mark(s->timer, stream, id) == MFU_OK)
        return MFU_OK;
    fall_back(s);
    if (s->timer == NULL)
        return MFU_ERR_NO_MEMORY;
    return mfu_timer_mark(s->timer, stream, id);
}

/* ... on the tracker's stream. */
static mfu_status take_mark(mfu_steps *s, uint64_t *id)
{
    return take_mark_on(s, s->config.stream, id);
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

/* The closed step's work from the defaults and `report` (steps.h, "The work
 * of a step"); *model_known says whether its model FLOPs are known. Returns
 * the bad bits. */
static unsigned step_work(const mfu_steps *s, const mfu_step_report *report,
                          mfu_work *work, int *model_known, double *ideal_s)
{
    unsigned bad = 0;
    *work = s->config.per_step; /* num_tokens: NaN, set at create */
    *ideal_s = (report->given & MFU_STEP_MODEL_FLOPS) ? NAN : s->config.per_step_ideal_s;
    if (report->given & MFU_STEP_IDEAL_S) {
        *ideal_s = usable(report->ideal_s) ? report->ideal_s : NAN;
        if (!usable(report->ideal_s))
            bad |= MFU_STEP_IDEAL_S;
    }
    if (report->given & MFU_STEP_NUM_TOKENS) {
        if (usable(report->num_tokens))
            work->num_tokens = report->num_tokens;
        else
            bad |= MFU_STEP_NUM_TOKENS;
    }
    if (report->given & MFU_STEP_MODEL_FLOPS) {
        work->executed_flops = NAN; /* no longer pairs with the default */
        if (usable(report->model_flops)) {
            work->model_flops = report->model_flops;
        } else {
            work->model_flops = NAN;
            bad |= MFU_STEP_MODEL_FLOPS;
        }
    }
    if (report->given & MFU_STEP_EXECUTED_FLOPS) {
        if (usable(report->executed_flops)) {
            work->executed_flops = report->executed_flops;
        } else {
            work->executed_flops = NAN;
            bad |= MFU_STEP_EXECUTED_FLOPS;
        }
    }
    *model_known = !isnan(work->model_flops);
    if (!*model_known)
        work->model_flops = 0.0; /* the window needs a number; masked */
    if ((report->given & MFU_STEP_OVERCOMPUTE_FLOPS) && !usable(report->overcompute_flops))
        bad |= MFU_STEP_OVERCOMPUTE_FLOPS;
    return bad;
}

mfu_status mfu_steps_step(mfu_steps *s, const mfu_step_report *report,
                          mfu_step_outcome *outcome)
{
    struct record *r;
    mfu_work work;
    int model_known;
    double ideal_s;
    uint64_t id;
    mfu_status status = MFU_OK;

    outcome->bad = step_work(s, report, &work, &model_known, &ideal_s);
    outcome->phases_closed = 0;
    if (s->closed)
        status = MFU_ERR_UNAVAILABLE;
    else if (s->timer == NULL)
        status = MFU_ERR_NO_MEMORY;
    else
        status = take_mark(s, &id);
    if (status == MFU_OK) {
        /* A pool-full wait inside the mark resolves older marks: account
         * for them before a poll resolves more and the timer's history
         * forgets their times (steps.h, "The ring's size"). */
        if (s->ring_count > 0)
            drain(s);
        if (!s->step_open && s->boundaries > 0)
            s->dropped++; /* the clock restarted: the step this call closes is lost */
        if (s->boundaries == 0)
            s->ledger.first_boundary_unix_s = wall_clock_s();
        r = ring_append(s);
        r->id = id;
        r->kind = MARK_BOUNDARY;
        r->phase = MFU_PHASE_NONE;
        r->closes = (uint8_t)s->step_open;
        r->model_known = (uint8_t)model_known;
        r->work = work;
        r->ideal_s = ideal_s;
        r->overcompute = (report->given & MFU_STEP_OVERCOMPUTE_FLOPS) &&
                                 usable(report->overcompute_flops)
                             ? report->overcompute_flops
                             : 0.0;
        if (r->closes)
            s->pending++;
        s->step_open = 1;
        s->boundaries++;
        outcome->phases_closed = s->phase_depth;
        s->phase_depth = 0; /* the boundary's record ends the running phase */
        s->excluding = 0;
        catch_up(s);
    }
    outcome->fallbacks = s->fallbacks;
    return status;
}

void mfu_steps_poll(mfu_steps *s)
{
    catch_up(s);
}

/* ---- phases and excluded intervals ------------------------------------ */

/* Append a record of `kind` (filled in from `proto`: phase, token,
 * launch) on a new mark on `stream`, when a step is open to charge
 * (steps.h, "Phases"). *appended (may be NULL) says whether it was. */
static mfu_status mark_record(mfu_steps *s, enum mark_kind kind, const struct record *proto,
                              uintptr_t stream, const uint64_t *at_ns, int *appended)
{
    struct record *r;
    uint64_t id;
    mfu_status status;
    if (appended != NULL)
        *appended = 0;
    if (s->closed)
        return MFU_ERR_UNAVAILABLE;
    if (s->timer == NULL)
        return MFU_ERR_NO_MEMORY;
    if (!s->step_open)
        return MFU_OK;
    status = at_ns != NULL ? mfu_timer_mark_at(s->timer, *at_ns, &id)
                           : take_mark_on(s, stream, &id);
    if (status != MFU_OK)
        return status;
    if (!s->step_open) /* the mark fell back: the next boundary restarts */
        return MFU_OK;
    if (s->ring_count > 0)
        drain(s); /* as in mfu_steps_step: before the history forgets */
    r = ring_append(s);
    *r = *proto;
    r->id = id;
    r->kind = (uint8_t)kind;
    if (appended != NULL)
        *appended = 1;
    /* No poll here: a phase mark is on the hot path; the next boundary
     * (or summary) catches up. On the CPU clock the drain is immediate. */
    if (s->clock == MFU_CLOCK_CPU)
        drain(s);
    return MFU_OK;
}

/* A phase or exclusion record on the tracker's stream. */
static mfu_status mark_within_step(mfu_steps *s, enum mark_kind kind, uint8_t phase)
{
    struct record proto;
    memset(&proto, 0, sizeof proto);
    proto.phase = phase;
    return mark_record(s, kind, &proto, s->config.stream, NULL, NULL);
}

/* The phase running with the stack as it is now. */
static uint8_t innermost(const mfu_steps *s)
{
    return s->phase_depth > 0 ? s->phase_stack[s->phase_depth - 1] : MFU_PHASE_NONE;
}

mfu_status mfu_steps_phase_begin(mfu_steps *s, mfu_phase phase)
{
    if ((unsigned)phase >= MFU_PHASE_COUNT || s->phase_depth >= MFU_PHASE_DEPTH_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    s->phase_stack[s->phase_depth++] = (uint8_t)phase;
    return mark_within_step(s, MARK_PHASE, (uint8_t)phase);
}

mfu_status mfu_steps_phase_end(mfu_steps *s)
{
    if (s->phase_depth == 0)
        return MFU_ERR_INVALID_ARGUMENT;
    s->phase_depth--;
    return mark_within_step(s, MARK_PHASE, innermost(s));
}

mfu_status mfu_steps_phase_switch(mfu_steps *s, mfu_phase phase)
{
    if ((unsigned)phase >= MFU_PHASE_COUNT)
        return MFU_ERR_INVALID_ARGUMENT;
    if (s->phase_depth == 0)
        s->phase_depth = 1;
    s->phase_stack[s->phase_depth - 1] = (uint8_t)phase;
    return mark_within_step(s, MARK_PHASE, (uint8_t)phase);
}

uint32_t mfu_steps_phase_depth(const mfu_steps *s)
{
    return s->phase_depth;
}

mfu_phase mfu_steps_phase_innermost(const mfu_steps *s)
{
    return (mfu_phase)innermost(s);
}

mfu_status mfu_steps_exclude_begin(mfu_steps *s)
{
    if (s->excluding)
        return MFU_OK;
    s->excluding = 1;
    return mark_within_step(s, MARK_EXCLUDE_BEGIN, MFU_PHASE_NONE);
}

mfu_status mfu_steps_exclude_end(mfu_steps *s)
{
    if (!s->excluding)
        return MFU_OK;
    s->excluding = 0;
    return mark_within_step(s, MARK_EXCLUDE_END, MFU_PHASE_NONE);
}

void mfu_steps_phases(mfu_steps *s, mfu_phase_summary *out)
{
    catch_up(s);
    mfu_phase_window_summarize(s->phase_window, out);
}

/* ---- communication ----------------------------------------------------- */

mfu_status mfu_steps_comm_enable(mfu_steps *s)
{
    mfu_status status;
    if (s->comm_window != NULL)
        return MFU_OK;
    s->inflight = calloc(MFU_COMM_INFLIGHT_MAX, sizeof *s->inflight);
    if (s->inflight == NULL)
        return MFU_ERR_NO_MEMORY;
    /* The steps pushed so far had no communication: the window starts
     * behind them, so it holds the step window's steps from here on. */
    status = mfu_comm_window_create(s->config.window, s->config.warmup, s->pushed,
                                    &s->comm_window);
    if (status != MFU_OK) {
        free(s->inflight);
        s->inflight = NULL;
    }
    return status;
}

int mfu_steps_comm_enabled(const mfu_steps *s)
{
    return s->comm_window != NULL && !s->closed;
}

/* A kind in range, bytes finite >= 0, bus bytes and the link NaN (unknown)
 * or finite >= 0. */
static int valid_launch(const mfu_comm_launch *launch)
{
    return (unsigned)launch->kind < MFU_COMM_KIND_COUNT && usable(launch->bytes)
           && usable_or_unknown(launch->bus_bytes)
           && usable_or_unknown(launch->link_bytes_per_sec);
}

mfu_status mfu_steps_comm_begin(mfu_steps *s, const mfu_comm_launch *launch,
                                uint64_t *token)
{
    struct record proto;
    int appended;
    mfu_status status;
    *token = 0;
    if (s->comm_window == NULL)
        return MFU_OK;
    if (!valid_launch(launch))
        return MFU_ERR_INVALID_ARGUMENT;
    if (mfu_phase_leaves_step((mfu_phase)innermost(s)))
        return MFU_OK; /* the badput phase's own work (steps.h) */
    memset(&proto, 0, sizeof proto);
    proto.phase = MFU_PHASE_NONE;
    proto.launch = *launch;
    /* A host collective under a GPU clock: bytes, but no GPU-timeline time. */
    if (!launch->host || s->clock == MFU_CLOCK_CPU)
        proto.token = ++s->comm_next_token;
    status = mark_record(s, MARK_COMM_BEGIN, &proto, s->config.stream, NULL, &appended);
    if (status == MFU_OK && appended)
        *token = proto.token;
    return status;
}

mfu_status mfu_steps_comm_end(mfu_steps *s, uint64_t token, uintptr_t stream)
{
    struct record proto;
    if (token == 0 || s->comm_window == NULL)
        return MFU_OK;
    memset(&proto, 0, sizeof proto);
    proto.phase = MFU_PHASE_NONE;
    proto.token = token;
    return mark_record(s, MARK_COMM_END, &proto, stream, NULL, NULL);
}

mfu_status mfu_steps_comm_end_at(mfu_steps *s, uint64_t token, uint64_t monotonic_ns)
{
    struct record proto;
    if (token == 0 || s->comm_window == NULL)
        return MFU_OK;
    if (s->clock != MFU_CLOCK_CPU)
        return MFU_ERR_UNAVAILABLE;
    memset(&proto, 0, sizeof proto);
    proto.phase = MFU_PHASE_NONE;
    proto.token = token;
    return mark_record(s, MARK_COMM_END, &proto, 0, &monotonic_ns, NULL);
}

void mfu_steps_comm(mfu_steps *s, uint32_t *steps, mfu_comm_times *out)
{
    mfu_phase_summary phases;
    catch_up(s);
    mfu_phase_window_summarize(s->phase_window, &phases);
    *steps = phases.steps;
    if (s->comm_window == NULL)
        memset(out, 0, sizeof *out);
    else
        mfu_comm_window_summarize(s->comm_window, phases.steps, out);
}

uint64_t mfu_steps_comm_unpaired(const mfu_steps *s)
{
    return s->comm_unpaired;
}

void mfu_steps_get_ledger(mfu_steps *s, mfu_steps_ledger *out)
{
    catch_up(s);
    *out = s->ledger;
    out->steps = s->pushed + s->dropped;
    out->dropped = s->dropped;
}

void mfu_steps_flush(mfu_steps *s)
{
    if (s->timer == NULL)
        return;
    if (s->clock != MFU_CLOCK_CPU && mfu_timer_flush(s->timer) != MFU_OK) {
        fall_back(s);
        return;
    }
    drain(s);
}

void mfu_steps_close(mfu_steps *s)
{
    mfu_steps_flush(s);
    mfu_timer_destroy(s->timer);
    s->timer = NULL;
    s->closed = 1;
}

/* ---- figures --------------------------------------------------------- */

/* Mixed precision: the window's ideal seconds and mfu_mixed (mixed.h). */
static void window_ideal(const mfu_steps *s, mfu_steps_summary *out)
{
    const uint32_t steps = out->window.steps;
    const double window_s = out->window.window_s;
    double sum = 0.0;
    /* The ring's slots hold exactly the last min(window, pushed - warmup)
     * pushes, which are the window's steps. */
    for (uint32_t i = 0; i < steps; i++)
        sum += s->ideal_ring[i];
    out->ideal_s = steps > 0 ? sum : NAN;
    out->mfu_mixed = mfu_mixed_utilization(out->ideal_s, window_s, s->config.peak.num_devices);
}

/* The share at the peak of out->overcompute_flops (the waterfall books it
 * to compute, not to recompute). */
static void overcompute_share(mfu_steps_summary *out)
{
    /* as stats.c's hfu: FLOPs / window_s / (peak x devices); NaN propagates */
    out->overcompute = out->window.steps > 0 && out->window.window_s > 0.0
                           ? out->overcompute_flops / out->window.window_s /
                                 out->peak_flops_per_sec
                           : NAN;
}

/* The window's overcompute FLOPs and their share at the peak. */
static void window_overcompute(const mfu_steps *s, mfu_steps_summary *out)
{
    const uint32_t steps = out->window.steps;
    double sum = 0.0;
    for (uint32_t i = 0; i < steps; i++)
        sum += s->overcompute_ring[i];
    out->overcompute_flops = steps > 0 ? sum : NAN;
    overcompute_share(out);
}

void mfu_steps_summarize(mfu_steps *s, mfu_steps_summary *out)
{
    uint64_t floor;
    catch_up(s);
    /* The peak was validated at create: this cannot fail. */
    (void)mfu_window_summarize(s->window, &s->config.peak, &out->window, NULL);
    /* The pushes in the window are numbers (floor, pushed]. */
    floor = s->pushed > s->config.window ? s->pushed - s->config.window : 0;
    if (floor < s->config.warmup)
        floor = s->config.warmup;
    if (s->last_unknown_model > floor) {
        out->window.metrics.mfu = NAN;
        out->window.metrics.achieved_flops_per_sec = NAN;
        out->window.totals.model_flops = NAN;
    }
    out->peak_flops_per_sec =
        s->config.peak.flops_per_sec * (double)s->config.peak.num_devices;
    window_ideal(s, out);
    window_overcompute(s, out);
    out->clock = s->clock;
    out->boundaries = s->boundaries;
    out->dropped = s->dropped;
    out->pending = s->pending;
}

/* A window total given at logging time: NaN (unknown) unless finite >= 0. */
static double given_total(double value)
{
    return usable(value) ? value : NAN;
}

void mfu_steps_summarize_with(mfu_steps *s, const mfu_step_report *totals,
                              mfu_steps_summary *out)
{
    mfu_work *w = &out->window.totals;
    mfu_steps_summarize(s, out);
    if (totals->given & MFU_STEP_MODEL_FLOPS) {
        w->model_flops = given_total(totals->model_flops);
        out->ideal_s = NAN; /* the window's ideal seconds no longer pair with it */
    }
    if (totals->given & MFU_STEP_EXECUTED_FLOPS)
        w->executed_flops = given_total(totals->executed_flops);
    if (totals->given & MFU_STEP_NUM_TOKENS)
        w->num_tokens = given_total(totals->num_tokens);
    if (totals->given & MFU_STEP_IDEAL_S)
        out->ideal_s = given_total(totals->ideal_s);
    if (out->window.steps == 0)
        return; /* an empty window has no figures, whatever was given */
    if (totals->given & MFU_STEP_OVERCOMPUTE_FLOPS) {
        out->overcompute_flops = given_total(totals->overcompute_flops);
        overcompute_share(out);
    }
    mfu_metrics_compute(w, &s->config.peak, out->window.window_s, &out->window.metrics);
    out->mfu_mixed = mfu_mixed_utilization(out->ideal_s, out->window.window_s,
                                           s->config.peak.num_devices);
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

mfu_clock_kind mfu_steps_clock(const mfu_steps *s)
{
    return s->clock;
}

uint32_t mfu_steps_fallback(const mfu_steps *s, mfu_clock_kind *clock,
                            mfu_gpu_error *error)
{
    if (s->fallbacks > 0) {
        if (clock != NULL)
            *clock = s->failed_clock;
        if (error != NULL)
            *error = s->failure;
    }
    return s->fallbacks;
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
    if (!usable_or_unknown(c->per_step.model_flops))
        return "model_flops";
    if (!usable_or_unknown(c->per_step.executed_flops))
        return "executed_flops";
    if (!usable_or_unknown(c->per_step.param_bytes))
        return "param_bytes";
    if (!usable_or_unknown(c->per_step_ideal_s))
        return "flops_by_dtype";
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
    mfu_window_destroy(s->window);
    mfu_phase_window_destroy(s->phase_window);
    mfu_comm_window_destroy(s->comm_window);
    free(s->inflight);
    free(s->ideal_ring);
    free(s->overcompute_ring);
    free(s->ring);
    free(s);
}

/* The timer on the configured clock, else (steps.h, "Failures") on the CPU
 * clock. MFU_ERR_INVALID_ARGUMENT: the sizes are out of order. */
static mfu_status start_clock(mfu_steps *s)
{
    mfu_gpu_error error;
    mfu_status status;
    s->clock = s->config.timer.clock;
    status = make_timer(s, s->clock, &s->timer, &error);
    if (status == MFU_OK || status == MFU_ERR_NO_MEMORY
        || (status == MFU_ERR_INVALID_ARGUMENT && error.call == NULL))
        return status;
    note_failure(s, s->clock, &error);
    s->clock = MFU_CLOCK_CPU;
    return make_timer(s, MFU_CLOCK_CPU, &s->timer, NULL);
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
    s->config.per_step.num_tokens = NAN;
    s->running = MFU_PHASE_NONE;
    s->ledger.first_boundary_unix_s = NAN;
    s->ledger.first_step_s = NAN;
    status = mfu_window_create(config->window, config->warmup, &s->window);
    if (status == MFU_OK)
        status = mfu_phase_window_create(config->window, config->warmup, &s->phase_window);
    if (status == MFU_OK) {
        status = start_clock(s);
        if (status == MFU_ERR_INVALID_ARGUMENT && bad_field != NULL)
            *bad_field = "timer";
    }
    if (status == MFU_OK) {
        /* Derived, not assumed: see "The ring's size" in steps.h. */
        s->ring_capacity = mfu_timer_events_max(s->timer) + 1;
        s->ring = calloc(s->ring_capacity, sizeof *s->ring);
        s->ideal_ring = calloc(config->window, sizeof *s->ideal_ring);
        s->overcompute_ring = calloc(config->window, sizeof *s->overcompute_ring);
        if (s->ring == NULL || s->ideal_ring == NULL || s->overcompute_ring == NULL)
            status = MFU_ERR_NO_MEMORY;
    }
    if (status != MFU_OK) {
        mfu_steps_destroy(s);
        return status;
    }
    *out = s;
    return MFU_OK;
}
