/* test_metrics.c -- utilization arithmetic (core/steps/stats.h: mfu_metrics_compute
 * and the validators) and the monotonic clock, against hand arithmetic. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "stats.h"
#include "test_clock.h"
#include "timing.h"

static void test_metrics_hand_arithmetic(void)
{
    /* 3e12 model FLOPs, 4e12 executed, 4e9 bytes, 8192 tokens in 0.5 s on
     * 2 devices of 100 TFLOP/s and 2 TB/s. */
    mfu_work work = {.model_flops = 3e12, .executed_flops = 4e12,
                     .param_bytes = 4e9, .num_tokens = 8192};
    mfu_peak peak = {.flops_per_sec = 100e12, .bytes_per_sec = 2e12,
                     .num_devices = 2};
    mfu_metrics m;
    mfu_metrics_compute(&work, &peak, 0.5, &m);
    CHECK_NEAR(m.achieved_flops_per_sec, 6e12, 1e-15);  /* 3e12 / 0.5 */
    CHECK_NEAR(m.mfu, 0.03, 1e-15);                     /* 6e12 / 200e12 */
    CHECK_NEAR(m.hfu, 0.04, 1e-15);                     /* 8e12 / 200e12 */
    CHECK_NEAR(m.mbu, 0.002, 1e-15);                    /* 8e9 / 4e12 */
    CHECK_NEAR(m.achieved_bytes_per_sec, 8e9, 1e-15);
    CHECK_NEAR(m.tokens_per_sec, 16384.0, 1e-15);       /* 8192 / 0.5 */
    CHECK_NEAR(m.elapsed_s, 0.5, 0.0);
}

static void test_unknowns_stay_unknown(void)
{
    mfu_work work = {.model_flops = 1e12, .executed_flops = NAN,
                     .param_bytes = NAN, .num_tokens = NAN};
    mfu_peak peak = {.flops_per_sec = NAN, .bytes_per_sec = NAN,
                     .num_devices = 1};
    mfu_metrics m;
    mfu_metrics_compute(&work, &peak, 2.0, &m);
    CHECK(isnan(m.mfu));   /* no peak: no MFU, never a guess */
    CHECK(isnan(m.hfu));
    CHECK(isnan(m.mbu));
    CHECK(isnan(m.tokens_per_sec));
    CHECK_NEAR(m.achieved_flops_per_sec, 5e11, 1e-15); /* still known */
}

static void test_no_rate_without_time(void)
{
    mfu_work work = {.model_flops = 1e12, .executed_flops = 1e12,
                     .param_bytes = 1, .num_tokens = 1};
    mfu_peak peak = {.flops_per_sec = 1e12, .bytes_per_sec = 1e12,
                     .num_devices = 1};
    double bad_times[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++) {
        mfu_metrics m;
        mfu_metrics_compute(&work, &peak, bad_times[i], &m);
        CHECK(isnan(m.mfu) && isnan(m.achieved_flops_per_sec)
              && isnan(m.tokens_per_sec) && isnan(m.mbu));
    }
}

static void test_mfu_above_one_is_not_clamped(void)
{
    mfu_work work = {.model_flops = 5e12, .executed_flops = NAN,
                     .param_bytes = NAN, .num_tokens = NAN};
    mfu_peak peak = {.flops_per_sec = 1e12, .bytes_per_sec = NAN,
                     .num_devices = 1};
    mfu_metrics m;
    mfu_metrics_compute(&work, &peak, 1.0, &m);
    CHECK_NEAR(m.mfu, 5.0, 1e-15);
}

static void test_validation_names_the_field(void)
{
    const char *bad = NULL;
    mfu_work ok = {.model_flops = 1, .executed_flops = NAN,
                   .param_bytes = 0, .num_tokens = NAN};
    CHECK(mfu_work_validate(&ok, &bad) == MFU_OK);

    mfu_work w = ok;
    w.model_flops = NAN; /* the MFU numerator is required */
    CHECK(mfu_work_validate(&w, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "model_flops") == 0);
    w = ok;
    w.model_flops = -1;
    CHECK(mfu_work_validate(&w, &bad) == MFU_ERR_INVALID_ARGUMENT);
    w = ok;
    w.executed_flops = INFINITY;
    CHECK(mfu_work_validate(&w, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "executed_flops") == 0);
    w = ok;
    w.param_bytes = -0.5;
    CHECK(mfu_work_validate(&w, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "param_bytes") == 0);
    w = ok;
    w.num_tokens = -INFINITY;
    CHECK(mfu_work_validate(&w, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "num_tokens") == 0);

    mfu_peak p = {.flops_per_sec = 1e12, .bytes_per_sec = NAN, .num_devices = 1};
    CHECK(mfu_peak_validate(&p, &bad) == MFU_OK);
    p.flops_per_sec = 0.0; /* a zero peak would make MFU infinite */
    CHECK(mfu_peak_validate(&p, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "peak_flops_per_sec") == 0);
    p.flops_per_sec = 1e12;
    p.bytes_per_sec = -1.0;
    CHECK(mfu_peak_validate(&p, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "peak_bytes_per_sec") == 0);
    p.bytes_per_sec = NAN;
    p.num_devices = 0;
    CHECK(mfu_peak_validate(&p, &bad) == MFU_ERR_INVALID_ARGUMENT
          && strcmp(bad, "num_gpus") == 0);
}

static void test_monotonic_clock(void)
{
    uint64_t a = 0, b = 0, before = test_real_ns();
    CHECK(mfu_clock_monotonic_ns(&a) == MFU_OK);
    /* ~20 ms of work measured by the clock itself must not go backwards
     * and must be plausible: at least the sleep, at most the test's own
     * bracket of the two readings (a clock in the wrong unit fails one). */
    struct timespec req = {.tv_sec = 0, .tv_nsec = 20000000};
    nanosleep(&req, NULL);
    CHECK(mfu_clock_monotonic_ns(&b) == MFU_OK);
    uint64_t after = test_real_ns();
    double elapsed = mfu_clock_elapsed_s(a, b);
    CHECK(elapsed >= 0.019 && elapsed <= test_bracket_s(before, after));
    CHECK(mfu_clock_elapsed_s(b, a) == -elapsed); /* reversed pair: negative, no wrap */
    CHECK_NEAR(mfu_clock_elapsed_s(0, 1500000000u), 1.5, 1e-15);
}

int main(void)
{
    test_metrics_hand_arithmetic();
    test_unknowns_stay_unknown();
    test_no_rate_without_time();
    test_mfu_above_one_is_not_clamped();
    test_validation_names_the_field();
    test_monotonic_clock();
    return check_summary("test_metrics");
}
