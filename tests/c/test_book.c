/*
 * test_book.c -- one record per step (core/steps/records.h, core/steps/steps.h
 * "Booking"): step ids, work booked onto a step after its boundary, the
 * window and the ledger read from the records, the ring's eviction and the
 * steps lost to a clock failure.
 *
 * GPU clocks run on the fake driver (tests/c/fake_driver), whose host clock
 * is virtual: with 2 ms of GPU work before each mark, every period is 2 ms
 * and nothing resolves before a flush, so a step can be booked while
 * pending. The arithmetic is written beside each expected value.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fake_driver/fake_knobs.h"
#include "mfu_limits.h"
#include "steps.h"

enum { MS = 1000000 }; /* nanoseconds in a millisecond */

static const mfu_step_report NO_REPORT = {.given = 0};

/* No per-step work: everything a step has is given or booked. */
static mfu_steps *steps_on(mfu_clock_kind clock, uint32_t window, uint64_t warmup)
{
    mfu_steps_config c;
    mfu_steps *s = NULL;
    memset(&c, 0, sizeof c);
    c.timer.clock = clock;
    c.window = window;
    c.warmup = warmup;
    c.per_step.model_flops = NAN;
    c.per_step.executed_flops = NAN;
    c.per_step.param_bytes = NAN;
    c.per_step.ideal_s = NAN;
    c.peak.flops_per_sec = 1e15;
    c.peak.bytes_per_sec = NAN;
    c.peak.num_devices = 1;
    CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    return s;
}

static mfu_steps *gpu_steps(uint32_t window, uint64_t warmup)
{
    fake.reset();
    fake.set_work_ns(2 * MS);
    return steps_on(MFU_CLOCK_CUDA, window, warmup);
}

static void boundary(mfu_steps *s)
{
    mfu_step_outcome outcome;
    CHECK(mfu_steps_step(s, &NO_REPORT, &outcome) == MFU_OK);
}

static mfu_step_report model(double model_flops)
{
    mfu_step_report r = NO_REPORT;
    r.given = MFU_STEP_MODEL_FLOPS;
    r.work.model_flops = model_flops;
    return r;
}

/* Book `report` onto `step`: the status, with the bad bits in *bad. */
static mfu_status book(mfu_steps *s, uint64_t step, mfu_step_report report, unsigned *bad)
{
    unsigned ignored;
    return mfu_steps_book(s, step, &report, bad != NULL ? bad : &ignored);
}

/* A step is bookable from its closing boundary on (pending or pushed), and
 * what is booked is what the window and the ledger read. */
static void test_book_pending_and_pushed(void)
{
    mfu_steps_summary sum;
    mfu_steps_ledger ledger;
    mfu_step_report tokens = NO_REPORT;
    unsigned bad = 99;
    mfu_steps *s = gpu_steps(10, 0);
    if (s == NULL)
        return;
    CHECK(book(s, 1, model(1e12), &bad) == MFU_ERR_NOT_FOUND && bad == 0); /* no step */
    boundary(s);                                  /* opens step 1 */
    CHECK(book(s, 1, model(1e12), NULL) == MFU_ERR_NOT_FOUND);            /* still open */
    boundary(s);                                  /* closes 1 (pending), opens 2 */
    CHECK(book(s, 1, model(1e12), &bad) == MFU_OK && bad == 0);
    CHECK(book(s, 2, model(1e12), NULL) == MFU_ERR_NOT_FOUND);
    boundary(s);                                  /* closes 2 */
    mfu_steps_flush(s);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 2 && sum.window.window_s == 4e-3);    /* 2 + 2 ms */
    CHECK(isnan(sum.window.metrics.mfu));         /* step 2's FLOPs unknown */
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.model_flops == 1e12 && ledger.unknown_flops_steps == 1);

    /* Step 2 booked after it was pushed: mfu = (1e12 + 3e12) / 4e-3 / 1e15 = 1. */
    tokens.given = MFU_STEP_MODEL_FLOPS | MFU_STEP_NUM_TOKENS | MFU_STEP_EXECUTED_FLOPS;
    tokens.work.model_flops = 3e12;
    tokens.work.num_tokens = 100;
    tokens.work.executed_flops = 6e12;
    CHECK(book(s, 2, tokens, &bad) == MFU_OK && bad == 0);
    mfu_steps_summarize(s, &sum);
    CHECK_NEAR(sum.window.metrics.mfu, 1.0, 1e-12);
    CHECK(sum.window.totals.model_flops == 4e12);
    CHECK(isnan(sum.window.metrics.tokens_per_sec)); /* step 1 has no tokens */
    CHECK(isnan(sum.window.metrics.hfu));            /* nor executed FLOPs */
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.model_flops == 4e12 && ledger.unknown_flops_steps == 0);

    /* Booking again replaces; a bad value is unknown and reported. */
    CHECK(book(s, 1, model(-1.0), &bad) == MFU_OK && bad == MFU_STEP_MODEL_FLOPS);
    mfu_steps_summarize(s, &sum);
    CHECK(isnan(sum.window.metrics.mfu));
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.model_flops == 3e12 && ledger.unknown_flops_steps == 1);
    CHECK(book(s, 99, model(NAN), &bad) == MFU_ERR_NOT_FOUND && bad == MFU_STEP_MODEL_FLOPS);
    CHECK(fake.sync_calls() <= 1);                /* the flush at most */
    mfu_steps_destroy(s);
}

