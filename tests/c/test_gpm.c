/*
 * test_gpm.c -- the GPM counters (core/device/gpm.h) against the fake NVML
 * (tests/c/fake_nvml/fake_nvml.c, named in MFU_TRACKER_NVML_LIBRARY by
 * `make ctest`), and the core's copy of NVML's GPM layouts against the real
 * nvml.h (the nvidia-nvml-dev package), which this file includes.
 *
 * Time is the fake's virtual clock, installed as the core's clock source
 * (timing.h): the tests advance it instead of sleeping, so every window is
 * exactly the time advanced, on the core's side and on NVML's alike.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* The real nvml.h, by its path (the Makefile's MFU_REAL_NVML_H): the core's
 * own nvml.h is on the include path too. */
#include MFU_REAL_NVML_H

#include "check.h"
#include "gpm.h"
#include "timing.h"

#define UUID "GPU-00000000-fa4e-0000-0000-000000000001"

/* ---- the layouts are NVML's (checked by the compiler) -------------------- */

#define SAME_FIELD(ours, field, theirs, their_field)                                    \
    _Static_assert(offsetof(ours, field) == offsetof(theirs, their_field)                \
                       && sizeof(((ours *)0)->field) == sizeof(((theirs *)0)->their_field), \
                   #ours "." #field " is not " #theirs "." #their_field)

SAME_FIELD(mfu_nvml_gpm_metric, metric_id, nvmlGpmMetric_t, metricId);
SAME_FIELD(mfu_nvml_gpm_metric, nvml_return, nvmlGpmMetric_t, nvmlReturn);
SAME_FIELD(mfu_nvml_gpm_metric, value, nvmlGpmMetric_t, value);
SAME_FIELD(mfu_nvml_gpm_metric, info, nvmlGpmMetric_t, metricInfo);
_Static_assert(sizeof(mfu_nvml_gpm_metric) == sizeof(nvmlGpmMetric_t), "nvmlGpmMetric_t size");
SAME_FIELD(mfu_nvml_gpm_metrics_get, version, nvmlGpmMetricsGet_t, version);
SAME_FIELD(mfu_nvml_gpm_metrics_get, num_metrics, nvmlGpmMetricsGet_t, numMetrics);
SAME_FIELD(mfu_nvml_gpm_metrics_get, sample1, nvmlGpmMetricsGet_t, sample1);
SAME_FIELD(mfu_nvml_gpm_metrics_get, sample2, nvmlGpmMetricsGet_t, sample2);
SAME_FIELD(mfu_nvml_gpm_metrics_get, metrics, nvmlGpmMetricsGet_t, metrics);
_Static_assert(sizeof(mfu_nvml_gpm_metrics_get) == sizeof(nvmlGpmMetricsGet_t),
               "nvmlGpmMetricsGet_t size");
SAME_FIELD(mfu_nvml_gpm_support, version, nvmlGpmSupport_t, version);
SAME_FIELD(mfu_nvml_gpm_support, is_supported_device, nvmlGpmSupport_t, isSupportedDevice);
_Static_assert((int)MFU_NVML_GPM_METRIC_MAX == (int)NVML_GPM_METRIC_MAX, "NVML_GPM_METRIC_MAX");
_Static_assert(MFU_NVML_GPM_METRICS_GET_VERSION == NVML_GPM_METRICS_GET_VERSION, "version");
_Static_assert(MFU_NVML_GPM_SUPPORT_VERSION == NVML_GPM_SUPPORT_VERSION, "version");
_Static_assert((int)MFU_NVML_GPM_SM_UTIL == (int)NVML_GPM_METRIC_SM_UTIL, "SM_UTIL");
_Static_assert((int)MFU_NVML_GPM_SM_OCCUPANCY == (int)NVML_GPM_METRIC_SM_OCCUPANCY, "SM_OCCUPANCY");
_Static_assert((int)MFU_NVML_GPM_GRAPHICS_UTIL == (int)NVML_GPM_METRIC_GRAPHICS_UTIL, "GRAPHICS_UTIL");
_Static_assert((int)MFU_NVML_GPM_ANY_TENSOR_UTIL == (int)NVML_GPM_METRIC_ANY_TENSOR_UTIL, "TENSOR");
_Static_assert((int)MFU_NVML_GPM_DRAM_BW_UTIL == (int)NVML_GPM_METRIC_DRAM_BW_UTIL, "DRAM_BW_UTIL");
_Static_assert((int)MFU_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC == (int)NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
               "NVLINK RX");
_Static_assert((int)MFU_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC == (int)NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
               "NVLINK TX");

/* ---- the fake's knobs ------------------------------------------------------ */

static struct {
    void (*reset)(void);
    int (*set)(const char *knob, unsigned long long value);
    int (*set_gpm)(unsigned int id, double value, int code);
    long (*call_count)(const char *name);
    int (*fail_next)(const char *name, int code);
    long (*live_samples)(void);
    double (*last_window_s)(void);
    int (*clock_ns)(uint64_t *now_ns);
    void (*virtual_clock)(int on);
    void (*advance_ns)(uint64_t ns);
} knobs;

static int load_knobs(void)
{
    const char *path = getenv(MFU_NVML_LIBRARY_ENV);
    void *library = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (library == NULL) {
        fprintf(stderr, "test_gpm: %s names no library (run through make ctest)\n",
                MFU_NVML_LIBRARY_ENV);
        return 0;
    }
    *(void **)&knobs.reset = dlsym(library, "fake_nvml_reset");
    *(void **)&knobs.set = dlsym(library, "fake_nvml_set");
    *(void **)&knobs.set_gpm = dlsym(library, "fake_nvml_set_gpm");
    *(void **)&knobs.call_count = dlsym(library, "fake_nvml_call_count");
    *(void **)&knobs.fail_next = dlsym(library, "fake_nvml_fail_next");
    *(void **)&knobs.live_samples = dlsym(library, "fake_nvml_live_samples");
    *(void **)&knobs.last_window_s = dlsym(library, "fake_nvml_last_window_s");
    *(void **)&knobs.clock_ns = dlsym(library, "fake_nvml_clock_ns");
    *(void **)&knobs.virtual_clock = dlsym(library, "fake_nvml_virtual_clock");
    *(void **)&knobs.advance_ns = dlsym(library, "fake_nvml_advance_ns");
    return knobs.reset && knobs.set && knobs.set_gpm && knobs.call_count && knobs.fail_next
           && knobs.live_samples && knobs.last_window_s && knobs.clock_ns && knobs.virtual_clock
           && knobs.advance_ns; /* stays loaded: the core shares it */
}

/* Time passes: the virtual clock the core and the fake read moves on. */
static void advance_ms(long ms)
{
    knobs.advance_ns((uint64_t)ms * 1000000u);
}

/* The scripted window of every test: percentages and MiB/s as NVML gives them. */
static void script(void)
{
    knobs.set_gpm(NVML_GPM_METRIC_ANY_TENSOR_UTIL, 62.5, NVML_SUCCESS);
    knobs.set_gpm(NVML_GPM_METRIC_DRAM_BW_UTIL, 31.0, NVML_SUCCESS);
    knobs.set_gpm(NVML_GPM_METRIC_SM_UTIL, 88.0, NVML_SUCCESS);
    knobs.set_gpm(NVML_GPM_METRIC_SM_OCCUPANCY, 40.0, NVML_SUCCESS);
    knobs.set_gpm(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, 100000.0, NVML_SUCCESS);
    knobs.set_gpm(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 50000.0, NVML_SUCCESS);
    knobs.set_gpm(NVML_GPM_METRIC_GRAPHICS_UTIL, 97.0, NVML_SUCCESS);
}

static mfu_nvml *open_nvml(void)
{
    mfu_nvml *n = NULL;
    mfu_gpu_error e;
    CHECK(mfu_nvml_open(NULL, UUID, &n, &e) == MFU_OK);
    return n;
}

static void test_window_figures(void)
{
    mfu_nvml *n = open_nvml();
    mfu_gpm *g = NULL;
    mfu_gpm_window w;
    mfu_gpu_error e;

    knobs.reset();
    script();
    CHECK(mfu_gpm_open(n, &g, &e) == MFU_OK && g != NULL && e.call == NULL);
    CHECK(knobs.live_samples() == 2);
    /* The first edge: no window yet. */
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && w.valid == 0 && isnan(w.seconds));
    advance_ms(110);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && e.call == NULL);
    /* the window is the 110 ms advanced (to the doubles' rounding of the clock's
     * seconds), exactly the seconds between the two samples NVML was given */
    CHECK_NEAR(w.seconds, 0.110, 1e-9);
    CHECK(w.seconds == knobs.last_window_s());
    CHECK(w.valid == (1u << MFU_GPM_FIGURES) - 1);
    CHECK_NEAR(w.value[MFU_GPM_TENSOR_ACTIVE], 0.625, 1e-15); /* 62.5 % */
    CHECK_NEAR(w.value[MFU_GPM_DRAM_BW_UTIL], 0.31, 1e-15);
    CHECK_NEAR(w.value[MFU_GPM_SM_ACTIVE], 0.88, 1e-15);
    CHECK_NEAR(w.value[MFU_GPM_SM_OCCUPANCY], 0.40, 1e-15);
    CHECK_NEAR(w.value[MFU_GPM_GPU_BUSY], 0.97, 1e-15); /* 97 % */
    /* (100000 + 50000) MiB/s x 1048576 B/MiB = 157.2864e9 B/s */
    CHECK_NEAR(w.value[MFU_GPM_NVLINK_GBS], 157.2864, 1e-12);
    CHECK(knobs.call_count("nvmlGpmMetricsGet") == 1);
    /* A window under 100 ms (99 ms): sampled (it starts the next), no figures,
     * no metrics call. */
    advance_ms(99);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && w.valid == 0);
    CHECK_NEAR(w.seconds, 0.099, 1e-9);
    CHECK(knobs.call_count("nvmlGpmMetricsGet") == 1);
    CHECK(knobs.call_count("nvmlGpmSampleGet") == 3);
    /* 101 ms from that edge: over the minimum (not 100 ms exactly: the seconds are
     * a difference of two rounded readings, either side of 0.1), a window */
    advance_ms(101);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && w.valid == (1u << MFU_GPM_FIGURES) - 1);
    CHECK_NEAR(w.seconds, 0.101, 1e-9);
    CHECK(w.seconds == knobs.last_window_s());
    mfu_gpm_close(g);
    CHECK(knobs.live_samples() == 0);
    mfu_nvml_close(n);
}

