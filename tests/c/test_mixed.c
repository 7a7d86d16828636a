/*
 * test_mixed.c -- mixed precision (core/steps/mixed.h): ideal seconds, and the
 * step engine's window sum of them (core/steps/steps.h) on the CPU clock.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "mixed.h"
#include "steps.h"

/* H100 SXM dense peaks, FLOP/s (gpu_table.c): fp8 1978.9, bf16 989.4 TFLOP/s. */
static void h100_peaks(double peaks[MFU_DTYPE_COUNT])
{
    for (int d = 0; d < MFU_DTYPE_COUNT; d++)
        peaks[d] = NAN;
    peaks[MFU_DTYPE_FP8] = 1978.9e12;
    peaks[MFU_DTYPE_BF16] = 989.4e12;
}

static void test_ideal_s(void)
{
    double peaks[MFU_DTYPE_COUNT], flops[MFU_DTYPE_COUNT] = {0}, ideal = 0.0;
    mfu_dtype bad = MFU_DTYPE_FP64;
    h100_peaks(peaks);
    flops[MFU_DTYPE_FP8] = 3.9578e12;  /* 3.9578e12 / 1978.9e12 = 2e-3 s */
    flops[MFU_DTYPE_BF16] = 0.9894e12; /* 0.9894e12 / 989.4e12 = 1e-3 s */
    CHECK(mfu_mixed_ideal_s(flops, peaks, &ideal, &bad) == MFU_OK);
    CHECK_NEAR(ideal, 3e-3, 1e-12);
    /* Nothing to do: 0 s. */
    double none[MFU_DTYPE_COUNT] = {0};
    CHECK(mfu_mixed_ideal_s(none, peaks, &ideal, NULL) == MFU_OK && ideal == 0.0);
    /* FLOPs of a dtype the device has no peak for (fp64 here). */
    flops[MFU_DTYPE_FP64] = 1.0;
    CHECK(mfu_mixed_ideal_s(flops, peaks, &ideal, &bad) == MFU_ERR_NOT_FOUND);
    CHECK(bad == MFU_DTYPE_FP64 && isnan(ideal));
    flops[MFU_DTYPE_FP64] = 0.0;
    /* Bad FLOPs. */
    flops[MFU_DTYPE_BF16] = -1.0;
    CHECK(mfu_mixed_ideal_s(flops, peaks, &ideal, &bad) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(bad == MFU_DTYPE_BF16 && isnan(ideal));
    flops[MFU_DTYPE_BF16] = INFINITY;
    CHECK(mfu_mixed_ideal_s(flops, peaks, &ideal, NULL) == MFU_ERR_INVALID_ARGUMENT);
    /* A sum past DBL_MAX. */
    flops[MFU_DTYPE_BF16] = 1.7e308;
    peaks[MFU_DTYPE_BF16] = 1e-300;
    CHECK(mfu_mixed_ideal_s(flops, peaks, &ideal, NULL) == MFU_ERR_OVERFLOW && isnan(ideal));
}

static mfu_steps *cpu_steps(uint32_t window, uint64_t warmup, double ideal_default)
{
    mfu_steps_config c = {.timer = {.clock = MFU_CLOCK_CPU}, .window = window,
                          .warmup = warmup,
                          .per_step = {.model_flops = 1e12, .executed_flops = NAN,
                                       .param_bytes = NAN, .num_tokens = NAN,
                                       .ideal_s = ideal_default},
                          .peak = {.flops_per_sec = 989.4e12, .bytes_per_sec = NAN,
                                   .num_devices = 2}};
    mfu_steps *s = NULL;
    CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    return s;
}

static void step(mfu_steps *s, unsigned given, double model_flops, double ideal_s)
{
    mfu_step_report r = {.given = given, .work = {.model_flops = model_flops, .ideal_s = ideal_s}};
    mfu_step_outcome o;
    CHECK(mfu_steps_step(s, &r, &o) == MFU_OK);
}

static void test_window(void)
{
    mfu_steps_summary sum;
    /* The per-step default: 1e12 bf16 FLOPs, i.e. 1e12 / 989.4e12 s each. */
    const double one = 1e12 / 989.4e12;
    mfu_steps *s = cpu_steps(3, 1, one);
    if (s == NULL)
        return;
    for (int i = 0; i < 6; i++) /* 5 closed steps, 1 warm-up: 4 seen, 3 in the window */
        step(s, 0, 0, 0);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 3);
    CHECK_NEAR(sum.window.totals.ideal_s, 3 * one, 1e-12);
    /* One dtype: mfu_mixed == mfu (same FLOPs, same peak, 2 devices). */
    CHECK_NEAR(sum.window.metrics.mfu_mixed, sum.window.metrics.mfu, 1e-12);
    CHECK_NEAR(sum.window.metrics.mfu_mixed, 3 * one / sum.window.window_s / 2, 1e-12);

    /* A step with its own ideal seconds replaces the default. */
    step(s, MFU_STEP_IDEAL_S, 0, 5e-3);
    mfu_steps_summarize(s, &sum);
    CHECK_NEAR(sum.window.totals.ideal_s, 2 * one + 5e-3, 1e-12);
    /* model_flops without ideal seconds: that step's ideal is unknown, and
     * so is the window's while the step is in it. */
    step(s, MFU_STEP_MODEL_FLOPS, 2e12, 0);
    mfu_steps_summarize(s, &sum);
    CHECK(isnan(sum.window.totals.ideal_s) && isnan(sum.window.metrics.mfu_mixed));
    CHECK(!isnan(sum.window.metrics.mfu));
    /* A bad value: recorded unknown, its bit in `bad`. */
    {
        mfu_step_report r = {.given = MFU_STEP_IDEAL_S, .work = {.ideal_s = -1.0}};
        mfu_step_outcome o;
        CHECK(mfu_steps_step(s, &r, &o) == MFU_OK && o.bad == MFU_STEP_IDEAL_S);
    }
    /* Three good steps push the unknown ones out of the window. */
    for (int i = 0; i < 3; i++)
        step(s, MFU_STEP_IDEAL_S, 0, 1e-3);
    mfu_steps_summarize(s, &sum);
    CHECK_NEAR(sum.window.totals.ideal_s, 3e-3, 1e-12);
    mfu_steps_destroy(s);

    /* No default: unknown until given. */
    s = cpu_steps(2, 0, NAN);
    step(s, 0, 0, 0);
    step(s, 0, 0, 0);
    mfu_steps_summarize(s, &sum);
    CHECK(sum.window.steps == 1 && isnan(sum.window.metrics.mfu_mixed));
    mfu_steps_destroy(s);
    /* A bad default is a configuration error naming the field (the
     * Python layer's flops_by_dtype gives it). */
    {
        mfu_steps_config c = {.timer = {.clock = MFU_CLOCK_CPU}, .window = 1,
                              .per_step = {.model_flops = 0, .executed_flops = NAN,
                                           .param_bytes = NAN, .ideal_s = -1.0},
                              .peak = {.flops_per_sec = NAN, .bytes_per_sec = NAN,
                                       .num_devices = 1}};
        const char *bad = NULL;
        s = NULL;
        CHECK(mfu_steps_create(&c, &s, &bad) == MFU_ERR_INVALID_ARGUMENT && s == NULL);
        CHECK(bad != NULL && strcmp(bad, "ideal_s") == 0);
    }
}

