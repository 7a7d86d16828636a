/*
 * test_window.c -- windowed step statistics (stats.h, mfu_window_*), with
 * the hand arithmetic next to each expected value.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "stats.h"

static mfu_work work_of(double model, double executed, double bytes, double tokens)
{
    mfu_work w = {.model_flops = model, .executed_flops = executed,
                  .param_bytes = bytes, .num_tokens = tokens};
    return w;
}

static const mfu_peak peak = {.flops_per_sec = 100e12, .bytes_per_sec = 1e12,
                              .num_devices = 1};

static void test_empty_window_is_nan(void)
{
    mfu_window *w = NULL;
    mfu_window_summary s;
    CHECK(mfu_window_create(4, 0, &w) == MFU_OK);
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 0 && s.steps_seen == 0 && s.steps_skipped == 0);
    CHECK(isnan(s.step_s_mean) && isnan(s.step_s_min) && isnan(s.step_s_max));
    CHECK(isnan(s.window_s) && isnan(s.totals.model_flops));
    CHECK(isnan(s.metrics.mfu) && isnan(s.metrics.tokens_per_sec));
    CHECK(isnan(s.metrics.achieved_flops_per_sec));
    mfu_window_destroy(w);
}

static void test_hand_computed_window(void)
{
    mfu_window *w = NULL;
    mfu_window_summary s;
    mfu_work a = work_of(100e12, 130e12, 2e12, 1000);
    mfu_work b = work_of(100e12, 130e12, 2e12, 3000);
    mfu_work c = work_of(200e12, 260e12, 2e12, 2000);
    CHECK(mfu_window_create(8, 0, &w) == MFU_OK);
    CHECK(mfu_window_push(w, 1.0, &a, NULL) == MFU_OK);
    CHECK(mfu_window_push(w, 2.0, &b, NULL) == MFU_OK);
    CHECK(mfu_window_push(w, 5.0, &c, NULL) == MFU_OK);
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 3 && s.steps_seen == 3);
    CHECK_NEAR(s.window_s, 8.0, 1e-15);           /* 1 + 2 + 5 */
    CHECK_NEAR(s.step_s_mean, 8.0 / 3.0, 1e-15);  /* 8 / 3 */
    CHECK(s.step_s_min == 1.0 && s.step_s_max == 5.0);
    CHECK_NEAR(s.totals.model_flops, 400e12, 1e-15);
    /* Rates are sums over the window / time over the window:
     * tokens/s = (1000 + 3000 + 2000) / 8 = 750, not the mean of the
     * per-step rates (1000 + 1500 + 400) / 3 = 966.7. */
    CHECK_NEAR(s.metrics.tokens_per_sec, 750.0, 1e-12);
    CHECK_NEAR(s.metrics.achieved_flops_per_sec, 50e12, 1e-12); /* 400e12 / 8 */
    CHECK_NEAR(s.metrics.mfu, 0.5, 1e-12);    /* 50e12 / 100e12 */
    CHECK_NEAR(s.metrics.hfu, 0.65, 1e-12);   /* 520e12 / 8 / 100e12 */
    CHECK_NEAR(s.metrics.mbu, 0.75, 1e-12);   /* 6e12 / 8 / 1e12 */
    CHECK_NEAR(s.metrics.achieved_bytes_per_sec, 0.75e12, 1e-12);

    /* Two devices halve every utilization, not the rates. */
    {
        mfu_peak two = peak;
        two.num_devices = 2;
        CHECK(mfu_window_summarize(w, &two, &s, NULL) == MFU_OK);
        CHECK_NEAR(s.metrics.mfu, 0.25, 1e-12);
        CHECK_NEAR(s.metrics.tokens_per_sec, 750.0, 1e-12);
    }
    /* No peak known: utilizations NaN, rates still there. */
    {
        mfu_peak unknown = {.flops_per_sec = NAN, .bytes_per_sec = NAN, .num_devices = 1};
        CHECK(mfu_window_summarize(w, &unknown, &s, NULL) == MFU_OK);
        CHECK(isnan(s.metrics.mfu) && isnan(s.metrics.hfu) && isnan(s.metrics.mbu));
        CHECK_NEAR(s.metrics.achieved_flops_per_sec, 50e12, 1e-12);
    }
    mfu_window_destroy(w);
}

static void test_warmup_skip(void)
{
    mfu_window *w = NULL;
    mfu_window_summary s;
    mfu_work slow = work_of(1e12, NAN, NAN, 10);
    mfu_work fast = work_of(1e12, NAN, NAN, 10);
    CHECK(mfu_window_create(10, 3, &w) == MFU_OK);
    /* Three slow warm-up steps (compilation) are ignored. */
    for (int i = 0; i < 3; i++)
        CHECK(mfu_window_push(w, 30.0, &slow, NULL) == MFU_OK);
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 0 && s.steps_seen == 3 && s.steps_skipped == 3);
    CHECK(isnan(s.step_s_mean));
    CHECK(mfu_window_push(w, 0.5, &fast, NULL) == MFU_OK);
    CHECK(mfu_window_push(w, 1.5, &fast, NULL) == MFU_OK);
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 2 && s.steps_seen == 5 && s.steps_skipped == 3);
    CHECK_NEAR(s.step_s_mean, 1.0, 1e-15);     /* (0.5 + 1.5) / 2 */
    CHECK(s.step_s_max == 1.5);
    CHECK_NEAR(s.metrics.tokens_per_sec, 10.0, 1e-15); /* 20 / 2 */
    /* Unknown executed FLOPs and bytes: HFU and MBU unavailable. */
    CHECK(isnan(s.metrics.hfu) && isnan(s.metrics.mbu));
    CHECK_NEAR(s.metrics.mfu, 0.01, 1e-12);    /* 2e12 / 2 / 100e12 */

    /* Clear restarts the warm-up too. */
    mfu_window_clear(w);
    CHECK(mfu_window_push(w, 0.5, &fast, NULL) == MFU_OK);
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 0 && s.steps_seen == 1 && s.steps_skipped == 1);
    mfu_window_destroy(w);
}

