/*
 * fuzz_steps.c -- step accounting (core/steps/steps.h) driven by fuzzed
 * configurations and op sequences: create with any config, boundaries with
 * any per-step values, host time moving, GPU work and lag changing, polls,
 * summaries, flushes, driver calls failing, close.
 *
 * GPU clocks run on the fake driver (tests/c/fake_driver), which make
 * fuzz-smoke names in MFU_TRACKER_CUDA_LIBRARY; without it (or on the CPU
 * clock) the target fuzzes the CPU clock only.
 *
 * Input: mode u8, window sel u8, warmup sel u8, 3 timer size sels u8
 * (events_initial, events_max, history), per-step model / executed / bytes /
 * tokens (fd_double; tokens is ignored by the tracker), peak flops / bytes
 * (fd_double), devices (fi_i32), stream u8; then ops until the input ends
 * (at most 256), op u8 % 8:
 *   0-2  step: given u8 (& 7), tokens, model, executed (fd_double)
 *   3    advance the fake host clock by u16 x 10 us, then poll
 *   4    GPU work and launch lag per record: u8 % 8 ms each
 *   5    summarize
 *   6    flush
 *   7    u8: bit 7 close; else bit 6 book (below); else the next call of
 *        one driver call (u8 % 5) fails with code 700
 * book: u8 back (the step `back` before the newest boundary's, 255: a step
 * id far past it), given u8 (& 63), then tokens, model, executed, ideal,
 * over-compute, language (fd_double)
 * An op byte >= 200 is a phase op instead, (byte - 200) % 6:
 *   0 begin phase u8 % (MFU_PHASE_COUNT + 2)    1 end phase
 *     (the last two: out of range)
 *   2 switch to phase u8 % (MFU_PHASE_COUNT + 2) 3 exclude begin
 *   4 exclude end                               5 phase summary
 * (phases 12-14 are the badput phases: checkpoint, eval, compile; 5-11
 * the collective kinds' and the pipeline bubble)
 * mode: bits 0-1 clock (0 cpu, 1 cuda, 2 hip, 3 an invalid value); bit 2:
 * no CUDA context at create (the fallback at create).
 *
 * Properties:
 *  - create refuses exactly the configs outside steps.h's domains (an
 *    independent model of them, timer sizes included) and names the first
 *    bad field in its documented order; otherwise it succeeds;
 *  - the bad mask is exactly the given fields that are not finite >= 0;
 *  - accounting is exact after every op: boundaries - 1 = pushed + dropped
 *    + pending; every pending step is for a mark the timer has not resolved;
 *    flush leaves nothing pending; with no driver failure nothing is dropped;
 *  - summaries: steps = min(pushed - warm-up, window), steps_seen = pushed;
 *    every figure NaN or >= 0; min <= mean <= max;
 *  - on a GPU clock with no failure, the window's periods are the fake's
 *    timeline (complete = max(previous + work, host + lag)), recomputed
 *    here: window_s, min and max agree to float-millisecond precision;
 *  - phases: a phase call is refused exactly when out of range, nested
 *    deeper than MFU_PHASE_DEPTH_MAX or ending with none open; a boundary
 *    reports the phases it closed; the window's phase seconds are >= 0 on
 *    a GPU clock and the step phases' sum never exceeds the window's time;
 *    the fake's timeline model includes every phase / exclusion mark and
 *    subtracts the excluded intervals and the badput phases' time from the
 *    periods; the ledger's totals count every accounted step, sum the
 *    pushed periods to the window's time while no step left the window, and
 *    hold no negative seconds on a GPU clock;
 *  - booking (steps.h, "Booking"): the bad mask is exactly the given fields
 *    that are not finite >= 0; a step not closed (or past the newest) is
 *    not found; with no failure every step closed within the window and
 *    MFU_STEPS_KEPT more is found; the ledger's unknown-FLOPs steps never
 *    exceed the pushed steps;
 *  - after close boundaries are refused; the GPU events all come back.
 */
#include <float.h>
#include <math.h>

#include "../fake_driver/fake_knobs.h"
#include "fuzz_input.h"
#include "mfu_limits.h"
#include "steps.h"