static void test_unsupported(void)
{
    mfu_nvml *n = open_nvml();
    mfu_gpm *g = (mfu_gpm *)1;
    mfu_gpu_error e;

    knobs.reset();
    knobs.set("gpm_supported", 0); /* e.g. an A100 */
    CHECK(mfu_gpm_open(n, &g, &e) == MFU_ERR_UNAVAILABLE && g == NULL);
    CHECK(e.call != NULL && strcmp(e.call, "nvmlGpmQueryDeviceSupport") == 0 && e.code == 0);
    CHECK(strstr(e.detail, "Hopper") != NULL);
    CHECK(knobs.live_samples() == 0);
    knobs.reset();
    knobs.fail_next("nvmlGpmQueryDeviceSupport", NVML_ERROR_NO_PERMISSION);
    CHECK(mfu_gpm_open(n, &g, &e) == MFU_ERR_DRIVER && g == NULL);
    CHECK(e.code == NVML_ERROR_NO_PERMISSION && strcmp(e.detail, "Insufficient Permissions") == 0);
    /* The second allocation fails: the first is freed. */
    knobs.reset();
    knobs.fail_next("nvmlGpmSampleAlloc", NVML_ERROR_MEMORY);
    CHECK(mfu_gpm_open(n, &g, &e) == MFU_ERR_DRIVER && strcmp(e.call, "nvmlGpmSampleAlloc") == 0);
    CHECK(knobs.live_samples() == 0);
    CHECK(mfu_gpm_open(NULL, &g, &e) == MFU_ERR_INVALID_ARGUMENT);
    mfu_nvml_close(n);
}

