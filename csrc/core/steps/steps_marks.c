/* steps_marks.c -- the marks ring and the drain: each resolved mark's time
 * charged to the record of the step it falls in (steps.h, records.h). */
#include <string.h>

#include "steps_internal.h"

mfu_step_record *mfu_steps_draining(const mfu_steps *s)
{
    return mfu_step_ring_at(s->records, s->pushed_held);
}

/* ---- the ring -------------------------------------------------------- */

static void mark_pop(mfu_steps *s)
{
    s->marks_head = (s->marks_head + 1) % s->marks_capacity;
    s->marks_count--;
}

/* The step the drain charges is lost: its record goes, it counts as
 * dropped. */
static void drop_draining(mfu_steps *s)
{
    mfu_step_ring_remove(s->records, s->pushed_held);
    s->pending--;
    s->dropped++;
}

/* A mark that will never be accounted for: a closed step is dropped; an
 * opening boundary leaves the next step without a start. */
static void lose(mfu_steps *s, const mfu_mark *m)
{
    if (m->kind == MFU_MARK_COMM_BEGIN || m->kind == MFU_MARK_COMM_END)
        return; /* its end finds no begin: counted as unpaired */
    if (m->kind != MFU_MARK_BOUNDARY) {
        s->segment_known = 0;
        s->exclude_known = 0;
        return;
    }
    if (m->closes)
        drop_draining(s);
    s->open_known = 0;
}

mfu_mark *mfu_steps_mark_append(mfu_steps *s)
{
    if (s->marks_count == s->marks_capacity) { /* cannot happen: see steps.h */
        lose(s, &s->marks[s->marks_head]);
        mark_pop(s);
    }
    s->marks_count++;
    return &s->marks[(s->marks_head + s->marks_count - 1) % s->marks_capacity];
}

/* ---- the drain ------------------------------------------------------- */

/* Charge the time from the running segment's start to `t` to the running
 * phase (none: nothing) of the draining step `r` (NULL: none), and start a
 * new segment at `t`. A badput phase's time also leaves the step's period
 * (steps.h, "Badput phases") and goes to the ledger now. */
static void end_segment_of(mfu_steps *s, mfu_step_record *r, int known, double t)
{
    if (r != NULL && !s->drain_excluding && s->segment_known && known
        && s->running != MFU_PHASE_NONE) {
        const double seconds = t - s->segment_s;
        r->phases.seconds[s->running] += seconds;
        if (mfu_phase_leaves_step((mfu_phase)s->running)) {
            r->phases.excluded_s += seconds;
            s->ledger.phase_s[s->running] += seconds;
        }
    }
    s->segment_known = known;
    s->segment_s = t;
}

static void end_segment(mfu_steps *s, int known, double t)
{
    end_segment_of(s, mfu_steps_draining(s), known, t);
}

/* `phase` is marked in the draining step `r` (NULL: none). */
static void mark_phase(mfu_step_record *r, uint8_t phase)
{
    if (r != NULL && phase != MFU_PHASE_NONE)
        r->phases.marked |= 1u << phase;
}

/* A phase opens at `t` in the draining step `r`: when none ran since one of
 * the step's phases ended, that time is the step's idle time
 * (step_fields.h, idle_s; known, 0, from the step's first phase on). The
 * time before a step's first phase and after its last is not between
 * phases. */
static void account_idle(const mfu_steps *s, mfu_step_record *r, int known, double t)
{
    if (isnan(r->work.idle_s))
        r->work.idle_s = 0.0;
    if (s->running == MFU_PHASE_NONE && r->phases.marked != 0 && s->segment_known && known)
        r->work.idle_s += t - s->segment_s;
}

static void account_phase(mfu_steps *s, const mfu_mark *m, int known, double t)
{
    mfu_step_record *r = mfu_steps_draining(s);
    if (r != NULL && m->phase != MFU_PHASE_NONE && !s->drain_excluding)
        account_idle(s, r, known, t);
    end_segment_of(s, r, known, t);
    s->running = m->phase;
    /* A phase that runs only inside an excluded interval (a wait inside the
     * tracker's own aggregation) is not marked: it has no time in the step. */
    if (!s->drain_excluding)
        mark_phase(r, m->phase);
}

static void account_exclude(mfu_steps *s, int begin, int known, double t)
{
    if (begin) {
        end_segment(s, known, t);
        s->drain_excluding = 1;
        s->exclude_known = known;
        s->exclude_s = t;
    } else if (s->drain_excluding) {
        mfu_step_record *r = mfu_steps_draining(s);
        if (known && s->exclude_known) {
            if (r != NULL)
                r->phases.excluded_s += t - s->exclude_s;
            s->ledger.own_s += t - s->exclude_s;
        }
        s->drain_excluding = 0;
        mark_phase(r, s->running); /* it runs on, now charged */
        s->segment_known = known;
        s->segment_s = t;
    }
}

/* A collective's begin: its bytes and call count in the draining step; a
 * timed one waits in the in-flight table for its end. Skipped inside an
 * excluded interval (the tracker's own aggregation). */
