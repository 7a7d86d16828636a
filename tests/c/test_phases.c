/*
 * test_phases.c -- phases and excluded intervals of the step engine
 * (core/steps/steps.h "Phases", "Excluded intervals"; core/base/phases.h).
 *
 * The GPU clock runs on the fake driver, whose host clock is virtual and
 * whose GPU does `work_ns` of work before each record (then the record
 * completes at max(previous + work, host now + lag)): every phase second is
 * checked exactly, with the GPU timeline written beside it. The CPU clock
 * is checked with lower bounds only.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fake_driver/fake_knobs.h"
#include "mfu_limits.h"
#include "phases.h"
#include "steps.h"
#include "steps_fixture.h"
#include "test_clock.h"

enum { MS = 1000000 }; /* nanoseconds in a millisecond */

/* Record with `work_ms` of GPU work before it. */
static void work(uint64_t work_ms)
{
    fake.set_work_ns(work_ms * MS);
}

static void test_names(void)
{
    mfu_phase p = MFU_PHASE_NONE;
    for (int i = 0; i < MFU_PHASE_COUNT; i++) {
        CHECK(mfu_phase_from_name(mfu_phase_name((mfu_phase)i), &p) == MFU_OK);
        CHECK(p == (mfu_phase)i);
    }
    CHECK(mfu_phase_name(MFU_PHASE_NONE) == NULL);
    CHECK(mfu_phase_from_name("Data", &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_phase_from_name("", &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_phase_from_name(NULL, &p) == MFU_ERR_INVALID_ARGUMENT);
}

/* The GPU timeline decides: a host stall while the GPU still works costs
 * nothing; a stall after the GPU drained counts. Zero synchronizing calls. */
static void test_gpu_timeline(void)
{
    mfu_phase_summary ph;
    mfu_steps_summary sum;
    mfu_steps *s;
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    boundary(s);                                      /* GPU 0 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK); /* GPU 0 */
    work(4);
    CHECK(mfu_steps_phase_switch(s, MFU_PHASE_BACKWARD) == MFU_OK); /* GPU 4: forward 4 */
    work(6);
    CHECK(mfu_steps_phase_switch(s, MFU_PHASE_DATA) == MFU_OK);     /* GPU 10: backward 6 */
    work(0);
    fake.advance(5 * MS); /* host stalls to 5 ms; the GPU is busy until 10 */
    CHECK(mfu_steps_phase_switch(s, MFU_PHASE_OPTIMIZER) == MFU_OK); /* GPU max(10, 5) = 10: data 0 */
    work(2);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 12: optimizer 2 */
    CHECK(mfu_steps_phase_depth(s) == 0);
    work(0);
    fake.advance(10 * MS); /* host at 15 ms: the GPU drained at 12 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);      /* GPU 15 */
    fake.advance(3 * MS);  /* host stall with an idle GPU */
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 18: data +3 */
    work(1);
    CHECK(boundary(s) == 0);                                        /* GPU 19: period 19 */
    fake.advance(10 * MS);
    mfu_steps_phases(s, &ph);
    mfu_steps_summarize(s, &sum);
    CHECK(ph.steps == 1 && sum.window.steps == 1);
    CHECK_NEAR(sum.window.step_s_mean, 19e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_FORWARD], 4e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_BACKWARD], 6e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_DATA], 3e-3, 1e-9);     /* 0 (busy) + 3 (drained) */
    CHECK_NEAR(ph.seconds[MFU_PHASE_OPTIMIZER], 2e-3, 1e-9);
    CHECK(ph.seconds[MFU_PHASE_COMMUNICATION] == 0.0);
    CHECK(ph.marked == ((1u << MFU_PHASE_FORWARD) | (1u << MFU_PHASE_BACKWARD)
                        | (1u << MFU_PHASE_DATA) | (1u << MFU_PHASE_OPTIMIZER)));
    CHECK(ph.excluded_s == 0.0);
    CHECK(fake.sync_calls() == 0);
    mfu_steps_destroy(s);
}