/* mfu_mixed of `ideal_s` seconds of ideal work over `elapsed_s` on
 * `devices` devices, by the one formula (stats.h). */
static double mixed(double ideal_s, double elapsed_s, double devices)
{
    const mfu_ceilings ceilings = {.flops_per_sec = NAN, .bytes_per_sec = NAN,
                                   .devices = devices, .measured_flops_per_sec = NAN};
    mfu_work sums;
    mfu_metrics m;
    mfu_work_unknown(&sums);
    sums.ideal_s = ideal_s;
    mfu_figures_form(&sums, elapsed_s, &ceilings, NULL, &m, NULL);
    return m.mfu_mixed;
}

/* The one mfu_mixed ratio: ideal / elapsed / devices, NaN when unknown. */
static void test_utilization(void)
{
    CHECK_NEAR(mixed(3.0, 10.0, 2), 0.15, 1e-15); /* 3 / 10 / 2 */
    CHECK(isnan(mixed(NAN, 10.0, 2)));
    CHECK(isnan(mixed(3.0, 0.0, 2)));
    CHECK(isnan(mixed(3.0, NAN, 2)));
    CHECK(isnan(mixed(3.0, 10.0, 0)));
}

int main(void)
{
    test_ideal_s();
    test_utilization();
    test_window();
    return check_summary("test_mixed");
}
