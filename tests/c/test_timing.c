/*
 * test_timing.c -- the CPU clock, the driver loader and the mark timer.
 *
 * GPU paths run against the fake driver (tests/c/fake_driver/fake_cuda.c),
 * which `make ctest` builds and names in MFU_TRACKER_CUDA_LIBRARY and
 * MFU_TRACKER_HIP_LIBRARY. The test opens the same library to turn the
 * fake's knobs; the loader hands both the same instance, so the counts the
 * test reads are the calls the core made.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fake_driver/fake_knobs.h"
#include "mfu_limits.h"
#include "records.h"
#include "test_clock.h"
#include "timing.h"

enum { MS = 1000000 }; /* nanoseconds in a millisecond */

static void sleep_ns(long ns)
{
    struct timespec ts = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- the CPU clock ---------------------------------------------------- */

static void test_cpu_clock_against_sleep(void)
{
    uint64_t a = 0, b = 0, before, after;
    before = test_real_ns();
    CHECK(mfu_clock_monotonic_ns(&a) == MFU_OK);
    sleep_ns(20L * MS);
    CHECK(mfu_clock_monotonic_ns(&b) == MFU_OK);
    after = test_real_ns();
    /* A 20 ms sleep: at least 19 ms (a clock running slow or stopped
     * fails), at most the test's own bracket of the two readings (a clock
     * in the wrong unit fails; no load on the machine can). */
    CHECK(mfu_clock_elapsed_s(a, b) >= 0.019);
    CHECK(mfu_clock_elapsed_s(a, b) <= test_bracket_s(before, after));
    CHECK(mfu_clock_elapsed_s(b, a) < 0.0);
    CHECK_NEAR(mfu_clock_elapsed_s(1000, 3500000000u), 3.499999, 1e-12);
}

static void test_cpu_timer(void)
{
    mfu_timer_config config = {.clock = MFU_CLOCK_CPU};
    mfu_timer *timer = NULL;
    mfu_timer_counters counters;
    uint64_t m0 = 99, m1 = 99, m2 = 99;
    double t = -1.0, short_s = -1.0, long_s = -1.0;
    int ready = 0;

    test_clock_virtual(1); /* the core's CPU time is the test's: intervals are exact */
    CHECK(mfu_timer_create(&config, &timer, NULL) == MFU_OK);
    CHECK(mfu_timer_clock(timer) == MFU_CLOCK_CPU);
    CHECK(mfu_timer_mark(timer, 0, &m0) == MFU_OK);
    test_clock_advance_ns(20L * MS);
    CHECK(mfu_timer_mark(timer, 12345, &m1) == MFU_OK); /* stream ignored */
    test_clock_advance_ns(60L * MS);
    CHECK(mfu_timer_mark(timer, 0, &m2) == MFU_OK);
    CHECK(m0 == 0 && m1 == 1 && m2 == 2);

    CHECK(mfu_timer_ready(timer, m2, &ready) == MFU_OK);
    CHECK(ready == 1);
    CHECK(mfu_timer_time_s(timer, m0, MFU_WAIT_NEVER, &t) == MFU_OK);
    CHECK(t == 0.0);
    CHECK(mfu_timer_elapsed_s(timer, m0, m1, MFU_WAIT_NEVER, &short_s) == MFU_OK);
    CHECK(mfu_timer_elapsed_s(timer, m1, m2, MFU_WAIT_NEVER, &long_s) == MFU_OK);
    /* Exactly the time that passed between the marks: 20 ms, then 60 ms (a
     * stopped clock, a wrong unit or the intervals swapped fail). */
    CHECK_NEAR(short_s, 0.020, 1e-12);
    CHECK_NEAR(long_s, 0.060, 1e-12);
    CHECK(mfu_timer_elapsed_s(timer, m2, m0, MFU_WAIT_NEVER, &t) == MFU_OK);
    CHECK(t < 0.0);
    CHECK(mfu_timer_flush(timer) == MFU_OK);
    CHECK(mfu_timer_time_s(timer, 3, MFU_WAIT_NEVER, &t) == MFU_ERR_INVALID_ARGUMENT);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.marks == 3 && counters.resolved == 3 && counters.waits == 0);
    mfu_timer_destroy(timer);
    test_clock_virtual(0);
}