enum { MAX_OPS = 256, MAX_MODEL = MAX_OPS + 1 };

static int g_fake = -1; /* 1: the fake driver is loaded */

/* A picked double (fuzz_input.h); durations and FLOPs: 0, u16 x 1e9. */
static double fd_double(fuzz_input *in)
{
    return fi_double(in, 0.0, 1e9);
}

static uint32_t pick_window(uint8_t sel)
{
    static const uint32_t edges[] = {0, MFU_WINDOW_MAX + 1, UINT32_MAX, 4096, 100};
    return sel < 200 ? (uint32_t)(sel % 12) : edges[sel % FI_COUNT(edges)];
}

static uint64_t pick_warmup(uint8_t sel)
{
    static const uint64_t edges[] = {MFU_WARMUP_MAX, MFU_WARMUP_MAX + 1, UINT64_MAX};
    return sel < 240 ? (uint64_t)(sel % 6) : edges[sel % FI_COUNT(edges)];
}

/* Pool / history sizes: small ones (no 2^24-entry history per input) and
 * one past the limit, which is refused before anything is allocated. */
static uint32_t pick_size(uint8_t sel)
{
    static const uint32_t sizes[] = {0, 0, 0, 0, 1, 2, 3, 4, 5, 8, 16, 64,
                                     MFU_TIMER_SIZE_MAX + 1};
    return sizes[sel % FI_COUNT(sizes)];
}

static int usable(double v)
{
    return isfinite(v) && v >= 0.0;
}

static int unknown_or_usable(double v)
{
    return isnan(v) || usable(v);
}

static int unknown_or_positive(double v)
{
    return isnan(v) || (isfinite(v) && v > 0.0);
}

/* timing.h's size rules, written out independently. */
static int sizes_ok(const mfu_timer_config *t)
{
    uint32_t initial = t->events_initial ? t->events_initial : 16;
    uint32_t maximum = t->events_max ? t->events_max : (initial > 1024 ? initial : 1024);
    uint32_t history = t->history ? t->history : (maximum > 1024 ? maximum : 1024);
    return initial >= 2 && maximum >= initial && history >= maximum
           && history <= MFU_TIMER_SIZE_MAX;
}

/* The first bad field in steps.h's order, or NULL. */
static const char *expected_bad(const mfu_steps_config *c)
{
    if (c->timer.clock != MFU_CLOCK_CPU && c->timer.clock != MFU_CLOCK_CUDA
        && c->timer.clock != MFU_CLOCK_HIP)
        return "clock";
    if (c->window < 1 || c->window > MFU_WINDOW_MAX)
        return "window";
    if (c->warmup > MFU_WARMUP_MAX)
        return "warmup";
    if (!unknown_or_usable(c->per_step.model_flops))
        return "model_flops";
    if (!unknown_or_usable(c->per_step.executed_flops))
        return "executed_flops";
    if (!unknown_or_usable(c->per_step.param_bytes))
        return "param_bytes";
    if (!unknown_or_positive(c->peak.flops_per_sec))
        return "peak_flops_per_sec";
    if (!unknown_or_positive(c->peak.bytes_per_sec))
        return "peak_bytes_per_sec";
    if (c->peak.num_devices < 1 || c->peak.num_devices > MFU_NUM_GPUS_MAX)
        return "num_gpus";
    if (!sizes_ok(&c->timer))
        return "timer";
    return NULL;
}

static int nonneg_or_nan(double v)
{
    return isnan(v) || v >= 0.0;
}

static int near(double got, double want)
{
    return fabs(got - want) <= 1e-6 * fabs(want) + 1e-9;
}

/* The fake's timeline for one stream, and the periods of the steps closed
 * on it (index = closing boundary - 1). */
struct model {
    int valid; /* GPU clock, no failure injected, not closed */
    uint64_t work_ns, lag_ns, last_ns;
    uint64_t open_ns;      /* the open step's boundary */
    uint64_t excluded_ns;  /* excluded in the open step so far */
    uint64_t exclude_ns;   /* the running exclusion's begin */
    uint32_t boundaries;
    uint32_t depth;        /* phases open (any clock) */
    uint8_t stack[MFU_PHASE_DEPTH_MAX]; /* the open phases, innermost last */
    uint8_t running;       /* the phase running on the timeline (NONE: none) */
    uint64_t segment_ns;   /* since when it runs */
    int excluding;         /* an exclusion is open (any clock) */
    int step_open;         /* a boundary opened a step (the model's timeline
                              matters only while valid: no fallback) */
    double periods[MAX_MODEL];
};