/* Every field books onto its own part of the record; a bad over-compute is
 * 0 (as at a boundary), the others unknown. */
static void test_every_field(void)
{
    mfu_step_report all = NO_REPORT;
    mfu_step_record window[2];
    mfu_steps_summary sum;
    unsigned bad;
    mfu_steps *s = gpu_steps(10, 0);
    if (s == NULL)
        return;
    for (int i = 0; i < 3; i++)
        boundary(s);
    all.given = MFU_STEP_NUM_TOKENS | MFU_STEP_MODEL_FLOPS | MFU_STEP_EXECUTED_FLOPS
                | MFU_STEP_IDEAL_S | MFU_STEP_OVERCOMPUTE_FLOPS | MFU_STEP_LANGUAGE_FLOPS;
    all.work.num_tokens = 10;
    all.work.model_flops = 2e12;
    all.work.executed_flops = 3e12;
    all.work.ideal_s = 1e-3;
    all.work.overcompute_flops = 4e11;
    all.work.language_flops = 5e11;
    CHECK(book(s, 1, all, &bad) == MFU_OK && bad == 0);
    CHECK(book(s, 2, all, &bad) == MFU_OK && bad == 0);
    mfu_steps_flush(s);
    CHECK(mfu_steps_window(s, 0, NULL) == 2);
    CHECK(mfu_steps_window(s, 2, window) == 2);
    CHECK(window[0].id == 1 && window[1].id == 2 && window[1].period_s == 2e-3);
    CHECK(window[0].work.num_tokens == 10 && window[0].work.ideal_s == 1e-3);
    CHECK(window[0].work.overcompute_flops == 4e11 && window[0].work.language_flops == 5e11);
    mfu_steps_summarize(s, &sum);
    /* window 4 ms, peak 1e15: mfu 4e12 / 4e-3 / 1e15 = 1, hfu 1.5, mixed
     * 2e-3 / 4e-3 = 0.5, over-compute 8e11 / 4e-3 / 1e15 = 0.2, language
     * 1e12 / 4e-3 / 1e15 = 0.25, tokens 20 / 4e-3 = 5000 */
    CHECK_NEAR(sum.window.metrics.mfu, 1.0, 1e-12);
    CHECK_NEAR(sum.window.metrics.hfu, 1.5, 1e-12);
    CHECK_NEAR(sum.window.metrics.mfu_mixed, 0.5, 1e-12);
    CHECK_NEAR(sum.window.metrics.overcompute, 0.2, 1e-12);
    CHECK_NEAR(sum.window.metrics.mfu_language, 0.25, 1e-12);
    CHECK_NEAR(sum.window.metrics.tokens_per_sec, 5000.0, 1e-12);

    all.work.overcompute_flops = -1.0;
    all.work.language_flops = INFINITY;
    all.work.ideal_s = NAN;
    CHECK(book(s, 2, all, &bad) == MFU_OK);
    CHECK(bad == (MFU_STEP_OVERCOMPUTE_FLOPS | MFU_STEP_LANGUAGE_FLOPS | MFU_STEP_IDEAL_S));
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.totals.overcompute_flops == 4e11);       /* 4e11 + 0 */
    CHECK(isnan(sum.window.metrics.mfu_language) && isnan(sum.window.metrics.mfu_mixed));
    mfu_steps_destroy(s);
}