static void test_cpu_timer_history(void)
{
    mfu_timer_config config = {.clock = MFU_CLOCK_CPU, .events_initial = 2,
                               .events_max = 2, .history = 4};
    mfu_timer *timer = NULL;
    uint64_t id = 0;
    double t = 0.0;
    CHECK(mfu_timer_create(&config, &timer, NULL) == MFU_OK);
    for (int i = 0; i < 10; i++)
        CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    /* Marks 6..9 are the newest 4; 5 and older are gone. */
    CHECK(mfu_timer_time_s(timer, 6, MFU_WAIT_NEVER, &t) == MFU_OK);
    CHECK(mfu_timer_time_s(timer, 5, MFU_WAIT_NEVER, &t) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_timer_elapsed_s(timer, 0, 9, MFU_WAIT_NEVER, &t) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_timer_time_s(timer, 9, 7, &t) == MFU_ERR_INVALID_ARGUMENT); /* bad wait */
    mfu_timer_destroy(timer);
    mfu_timer_destroy(NULL);
}

static void test_timer_config_errors(void)
{
    mfu_timer *timer = (mfu_timer *)&timer;
    mfu_timer_config bad_clock = {.clock = (mfu_clock_kind)7};
    mfu_timer_config one_event = {.clock = MFU_CLOCK_CPU, .events_initial = 1};
    mfu_timer_config max_below = {.clock = MFU_CLOCK_CPU, .events_initial = 8,
                                  .events_max = 4};
    mfu_timer_config short_history = {.clock = MFU_CLOCK_CPU, .events_max = 64,
                                      .history = 32};
    mfu_timer_config big_initial = {.clock = MFU_CLOCK_CPU, .events_initial = 4096};
    mfu_timer_config max_below_ok = {.clock = MFU_CLOCK_CPU, .events_initial = 4,
                                     .events_max = 8};
    CHECK(mfu_timer_create(&bad_clock, &timer, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(timer == NULL);
    CHECK(mfu_timer_create(&one_event, &timer, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timer_create(&max_below, &timer, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timer_create(&short_history, &timer, NULL) == MFU_ERR_INVALID_ARGUMENT);
    /* Defaults stretch to fit an explicit initial size. */
    CHECK(mfu_timer_create(&big_initial, &timer, NULL) == MFU_OK);
    CHECK(mfu_timer_events_max(timer) == 4096);
    mfu_timer_destroy(timer);
    /* All defaults: the cap of mfu_limits.h; an explicit cap is kept. */
    CHECK(mfu_timer_create(&(mfu_timer_config){.clock = MFU_CLOCK_CPU}, &timer, NULL)
          == MFU_OK);
    CHECK(mfu_timer_events_max(timer) == MFU_TIMER_EVENTS_MAX_DEFAULT);
    CHECK(MFU_TIMER_EVENTS_MAX_DEFAULT == 1024);
    mfu_timer_destroy(timer);
    CHECK(mfu_timer_create(&max_below_ok, &timer, NULL) == MFU_OK);
    CHECK(mfu_timer_events_max(timer) == 8);
    mfu_timer_destroy(timer);
}

/* ---- the driver loader ------------------------------------------------ */

struct get_result {
    mfu_status status;
    const mfu_gpu_driver *driver;
};

static void *get_cuda_driver(void *arg)
{
    struct get_result *result = arg;
    result->status = mfu_gpu_driver_get(MFU_GPU_CUDA, &result->driver);
    return NULL;
}

/* Runs first: the process-wide driver is loaded once however many threads
 * race for it. */
static void test_driver_get_once_across_threads(void)
{
    enum { THREADS = 8 };
    pthread_t threads[THREADS];
    struct get_result results[THREADS];
    const mfu_gpu_driver *again = NULL;
    fake.reset();
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, get_cuda_driver, &results[i]) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(threads[i], NULL) == 0);
    for (int i = 0; i < THREADS; i++) {
        CHECK(results[i].status == MFU_OK);
        CHECK(results[i].driver == results[0].driver);
    }
    CHECK(fake.call_count("cuInit") == 1);
    CHECK(mfu_gpu_driver_get(MFU_GPU_CUDA, &again) == MFU_OK);
    CHECK(again == results[0].driver);
    CHECK(fake.call_count("cuInit") == 1);
    CHECK(again->api == MFU_GPU_CUDA && again->error.call == NULL);
    CHECK(mfu_gpu_driver_get((mfu_gpu_api)9, &again) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_driver_open_resolves_names(void)
{
    mfu_gpu_driver driver;
    fake.reset();
    CHECK(strcmp(mfu_gpu_driver_library(MFU_GPU_CUDA), fake.path) == 0);
    CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, NULL, &driver) == MFU_OK);
    CHECK(fake.call_count("cuInit") == 1);
    /* The fake exports only the old elapsed-time name and only the _v2
     * destroy name: the lookup takes _v2 when present, else the old one. */
    CHECK(strcmp(driver.name_elapsed, "cuEventElapsedTime") == 0);
    CHECK(strcmp(driver.name_destroy, "cuEventDestroy_v2") == 0);
    CHECK(strcmp(driver.name_query, "cuEventQuery") == 0);
    CHECK(driver.cu_error_name != NULL && driver.hip_error_name == NULL);
    CHECK(strcmp(mfu_gpu_driver_code_name(&driver, 600), "CUDA_ERROR_NOT_READY") == 0);
    CHECK(mfu_gpu_driver_code_name(&driver, 12345) == NULL);
    mfu_gpu_driver_close(&driver);
    CHECK(driver.library == NULL);
    CHECK(mfu_gpu_driver_code_name(&driver, 600) == NULL);
    mfu_gpu_driver_close(&driver); /* twice is harmless */

    CHECK(mfu_gpu_driver_open(MFU_GPU_HIP, fake.path, &driver) == MFU_OK);
    CHECK(strcmp(driver.name_create, "hipEventCreateWithFlags") == 0);
    CHECK(strcmp(driver.name_elapsed, "hipEventElapsedTime") == 0);
    CHECK(driver.ctx_get_current == NULL);
    CHECK(strcmp(mfu_gpu_driver_code_name(&driver, 600), "hipErrorNotReady") == 0);
    mfu_gpu_driver_close(&driver);
    CHECK(fake.call_count("cuInit") == 1); /* HIP does not cuInit */

    CHECK(mfu_gpu_driver_open((mfu_gpu_api)0, fake.path, &driver)
          == MFU_ERR_INVALID_ARGUMENT);
}

static void test_driver_missing_library_and_symbols(void)
{
    mfu_gpu_driver driver;
    char *saved = strdup(getenv(MFU_CUDA_LIBRARY_ENV));

    CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, "/nonexistent/libcuda.so.1", &driver)
          == MFU_ERR_UNAVAILABLE);
    CHECK(driver.library == NULL);
    CHECK(strcmp(driver.error.call, "dlopen") == 0);
    CHECK(strstr(driver.error.detail, "/nonexistent/libcuda.so.1") != NULL);

    /* The override variable is what a NULL path opens. */
    CHECK(setenv(MFU_CUDA_LIBRARY_ENV, "/nonexistent/libfake.so", 1) == 0);
    CHECK(strcmp(mfu_gpu_driver_library(MFU_GPU_CUDA), "/nonexistent/libfake.so") == 0);
    CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, NULL, &driver) == MFU_ERR_UNAVAILABLE);
    CHECK(setenv(MFU_CUDA_LIBRARY_ENV, "", 1) == 0);
    CHECK(strcmp(mfu_gpu_driver_library(MFU_GPU_CUDA), "libcuda.so.1") == 0);
    CHECK(setenv(MFU_CUDA_LIBRARY_ENV, saved, 1) == 0);
    free(saved);

    /* A real library that is not a driver: the first missing call is named. */
    CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, "libm.so.6", &driver) == MFU_ERR_UNAVAILABLE);
    CHECK(strcmp(driver.error.call, "cuInit") == 0 && driver.error.code == 0);
    CHECK(mfu_gpu_driver_open(MFU_GPU_HIP, "libm.so.6", &driver) == MFU_ERR_UNAVAILABLE);
    CHECK(strcmp(driver.error.call, "hipEventCreateWithFlags") == 0);
}

