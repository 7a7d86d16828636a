/*
 * test_steps.c -- step accounting (core/steps/steps.h): boundaries, periods, the
 * masking rules, the derived ring, the fallback to the CPU clock, close.
 *
 * GPU clocks run on the fake driver (tests/c/fake_driver), whose host clock
 * is virtual: a step's period is exactly the GPU time the fake schedules, so
 * the figures are checked exactly, with the arithmetic beside them. The CPU
 * clock runs on a virtual time the test advances (test_clock.h): exact too.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fake_driver/fake_knobs.h"
#include "mfu_limits.h"
#include "steps.h"
#include "test_clock.h"

enum { MS = 1000000 }; /* nanoseconds in a millisecond */

static const mfu_step_report NO_REPORT = {.given = 0};

static mfu_steps_config config_on(mfu_clock_kind clock)
{
    mfu_steps_config c;
    memset(&c, 0, sizeof c);
    c.timer.clock = clock;
    c.window = 100;
    c.warmup = 0;
    c.per_step.model_flops = 5e11;
    c.per_step.executed_flops = 6e11;
    c.per_step.param_bytes = 1e9;
    c.per_step.num_tokens = 12345.0; /* ignored: tokens are per call */
    c.peak.flops_per_sec = 1e15;
    c.peak.bytes_per_sec = 2e12;
    c.peak.num_devices = 1;
    return c;
}

static mfu_steps *create(const mfu_steps_config *c)
{
    mfu_steps *s = NULL;
    const char *bad = NULL;
    mfu_status status = mfu_steps_create(c, &s, &bad);
    CHECK(status == MFU_OK);
    if (status != MFU_OK)
        fprintf(stderr, "  create: %s (%s)\n", mfu_status_str(status), bad ? bad : "-");
    return s;
}

static unsigned step_with(mfu_steps *s, unsigned given, double tokens, double model,
                          double executed)
{
    mfu_step_report r = {.given = given,
                         .work = {.num_tokens = tokens, .model_flops = model,
                                  .executed_flops = executed}};
    mfu_step_outcome outcome = {99, 99, 99};
    CHECK(mfu_steps_step(s, &r, &outcome) == MFU_OK);
    CHECK(outcome.fallbacks == mfu_steps_fallback(s, NULL, NULL));
    return outcome.bad;
}

static void step_tokens(mfu_steps *s, double tokens)
{
    CHECK(step_with(s, MFU_STEP_NUM_TOKENS, tokens, 0, 0) == 0);
}

/* boundaries - 1 == pushed + dropped + pending, once a boundary was taken. */
static int accounted(const mfu_steps *s)
{
    mfu_steps_counters c;
    mfu_steps_get_counters(s, &c);
    return c.boundaries == 0 || c.boundaries - 1 == c.pushed + c.dropped + c.pending;
}

/* ---- the GPU clock, steady state -------------------------------------- */

static void test_gpu_steady_state_zero_syncs(mfu_clock_kind clock, const char *record,
                                             const char *synchronize)
{
    mfu_steps_config c = config_on(clock);
    mfu_steps_summary sum;
    mfu_steps_counters counters;
    mfu_steps *s;
    long events_before;
    int lag_ok = 1;

    fake.reset();
    events_before = fake.live_events();
    fake.set_work_ns(1 * MS);        /* the GPU needs 1 ms per step */
    fake.set_gpu_lag_ns(MS / 2);     /* and trails the host by 0.5 ms */
    s = create(&c);
    if (s == NULL)
        return;
    CHECK(mfu_steps_clock(s) == clock && mfu_steps_fallback(s, NULL, NULL) == 0);
    for (int i = 0; i < 10000; i++) {
        step_tokens(s, 4096);
        mfu_steps_summarize(s, &sum);
        /* Lags at most one step: only the step this call closed waits. */
        if (i >= 1 && sum.pending != 1)
            lag_ok = 0;
        fake.advance(1 * MS);
    }
    CHECK(lag_ok);
    CHECK(fake.sync_calls() == 0 && fake.call_count(synchronize) == 0);
    CHECK(fake.call_count(record) == 10000);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.timer.waits == 0 && counters.timer.events == 16);
    CHECK(counters.timer.pool_grows == 0); /* steady state allocates nothing */
    /* 10,000 boundaries close 9,999 steps; the newest is still pending. */
    CHECK(counters.boundaries == 10000 && counters.pushed == 9998);
    CHECK(counters.pending == 1 && counters.dropped == 0 && accounted(s));

    /* Read after the host moved on: the newest step is resolved too. */
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 100 && sum.window.steps_seen == 9999 && sum.pending == 0);
    CHECK_NEAR(sum.window.step_s_mean, 1e-3, 1e-6);
    CHECK_NEAR(sum.window.window_s, 100 * 1e-3, 1e-6);
    CHECK_NEAR(sum.window.metrics.mfu, 5e11 / 1e-3 / 1e15, 1e-6);       /* 0.5 */
    CHECK_NEAR(sum.window.metrics.hfu, 6e11 / 1e-3 / 1e15, 1e-6);       /* 0.6 */
    CHECK_NEAR(sum.window.metrics.mbu, 1e9 / 1e-3 / 2e12, 1e-6);        /* 0.5 */
    CHECK_NEAR(sum.window.metrics.tokens_per_sec, 4096 / 1e-3, 1e-6);   /* 4.096e6 */
    CHECK(sum.peak_flops_per_sec == 1e15 && sum.clock == clock);

    /* One more boundary, read at once: pending. flush waits once, for it. */
    step_tokens(s, 4096);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.pending == 1 && fake.sync_calls() == 0);
    mfu_steps_flush(s);
    CHECK(fake.call_count(synchronize) == 1 && fake.sync_calls() == 1);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.pending == 0 && counters.pushed == 10000 && accounted(s));
    mfu_steps_destroy(s);
    CHECK(fake.live_events() == events_before);
}