/* mfu_language needs model FLOPs > 0 beside the language FLOPs: the share
 * of no work is no figure. A step's language FLOPs are unknown until given
 * (at its boundary or booked), and a window total replaces the window's. */
static void test_language_needs_model_flops(void)
{
    mfu_step_report language = NO_REPORT;
    mfu_step_outcome outcome;
    mfu_steps_summary sum;
    mfu_steps *s = gpu_steps(10, 0);
    if (s == NULL)
        return;
    boundary(s);
    CHECK(mfu_steps_step(s, &language, &outcome) == MFU_OK); /* closes 1: none given */
    mfu_steps_flush(s);
    CHECK(book(s, 1, model(2e12), NULL) == MFU_OK);
    mfu_steps_summarize(s, &sum);
    CHECK(isnan(sum.window.totals.language_flops) && isnan(sum.window.metrics.mfu_language)); /* unknown, not 0 */
    CHECK(book(s, 1, model(NAN), NULL) == MFU_OK);
    language.given = MFU_STEP_LANGUAGE_FLOPS;
    language.work.language_flops = 1e12;
    CHECK(book(s, 1, language, NULL) == MFU_OK);
    mfu_steps_flush(s);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.totals.language_flops == 1e12 && isnan(sum.window.metrics.mfu_language));
    CHECK(book(s, 1, model(0.0), NULL) == MFU_OK);
    mfu_steps_summarize(s, &sum);
    CHECK(isnan(sum.window.metrics.mfu_language));
    CHECK(book(s, 1, model(2e12), NULL) == MFU_OK);
    mfu_steps_summarize(s, &sum);
    CHECK_NEAR(sum.window.metrics.mfu_language, 1e12 / 2e-3 / 1e15, 1e-12); /* 0.5 */
    /* a window total replaces the window's: 5e11 / 2e-3 / 1e15 = 0.25 */
    language.work.language_flops = 5e11;
    mfu_steps_summarize_with(s, &language, &sum);
    CHECK(sum.window.totals.language_flops == 5e11);
    CHECK_NEAR(sum.window.metrics.mfu_language, 0.25, 1e-12);
    /* ... and a boundary gives a step's own: step 2 closes with 3e11 */
    language.given = MFU_STEP_LANGUAGE_FLOPS | MFU_STEP_MODEL_FLOPS;
    language.work.model_flops = 1e12;
    language.work.language_flops = 3e11;
    CHECK(mfu_steps_step(s, &language, &outcome) == MFU_OK && outcome.bad == 0);
    mfu_steps_flush(s);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 2 && sum.window.totals.language_flops == 1e12 + 3e11);
    mfu_steps_destroy(s);
}

/* The window's records are its newest pushed steps: warm-up and steps that
 * left it are not copied (window 2, warm-up 1, 5 steps: steps 4 and 5). */
static void test_window_records(void)
{
    mfu_step_record window[4];
    mfu_steps *s = gpu_steps(2, 1);
    if (s == NULL)
        return;
    for (int i = 0; i < 6; i++)
        boundary(s);
    CHECK(book(s, 4, model(4e12), NULL) == MFU_OK);
    mfu_steps_flush(s);
    CHECK(mfu_steps_window(s, 4, window) == 2);
    CHECK(window[0].id == 4 && window[1].id == 5);
    CHECK(window[0].work.model_flops == 4e12 && isnan(window[1].work.model_flops));
    CHECK(window[0].state == MFU_STEP_PUSHED && window[1].period_s == 2e-3);
    CHECK(mfu_steps_window(s, 1, window) == 2 && window[0].id == 4); /* fewer copied */
    mfu_steps_destroy(s);
}