static void test_driver_init_failure(void)
{
    mfu_gpu_driver driver;
    fake.reset();
    CHECK(fake.fail_next("cuInit", 100) == 0); /* CUDA_ERROR_NO_DEVICE */
    CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, fake.path, &driver) == MFU_ERR_DRIVER);
    CHECK(strcmp(driver.error.call, "cuInit") == 0 && driver.error.code == 100);
    CHECK(driver.library == NULL);
    /* Regression (fuzz_driver): the calls resolved before cuInit failed
     * pointed into the dlclose'd library, and check_context called one. */
    CHECK(driver.ctx_get_current == NULL && driver.event_create == NULL &&
          driver.event_destroy == NULL && driver.cu_error_name == NULL);
    {
        mfu_gpu_error error = {0};
        CHECK(mfu_gpu_driver_check_context(&driver, &error) == MFU_ERR_UNAVAILABLE);
        CHECK(mfu_gpu_driver_code_name(&driver, 100) == NULL);
    }
    CHECK(fake.fail_next("noSuchCall", 1) == -1);
}

/* ---- GPU timer against the fake timeline ------------------------------ */

static mfu_timer *gpu_timer(mfu_clock_kind clock, uint32_t initial, uint32_t maximum,
                            uint32_t history)
{
    mfu_timer_config config = {.clock = clock, .events_initial = initial,
                               .events_max = maximum, .history = history};
    mfu_timer *timer = NULL;
    mfu_gpu_error error;
    mfu_status status = mfu_timer_create(&config, &timer, &error);
    CHECK(status == MFU_OK);
    if (status != MFU_OK)
        fprintf(stderr, "  timer: %s in %s (%d) %s\n", mfu_status_str(status),
                error.call ? error.call : "?", error.code, error.detail);
    return timer;
}