/* Periods are the GPU's, not the host's: the host steps in 1 ms, the GPU
 * takes 3 ms per step, so the pool fills; the timer grows it to events_max
 * and then waits for the oldest mark. The ring, sized from events_max, never
 * overflows and every period is the GPU's 3 ms. */
static void test_ring_sized_from_events_max(void)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    mfu_steps_counters counters;
    mfu_steps_summary sum;
    mfu_steps *s;

    fake.reset();
    fake.set_work_ns(3 * MS);
    c.timer.events_initial = 2;
    c.timer.events_max = 4;
    c.timer.history = 4; /* the smallest history the timer allows */
    c.window = 10;
    s = create(&c);
    if (s == NULL)
        return;
    for (int i = 0; i < 500; i++) {
        step_tokens(s, 10);
        fake.advance(1 * MS);
    }
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.timer.events == 4 && counters.timer.pool_grows == 1);
    CHECK(counters.timer.pool_full_waits > 0);
    CHECK(counters.dropped == 0 && accounted(s));
    CHECK(counters.pending <= 4); /* events_max marks pending at most */
    mfu_steps_flush(s);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 10 && sum.dropped == 0 && sum.pending == 0);
    CHECK_NEAR(sum.window.step_s_min, 3e-3, 1e-6);
    CHECK_NEAR(sum.window.step_s_max, 3e-3, 1e-6);
    mfu_steps_destroy(s);

    /* The smallest pool (anchor + one pending): every boundary from the
     * third on waits for the previous one; still nothing is lost. */
    fake.reset();
    fake.set_work_ns(2 * MS);
    c.timer.events_initial = 2;
    c.timer.events_max = 2;
    c.timer.history = 2;
    s = create(&c);
    if (s == NULL)
        return;
    for (int i = 0; i < 100; i++) {
        step_tokens(s, 10);
        fake.advance(1 * MS);
    }
    mfu_steps_flush(s);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.pushed == 99 && counters.dropped == 0 && counters.pending == 0);
    mfu_steps_summarize(s, &sum);
    CHECK_NEAR(sum.window.step_s_mean, 2e-3, 1e-6);
    mfu_steps_destroy(s);
}

/* Regression (found by fuzz_steps): the smallest pool and history (2, 2, 2),
 * both events pending when the third boundary comes. Its mark waits for the
 * first two and completes at once; the poll after it resolves it, and with a
 * history of 2 its time overwrote boundary 0's before the drain read it: the
 * first step was dropped. A boundary now drains what its mark resolved
 * before the poll. */