/* A step's idle time (step_fields.h, idle_s): from the end of a phase to
 * the start of the next, none running -- not before the step's first phase
 * nor after its last, not across a switch; unknown in a step that marked
 * none. Its share of the step is the waterfall's `idle`, out of `other`. */
static void test_idle_between_phases(void)
{
    mfu_step_record rec[3];
    mfu_steps_summary sum;
    mfu_steps *s;
    const mfu_waterfall *w = &sum.window.waterfall;
    double shares[MFU_LOSS_COUNT + MFU_FIELD_COUNT];
    size_t n = 0;
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    boundary(s);                                                    /* GPU 0 */
    fake.advance(2 * MS);                          /* before the first phase: not idle */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK);   /* GPU 2 */
    work(3);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 5: forward 3 */
    work(0);
    fake.advance(7 * MS);                          /* host at 9: the GPU drained at 5 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_BACKWARD) == MFU_OK);  /* GPU 9: idle 4 */
    work(2);
    CHECK(mfu_steps_phase_switch(s, MFU_PHASE_OPTIMIZER) == MFU_OK); /* GPU 11: no gap */
    work(1);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 12 */
    work(0);
    fake.advance(4 * MS);                                           /* host at 13 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);      /* GPU 13: idle +1 */
    fake.advance(1 * MS);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 14 */
    fake.advance(6 * MS);                          /* after the last phase: not idle */
    boundary(s);                                                    /* GPU 20: period 20 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK);   /* GPU 20 */
    fake.advance(2 * MS);
    boundary(s);                          /* GPU 22: forward 2, closed by the boundary */
    fake.advance(1 * MS);
    boundary(s);                                         /* GPU 23: no phase marked */
    mfu_steps_flush(s);
    CHECK(mfu_steps_window(s, 3, rec) == 3);
    CHECK_NEAR(rec[0].work.idle_s, 5e-3, 1e-9);                     /* 4 + 1 */
    CHECK(rec[1].work.idle_s == 0.0);                               /* one phase: no gap */
    CHECK(isnan(rec[2].work.idle_s));                               /* none marked */
    mfu_steps_summarize(s, &sum);
    CHECK(isnan(sum.window.totals.idle_s) && w->formed);   /* step 3 is in the window */
    CHECK(!(w->fields_present & MFU_STEP_IDLE_S));          /* no idle share: unknown */
    boundary(s);                                        /* step 4: no phase either */
    mfu_steps_destroy(s);

    /* The two steps with phases alone (a window of 2): idle 5 + 0 ms over
     * 20 + 2 ms, the share (5 / 2) / (22 / 2); the shares still add up to 1. */
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    boundary(s);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK);   /* GPU 0 */
    fake.advance(3 * MS);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 3 */
    fake.advance(5 * MS);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_BACKWARD) == MFU_OK);  /* GPU 8: idle 5 */
    fake.advance(12 * MS);
    boundary(s);                                                    /* GPU 20 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK);
    fake.advance(2 * MS);
    boundary(s);                                                    /* GPU 22 */
    mfu_steps_flush(s);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 2 && sum.window.totals.idle_s == 5e-3);
    CHECK(w->formed && (w->fields_present & MFU_STEP_IDLE_S));
    CHECK_NEAR(w->field_share.idle_s, 2.5e-3 / 11e-3, 1e-9);
    shares[n++] = sum.window.metrics.mfu;
    for (int l = 0; l < MFU_LOSS_COUNT; l++)
        if (w->present & (1u << l))
            shares[n++] = w->share[l];
    shares[n++] = w->field_share.idle_s;
    CHECK(mfu_fsum(shares, n, 0.0) == 1.0);
    CHECK(fake.sync_calls() <= 1);                                  /* the flush */
    mfu_steps_destroy(s);
}

/* Excluded time leaves the step's period (and the running phase), as far
 * as the GPU sat idle meanwhile. */