/* A step tracker's loop, read every step: mark the boundary, poll, and
 * push each newly resolved period into the window. Host steps take
 * `host_step_ns`; the GPU finishes `lag_ns` after the host. Returns the
 * number of periods pushed. */
struct steady_run {
    long bad_periods; /* periods that differ from the fake timeline */
    long lagging;     /* steps where the previous boundary was still pending */
    uint64_t pushed;
};

static struct steady_run run_steps(mfu_timer *timer, mfu_step_ring *ring, int steps,
                                   uint64_t host_step_ns, double want_period_s)
{
    struct steady_run run = {0, 0, 0};
    uint64_t cursor = 0; /* next period starts at this mark */
    mfu_work work = {.model_flops = 6e12, .executed_flops = 8e12,
                     .param_bytes = 2e9, .num_tokens = 4096};
    for (int i = 0; i < steps; i++) {
        uint64_t id = 0;
        fake.advance(host_step_ns);
        if (mfu_timer_mark(timer, 0, &id) != MFU_OK || mfu_timer_poll(timer) != MFU_OK) {
            run.bad_periods++;
            return run;
        }
        /* Results lag at most one step: every boundary before this one. */
        if (id > 0 && mfu_timer_resolved(timer) < id)
            run.lagging++;
        while (cursor + 1 < mfu_timer_resolved(timer)) {
            double period = -1.0;
            if (mfu_timer_elapsed_s(timer, cursor, cursor + 1, MFU_WAIT_NEVER, &period)
                    != MFU_OK
                || !check_near(period, want_period_s, 1e-6))
                run.bad_periods++;
            run.pushed++;
            if (ring != NULL) { /* the step records keep the newest */
                mfu_step_record *r;
                if (mfu_step_ring_count(ring) == mfu_step_ring_capacity(ring))
                    mfu_step_ring_pop_oldest(ring);
                r = mfu_step_ring_append(ring, run.pushed);
                r->state = MFU_STEP_PUSHED;
                r->period_s = period;
                r->work = work;
            }
            cursor++;
        }
    }
    return run;
}

static void test_gpu_zero_stall_steady_state(mfu_clock_kind clock, const char *create,
                                             const char *synchronize)
{
    mfu_timer *timer;
    mfu_step_ring *ring = NULL;
    mfu_step_view view;
    mfu_step_sums sums;
    mfu_timer_counters counters;
    mfu_window_summary summary;
    mfu_peak peak = {.flops_per_sec = 1e15, .bytes_per_sec = 2e12, .num_devices = 1};
    struct steady_run run;
    long events_before;

    fake.reset();
    events_before = fake.live_events();
    fake.set_gpu_lag_ns(300000); /* the GPU trails the host by 0.3 ms */
    timer = gpu_timer(clock, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_step_ring_create(100, &ring) == MFU_OK);
    CHECK(fake.call_count(create) == 16);

    /* 10,000 steps of 1 ms on the host, read every step. */
    run = run_steps(timer, ring, 10000, 1 * MS, 1e-3);
    CHECK(run.bad_periods == 0);
    CHECK(run.lagging == 0);
    /* 10,000 boundaries make 9,999 periods; the last is still running. */
    CHECK(run.pushed == 9998);
    CHECK(fake.sync_calls() == 0);
    CHECK(fake.call_count(synchronize) == 0);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.marks == 10000 && counters.resolved == 9999);
    CHECK(counters.waits == 0 && counters.pool_full_waits == 0);
    CHECK(counters.pool_grows == 0 && counters.events == 16);
    CHECK(fake.call_count(create) == 16); /* steady state creates nothing */

    /* The ring saw 9998 periods of 1 ms and kept the last 100. */
    view.ring = ring;
    view.first = 0;
    view.steps = 100;
    mfu_step_view_sum(&view, MFU_SUM_ALL, &sums);
    mfu_step_sums_window(&sums, &peak, &summary);
    CHECK(summary.steps == 100 && mfu_step_ring_at(ring, 99)->id == 9998);
    CHECK_NEAR(summary.step_s_mean, 1e-3, 1e-6);
    CHECK_NEAR(summary.metrics.tokens_per_sec, 4096 / 1e-3, 1e-6);
    CHECK_NEAR(summary.metrics.mfu, 6e12 / 1e-3 / 1e15, 1e-6); /* 6.0: flagged, not clamped */

    /* The flush at the end waits once, for the last boundary. */
    CHECK(mfu_timer_flush(timer) == MFU_OK);
    CHECK(fake.call_count(synchronize) == 1);
    CHECK(mfu_timer_resolved(timer) == 10000);
    mfu_timer_destroy(timer);
    mfu_step_ring_destroy(ring);
    CHECK(fake.live_events() == events_before);
}