static void test_pool_full_wait_keeps_every_time(void)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    mfu_steps_counters counters;
    mfu_steps_summary sum;
    mfu_steps *s;

    fake.reset();
    c.timer.events_initial = 2;
    c.timer.events_max = 2;
    c.timer.history = 2;
    c.warmup = 0;
    s = create(&c);
    if (s == NULL)
        return;
    fake.set_work_ns(2 * MS);
    fake.set_gpu_lag_ns(1 * MS);
    step_tokens(s, 1); /* host 0: GPU done at max(0 + 2, 0 + 1) = 2 ms */
    step_tokens(s, 1); /* host 0: GPU done at max(2 + 2, 0 + 1) = 4 ms */
    fake.set_work_ns(0);
    fake.set_gpu_lag_ns(0);
    step_tokens(s, 1); /* waits for 2 ms, then 4 ms; done at once, at 4 ms */
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.timer.pool_full_waits == 2);
    CHECK(counters.pushed == 2 && counters.dropped == 0 && counters.pending == 0);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 2);
    CHECK_NEAR(sum.window.step_s_max, 2e-3, 1e-6); /* 4 - 2 ms: the GPU's time */
    CHECK(sum.window.step_s_min == 0.0);           /* 4 - 4 ms: done together */
    mfu_steps_destroy(s);
}

/* ---- what a step's work is --------------------------------------------- */

/* Steps of exactly 2 ms on the fake, flushed: each check reads the window. */
static mfu_steps *gpu_steps(uint32_t window, uint64_t warmup)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    fake.reset();
    fake.set_work_ns(2 * MS);
    c.window = window;
    c.warmup = warmup;
    return create(&c);
}

static void summarize_flushed(mfu_steps *s, mfu_steps_summary *sum)
{
    mfu_steps_flush(s);
    mfu_steps_summarize(s, sum);
}

static void test_masking_rules(void)
{
    mfu_steps_summary sum;
    mfu_steps *s = gpu_steps(100, 0);
    if (s == NULL)
        return;
    CHECK(step_with(s, 0, 0, 0, 0) == 0); /* opens the first step */
    /* Defaults: model 5e11, executed 6e11, bytes 1e9; tokens unknown. */
    CHECK(step_with(s, 0, 0, 0, 0) == 0);
    summarize_flushed(s, &sum);
    CHECK(sum.window.steps == 1);
    CHECK_NEAR(sum.window.metrics.mfu, 5e11 / 2e-3 / 1e15, 1e-9); /* 0.25 */
    CHECK_NEAR(sum.window.metrics.hfu, 6e11 / 2e-3 / 1e15, 1e-9); /* 0.3 */
    CHECK(isnan(sum.window.metrics.tokens_per_sec));
    mfu_steps_destroy(s);

    /* A per-step model count replaces the default and unpairs executed. */
    s = gpu_steps(100, 0);
    if (s == NULL)
        return;
    step_with(s, 0, 0, 0, 0);
    CHECK(step_with(s, MFU_STEP_MODEL_FLOPS | MFU_STEP_NUM_TOKENS, 1000, 1e12, 0) == 0);
    summarize_flushed(s, &sum);
    CHECK_NEAR(sum.window.metrics.mfu, 1e12 / 2e-3 / 1e15, 1e-9); /* 0.5 */
    CHECK(isnan(sum.window.metrics.hfu));
    CHECK_NEAR(sum.window.metrics.tokens_per_sec, 1000 / 2e-3, 1e-9); /* 5e5 */
    /* Both given: both used. */
    CHECK(step_with(s, MFU_STEP_MODEL_FLOPS | MFU_STEP_EXECUTED_FLOPS, 0, 1e12, 3e12) == 0);
    summarize_flushed(s, &sum);
    CHECK(isnan(sum.window.metrics.hfu)); /* the first step's is still unknown */
    mfu_steps_destroy(s);

    s = gpu_steps(1, 0); /* a window of one step: the newest decides */
    if (s == NULL)
        return;
    step_with(s, 0, 0, 0, 0);
    CHECK(step_with(s, MFU_STEP_MODEL_FLOPS | MFU_STEP_EXECUTED_FLOPS, 0, 1e12, 3e12) == 0);
    summarize_flushed(s, &sum);
    CHECK_NEAR(sum.window.metrics.hfu, 3e12 / 2e-3 / 1e15, 1e-9); /* 1.5 */
    /* Executed alone replaces its default only. */
    CHECK(step_with(s, MFU_STEP_EXECUTED_FLOPS, 0, 0, 8e11) == 0);
    summarize_flushed(s, &sum);
    CHECK_NEAR(sum.window.metrics.mfu, 5e11 / 2e-3 / 1e15, 1e-9); /* 0.25 */
    CHECK_NEAR(sum.window.metrics.hfu, 8e11 / 2e-3 / 1e15, 1e-9); /* 0.4 */
    mfu_steps_destroy(s);
}