static void account_comm_begin(mfu_steps *s, const mfu_mark *m, int known, double t)
{
    mfu_step_record *r = mfu_steps_draining(s);
    mfu_inflight *slot;
    const mfu_comm_kind kind = m->launch.kind;
    if (s->drain_excluding || r == NULL)
        return;
    r->comm.bytes[kind] += m->launch.bytes;
    r->comm.calls[kind] += 1.0;
    if (m->token == 0)
        return;
    slot = &s->inflight[m->token % MFU_COMM_INFLIGHT_MAX];
    slot->token = m->token;
    slot->known = known;
    slot->begin_s = t;
    slot->launch = m->launch;
}

/* A collective's end: its duration (and bus bytes, link capacity) in the
 * draining step, when its begin is in the table with a known time. */
static void account_comm_end(mfu_steps *s, const mfu_mark *m, int known, double t)
{
    mfu_inflight *slot = &s->inflight[m->token % MFU_COMM_INFLIGHT_MAX];
    mfu_step_record *r = mfu_steps_draining(s);
    mfu_comm_times *c;
    double duration, bus, link;
    mfu_comm_kind kind;
    if (slot->token != m->token) {
        s->comm_unpaired++;
        return;
    }
    slot->token = 0;
    if (!known || !slot->known || !(t >= slot->begin_s) || r == NULL)
        return; /* a completion timed before its launch is not a duration */
    c = &r->comm;
    kind = slot->launch.kind;
    duration = t - slot->begin_s;
    bus = slot->launch.bus_bytes;
    link = slot->launch.link_bytes_per_sec;
    c->duration_s[kind] += duration;
    if (isfinite(bus)) {
        c->bus_bytes[kind] += bus;
        if (isfinite(link) && link > 0.0) {
            c->link_bus_bytes += bus;
            c->link_capacity_bytes += duration * link;
        }
    }
}

/* The draining step closed at `t` (known): pushed with its period -- the
 * time since its opening boundary less its excluded time -- or dropped
 * when that is not a usable period. */
static void close_draining(mfu_steps *s, int known, double t)
{
    mfu_step_record *r = mfu_steps_draining(s);
    double period_s;
    if (r == NULL) /* cannot happen: a closing boundary has its step */
        return;
    period_s = t - s->open_s - r->phases.excluded_s;
    if (!known || !s->open_known || !mfu_steps_usable(period_s)) {
        drop_draining(s);
        return;
    }
    s->pending--;
    r->period_s = period_s;
    r->state = MFU_STEP_PUSHED;
    s->pushed_held++;
    s->pushed++;
    mfu_steps_ledger_push(s, r);
}

/* A boundary whose mark is at `t` seconds (`known` = 0: its time is lost).
 * It ends the running phase and any exclusion: the step's period leaves
 * out the excluded time. */
static void account_boundary(mfu_steps *s, const mfu_mark *m, int known, double t)
{
    account_exclude(s, 0, known, t);
    end_segment(s, known, t);
    if (m->closes)
        close_draining(s, known, t);
    s->open_known = known;
    s->open_s = t;
    s->running = MFU_PHASE_NONE;
}

/* Charge one resolved mark. */
static void account(mfu_steps *s, const mfu_mark *m, int known, double t)
{
    switch ((enum mfu_mark_kind)m->kind) {
    case MFU_MARK_BOUNDARY:
        account_boundary(s, m, known, t);
        break;
    case MFU_MARK_PHASE:
        account_phase(s, m, known, t);
        break;
    case MFU_MARK_EXCLUDE_BEGIN:
    case MFU_MARK_EXCLUDE_END:
        account_exclude(s, m->kind == MFU_MARK_EXCLUDE_BEGIN, known, t);
        break;
    case MFU_MARK_COMM_BEGIN:
        account_comm_begin(s, m, known, t);
        break;
    case MFU_MARK_COMM_END:
        account_comm_end(s, m, known, t);
        break;
    }
}

void mfu_steps_drain(mfu_steps *s)
{
    uint64_t resolved = mfu_timer_resolved(s->timer);
    while (s->marks_count > 0) {
        const mfu_mark *m = &s->marks[s->marks_head];
        double t = NAN;
        int known;
        if (m->id >= resolved)
            break;
        known = mfu_timer_time_s(s->timer, m->id, MFU_WAIT_NEVER, &t) == MFU_OK;
        account(s, m, known, t);
        mark_pop(s);
    }
}

mfu_status mfu_steps_mark_within_step(mfu_steps *s, enum mfu_mark_kind kind,
                                      const mfu_mark *proto, uintptr_t stream,
                                      const uint64_t *at_ns, int *appended)
{
    mfu_mark *m;
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
                           : mfu_steps_take_mark(s, stream, &id);
    if (status != MFU_OK)
        return status;
    if (!s->step_open) /* the mark fell back: the next boundary restarts */
        return MFU_OK;
    if (s->marks_count > 0)
        mfu_steps_drain(s); /* as in mfu_steps_step: before the history forgets */
    m = mfu_steps_mark_append(s);
    *m = *proto;
    m->id = id;
    m->kind = (uint8_t)kind;
    if (appended != NULL)
        *appended = 1;
    /* No poll here: a phase mark is on the hot path; the next boundary
     * (or summary) catches up. On the CPU clock the drain is immediate. */
    if (s->clock == MFU_CLOCK_CPU)
        mfu_steps_drain(s);
    return MFU_OK;
}