static void test_metric_names(void)
{
    CHECK(strcmp(mfu_gpm_metric_name(MFU_GPM_TENSOR_ACTIVE), "ANY_TENSOR_UTIL") == 0);
    CHECK(strcmp(mfu_gpm_metric_name(MFU_GPM_DRAM_BW_UTIL), "DRAM_BW_UTIL") == 0);
    CHECK(strcmp(mfu_gpm_metric_name(MFU_GPM_GPU_BUSY), "GRAPHICS_UTIL") == 0);
    CHECK(mfu_gpm_metric_name(-1) == NULL && mfu_gpm_metric_name(MFU_GPM_FIGURES) == NULL);
}

static void test_failures(void)
{
    mfu_nvml *n = open_nvml();
    mfu_gpm *g = NULL;
    mfu_gpm_window w;
    mfu_gpu_error e;

    knobs.reset();
    script();
    /* NVLink not supported on the device (a PCIe card): that figure alone is out. */
    knobs.set_gpm(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 0.0, NVML_ERROR_NOT_SUPPORTED);
    CHECK(mfu_gpm_open(n, &g, &e) == MFU_OK);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK);
    advance_ms(105);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK);
    CHECK(w.valid == (1u << MFU_GPM_FIGURES) - 1 - (1u << MFU_GPM_NVLINK_GBS));
    CHECK(e.call != NULL && e.code == NVML_ERROR_NOT_SUPPORTED);
    CHECK(strcmp(e.detail, "NVLINK_TOTAL_RX/TX_PER_SEC: Not Supported") == 0);
    /* A NaN or negative value is no figure either. */
    script();
    knobs.set_gpm(NVML_GPM_METRIC_ANY_TENSOR_UTIL, -1.0, NVML_SUCCESS);
    advance_ms(105);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && !(w.valid & (1u << MFU_GPM_TENSOR_ACTIVE)));
    CHECK(strstr(e.detail, "ANY_TENSOR_UTIL") == e.detail);
    CHECK(w.valid & (1u << MFU_GPM_DRAM_BW_UTIL));
    /* The metrics call fails: no figures; its sample starts the next window. */
    script();
    knobs.fail_next("nvmlGpmMetricsGet", NVML_ERROR_UNKNOWN);
    advance_ms(105);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_ERR_DRIVER && w.valid == 0);
    CHECK(strcmp(e.call, "nvmlGpmMetricsGet") == 0 && e.code == NVML_ERROR_UNKNOWN);
    advance_ms(105);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && w.valid == (1u << MFU_GPM_FIGURES) - 1);
    /* from the failed call's edge (105 ms), not the one before (210 ms) */
    CHECK_NEAR(w.seconds, 0.105, 1e-9);
    CHECK(w.seconds == knobs.last_window_s());
    /* A sample fails: no window until two good edges. */
    knobs.fail_next("nvmlGpmSampleGet", NVML_ERROR_UNKNOWN);
    advance_ms(105);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_ERR_DRIVER && w.valid == 0);
    CHECK(strcmp(e.call, "nvmlGpmSampleGet") == 0);
    advance_ms(105);
    CHECK(mfu_gpm_sample(g, &w, &e) == MFU_OK && w.valid == 0 && isnan(w.seconds));
    mfu_gpm_close(g);
    mfu_gpm_close(NULL);
    mfu_nvml_close(n);
}

int main(void)
{
    if (!CHECK(load_knobs()))
        return check_summary("test_gpm");
    knobs.virtual_clock(1);
    mfu_clock_set_source(knobs.clock_ns);
    test_window_figures();
    test_unsupported();
    test_metric_names();
    test_failures();
    mfu_clock_set_source(NULL);
    knobs.virtual_clock(0);
    return check_summary("test_gpm");
}