static void test_gpu_one_wait_when_read_early(void)
{
    mfu_timer *timer;
    uint64_t start = 0, end = 0, later = 0;
    double seconds = -1.0;
    int ready = 1;
    mfu_timer_counters counters;

    fake.reset();
    fake.set_gpu_lag_ns(5 * MS); /* the GPU is 5 ms behind the host */
    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &start) == MFU_OK); /* GPU: 5 ms */
    fake.advance(2 * MS);
    CHECK(mfu_timer_mark(timer, 0, &end) == MFU_OK); /* GPU: 7 ms */
    fake.advance(1 * MS);
    CHECK(mfu_timer_mark(timer, 0, &later) == MFU_OK); /* GPU: 8 ms */

    CHECK(mfu_timer_ready(timer, end, &ready) == MFU_OK);
    CHECK(ready == 0);
    CHECK(mfu_timer_elapsed_s(timer, start, end, MFU_WAIT_NEVER, &seconds)
          == MFU_ERR_NOT_READY);
    CHECK(seconds == -1.0);
    CHECK(fake.sync_calls() == 0);

    /* Read early: one wait, on the end mark; the host is then at 7 ms. */
    CHECK(mfu_timer_elapsed_s(timer, start, end, MFU_WAIT_IF_NEEDED, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 2e-3, 1e-6);
    CHECK(fake.call_count("cuEventSynchronize") == 1);
    CHECK(fake.sync_calls() == 1);
    CHECK(fake.now_ns() == 7 * MS);
    CHECK(mfu_timer_ready(timer, later, &ready) == MFU_OK);
    CHECK(ready == 0);

    /* Reading again does not wait; the later mark arrives with the host. */
    CHECK(mfu_timer_elapsed_s(timer, start, end, MFU_WAIT_IF_NEEDED, &seconds) == MFU_OK);
    fake.advance(1 * MS);
    CHECK(mfu_timer_elapsed_s(timer, end, later, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 1e-3, 1e-6);
    CHECK(mfu_timer_time_s(timer, later, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 3e-3, 1e-6);
    CHECK(fake.sync_calls() == 1);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.waits == 1 && counters.pool_full_waits == 0);

    /* Ids never issued are an error, not a wait. */
    CHECK(mfu_timer_elapsed_s(timer, start, later + 1, MFU_WAIT_IF_NEEDED, &seconds)
          == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_timer_ready(timer, later + 1, &ready) == MFU_ERR_INVALID_ARGUMENT);
    mfu_timer_destroy(timer);
}

static void test_gpu_wait_across_streams(void)
{
    mfu_timer *timer;
    uint64_t a = 0, b = 0;
    double seconds = 0.0;
    mfu_timer_counters counters;

    fake.reset();
    fake.set_work_ns(10 * MS);
    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    /* Stream 0x10 has 10 ms of work before mark a; stream 0x20, after
     * 4 ms of host time, 10 ms before mark b: a at 10 ms, b at 14 ms. */
    CHECK(mfu_timer_mark(timer, 0x10, &a) == MFU_OK);
    fake.advance(4 * MS);
    fake.set_work_ns(0);
    fake.set_gpu_lag_ns(10 * MS);
    CHECK(mfu_timer_mark(timer, 0x20, &b) == MFU_OK);
    CHECK(mfu_timer_flush(timer) == MFU_OK);
    CHECK(mfu_timer_elapsed_s(timer, a, b, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 4e-3, 1e-6);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.waits == 1); /* b after a: waiting for b covered a */
    mfu_timer_destroy(timer);

    /* Now the later mark completes first: a on a stream 20 ms deep, b on
     * an idle one. Waiting for b does not cover a: one more wait. */
    fake.reset();
    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    fake.set_work_ns(20 * MS);
    CHECK(mfu_timer_mark(timer, 0x10, &a) == MFU_OK); /* GPU: 20 ms */
    fake.set_work_ns(0);
    fake.set_gpu_lag_ns(1 * MS);
    CHECK(mfu_timer_mark(timer, 0x20, &b) == MFU_OK); /* GPU: 1 ms */
    CHECK(mfu_timer_elapsed_s(timer, a, b, MFU_WAIT_IF_NEEDED, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, -19e-3, 1e-6);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.waits == 2);
    CHECK(fake.call_count("cuEventSynchronize") == 2);
    mfu_timer_destroy(timer);
}

static void test_gpu_pool_wraparound(void)
{
    mfu_timer *timer;
    mfu_timer_counters counters;
    struct steady_run run;
    double seconds = 0.0;
    long events_before;

    /* The GPU needs 2 ms per step, the host 1 ms: the host runs ahead and
     * pending marks pile up. 4 events grow once to 8, then the oldest is
     * waited for. Every period must still be the GPU's 2 ms. */
    fake.reset();
    events_before = fake.live_events();
    fake.set_work_ns(2 * MS);
    timer = gpu_timer(MFU_CLOCK_CUDA, 4, 8, 64);
    if (timer == NULL)
        return;
    run = run_steps(timer, NULL, 1000, 1 * MS, 2e-3);
    CHECK(run.bad_periods == 0);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.pool_grows == 1 && counters.events == 8);
    CHECK(fake.call_count("cuEventCreate") == 8);
    CHECK(counters.pool_full_waits > 0);
    CHECK(counters.waits == counters.pool_full_waits);
    CHECK((long)counters.waits == fake.call_count("cuEventSynchronize"));
    /* Never more than the 8 events in use: anchor + 7 pending. */
    CHECK(counters.marks - counters.resolved <= 7);

    CHECK(mfu_timer_flush(timer) == MFU_OK);
    /* The newest 64 marks span 63 GPU steps, summed across many reuses of
     * each event. */
    CHECK(mfu_timer_elapsed_s(timer, 1000 - 64, 999, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 63 * 2e-3, 1e-6);
    CHECK(mfu_timer_time_s(timer, 999, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 999 * 2e-3, 1e-6);
    CHECK(mfu_timer_time_s(timer, 1000 - 65, MFU_WAIT_NEVER, &seconds) == MFU_ERR_NOT_FOUND);
    mfu_timer_destroy(timer);
    CHECK(fake.live_events() == events_before);

    /* The smallest pool, anchor + one pending, never grows: each new mark
     * waits for the previous when the GPU is behind. */
    fake.reset();
    fake.set_work_ns(2 * MS);
    timer = gpu_timer(MFU_CLOCK_CUDA, 2, 2, 2);
    if (timer == NULL)
        return;
    run = run_steps(timer, NULL, 100, 1 * MS, 2e-3);
    CHECK(run.bad_periods == 0);
    mfu_timer_get_counters(timer, &counters);
    CHECK(counters.pool_grows == 0 && counters.events == 2);
    CHECK(counters.pool_full_waits == 98); /* every mark from id 2 on */
    mfu_timer_destroy(timer);
}

/* Regression (found by tests/test_soak.py): the pool filling while mark 0 is
 * still pending. Resolving mark 0 then only makes it the anchor and frees no
 * event; the timer must wait once more instead of recording over an event
 * in use (which gave negative intervals and lost steps). */
static void test_gpu_pool_full_before_first_resolution(void)
{
    mfu_timer *timer;
    mfu_timer_counters counters;
    uint64_t id = 0;
    double seconds = -1.0;

    /* No GPU work, a 10 ms launch lag: an event completes 10 ms after the
     * host records it. Pool of 2 that cannot grow. */
    fake.reset();
    fake.set_gpu_lag_ns(10 * MS);
    timer = gpu_timer(MFU_CLOCK_CUDA, 2, 2, 8);
    if (timer == NULL)
        return;
    fake.advance(1 * MS); /* t = 1 ms: mark 0 completes at 11 ms */
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK && id == 0);
    fake.advance(1 * MS); /* t = 2 ms: mark 1 completes at 12 ms */
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK && id == 1);
    fake.advance(1 * MS); /* t = 3 ms: both events in use, mark 0 pending */
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK && id == 2);
    mfu_timer_get_counters(timer, &counters);
    /* Two waits (mark 0, then mark 1) before mark 2 could be recorded at
     * t = 12 ms; it completes at 22 ms. */
    CHECK(counters.pool_full_waits == 2 && counters.events == 2);
    CHECK(counters.resolved == 2);
    CHECK(mfu_timer_flush(timer) == MFU_OK);
    CHECK(mfu_timer_elapsed_s(timer, 0, 1, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 1e-3, 1e-6);  /* 12 ms - 11 ms */
    CHECK(mfu_timer_elapsed_s(timer, 1, 2, MFU_WAIT_NEVER, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 10e-3, 1e-6); /* 22 ms - 12 ms: the host waited */
    mfu_timer_destroy(timer);
}

static void test_gpu_driver_failures(void)
{
    mfu_timer *timer;
    mfu_timer_config config = {.clock = MFU_CLOCK_CUDA};
    mfu_gpu_error error;
    const mfu_gpu_driver *driver = NULL;
    uint64_t id = 0;
    double seconds = 0.0;
    int ready = 0;
    long events_before;

    fake.reset();
    events_before = fake.live_events();
    CHECK(mfu_gpu_driver_get(MFU_GPU_CUDA, &driver) == MFU_OK);

    /* A failing record: DRIVER, sticky, the call and code kept. */
    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    CHECK(fake.fail_next("cuEventRecord", 700) == 0);
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_ERR_DRIVER);
    mfu_timer_error(timer, &error);
    CHECK(error.call != NULL && strcmp(error.call, "cuEventRecord") == 0);
    CHECK(error.code == 700);
    CHECK(strcmp(mfu_gpu_driver_code_name(driver, error.code),
                 "CUDA_ERROR_ILLEGAL_ADDRESS") == 0);
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_ERR_DRIVER);
    CHECK(mfu_timer_poll(timer) == MFU_ERR_DRIVER);
    CHECK(mfu_timer_ready(timer, 0, &ready) == MFU_ERR_DRIVER);
    CHECK(mfu_timer_time_s(timer, 0, MFU_WAIT_IF_NEEDED, &seconds) == MFU_ERR_DRIVER);
    CHECK(mfu_timer_flush(timer) == MFU_ERR_DRIVER);
    mfu_timer_destroy(timer);

    /* A failing query while polling; a failing elapsed-time read. */
    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    CHECK(fake.fail_next("cuEventQuery", 999) == 0);
    CHECK(mfu_timer_poll(timer) == MFU_ERR_DRIVER);
    mfu_timer_error(timer, &error);
    CHECK(strcmp(error.call, "cuEventQuery") == 0 && error.code == 999);
    mfu_timer_destroy(timer);

    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    CHECK(fake.fail_next("cuEventElapsedTime", 1) == 0);
    CHECK(mfu_timer_elapsed_s(timer, 0, 1, MFU_WAIT_NEVER, &seconds) == MFU_ERR_DRIVER);
    mfu_timer_error(timer, &error);
    CHECK(strcmp(error.call, "cuEventElapsedTime") == 0 && error.code == 1);
    mfu_timer_destroy(timer);

    /* A failing wait. */
    fake.set_gpu_lag_ns(1 * MS);
    timer = gpu_timer(MFU_CLOCK_CUDA, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    CHECK(fake.fail_next("cuEventSynchronize", 700) == 0);
    CHECK(mfu_timer_time_s(timer, id, MFU_WAIT_IF_NEEDED, &seconds) == MFU_ERR_DRIVER);
    mfu_timer_error(timer, &error);
    CHECK(strcmp(error.call, "cuEventSynchronize") == 0 && error.code == 700);
    mfu_timer_destroy(timer);
    fake.set_gpu_lag_ns(0);

    /* Event creation failing at create leaves nothing behind... */
    CHECK(fake.fail_next("cuEventCreate", 2) == 0); /* CUDA_ERROR_OUT_OF_MEMORY */
    timer = (mfu_timer *)&timer;
    CHECK(mfu_timer_create(&config, &timer, &error) == MFU_ERR_DRIVER);
    CHECK(timer == NULL);
    CHECK(strcmp(error.call, "cuEventCreate") == 0 && error.code == 2);
    CHECK(fake.live_events() == events_before);

    /* ...and while growing the pool. */
    fake.set_work_ns(2 * MS);
    timer = gpu_timer(MFU_CLOCK_CUDA, 2, 8, 8);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_OK);
    fake.fail_next("cuEventCreate", 2);
    CHECK(mfu_timer_mark(timer, 0, &id) == MFU_ERR_DRIVER);
    mfu_timer_error(timer, &error);
    CHECK(strcmp(error.call, "cuEventCreate") == 0);
    mfu_timer_destroy(timer);
    CHECK(fake.live_events() == events_before);
    fake.set_work_ns(0);

    /* No current context: UNAVAILABLE, naming the call. */
    fake.set_no_context(1);
    CHECK(mfu_timer_create(&config, &timer, &error) == MFU_ERR_UNAVAILABLE);
    CHECK(strcmp(error.call, "cuCtxGetCurrent") == 0 && error.code == 0);
    fake.set_no_context(0);
    CHECK(fake.fail_next("cuCtxGetCurrent", 201) == 0); /* INVALID_CONTEXT */
    CHECK(mfu_timer_create(&config, &timer, &error) == MFU_ERR_DRIVER);
    CHECK(error.code == 201);
    CHECK(fake.live_events() == events_before);
    CHECK(fake.sync_calls() == 1); /* only the failing wait above */
}