static void test_exclusion(void)
{
    mfu_phase_summary ph;
    mfu_steps_summary sum;
    mfu_steps *s;
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    boundary(s);                                            /* GPU 0 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK);
    work(2);
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);            /* GPU 2: forward 2 so far */
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);            /* nested: no mark */
    work(0);
    fake.advance(10 * MS);                                  /* the GPU drained at 2 */
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);              /* GPU 10: 8 excluded */
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);              /* not excluding: no-op */
    work(1);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                /* GPU 11: forward 2 + 1 */
    work(0);
    CHECK(boundary(s) == 0);                                /* GPU 11: period 11 - 8 */
    /* Step 2: excluded while the GPU is busy costs nothing. */
    work(10);
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);            /* GPU 21 */
    work(0);
    fake.advance(5 * MS);                                   /* host 15 < 21 */
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);              /* GPU 21: 0 excluded */
    CHECK(boundary(s) == 0);                                /* GPU 21: period 10 */
    fake.advance(20 * MS);
    mfu_steps_phases(s, &ph);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 2);
    CHECK_NEAR(sum.window.step_s_min, 3e-3, 1e-9);           /* 11 - 8 */
    CHECK_NEAR(sum.window.step_s_max, 10e-3, 1e-9);
    CHECK_NEAR(ph.excluded_s, 8e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_FORWARD], 3e-3, 1e-9);
    CHECK(fake.sync_calls() == 0);
    mfu_steps_destroy(s);
}

/* Nesting: the inner phase wins, the outer resumes; a boundary closes what
 * is left open; misuse is refused and changes nothing. */
static void test_nesting_and_misuse(void)
{
    mfu_phase_summary ph;
    mfu_steps *s;
    long records;
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    /* Before the first boundary: nesting tracked, no mark taken. */
    records = fake.call_count("cuEventRecord");
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);
    CHECK(fake.call_count("cuEventRecord") == records);
    CHECK(mfu_steps_phase_end(s) == MFU_ERR_INVALID_ARGUMENT);

    boundary(s);                                            /* GPU 0 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);
    work(1);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK); /* GPU 1: data 1 */
    work(2);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                /* GPU 3: forward 2, data resumes */
    work(4);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_BACKWARD) == MFU_OK); /* GPU 7: data +4 */
    CHECK(mfu_steps_phase_depth(s) == 2);
    work(1);
    CHECK(boundary(s) == 2);                                /* GPU 8: backward 1; both closed */
    CHECK(mfu_steps_phase_depth(s) == 0);
    CHECK(mfu_steps_phase_end(s) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_NONE) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_steps_phase_switch(s, (mfu_phase)99) == MFU_ERR_INVALID_ARGUMENT);
    work(0);
    for (int i = 0; i < MFU_PHASE_DEPTH_MAX; i++)
        CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_steps_phase_depth(s) == MFU_PHASE_DEPTH_MAX);
    CHECK(boundary(s) == MFU_PHASE_DEPTH_MAX);
    fake.advance(20 * MS);
    mfu_steps_phases(s, &ph);
    CHECK(ph.steps == 2);
    CHECK_NEAR(ph.seconds[MFU_PHASE_DATA], 5e-3, 1e-9);     /* 1 + 4; step 2: 0 */
    CHECK_NEAR(ph.seconds[MFU_PHASE_FORWARD], 2e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_BACKWARD], 1e-3, 1e-9);
    CHECK(fake.sync_calls() == 0);
    mfu_steps_destroy(s);
}

/* The ring holds one record per mark: with 5 marks per step and the GPU
 * far behind, the pool fills and waits, yet no record is lost and every
 * phase keeps its GPU time (1 ms of work before each record). */
