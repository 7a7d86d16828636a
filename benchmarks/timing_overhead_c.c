/*
 * timing_overhead_c.c -- CPU cost of one step-tracker step in the C core,
 * and memory after 10^6 steps vs 10^3.
 *
 * A "step" is mfu_steps_step (core/steps/steps.h) with a token count: the
 * boundary's mark, the record in the pending ring, the non-blocking poll
 * and the drain into the window. A summary (O(window), what a read of the
 * figures costs) is timed on its own, and so is a phase mark
 * (mfu_steps_phase_switch inside an open step: the mark and its record).
 * Measured on the CPU clock and on the CUDA path against
 * the fake driver (tests/c/fake_driver), where the driver calls themselves
 * are timed alone too, so the core's own share is the difference. Target:
 * under 1 us per step besides the driver calls. Times are the
 * thread's CPU time.
 *
 * Build and run (from the repository root, after `make ctest` built the
 * fake driver):
 *   the cc command of benchmarks/README.md, "The step in C alone" (every
 *   folder of csrc/core an include directory), then
 *   MFU_TRACKER_CUDA_LIBRARY=$PWD/build/ctest/libfake_cuda.so build/bench_timing_c
 *
 * Recorded: see benchmarks/README.md. A real driver's cuEventRecord /
 * cuEventQuery cost far more than the fake's; those are the floor of any
 * event-based timer.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "steps.h"

enum { STEPS = 1000000 };

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resident set size in kB, from /proc/self/statm. */
static long rss_kb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident * 4;
}

/* One step-tracker loop of `steps`; returns seconds of CPU per step. */
static double run_steps(mfu_steps *tracker, long steps)
{
    mfu_step_report report = {MFU_STEP_NUM_TOKENS, 4096.0, 0.0, 0.0};
    mfu_step_outcome outcome;
    double start = cpu_seconds();
    for (long i = 0; i < steps; i++) {
        if (mfu_steps_step(tracker, &report, &outcome) != MFU_OK || outcome.fallbacks)
            return -1.0;
    }
    return (cpu_seconds() - start) / (double)steps;
}

/* Seconds of CPU per phase mark: four switches and an end per step, as an
 * integration marks them, the boundary's own cost taken out. */
static double run_phase_marks(mfu_steps *tracker, long steps)
{
    static const mfu_phase order[] = {MFU_PHASE_DATA, MFU_PHASE_FORWARD, MFU_PHASE_BACKWARD,
                                      MFU_PHASE_OPTIMIZER};
    double with_marks, start = cpu_seconds();
    for (long i = 0; i < steps; i++) {
        for (int p = 0; p < 4; p++)
            mfu_steps_phase_switch(tracker, order[p]);
        mfu_steps_phase_end(tracker);
        if (i % 64 == 0)
            mfu_steps_poll(tracker); /* a boundary would; keeps the pool steady */
    }
    with_marks = (cpu_seconds() - start) / (double)steps;
    return with_marks / 5.0;
}

/* Seconds of CPU per summary of a full window. */
static double run_summaries(mfu_steps *tracker, long count)
{
    mfu_steps_summary summary;
    double start = cpu_seconds();
    for (long i = 0; i < count; i++)
        mfu_steps_summarize(tracker, &summary);
    return (cpu_seconds() - start) / (double)count;
}

/* The driver calls one step makes when the GPU keeps up (the fake with no
 * lag completes each event at once): record, query, elapsed -- alone. */
static double driver_calls_alone(const mfu_gpu_driver *driver, long steps)
{
    mfu_gpu_event a, b;
    float ms;
    double start;
    driver->event_create(&a, 0);
    driver->event_create(&b, 0);
    driver->event_record(a, NULL);
    start = cpu_seconds();
    for (long i = 0; i < steps; i++) {
        driver->event_record(b, NULL);
        driver->event_query(b);
        driver->event_elapsed(&ms, a, b);
    }
    start = (cpu_seconds() - start) / (double)steps;
    driver->event_destroy(a);
    driver->event_destroy(b);
    return start;
}

static int bench(mfu_clock_kind clock, const char *label)
{
    mfu_steps_config config = {
        .timer = {.clock = clock},
        .window = 100,
        .warmup = 10,
        .per_step = {.model_flops = 6e12, .executed_flops = 8e12, .param_bytes = 2e9},
        .peak = {.flops_per_sec = 989.4e12, .bytes_per_sec = 3.35e12, .num_devices = 1},
    };
    mfu_steps *tracker = NULL;
    double per_step;
    long rss_small, rss_large, rss_larger;
    mfu_status status = mfu_steps_create(&config, &tracker, NULL);
    if (status != MFU_OK || mfu_steps_clock(tracker) != clock) {
        printf("%-28s unavailable: %s\n", label, mfu_status_str(status));
        mfu_steps_destroy(tracker);
        return 1;
    }
    run_steps(tracker, 1000);
    rss_small = rss_kb();
    per_step = run_steps(tracker, STEPS);
    rss_large = rss_kb();
    run_steps(tracker, STEPS);
    rss_larger = rss_kb();
    printf("%-28s %8.1f ns/step   RSS after 1e3 / 1e6 / 2e6 steps: %ld / %ld / %ld kB\n",
           label, per_step * 1e9, rss_small, rss_large, rss_larger);
    printf("%-28s %8.1f ns/summary (window of 100)\n", "",
           run_summaries(tracker, STEPS / 10) * 1e9);
    printf("%-28s %8.1f ns/phase mark\n", "", run_phase_marks(tracker, STEPS / 5) * 1e9);
    if (clock != MFU_CLOCK_CPU) {
        const mfu_gpu_driver *driver = NULL;
        double alone;
        mfu_gpu_driver_get((mfu_gpu_api)clock, &driver);
        alone = driver_calls_alone(driver, STEPS);
        printf("%-28s %8.1f ns/step   (core share: %.1f ns)\n", "  of which driver calls",
               alone * 1e9, (per_step - alone) * 1e9);
    }
    mfu_steps_destroy(tracker);
    return 0;
}

int main(void)
{
    printf("step = mfu_steps_step (mark, ring, poll, drain into the window), %d steps\n",
           STEPS);
    bench(MFU_CLOCK_CPU, "cpu clock");
    bench(MFU_CLOCK_CUDA, "cuda events (fake driver)");
    return 0;
}