/* Over-compute (steps.h "The work of a step"): summed over the window's
 * steps, its share at the peak like hfu; absent or bad: 0. */
static void test_overcompute(void)
{
    mfu_steps_summary sum;
    mfu_step_outcome outcome;
    mfu_steps *s = gpu_steps(2, 0);
    if (s == NULL)
        return;
    step_with(s, 0, 0, 0, 0); /* opens the first step */
    mfu_step_report r = {.given = MFU_STEP_OVERCOMPUTE_FLOPS, .work = {.overcompute_flops = 1e11}};
    CHECK(mfu_steps_step(s, &r, &outcome) == MFU_OK && outcome.bad == 0);
    summarize_flushed(s, &sum);
    /* one 2 ms step at 1e15 FLOP/s: 1e11 / 2e-3 / 1e15 = 0.05 */
    CHECK_NEAR(sum.window.totals.overcompute_flops, 1e11, 0.0);
    CHECK_NEAR(sum.window.metrics.overcompute, 1e11 / 2e-3 / 1e15, 1e-12);
    CHECK(step_with(s, 0, 0, 0, 0) == 0); /* absent: 0 */
    summarize_flushed(s, &sum);
    CHECK_NEAR(sum.window.totals.overcompute_flops, 1e11, 0.0); /* 1e11 + 0 over the 2 steps */
    CHECK_NEAR(sum.window.metrics.overcompute, 1e11 / 4e-3 / 1e15, 1e-12);
    r.work.overcompute_flops = -3.0; /* bad: its bit, counted 0 */
    CHECK(mfu_steps_step(s, &r, &outcome) == MFU_OK);
    CHECK(outcome.bad == MFU_STEP_OVERCOMPUTE_FLOPS);
    summarize_flushed(s, &sum);
    CHECK(sum.window.totals.overcompute_flops == 0.0 && sum.window.metrics.overcompute == 0.0); /* window of 2: both 0 */
    mfu_steps_destroy(s);
    s = gpu_steps(2, 0); /* no step yet: unavailable */
    if (s == NULL)
        return;
    summarize_flushed(s, &sum);
    CHECK(isnan(sum.window.totals.overcompute_flops) && isnan(sum.window.metrics.overcompute));
    mfu_steps_destroy(s);
}

/* mfu_steps_summarize_with: window totals given at logging time replace the
 * window's own, and every ratio is formed again from them. Two steps of
 * 2 ms each on the fake clock (window 4 ms), peak 1e15 x 1 device. */