static void test_ring_bound_with_phases(void)
{
    mfu_steps_config c;
    mfu_steps_counters counters;
    mfu_phase_summary ph;
    mfu_steps_summary sum;
    mfu_steps *s = NULL;
    fake.reset();
    memset(&c, 0, sizeof c);
    c.timer.clock = MFU_CLOCK_CUDA;
    c.timer.events_initial = 2;
    c.timer.events_max = 4;
    c.timer.history = 4;
    c.window = 100;
    c.per_step.model_flops = 1e12;
    c.per_step.executed_flops = NAN;
    c.per_step.param_bytes = NAN;
    c.peak.flops_per_sec = 1e15;
    c.peak.bytes_per_sec = NAN;
    c.peak.num_devices = 1;
    CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    if (s == NULL)
        return;
    work(1);
    for (int i = 0; i < 50; i++) {
        boundary(s);
        mfu_steps_phase_switch(s, MFU_PHASE_DATA);
        mfu_steps_phase_switch(s, MFU_PHASE_FORWARD);
        mfu_steps_phase_switch(s, MFU_PHASE_BACKWARD);
        mfu_steps_phase_switch(s, MFU_PHASE_OPTIMIZER);
        mfu_steps_phase_end(s);
    }
    boundary(s);
    mfu_steps_flush(s);
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.pushed == 50 && counters.dropped == 0 && counters.pending == 0);
    CHECK(counters.timer.pool_full_waits > 0);
    mfu_steps_phases(s, &ph);
    mfu_steps_summarize(s, &sum);
    CHECK(ph.steps == 50 && sum.window.steps == 50);
    CHECK_NEAR(sum.window.step_s_mean, 6e-3, 1e-9); /* 6 records of 1 ms per step */
    CHECK_NEAR(ph.seconds[MFU_PHASE_DATA], 50 * 1e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_FORWARD], 50 * 1e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_BACKWARD], 50 * 1e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_OPTIMIZER], 50 * 1e-3, 1e-9);
    mfu_steps_destroy(s);
}

/* The phases are read from the window's step records: warm-up steps and
 * steps that left the window are not in the sums. Window 2, warm-up 1; step
 * k has k ms of data and 0.5 ms of the tracker's own time. */
static void test_phases_follow_the_window(void)
{
    mfu_steps_config c;
    mfu_phase_summary ph;
    mfu_steps *s = NULL;
    fake.reset();
    work(0);
    memset(&c, 0, sizeof c);
    c.timer.clock = MFU_CLOCK_CUDA;
    c.window = 2;
    c.warmup = 1;
    c.per_step.model_flops = 1e12;
    c.per_step.executed_flops = c.per_step.param_bytes = NAN;
    c.peak.flops_per_sec = 1e15;
    c.peak.bytes_per_sec = NAN;
    c.peak.num_devices = 1;
    CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    if (s == NULL)
        return;
    boundary(s);
    for (int k = 1; k <= 4; k++) {
        CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);
        fake.advance((uint64_t)k * MS);               /* an idle GPU: k ms of data */
        CHECK(mfu_steps_phase_end(s) == MFU_OK);
        CHECK(mfu_steps_exclude_begin(s) == MFU_OK);
        fake.advance(MS / 2);
        CHECK(mfu_steps_exclude_end(s) == MFU_OK);
        boundary(s);
    }
    mfu_steps_flush(s);
    mfu_steps_phases(s, &ph);
    /* steps 1 (warm-up) and 2 (evicted from the window) are out: 3 + 4 */
    CHECK(ph.steps == 2);
    CHECK_NEAR(ph.seconds[MFU_PHASE_DATA], 7e-3, 1e-9);
    CHECK_NEAR(ph.excluded_s, 1e-3, 1e-9);            /* 0.5 + 0.5 */
    CHECK(ph.marked == (1u << MFU_PHASE_DATA));
    mfu_steps_destroy(s);
}

/* A phase that runs only inside an excluded interval (a wait inside the
 * tracker's own aggregation) is not marked in the step: it had no time in
 * it. One that runs on after the interval is. */
static void test_phase_only_inside_an_exclusion_is_not_marked(void)
{
    mfu_phase_summary ph;
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, 0);
    if (s == NULL)
        return;
    boundary(s);
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_ALL_GATHER) == MFU_OK);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_OPTIMIZER) == MFU_OK);
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);       /* the optimizer runs on */
    CHECK(mfu_steps_phase_end(s) == MFU_OK);
    boundary(s);
    mfu_steps_phases(s, &ph);
    CHECK(ph.steps == 1);
    CHECK(ph.marked == (1u << MFU_PHASE_OPTIMIZER));
    CHECK(ph.seconds[MFU_PHASE_ALL_GATHER] == 0.0);
    mfu_steps_destroy(s);
}