/* What the Python layer does: try the GPU clock, on any failure warn once
 * and take the CPU clock, with the same calls after that. */
static void test_fallback_to_cpu_clock(void)
{
    mfu_gpu_driver missing;
    mfu_timer_config gpu = {.clock = MFU_CLOCK_CUDA, .driver = &missing};
    mfu_timer_config cpu = {.clock = MFU_CLOCK_CPU};
    mfu_timer *timer = NULL;
    mfu_gpu_error error;
    uint64_t a = 0, b = 0;
    double seconds = 0.0;

    CHECK(mfu_gpu_driver_open(MFU_GPU_CUDA, "/nonexistent/libcuda.so.1", &missing)
          == MFU_ERR_UNAVAILABLE);
    CHECK(mfu_timer_create(&gpu, &timer, &error) == MFU_ERR_UNAVAILABLE);
    CHECK(timer == NULL);
    CHECK(strcmp(error.call, "dlopen") == 0);
    test_clock_virtual(1);
    CHECK(mfu_timer_create(&cpu, &timer, NULL) == MFU_OK);
    CHECK(mfu_timer_mark(timer, 0, &a) == MFU_OK);
    test_clock_advance_ns(20L * MS);
    CHECK(mfu_timer_mark(timer, 0, &b) == MFU_OK);
    CHECK(mfu_timer_elapsed_s(timer, a, b, MFU_WAIT_IF_NEEDED, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 0.020, 1e-12);
    mfu_timer_destroy(timer);
    test_clock_virtual(0);
}

/* ---- HIP names -------------------------------------------------------- */

static void test_hip(void)
{
    const mfu_gpu_driver *driver = NULL;
    mfu_timer *timer;
    mfu_gpu_driver missing;
    mfu_gpu_error error;
    uint64_t a = 0, b = 0;
    double seconds = 0.0;

    fake.reset();
    CHECK(mfu_gpu_driver_get(MFU_GPU_HIP, &driver) == MFU_OK);
    CHECK(driver->api == MFU_GPU_HIP);
    CHECK(fake.call_count("cuInit") == 0);

    test_gpu_zero_stall_steady_state(MFU_CLOCK_HIP, "hipEventCreateWithFlags",
                                     "hipEventSynchronize");
    CHECK(fake.call_count("cuEventRecord") == 0);
    CHECK(fake.call_count("hipEventRecord") == 10000);

    /* One wait when read early. */
    fake.reset();
    fake.set_gpu_lag_ns(5 * MS);
    timer = gpu_timer(MFU_CLOCK_HIP, 0, 0, 0);
    if (timer == NULL)
        return;
    CHECK(mfu_timer_mark(timer, 0, &a) == MFU_OK);
    fake.advance(3 * MS);
    CHECK(mfu_timer_mark(timer, 0, &b) == MFU_OK);
    CHECK(mfu_timer_elapsed_s(timer, a, b, MFU_WAIT_NEVER, &seconds) == MFU_ERR_NOT_READY);
    CHECK(mfu_timer_elapsed_s(timer, a, b, MFU_WAIT_IF_NEEDED, &seconds) == MFU_OK);
    CHECK_NEAR(seconds, 3e-3, 1e-6);
    CHECK(fake.call_count("hipEventSynchronize") == 1 && fake.sync_calls() == 1);

    /* A failing call. */
    CHECK(fake.fail_next("hipEventRecord", 700) == 0);
    CHECK(mfu_timer_mark(timer, 0, &a) == MFU_ERR_DRIVER);
    mfu_timer_error(timer, &error);
    CHECK(strcmp(error.call, "hipEventRecord") == 0 && error.code == 700);
    CHECK(strcmp(mfu_gpu_driver_code_name(driver, 700), "hipErrorIllegalAddress") == 0);
    mfu_timer_destroy(timer);

    /* A missing library. */
    CHECK(mfu_gpu_driver_open(MFU_GPU_HIP, "/nonexistent/libamdhip64.so", &missing)
          == MFU_ERR_UNAVAILABLE);
    CHECK(strcmp(missing.error.call, "dlopen") == 0);
}

int main(void)
{
    if (!fake_load("test_timing")) {
        CHECK(!"fake driver loaded");
        return check_summary("test_timing");
    }
    test_driver_get_once_across_threads();
    test_cpu_clock_against_sleep();
    test_cpu_timer();
    test_cpu_timer_history();
    test_timer_config_errors();
    test_driver_open_resolves_names();
    test_driver_missing_library_and_symbols();
    test_driver_init_failure();
    test_gpu_zero_stall_steady_state(MFU_CLOCK_CUDA, "cuEventCreate", "cuEventSynchronize");
    test_gpu_one_wait_when_read_early();
    test_gpu_wait_across_streams();
    test_gpu_pool_wraparound();
    test_gpu_pool_full_before_first_resolution();
    test_gpu_driver_failures();
    test_fallback_to_cpu_clock();
    test_hip();
    fake_unload();
    return check_summary("test_timing");
}