static void test_summary_with_window_totals(void)
{
    mfu_steps_summary sum;
    mfu_steps *s = gpu_steps(100, 0);
    if (s == NULL)
        return;
    step_with(s, 0, 0, 0, 0);
    step_with(s, MFU_STEP_NUM_TOKENS, 100, 0, 0);
    step_with(s, MFU_STEP_NUM_TOKENS, 300, 0, 0);
    summarize_flushed(s, &sum);
    CHECK(sum.window.steps == 2);
    CHECK_NEAR(sum.window.metrics.mfu, 2 * 5e11 / 4e-3 / 1e15, 1e-9); /* 0.25 */

    /* Model FLOPs 3e12 and tokens 1000 given: mfu 3e12 / 4e-3 / 1e15 = 0.75,
     * tokens/s 1000 / 4e-3 = 2.5e5; executed keeps the window's 1.2e12. */
    mfu_step_report totals = {.given = MFU_STEP_MODEL_FLOPS | MFU_STEP_NUM_TOKENS,
                              .work = {.num_tokens = 1000, .model_flops = 3e12}};
    mfu_steps_summarize_with(s, &totals, &sum);
    CHECK_NEAR(sum.window.metrics.mfu, 0.75, 1e-9);
    CHECK_NEAR(sum.window.metrics.achieved_flops_per_sec, 3e12 / 4e-3, 1e-3);
    CHECK_NEAR(sum.window.metrics.tokens_per_sec, 2.5e5, 1e-6);
    CHECK_NEAR(sum.window.metrics.hfu, 1.2e12 / 4e-3 / 1e15, 1e-9); /* 0.3 */
    CHECK(isnan(sum.window.totals.ideal_s) && isnan(sum.window.metrics.mfu_mixed)); /* model given without ideal_s */

    /* Ideal seconds 2e-3 given with them: mfu_mixed = 2e-3 / 4e-3 / 1 = 0.5. */
    totals.given |= MFU_STEP_IDEAL_S;
    totals.work.ideal_s = 2e-3;
    mfu_steps_summarize_with(s, &totals, &sum);
    CHECK_NEAR(sum.window.metrics.mfu_mixed, 0.5, 1e-12);

    /* Over-compute 2e12 given: its share 2e12 / 4e-3 / 1e15 = 0.5;
     * not given, the window's own (0: no step carried any). */
    CHECK_NEAR(sum.window.totals.overcompute_flops, 0.0, 0.0);
    totals.given |= MFU_STEP_OVERCOMPUTE_FLOPS;
    totals.work.overcompute_flops = 2e12;
    mfu_steps_summarize_with(s, &totals, &sum);
    CHECK_NEAR(sum.window.totals.overcompute_flops, 2e12, 0.0);
    CHECK_NEAR(sum.window.metrics.overcompute, 0.5, 1e-12);

    /* Unknown (NaN), negative and infinite totals are unknown figures. */
    mfu_step_report bad = {.given = MFU_STEP_MODEL_FLOPS | MFU_STEP_EXECUTED_FLOPS
                                    | MFU_STEP_NUM_TOKENS,
                           .work = {.num_tokens = -1.0, .model_flops = NAN,
                                    .executed_flops = INFINITY}};
    mfu_steps_summarize_with(s, &bad, &sum);
    CHECK(isnan(sum.window.metrics.mfu) && isnan(sum.window.metrics.hfu));
    CHECK(isnan(sum.window.metrics.tokens_per_sec));

    /* Nothing given: exactly the plain summary. */
    mfu_step_report none = NO_REPORT;
    mfu_steps_summary plain;
    mfu_steps_summarize_with(s, &none, &sum);
    mfu_steps_summarize(s, &plain);
    CHECK(sum.window.metrics.mfu == plain.window.metrics.mfu);
    CHECK(sum.window.metrics.tokens_per_sec == plain.window.metrics.tokens_per_sec);
    mfu_steps_destroy(s);

    /* An empty window has no figures, whatever was given. */
    s = gpu_steps(100, 0);
    if (s == NULL)
        return;
    mfu_steps_summarize_with(s, &totals, &sum);
    CHECK(sum.window.steps == 0 && isnan(sum.window.metrics.mfu) && isnan(sum.window.metrics.mfu_mixed));
    mfu_steps_destroy(s);
}

enum { ALL_FIELDS = MFU_STEP_NUM_TOKENS | MFU_STEP_MODEL_FLOPS | MFU_STEP_EXECUTED_FLOPS };

static void test_bad_values_are_unknown(void)
{
    const double bad_values[] = {-1.0, NAN, INFINITY, -INFINITY, -1e-300};
    mfu_steps_summary sum;
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        double v = bad_values[i];
        mfu_steps *s = gpu_steps(100, 0);
        if (s == NULL)
            return;
        step_with(s, 0, 0, 0, 0);
        CHECK(step_with(s, MFU_STEP_NUM_TOKENS, v, 0, 0) == MFU_STEP_NUM_TOKENS);
        CHECK(step_with(s, MFU_STEP_EXECUTED_FLOPS, 0, 0, v) == MFU_STEP_EXECUTED_FLOPS);
        CHECK(step_with(s, ALL_FIELDS, v, v, v) == ALL_FIELDS);
        summarize_flushed(s, &sum);
        /* Every step still counts and is timed; the unknowns are NaN. */
        CHECK(sum.window.steps == 3 && accounted(s));
        CHECK_NEAR(sum.window.step_s_mean, 2e-3, 1e-9);
        CHECK(isnan(sum.window.metrics.tokens_per_sec));
        CHECK(isnan(sum.window.metrics.hfu));
        CHECK(isnan(sum.window.metrics.mfu) && isnan(sum.window.totals.model_flops));
        CHECK(isnan(sum.window.metrics.achieved_flops_per_sec));
        CHECK(!isnan(sum.window.metrics.mbu)); /* bytes: the default, known */
        mfu_steps_destroy(s);
    }
    /* Zero is a value, not a bad one. */
    {
        mfu_steps *s = gpu_steps(100, 0);
        if (s == NULL)
            return;
        step_with(s, 0, 0, 0, 0);
        CHECK(step_with(s, MFU_STEP_NUM_TOKENS | MFU_STEP_MODEL_FLOPS, 0.0, 0.0, 0) == 0);
        summarize_flushed(s, &sum);
        CHECK(sum.window.metrics.mfu == 0.0 && sum.window.metrics.tokens_per_sec == 0.0);
        mfu_steps_destroy(s);
    }
}