static int badput(uint8_t phase)
{
    return phase == MFU_PHASE_CHECKPOINT || phase == MFU_PHASE_EVAL
           || phase == MFU_PHASE_COMPILE;
}

static uint8_t innermost(const struct model *m)
{
    return m->depth > 0 ? m->stack[m->depth - 1] : (uint8_t)MFU_PHASE_NONE;
}

/* A mark completing at `complete` ends the running segment: a badput
 * phase's time leaves the period (steps.h, "Badput phases"), unless an
 * exclusion held it already. */
static void model_segment(struct model *m, uint64_t complete, int excluding)
{
    if (!excluding && badput(m->running))
        m->excluded_ns += complete - m->segment_ns;
    m->segment_ns = complete;
}

/* The fake's completion of a record taken now (steps.h: one per mark). */
static uint64_t model_record(struct model *m)
{
    uint64_t gpu_ns = m->last_ns + m->work_ns, host_ns = fake.now_ns() + m->lag_ns;
    m->last_ns = gpu_ns > host_ns ? gpu_ns : host_ns;
    return m->last_ns;
}

static void check_window(const struct model *m, const mfu_steps_config *c,
                         const mfu_steps_summary *sum, uint64_t pushed)
{
    uint64_t first = pushed > c->window ? pushed - c->window : 0;
    double total = 0.0, lo = INFINITY, hi = -INFINITY;
    if (first < c->warmup)
        first = c->warmup;
    if (!m->valid || first >= pushed)
        return;
    for (uint64_t i = first; i < pushed; i++) {
        total += m->periods[i];
        lo = fmin(lo, m->periods[i]);
        hi = fmax(hi, m->periods[i]);
    }
    FUZZ_CHECK(near(sum->window.window_s, total));
    FUZZ_CHECK(near(sum->window.step_s_min, lo));
    FUZZ_CHECK(near(sum->window.step_s_max, hi));
}

/* The ledger's totals (steps.h, "The job ledger's totals"): every accounted
 * step, the pushed periods (the window's are among them), no negative time. */
static void check_ledger(mfu_steps *s, const mfu_steps_summary *sum,
                         const mfu_steps_counters *counters)
{
    mfu_steps_ledger ledger;
    mfu_steps_get_ledger(s, &ledger);
    FUZZ_CHECK(ledger.steps == counters->pushed + counters->dropped);
    FUZZ_CHECK(ledger.dropped == counters->dropped);
    FUZZ_CHECK(ledger.unknown_flops_steps <= counters->pushed);
    FUZZ_CHECK(ledger.own_s >= -1e-9 && ledger.step_s >= -1e-9);
    for (int p = 0; p < MFU_PHASE_COUNT; p++)
        FUZZ_CHECK(ledger.phase_s[p] >= -1e-9);
    if (sum->window.steps > 0)
        FUZZ_CHECK(ledger.step_s >= sum->window.window_s * (1 - 1e-9) - 1e-9);
    FUZZ_CHECK((counters->boundaries == 0) == isnan(ledger.first_boundary_unix_s));
}