/* Badput phases (docs/goodput.md) leave the step like the tracker's own time, are
 * booked in the ledger's totals as they end -- a checkpoint after the last
 * boundary too -- and the ledger sums the pushed steps' periods, step phases
 * and FLOPs since creation. GPU timeline beside each mark. */
static void test_badput_phases_and_the_ledger(void)
{
    mfu_steps_ledger ledger;
    mfu_phase_summary ph;
    mfu_steps_summary sum;
    mfu_steps *s;
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.steps == 0 && isnan(ledger.first_boundary_unix_s));
    CHECK(isnan(ledger.first_step_s));
    CHECK(mfu_phase_leaves_step(MFU_PHASE_CHECKPOINT) && mfu_phase_leaves_step(MFU_PHASE_EVAL)
          && mfu_phase_leaves_step(MFU_PHASE_COMPILE));
    CHECK(!mfu_phase_leaves_step(MFU_PHASE_DATA) && !mfu_phase_leaves_step(MFU_PHASE_NONE));
    boundary(s);                                                    /* GPU 0 */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);      /* GPU 0 */
    work(2);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_COMPILE) == MFU_OK);   /* GPU 2: data 2 */
    work(30);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 32: compile 30 */
    work(1);
    CHECK(mfu_steps_phase_switch(s, MFU_PHASE_FORWARD) == MFU_OK);  /* GPU 33: data +1 */
    work(4);
    CHECK(boundary(s) == 1);                    /* GPU 37: forward 4; period 37 - 30 = 7 */
    work(0);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_CHECKPOINT) == MFU_OK); /* GPU 37 */
    fake.advance(100 * MS);                     /* host writes the checkpoint; GPU idle */
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);                    /* GPU 100: ckpt 63 */
    fake.advance(5 * MS);
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);                      /* GPU 105: own 5 */
    fake.advance(5 * MS);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);                        /* GPU 110: ckpt +5 */
    work(3);
    CHECK(boundary(s) == 0);                    /* GPU 113: period 76 - 68 - 5 = 3 */
    work(0);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_EVAL) == MFU_OK);      /* GPU 113 */
    fake.advance(200 * MS);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);    /* GPU 310 (host): eval 197, no boundary after */
    mfu_steps_flush(s);
    mfu_steps_phases(s, &ph);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 2);
    CHECK_NEAR(sum.window.window_s, 10e-3, 1e-9);                   /* 7 + 3 */
    CHECK_NEAR(ph.seconds[MFU_PHASE_COMPILE], 30e-3, 1e-9);
    CHECK_NEAR(ph.seconds[MFU_PHASE_CHECKPOINT], 68e-3, 1e-9);      /* 63 + 5 */
    CHECK_NEAR(ph.excluded_s, 30e-3 + 68e-3 + 5e-3, 1e-9);          /* badput + own */
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.steps == 2 && ledger.dropped == 0 && ledger.unknown_flops_steps == 0);
    CHECK_NEAR(ledger.step_s, 10e-3, 1e-9);
    CHECK_NEAR(ledger.phase_s[MFU_PHASE_DATA], 3e-3, 1e-9);         /* 2 + 1 */
    CHECK_NEAR(ledger.phase_s[MFU_PHASE_FORWARD], 4e-3, 1e-9);
    CHECK_NEAR(ledger.phase_s[MFU_PHASE_COMPILE], 30e-3, 1e-9);
    CHECK_NEAR(ledger.phase_s[MFU_PHASE_CHECKPOINT], 68e-3, 1e-9);
    CHECK_NEAR(ledger.phase_s[MFU_PHASE_EVAL], 197e-3, 1e-9);       /* after the last boundary */
    CHECK_NEAR(ledger.own_s, 5e-3, 1e-9);
    CHECK(ledger.model_flops == 2e12);                              /* 2 steps x 1e12 */
    CHECK(ledger.first_boundary_unix_s > 1.5e9);                    /* a wall-clock time */
    CHECK_NEAR(ledger.first_step_s, 7e-3, 1e-9);                    /* the first period, kept */
    CHECK(fake.sync_calls() <= 1);                                  /* the flush at most */
    mfu_steps_destroy(s);
}