/* A step with unknown model FLOPs hides MFU while it is in the window --
 * after warm-up -- and only then. */
static void test_unknown_model_flops_leave_the_window(void)
{
    mfu_steps_summary sum;
    mfu_steps *s = gpu_steps(3, 2);
    if (s == NULL)
        return;
    step_with(s, 0, 0, 0, 0);
    /* Steps 1-2: warm-up; step 1 has unknown model FLOPs: never seen. */
    step_with(s, MFU_STEP_MODEL_FLOPS, 0, NAN, 0);
    step_with(s, 0, 0, 0, 0);
    step_with(s, 0, 0, 0, 0); /* step 3: the first in the window */
    summarize_flushed(s, &sum);
    CHECK(sum.window.steps == 1 && sum.window.steps_skipped == 2);
    CHECK_NEAR(sum.window.metrics.mfu, 0.25, 1e-9); /* 5e11 / 2e-3 / 1e15 */
    step_with(s, MFU_STEP_MODEL_FLOPS, 0, -5.0, 0); /* step 4: unknown */
    for (int i = 0; i < 2; i++) {                   /* steps 5, 6 */
        step_with(s, 0, 0, 0, 0);
        summarize_flushed(s, &sum);
        CHECK(isnan(sum.window.metrics.mfu)); /* step 4 is among the last 3 */
    }
    step_with(s, 0, 0, 0, 0); /* step 7: the window is 5, 6, 7 */
    summarize_flushed(s, &sum);
    CHECK_NEAR(sum.window.metrics.mfu, 0.25, 1e-9);
    CHECK_NEAR(sum.window.totals.model_flops, 3 * 5e11, 1e-12);
    mfu_steps_destroy(s);
}

/* ---- the CPU clock ------------------------------------------------------ */

static void test_cpu_clock(void)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CPU);
    mfu_steps_summary sum;
    mfu_steps_counters counters;
    mfu_steps *s;
    c.timer.driver = NULL;
    s = create(&c);
    if (s == NULL)
        return;
    test_clock_virtual(1); /* the core's CPU time is the test's: periods exact */
    step_tokens(s, 100);
    for (int i = 1; i <= 3; i++) {
        test_clock_advance_ns((uint64_t)i * 10 * MS); /* steps of 10, 20, 30 ms */
        step_tokens(s, 100);
    }
    /* The CPU clock resolves at once: nothing pending, nothing to flush. */
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 3 && sum.pending == 0 && sum.clock == MFU_CLOCK_CPU);
    /* exactly the time between the boundaries (a stopped clock, a wrong unit fail) */
    CHECK_NEAR(sum.window.step_s_min, 0.010, 1e-12);
    CHECK_NEAR(sum.window.step_s_max, 0.030, 1e-12);
    CHECK_NEAR(sum.window.window_s, 0.060, 1e-12);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.timer.waits == 0 && counters.boundaries == 4 && accounted(s));
    mfu_steps_destroy(s);
    test_clock_virtual(0);
}

/* ---- failures ----------------------------------------------------------- */

static void test_fallback_at_create(void)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    mfu_gpu_error error;
    mfu_clock_kind failed = MFU_CLOCK_CPU;
    mfu_steps *s;

    fake.reset();
    fake.set_no_context(1);
    s = create(&c);
    fake.set_no_context(0);
    if (s == NULL)
        return;
    CHECK(mfu_steps_clock(s) == MFU_CLOCK_CPU);
    CHECK(mfu_steps_fallback(s, &failed, &error) == 1);
    CHECK(failed == MFU_CLOCK_CUDA);
    CHECK(error.call != NULL && strcmp(error.call, "cuCtxGetCurrent") == 0);
    step_tokens(s, 1);
    step_tokens(s, 1);
    CHECK(fake.call_count("cuEventRecord") == 0); /* timed on the CPU */
    CHECK(accounted(s));
    mfu_steps_destroy(s);

    /* A driver that is not there at all. */
    {
        mfu_gpu_driver missing;
        CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, "/nonexistent/libcuda.so.1", &missing)
              == MFU_ERR_UNAVAILABLE);
        c.timer.driver = &missing;
        s = create(&c);
        if (s == NULL)
            return;
        CHECK(mfu_steps_fallback(s, NULL, &error) == 1);
        CHECK(strcmp(error.call, "dlopen") == 0);
        CHECK(mfu_steps_clock(s) == MFU_CLOCK_CPU);
        mfu_steps_destroy(s);
    }
}