/* The ring keeps the window and MFU_STEPS_KEPT steps more (with room for
 * the steps a timer can have pending): older steps leave it, and their
 * model FLOPs stay in the ledger's totals, summed as one running sum. */
static void test_eviction_keeps_the_ledger(void)
{
    enum { WINDOW = 3, STEPS = 3000 };
    mfu_steps_ledger ledger;
    mfu_steps_summary sum;
    mfu_step_outcome outcome;
    double running = 0.0;
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, WINDOW, 1);
    if (s == NULL)
        return;
    boundary(s);
    for (int i = 1; i <= STEPS; i++) {
        mfu_step_report r = model(i % 7 == 0 ? NAN : 1e9 * i + 0.1);
        CHECK(mfu_steps_step(s, &r, &outcome) == MFU_OK);
        if (i % 7 != 0)
            running += 1e9 * i + 0.1;
    }
    mfu_steps_get_ledger(s, &ledger);
    CHECK(ledger.steps == STEPS && ledger.model_flops == running);  /* bit for bit */
    CHECK(ledger.unknown_flops_steps == STEPS / 7);                 /* 428 */
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == WINDOW && sum.window.steps_seen == STEPS);
    CHECK(sum.window.steps_skipped == 1);
    /* ring: WINDOW + KEPT + events_max (1024) + 2 = 2053 records, the open
     * one among them: steps 949 .. 3000 closed are held, 948 is gone */
    CHECK(book(s, STEPS - WINDOW - MFU_STEPS_KEPT, model(1.0), NULL) == MFU_OK);
    CHECK(book(s, 948, model(1.0), NULL) == MFU_ERR_NOT_FOUND);
    CHECK(book(s, 949, model(1.0), NULL) == MFU_OK);
    mfu_steps_destroy(s);
}

/* Steps lost to a clock failure have no record: their ids are skipped,
 * booking them finds nothing, and the step after keeps its own id. */
static void test_lost_steps_have_no_record(void)
{
    mfu_steps_counters counters;
    mfu_step_record window[4];
    mfu_steps *s;
    fake.reset();
    fake.set_gpu_lag_ns(5 * MS); /* nothing resolves before the flush */
    s = steps_on(MFU_CLOCK_CUDA, 10, 0);
    if (s == NULL)
        return;
    for (int i = 0; i < 4; i++) { /* opens 1, closes 1 .. 3, opens 4 */
        boundary(s);
        fake.advance(1 * MS);
    }
    CHECK(book(s, 3, model(1e12), NULL) == MFU_OK);
    CHECK(fake.fail_next("cuEventSynchronize", 700) == 0);
    mfu_steps_flush(s);                   /* 1 .. 3 dropped, 4 lost with its start */
    for (uint64_t id = 1; id <= 4; id++)
        CHECK(book(s, id, model(1e12), NULL) == MFU_ERR_NOT_FOUND);
    boundary(s);                          /* 4 dropped; opens 5 on the CPU clock */
    boundary(s);                          /* closes 5 */
    mfu_steps_get_counters(s, &counters);
    CHECK(counters.dropped == 4 && counters.pushed == 1);
    CHECK(book(s, 5, model(1e12), NULL) == MFU_OK);
    CHECK(mfu_steps_window(s, 4, window) == 1 && window[0].id == 5);
    CHECK(window[0].work.model_flops == 1e12);
    mfu_steps_destroy(s);
}

int main(void)
{
    if (!fake_load("test_book")) {
        CHECK(!"fake driver loaded");
        return check_summary("test_book");
    }
    test_book_pending_and_pushed();
    test_every_field();
    test_language_needs_model_flops();
    test_window_records();
    test_eviction_keeps_the_ledger();
    test_lost_steps_have_no_record();
    fake_unload();
    return check_summary("test_book");
}