/* A step whose model FLOPs are unknown is counted, not summed. */
static void test_ledger_unknown_flops(void)
{
    const mfu_step_report bad = {.given = MFU_STEP_MODEL_FLOPS, .work = {.model_flops = NAN}};
    mfu_step_outcome outcome;
    mfu_steps_ledger ledger;
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, 0);
    if (s == NULL)
        return;
    boundary(s);
    boundary(s);
    CHECK(mfu_steps_step(s, &bad, &outcome) == MFU_OK && outcome.bad == MFU_STEP_MODEL_FLOPS);
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.steps == 2 && ledger.unknown_flops_steps == 1 && ledger.model_flops == 1e12);
    CHECK(ledger.step_s >= 0.0 && !isnan(ledger.first_boundary_unix_s));
    mfu_steps_destroy(s);
}

/* A clock failure inside an exclusion and a badput phase: nothing begun on
 * the failed GPU clock is ended by a CPU time (the ledger keeps no such
 * interval: found by fuzz_steps). */
static void test_fallback_inside_an_exclusion(void)
{
    mfu_steps_ledger ledger;
    mfu_steps *s;
    fake.reset();
    work(0);
    s = steps_on(MFU_CLOCK_CUDA, 0);
    if (s == NULL)
        return;
    fake.advance(1000 * MS);                       /* GPU times far from the CPU clock's */
    boundary(s);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_CHECKPOINT) == MFU_OK);
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);
    mfu_steps_poll(s);                             /* both marks drained */
    fake.fail_next("cuEventRecord", 700);
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);     /* fails: the CPU clock takes over */
    CHECK(mfu_steps_clock(s) == MFU_CLOCK_CPU);
    test_clock_virtual(1);                         /* the CPU time: the test's */
    boundary(s);                                   /* restarts the clock */
    test_clock_advance_ns(5 * MS);
    boundary(s);
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.own_s == 0.0 && ledger.phase_s[MFU_PHASE_CHECKPOINT] == 0.0);
    CHECK(ledger.steps == 2 && ledger.dropped == 1);
    CHECK_NEAR(ledger.step_s, 5e-3, 1e-9);         /* the CPU step alone, no GPU time in it */
    mfu_steps_destroy(s);
    test_clock_virtual(0);
}

static void test_cpu_clock(void)
{
    const struct timespec two_ms = {0, 2 * MS};
    mfu_phase_summary ph;
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, 0);
    if (s == NULL)
        return;
    boundary(s);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_OK);
    nanosleep(&two_ms, NULL);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);
    nanosleep(&two_ms, NULL);
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);
    boundary(s);
    mfu_steps_phases(s, &ph);
    CHECK(ph.steps == 1 && ph.seconds[MFU_PHASE_DATA] >= 2e-3 && ph.excluded_s >= 2e-3);
    mfu_steps_close(s);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_DATA) == MFU_ERR_UNAVAILABLE);
    mfu_steps_destroy(s);
}

int main(void)
{
    if (!fake_load("test_phases")) {
        CHECK(!"fake driver loaded");
        return check_summary("test_phases");
    }
    test_names();
    test_gpu_timeline();
    test_idle_between_phases();
    test_exclusion();
    test_nesting_and_misuse();
    test_ring_bound_with_phases();
    test_phases_follow_the_window();
    test_phase_only_inside_an_exclusion_is_not_marked();
    test_badput_phases_and_the_ledger();
    test_ledger_unknown_flops();
    test_fallback_inside_an_exclusion();
    test_cpu_clock();
    fake_unload();
    return check_summary("test_phases");
}