/* A driver call failing mid-run: the steps in flight are dropped, the CPU
 * clock takes over, and accounting stays exact. */
static void test_fallback_mid_run(const char *call)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    mfu_steps_counters counters;
    mfu_steps_summary sum;
    mfu_gpu_error error;
    mfu_steps *s;
    long events_before;

    fake.reset();
    events_before = fake.live_events();
    fake.set_work_ns(1 * MS);
    fake.set_gpu_lag_ns(MS / 2);
    s = create(&c);
    if (s == NULL)
        return;
    for (int i = 0; i < 5; i++) {
        step_tokens(s, 1);
        fake.advance(1 * MS);
    }
    CHECK(fake.fail_next(call, 700) == 0);
    for (int i = 0; i < 5; i++) {
        step_tokens(s, 1);
        fake.advance(1 * MS);
    }
    CHECK(mfu_steps_clock(s) == MFU_CLOCK_CPU);
    CHECK(mfu_steps_fallback(s, NULL, &error) == 1);
    CHECK(error.call != NULL && strcmp(error.call, call) == 0 && error.code == 700);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.boundaries == 10 && counters.dropped >= 1 && counters.fallbacks == 1);
    CHECK(accounted(s));
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps + sum.dropped + sum.pending == 9);
    CHECK(sum.window.steps >= 3); /* the steps resolved before the failure */
    CHECK(fake.live_events() == events_before); /* the GPU timer's events freed */
    mfu_steps_destroy(s);
}

static void test_fallback_in_flush(void)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    mfu_steps_counters counters;
    mfu_steps *s;

    fake.reset();
    fake.set_gpu_lag_ns(5 * MS); /* nothing resolves before the flush */
    s = create(&c);
    if (s == NULL)
        return;
    for (int i = 0; i < 4; i++) {
        step_tokens(s, 1);
        fake.advance(1 * MS);
    }
    CHECK(fake.fail_next("cuEventSynchronize", 700) == 0);
    mfu_steps_flush(s);
    mfu_steps_get_counters(s, &counters);
    CHECK(mfu_steps_clock(s) == MFU_CLOCK_CPU && counters.fallbacks == 1);
    CHECK(counters.dropped == 3 && counters.pending == 0 && accounted(s));
    /* The next boundary restarts the clock: the step it closes is lost. */
    step_tokens(s, 1);
    step_tokens(s, 1);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.dropped == 4 && counters.pushed == 1 && accounted(s));
    mfu_steps_destroy(s);
}

/* ---- close and the configuration ---------------------------------------- */

static void test_close(void)
{
    mfu_steps_config c = config_on(MFU_CLOCK_CUDA);
    mfu_steps_summary sum;
    mfu_steps_counters counters;
    mfu_steps *s;
    mfu_step_outcome outcome = {0, 0, 0};
    long events_before;
    mfu_step_report bad_tokens = {.given = MFU_STEP_NUM_TOKENS, .work = {.num_tokens = -1.0}};

    fake.reset();
    events_before = fake.live_events();
    fake.set_work_ns(2 * MS);
    s = create(&c);
    if (s == NULL)
        return;
    for (int i = 0; i < 3; i++)
        step_tokens(s, 10);
    mfu_steps_close(s);
    CHECK(mfu_steps_closed(s));
    CHECK(fake.call_count("cuEventSynchronize") == 1); /* close flushes: one wait */
    CHECK(fake.live_events() == events_before);        /* and frees the events */
    mfu_steps_summarize(s, &sum);                      /* still readable */
    CHECK(sum.window.steps == 2 && sum.pending == 0);
    CHECK_NEAR(sum.window.step_s_mean, 2e-3, 1e-9);
    CHECK(mfu_steps_step(s, &NO_REPORT, &outcome) == MFU_ERR_UNAVAILABLE);
    CHECK(outcome.bad == 0 && outcome.fallbacks == 0);
    CHECK(mfu_steps_step(s, &bad_tokens, &outcome) == MFU_ERR_UNAVAILABLE);
    CHECK(outcome.bad == MFU_STEP_NUM_TOKENS); /* still told, for the one warning */
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.boundaries == 3 && counters.timer.marks == 0);
    mfu_steps_poll(s);
    mfu_steps_flush(s);
    mfu_steps_close(s); /* twice: a no-op */
    mfu_steps_destroy(s);
    mfu_steps_destroy(NULL);
}