static void test_ring_eviction(void)
{
    mfu_window *w = NULL;
    mfu_window_summary s;
    CHECK(mfu_window_create(3, 0, &w) == MFU_OK);
    /* Steps of 1, 2, ..., 10 s with 1 token per second of step. */
    for (int i = 1; i <= 10; i++) {
        mfu_work work = work_of(1e12 * i, NAN, NAN, (double)i);
        CHECK(mfu_window_push(w, (double)i, &work, NULL) == MFU_OK);
    }
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    /* Only 8, 9, 10 remain. */
    CHECK(s.steps == 3 && s.steps_seen == 10);
    CHECK_NEAR(s.window_s, 27.0, 1e-15);           /* 8 + 9 + 10 */
    CHECK_NEAR(s.step_s_mean, 9.0, 1e-15);
    CHECK(s.step_s_min == 8.0 && s.step_s_max == 10.0);
    CHECK_NEAR(s.totals.num_tokens, 27.0, 1e-15);
    CHECK_NEAR(s.metrics.achieved_flops_per_sec, 1e12, 1e-12); /* 27e12 / 27 */

    /* A step with unknown tokens poisons tokens/s only while it is in the
     * window: three more known steps push it out. */
    {
        mfu_work unknown_tokens = work_of(1e12, NAN, NAN, NAN);
        mfu_work known = work_of(1e12, NAN, NAN, 4);
        CHECK(mfu_window_push(w, 1.0, &unknown_tokens, NULL) == MFU_OK);
        CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
        CHECK(isnan(s.metrics.tokens_per_sec));
        CHECK(!isnan(s.metrics.mfu));
        for (int i = 0; i < 3; i++)
            CHECK(mfu_window_push(w, 2.0, &known, NULL) == MFU_OK);
        CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
        CHECK_NEAR(s.metrics.tokens_per_sec, 2.0, 1e-15); /* 12 / 6 */
    }

    /* Memory is bounded: a million pushes into the same 3 slots. */
    {
        mfu_work work = work_of(1.0, 1.0, 1.0, 1.0);
        for (int i = 0; i < 1000000; i++)
            mfu_window_push(w, 0.25, &work, NULL);
        CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
        CHECK(s.steps == 3 && s.steps_seen == 1000014); /* 10 + 1 + 3 + 10^6 */
        CHECK_NEAR(s.step_s_mean, 0.25, 1e-15);
    }
    mfu_window_destroy(w);
}

static void test_bad_input(void)
{
    mfu_window *w = (mfu_window *)&w;
    mfu_window_summary s;
    mfu_work ok = work_of(1e12, NAN, NAN, 1);
    const char *bad = NULL;

    CHECK(mfu_window_create(0, 0, &w) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(w == NULL);
    CHECK(mfu_window_create((1u << 24) + 1, 0, &w) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_window_create(2, 0, &w) == MFU_OK);

    CHECK(mfu_window_push(w, -1.0, &ok, &bad) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(bad != NULL && strcmp(bad, "step_s") == 0);
    CHECK(mfu_window_push(w, NAN, &ok, &bad) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_window_push(w, INFINITY, &ok, NULL) == MFU_ERR_INVALID_ARGUMENT);
    {
        mfu_work neg_flops = work_of(-1.0, NAN, NAN, 1);
        mfu_work nan_flops = work_of(NAN, NAN, NAN, 1);
        mfu_work neg_tokens = work_of(1.0, NAN, NAN, -5);
        mfu_work inf_bytes = work_of(1.0, NAN, INFINITY, 1);
        mfu_work neg_executed = work_of(1.0, -1.0, NAN, 1);
        CHECK(mfu_window_push(w, 1.0, &neg_flops, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "model_flops") == 0);
        CHECK(mfu_window_push(w, 1.0, &nan_flops, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "model_flops") == 0);
        CHECK(mfu_window_push(w, 1.0, &neg_tokens, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "num_tokens") == 0);
        CHECK(mfu_window_push(w, 1.0, &inf_bytes, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "param_bytes") == 0);
        CHECK(mfu_window_push(w, 1.0, &neg_executed, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "executed_flops") == 0);
    }
    /* Rejected input is not recorded, not even as warm-up. */
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 0 && s.steps_seen == 0);

    /* A zero-length step is possible (no GPU work between two marks): kept,
     * but a window of zero time has no rates. */
    CHECK(mfu_window_push(w, 0.0, &ok, NULL) == MFU_OK);
    CHECK(mfu_window_summarize(w, &peak, &s, NULL) == MFU_OK);
    CHECK(s.steps == 1 && s.step_s_mean == 0.0 && isnan(s.metrics.tokens_per_sec));

    {
        mfu_peak zero_devices = {.flops_per_sec = 1e12, .bytes_per_sec = NAN,
                                 .num_devices = 0};
        mfu_peak negative = {.flops_per_sec = -1e12, .bytes_per_sec = NAN,
                             .num_devices = 1};
        CHECK(mfu_window_summarize(w, &zero_devices, &s, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "num_gpus") == 0);
        CHECK(mfu_window_summarize(w, &negative, &s, &bad) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(strcmp(bad, "peak_flops_per_sec") == 0);
    }
    mfu_window_destroy(w);
    mfu_window_destroy(NULL);
}

int main(void)
{
    test_empty_window_is_nan();
    test_hand_computed_window();
    test_warmup_skip();
    test_ring_eviction();
    test_bad_input();
    return check_summary("test_window");
}