static void check_summary(mfu_steps *s, const mfu_steps_config *c, const struct model *m)
{
    mfu_steps_summary sum;
    mfu_steps_counters counters;
    uint64_t steps;
    mfu_steps_summarize(s, &sum);
    mfu_steps_get_counters(s, &counters);
    steps = counters.pushed > c->warmup ? counters.pushed - c->warmup : 0;
    if (steps > c->window)
        steps = c->window;
    FUZZ_CHECK(sum.window.steps_seen == counters.pushed);
    FUZZ_CHECK(sum.window.steps == steps);
    FUZZ_CHECK(sum.pending == counters.pending && sum.dropped == counters.dropped);
    FUZZ_CHECK(sum.boundaries == counters.boundaries);
    FUZZ_CHECK(nonneg_or_nan(sum.window.metrics.mfu) && nonneg_or_nan(sum.window.metrics.hfu));
    FUZZ_CHECK(nonneg_or_nan(sum.window.metrics.mbu));
    FUZZ_CHECK(nonneg_or_nan(sum.window.metrics.tokens_per_sec));
    FUZZ_CHECK(nonneg_or_nan(sum.window.metrics.achieved_flops_per_sec));
    if (steps == 0) {
        FUZZ_CHECK(isnan(sum.window.window_s) && isnan(sum.window.metrics.mfu));
    } else {
        FUZZ_CHECK(sum.window.window_s >= 0.0 && sum.window.step_s_min >= 0.0);
        FUZZ_CHECK(sum.window.step_s_min <= sum.window.step_s_mean * (1 + 1e-12));
        FUZZ_CHECK(sum.window.step_s_mean <= sum.window.step_s_max * (1 + 1e-12));
    }
    check_window(m, c, &sum, counters.pushed);
    check_ledger(s, &sum, &counters);
}

/* The invariants that hold after every op. */
static void check_accounting(const mfu_steps *s, int failures)
{
    mfu_steps_counters c;
    mfu_steps_get_counters(s, &c);
    if (c.boundaries > 0)
        FUZZ_CHECK(c.boundaries - 1 == c.pushed + c.dropped + c.pending);
    else
        FUZZ_CHECK(c.pushed == 0 && c.dropped == 0 && c.pending == 0);
    FUZZ_CHECK(c.pending <= c.timer.marks - c.timer.resolved);
    if (!failures)
        FUZZ_CHECK(c.dropped == 0);
}

/* The window's phase sums: >= 0 on a GPU clock (events resolve in order),
 * never more than the window's time in total. */
static void check_phases(mfu_steps *s)
{
    mfu_phase_summary ph;
    mfu_steps_summary sum;
    double total = 0.0;
    mfu_steps_phases(s, &ph);
    mfu_steps_summarize(s, &sum);
    FUZZ_CHECK(ph.steps == sum.window.steps);
    for (int p = 0; p < MFU_PHASE_COUNT; p++) {
        if (!(ph.marked & (1u << p)))
            FUZZ_CHECK(ph.seconds[p] == 0.0);
        FUZZ_CHECK(ph.seconds[p] >= -1e-9); /* monotonic clocks, in-order events */
        if (!mfu_phase_leaves_step((mfu_phase)p))
            total += ph.seconds[p];         /* badput phases are outside the periods */
    }
    FUZZ_CHECK(ph.excluded_s >= -1e-9);
    if (ph.steps > 0)
        FUZZ_CHECK(total <= sum.window.window_s * (1 + 1e-9) + 1e-9);
}