/* One config field spoiled at a time: refused, the field named. */
static void check_refused(mfu_steps_config c, const char *field)
{
    mfu_steps *s = (mfu_steps *)&c;
    const char *bad = NULL;
    CHECK(mfu_steps_create(&c, &s, &bad) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK(bad != NULL && strcmp(bad, field) == 0);
    if (bad != NULL && strcmp(bad, field) != 0)
        fprintf(stderr, "  expected %s, got %s\n", field, bad);
}

static void test_config_domains(void)
{
    mfu_steps_config good = config_on(MFU_CLOCK_CPU), c;
    mfu_steps *s = NULL;

#define REFUSED(field, stmt) \
    do {                     \
        c = good;            \
        stmt;                \
        check_refused(c, field); \
    } while (0)
    REFUSED("clock", c.timer.clock = (mfu_clock_kind)3);
    REFUSED("timer", c.timer.events_initial = 1);
    REFUSED("timer", (c.timer.events_max = 8, c.timer.history = 4));
    REFUSED("window", c.window = 0);
    REFUSED("window", c.window = MFU_WINDOW_MAX + 1);
    REFUSED("warmup", c.warmup = MFU_WARMUP_MAX + 1);
    REFUSED("model_flops", c.per_step.model_flops = -1.0);
    REFUSED("model_flops", c.per_step.model_flops = INFINITY);
    REFUSED("executed_flops", c.per_step.executed_flops = -INFINITY);
    REFUSED("param_bytes", c.per_step.param_bytes = -0.5);
    REFUSED("peak_flops_per_sec", c.peak.flops_per_sec = 0.0);
    REFUSED("peak_bytes_per_sec", c.peak.bytes_per_sec = INFINITY);
    REFUSED("num_gpus", c.peak.num_devices = 0);
    REFUSED("num_gpus", c.peak.num_devices = MFU_NUM_GPUS_MAX + 1);
#undef REFUSED

    /* The edges of each domain are accepted; unknown (NaN) per-step
     * defaults and peaks too. */
    c = good;
    c.window = MFU_WINDOW_MAX > 4096 ? 4096 : MFU_WINDOW_MAX;
    c.warmup = MFU_WARMUP_MAX;
    c.per_step.model_flops = NAN;
    c.per_step.executed_flops = NAN;
    c.per_step.param_bytes = 0.0;
    c.peak.flops_per_sec = NAN;
    c.peak.bytes_per_sec = NAN;
    c.peak.num_devices = MFU_NUM_GPUS_MAX;
    CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    if (s != NULL) {
        mfu_steps_summary sum;
        CHECK(mfu_steps_get_config(s)->warmup == MFU_WARMUP_MAX);
        CHECK(isnan(mfu_steps_get_config(s)->per_step.num_tokens));
        step_tokens(s, 1);
        step_tokens(s, 1);
        mfu_steps_summarize(s, &sum);
        CHECK(sum.window.steps == 0 && sum.window.steps_skipped == 1); /* warm-up */
        CHECK(isnan(sum.peak_flops_per_sec));
    }
    mfu_steps_destroy(s);
}

/* ---- HIP ---------------------------------------------------------------- */

static void test_hip(void)
{
    test_gpu_steady_state_zero_syncs(MFU_CLOCK_HIP, "hipEventRecord",
                                     "hipEventSynchronize");
    CHECK(fake.call_count("cuEventRecord") == 0);
}

int main(void)
{
    if (!fake_load("test_steps")) {
        CHECK(!"fake driver loaded");
        return check_summary("test_steps");
    }
    test_gpu_steady_state_zero_syncs(MFU_CLOCK_CUDA, "cuEventRecord", "cuEventSynchronize");
    test_ring_sized_from_events_max();
    test_pool_full_wait_keeps_every_time();
    test_masking_rules();
    test_overcompute();
    test_summary_with_window_totals();
    test_bad_values_are_unknown();
    test_unknown_model_flops_leave_the_window();
    test_cpu_clock();
    test_fallback_at_create();
    test_fallback_mid_run("cuEventRecord");
    test_fallback_mid_run("cuEventQuery");
    test_fallback_mid_run("cuEventElapsedTime");
    test_fallback_in_flush();
    test_close();
    test_config_domains();
    test_hip();
    fake_unload();
    return check_summary("test_steps");
}