static void phase_op(fuzz_input *in, mfu_steps *s, struct model *m, uint8_t op)
{
    mfu_status st = MFU_OK;
    int marks = 0, was_excluding = m->excluding;
    uint8_t p;
    switch (op) {
    case 0:
        p = fi_u8(in) % (MFU_PHASE_COUNT + 2); /* two out of range */
        st = mfu_steps_phase_begin(s, (mfu_phase)p);
        if (p >= MFU_PHASE_COUNT || m->depth >= MFU_PHASE_DEPTH_MAX) {
            FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
        } else {
            m->stack[m->depth++] = p;
            marks = 1;
        }
        break;
    case 1:
        st = mfu_steps_phase_end(s);
        if (m->depth == 0) {
            FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
        } else {
            m->depth--;
            marks = 1;
        }
        break;
    case 2:
        p = fi_u8(in) % (MFU_PHASE_COUNT + 2); /* two out of range */
        st = mfu_steps_phase_switch(s, (mfu_phase)p);
        if (p >= MFU_PHASE_COUNT) {
            FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
        } else {
            if (m->depth == 0)
                m->depth = 1;
            m->stack[m->depth - 1] = p;
            marks = 1;
        }
        break;
    case 3:
        st = mfu_steps_exclude_begin(s);
        marks = !m->excluding;
        if (marks) {
            m->excluding = 1;
            if (m->valid && m->step_open && !mfu_steps_closed(s))
                m->exclude_ns = m->last_ns + m->work_ns > fake.now_ns() + m->lag_ns
                                    ? m->last_ns + m->work_ns
                                    : fake.now_ns() + m->lag_ns;
        }
        break;
    case 4:
        st = mfu_steps_exclude_end(s);
        marks = m->excluding;
        if (marks && m->valid && m->step_open && !mfu_steps_closed(s)) {
            uint64_t gpu_ns = m->last_ns + m->work_ns, host_ns = fake.now_ns() + m->lag_ns;
            m->excluded_ns += (gpu_ns > host_ns ? gpu_ns : host_ns) - m->exclude_ns;
        }
        m->excluding = 0;
        break;
    default:
        check_phases(s);
        return;
    }
    FUZZ_CHECK(mfu_steps_phase_depth(s) == m->depth);
    if (mfu_steps_closed(s)) {
        if (marks)
            FUZZ_CHECK(st == MFU_ERR_UNAVAILABLE);
        return;
    }
    if (marks && m->valid && m->step_open && st == MFU_OK) {
        uint64_t complete = model_record(m);
        if (op == 4)
            m->segment_ns = complete;   /* after an exclusion: a new segment */
        else
            model_segment(m, complete, was_excluding);
    }
    if (marks && st == MFU_OK && op <= 2)
        m->running = innermost(m);
}

/* A book op (see the input layout): the bad mask and the status against
 * the boundaries taken. */

/* A report with nothing given and every field unknown: the input then gives
 * the bits and values it tests. */
static void unknown_report(mfu_step_report *r)
{
    memset(r, 0, sizeof *r);
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        r->work.v[f] = NAN;
}

static void book_op(fuzz_input *in, mfu_steps *s, const mfu_steps_config *c, int failures)
{
    static const unsigned bits[] = {MFU_STEP_NUM_TOKENS, MFU_STEP_MODEL_FLOPS,
                                    MFU_STEP_EXECUTED_FLOPS, MFU_STEP_IDEAL_S,
                                    MFU_STEP_OVERCOMPUTE_FLOPS, MFU_STEP_LANGUAGE_FLOPS};
    mfu_steps_counters counters;
    mfu_steps_ledger ledger;
    mfu_step_report r;
    double *values[] = {&r.work.num_tokens, &r.work.model_flops, &r.work.executed_flops, &r.work.ideal_s,
                        &r.work.overcompute_flops, &r.work.language_flops};
    unsigned bad = 99, want_bad = 0;
    uint8_t back = fi_u8(in);
    uint64_t step;
    mfu_status st;
    unknown_report(&r);
    r.given = 0;
    {
        const uint8_t pick = fi_u8(in); /* bit i of the input gives field bits[i] */
        for (int i = 0; i < 6; i++)
            if (pick & (1u << i))
                r.given |= bits[i];
    }
    for (int i = 0; i < 6; i++) {
        *values[i] = fd_double(in);
        if ((r.given & bits[i]) && !usable(*values[i]))
            want_bad |= bits[i];
    }
    mfu_steps_get_counters(s, &counters);
    /* the newest boundary opened step `boundaries`: it closed boundaries - 1 */
    step = back == 255 ? counters.boundaries + 1000 : counters.boundaries - 1 - back;
    if (back != 255 && (uint64_t)back + 1 > counters.boundaries)
        step = 0; /* before the first step */
    st = mfu_steps_book(s, step, &r, &bad);
    FUZZ_CHECK(bad == want_bad);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND);
    if (step == 0 || step >= counters.boundaries)
        FUZZ_CHECK(st == MFU_ERR_NOT_FOUND);
    else if (!failures && back < c->window + MFU_STEPS_KEPT)
        FUZZ_CHECK(st == MFU_OK);
    mfu_steps_get_ledger(s, &ledger);
    mfu_steps_get_counters(s, &counters);
    FUZZ_CHECK(ledger.unknown_flops_steps <= counters.pushed);
    FUZZ_CHECK(isnan(ledger.model_flops) || ledger.model_flops >= 0.0);
}

static void run_ops(fuzz_input *in, mfu_steps *s, const mfu_steps_config *c, int gpu)
{
    static const char *const cuda_calls[] = {"cuEventRecord", "cuEventQuery",
                                             "cuEventElapsedTime", "cuEventSynchronize",
                                             "cuEventCreate"};
    static const char *const hip_calls[] = {"hipEventRecord", "hipEventQuery",
                                            "hipEventElapsedTime", "hipEventSynchronize",
                                            "hipEventCreateWithFlags"};
    static struct model m;
    int failures = mfu_steps_fallback(s, NULL, NULL) > 0, ops = 0;

    memset(&m, 0, sizeof m);
    m.valid = gpu && !failures;
    m.running = MFU_PHASE_NONE;
    while (fi_left(in) > 0 && ops++ < MAX_OPS) {
        uint8_t raw = fi_u8(in), op = raw % 8;
        if (raw >= 200) {
            phase_op(in, s, &m, (uint8_t)((raw - 200) % 6));
        } else if (op <= 2) {
            mfu_step_report r;
            mfu_step_outcome outcome;
            unsigned want_bad = 0;
            mfu_status st;
            unknown_report(&r);
            r.given = fi_u8(in) & (MFU_STEP_NUM_TOKENS | MFU_STEP_MODEL_FLOPS
                                   | MFU_STEP_EXECUTED_FLOPS);
            r.work.num_tokens = fd_double(in);
            r.work.model_flops = fd_double(in);
            r.work.executed_flops = fd_double(in);
            if ((r.given & MFU_STEP_NUM_TOKENS) && !usable(r.work.num_tokens))
                want_bad |= MFU_STEP_NUM_TOKENS;
            if ((r.given & MFU_STEP_MODEL_FLOPS) && !usable(r.work.model_flops))
                want_bad |= MFU_STEP_MODEL_FLOPS;
            if ((r.given & MFU_STEP_EXECUTED_FLOPS) && !usable(r.work.executed_flops))
                want_bad |= MFU_STEP_EXECUTED_FLOPS;
            st = mfu_steps_step(s, &r, &outcome);
            FUZZ_CHECK(outcome.bad == want_bad);
            FUZZ_CHECK(outcome.fallbacks == mfu_steps_fallback(s, NULL, NULL));
            if (mfu_steps_closed(s))
                FUZZ_CHECK(st == MFU_ERR_UNAVAILABLE);
            else
                FUZZ_CHECK(st == MFU_OK);
            if (st == MFU_OK) {
                FUZZ_CHECK(outcome.phases_closed == m.depth);
                m.depth = 0;
                m.step_open = 1;
            }
            if (outcome.fallbacks > 0)
                m.valid = 0;
            if (m.valid && st == MFU_OK) {
                /* The record went in at the fake's host time after the call
                 * (a pool-full wait moves it before the record, nothing
                 * after). */
                uint64_t complete = model_record(&m);
                if (m.excluding)
                    m.excluded_ns += complete - m.exclude_ns;
                else
                    model_segment(&m, complete, 0);
                if (m.boundaries > 0 && m.boundaries - 1 < MAX_MODEL)
                    m.periods[m.boundaries - 1] =
                        (double)(complete - m.open_ns - m.excluded_ns) * 1e-9;
                m.open_ns = complete;
                m.segment_ns = complete;
                m.excluded_ns = 0;
                m.boundaries++;
            }
            if (st == MFU_OK) {
                m.excluding = 0;
                m.running = MFU_PHASE_NONE;
            }
        } else if (op == 3) {
            uint64_t ns = (uint64_t)fi_bytes_le(in, 2) * 10000u;
            if (gpu)
                fake.advance(ns);
            mfu_steps_poll(s);
        } else if (op == 4) {
            uint64_t work = (uint64_t)(fi_u8(in) % 8) * 1000000u;
            uint64_t lag = (uint64_t)(fi_u8(in) % 8) * 1000000u;
            if (gpu) {
                fake.set_work_ns(work);
                fake.set_gpu_lag_ns(lag);
                m.work_ns = work;
                m.lag_ns = lag;
            }
        } else if (op == 5) {
            check_summary(s, c, &m);
        } else if (op == 6) {
            mfu_steps_counters counters;
            mfu_steps_flush(s);
            mfu_steps_get_counters(s, &counters);
            FUZZ_CHECK(counters.pending == 0);
        } else {
            uint8_t what = fi_u8(in);
            if (what & 0x80) {
                mfu_steps_close(s);
                FUZZ_CHECK(mfu_steps_closed(s));
                m.valid = 0;
            } else if (what & 0x40) {
                book_op(in, s, c, failures);
            } else if (gpu) {
                const char *const *calls =
                    c->timer.clock == MFU_CLOCK_HIP ? hip_calls : cuda_calls;
                fake.fail_next(calls[what % 5], 700);
                failures = 1;
                m.valid = 0;
            }

        }
        if (mfu_steps_fallback(s, NULL, NULL) > 0)
            m.valid = 0;
        check_accounting(s, failures);
    }
    check_summary(s, c, &m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    mfu_steps_config c;
    mfu_steps *s = NULL;
    const char *bad = NULL, *want;
    mfu_status st;
    uint8_t mode, clock_bits;
    long events_before = 0;
    int gpu, no_context;

    if (g_fake < 0)
        g_fake = fake_load("fuzz_steps");
    memset(&c, 0, sizeof c);
    mode = fi_u8(&in);
    clock_bits = mode & 3u;
    c.timer.clock = clock_bits == 3 ? (mfu_clock_kind)(3 + (mode >> 4)) /* invalid */
                                    : (mfu_clock_kind)clock_bits;
    if (!g_fake && clock_bits != 3)
        c.timer.clock = MFU_CLOCK_CPU;
    gpu = c.timer.clock == MFU_CLOCK_CUDA || c.timer.clock == MFU_CLOCK_HIP;
    c.window = pick_window(fi_u8(&in));
    c.warmup = pick_warmup(fi_u8(&in));
    c.timer.events_initial = pick_size(fi_u8(&in));
    c.timer.events_max = pick_size(fi_u8(&in));
    c.timer.history = pick_size(fi_u8(&in));
    c.per_step.model_flops = fd_double(&in);
    c.per_step.executed_flops = fd_double(&in);
    c.per_step.param_bytes = fd_double(&in);
    c.per_step.num_tokens = fd_double(&in); /* ignored by the tracker */
    c.peak.flops_per_sec = fd_double(&in);
    c.peak.bytes_per_sec = fd_double(&in);
    c.peak.num_devices = fi_i32(&in);
    c.stream = fi_u8(&in);

    if (gpu) {
        fake.reset();
        events_before = fake.live_events();
        fake.set_no_context((mode & 4) != 0);
    }
    want = expected_bad(&c);
    st = mfu_steps_create(&c, &s, &bad);
    if (gpu)
        fake.set_no_context(0);
    if (want != NULL) {
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT && s == NULL);
        FUZZ_CHECK(bad != NULL && strcmp(bad, want) == 0);
        return 0;
    }
    FUZZ_CHECK(st == MFU_OK && s != NULL);
    /* No context: CUDA falls back at create (HIP needs none). */
    no_context = c.timer.clock == MFU_CLOCK_CUDA && (mode & 4);
    FUZZ_CHECK(mfu_steps_fallback(s, NULL, NULL) == (no_context ? 1u : 0u));
    FUZZ_CHECK(mfu_steps_clock(s) == (no_context ? MFU_CLOCK_CPU : c.timer.clock));
    FUZZ_CHECK(isnan(mfu_steps_get_config(s)->per_step.num_tokens));

    run_ops(&in, s, &c, gpu && mfu_steps_clock(s) != MFU_CLOCK_CPU);

    mfu_steps_close(s);
    {
        mfu_step_report none = {.given = 0};
        mfu_step_outcome outcome;
        FUZZ_CHECK(mfu_steps_step(s, &none, &outcome) == MFU_ERR_UNAVAILABLE);
    }
    check_accounting(s, 1);
    mfu_steps_destroy(s);
    if (gpu)
        FUZZ_CHECK(fake.live_events() == events_before);
    return 0;
}
