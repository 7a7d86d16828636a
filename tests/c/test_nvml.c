/*
 * test_nvml.c -- the NVML loader (core/device/nvml.h) against the fake NVML
 * (tests/c/fake_nvml/fake_nvml.c), which `make ctest` builds and names in
 * MFU_TRACKER_NVML_LIBRARY. The test opens the same library for its knobs:
 * the loader hands the core and the test one instance.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "nvml.h"

#define UUID "GPU-00000000-fa4e-0000-0000-000000000001"

static struct {
    void *library;
    void (*reset)(void);
    int (*set)(const char *knob, unsigned long long value);
    long (*call_count)(const char *name);
    int (*fail_next)(const char *name, int code);
    int (*initialized)(void);
} knobs;

static int load_knobs(void)
{
    const char *path = getenv(MFU_NVML_LIBRARY_ENV);
    if (path == NULL || path[0] == '\0') {
        fprintf(stderr, "test_nvml: %s is not set (run through make ctest)\n",
                MFU_NVML_LIBRARY_ENV);
        return 0;
    }
    knobs.library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (knobs.library == NULL)
        return 0;
    *(void **)&knobs.reset = dlsym(knobs.library, "fake_nvml_reset");
    *(void **)&knobs.set = dlsym(knobs.library, "fake_nvml_set");
    *(void **)&knobs.call_count = dlsym(knobs.library, "fake_nvml_call_count");
    *(void **)&knobs.fail_next = dlsym(knobs.library, "fake_nvml_fail_next");
    *(void **)&knobs.initialized = dlsym(knobs.library, "fake_nvml_initialized");
    return knobs.reset && knobs.set && knobs.call_count && knobs.fail_next
           && knobs.initialized;
}

/* CLOCK_MONOTONIC, seconds (the clock the core and the fake read). */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void test_library_name(void)
{
    CHECK(strcmp(mfu_nvml_library(), getenv(MFU_NVML_LIBRARY_ENV)) == 0);
    CHECK(strcmp(MFU_NVML_LIBRARY_DEFAULT, "libnvidia-ml.so.1") == 0);
}

static void test_open_failures(void)
{
    mfu_nvml *n = (mfu_nvml *)1;
    mfu_gpu_error e;
    const char *cuda = getenv("MFU_TRACKER_CUDA_LIBRARY");

    CHECK(mfu_nvml_open(NULL, "", &n, &e) == MFU_ERR_INVALID_ARGUMENT && n == NULL);
    CHECK(mfu_nvml_open(NULL, NULL, &n, &e) == MFU_ERR_INVALID_ARGUMENT);
    /* No such library. */
    CHECK(mfu_nvml_open("/nonexistent/libnvidia-ml.so.1", UUID, &n, &e)
          == MFU_ERR_UNAVAILABLE);
    CHECK(n == NULL && e.call != NULL && strcmp(e.call, "dlopen") == 0);
    CHECK(strstr(e.detail, "nonexistent") != NULL);
    /* A library that is not NVML (the fake CUDA driver): the first required
     * call is named. */
    if (cuda != NULL) {
        CHECK(mfu_nvml_open(cuda, UUID, &n, &e) == MFU_ERR_UNAVAILABLE);
        CHECK(e.call != NULL && strcmp(e.call, "nvmlInit_v2") == 0);
    }
    /* nvmlInit_v2 fails: no shutdown follows (NVML was not initialised). */
    knobs.reset();
    knobs.set("init_fails", 999);
    CHECK(mfu_nvml_open(NULL, UUID, &n, &e) == MFU_ERR_DRIVER && n == NULL);
    CHECK(e.call != NULL && strcmp(e.call, "nvmlInit_v2") == 0 && e.code == 999);
    CHECK(strcmp(e.detail, "Unknown Error") == 0);
    CHECK(knobs.call_count("nvmlShutdown") == 0 && knobs.initialized() == 0);
    knobs.reset();
    /* An unknown device: NVML_ERROR_NOT_FOUND (6), and NVML shut down again. */
    CHECK(mfu_nvml_open(NULL, "GPU-ffffffff-0000-0000-0000-000000000000", &n, &e)
          == MFU_ERR_DRIVER);
    CHECK(e.call != NULL && strcmp(e.call, "nvmlDeviceGetHandleByUUID") == 0 && e.code == 6);
    CHECK(strcmp(e.detail, "Not Found") == 0);
    CHECK(mfu_nvml_open(NULL, "0000:3c:00.0", &n, &e) == MFU_ERR_DRIVER);
    CHECK(e.call != NULL && strcmp(e.call, "nvmlDeviceGetHandleByPciBusId_v2") == 0);
    CHECK(knobs.initialized() == 0);
}

static void test_open_by_id(void)
{
    /* The UUID, and the PCI bus id in both widths of the domain. */
    static const char *const ids[] = {UUID, "00000000:3B:00.0", "0000:3b:00.0"};
    for (int i = 0; i < 3; i++) {
        mfu_nvml *n = NULL;
        mfu_gpu_error e;
        CHECK(mfu_nvml_open(NULL, ids[i], &n, &e) == MFU_OK && n != NULL);
        CHECK(e.call == NULL);
        CHECK(knobs.initialized() == 1);
        mfu_nvml_close(n);
        CHECK(knobs.initialized() == 0);
    }
    mfu_nvml_close(NULL); /* a no-op */
}

static void test_read(void)
{
    mfu_nvml *n = NULL;
    mfu_nvml_sample a, b;
    double after_a, after_b;
    mfu_gpu_error e;
    const unsigned all = MFU_NVML_ENERGY | MFU_NVML_POWER | MFU_NVML_SM_CLOCK
                         | MFU_NVML_SM_CLOCK_MAX | MFU_NVML_THROTTLE;

    knobs.reset();
    knobs.set("power_mw", 300000); /* 300 W */
    if (!CHECK(mfu_nvml_open(NULL, UUID, &n, &e) == MFU_OK))
        return;
    CHECK(mfu_nvml_read(n, &a, &e) == MFU_OK && e.call == NULL);
    after_a = now_s();
    CHECK(a.valid == all);
    CHECK_NEAR(a.power_w, 300.0, 1e-15); /* 300000 mW */
    CHECK(a.sm_clock_mhz == 1755.0 && a.sm_clock_max_mhz == 1980.0);
    CHECK(a.throttle_reasons == 0);
    sleep_ms(50);
    CHECK(mfu_nvml_read(n, &b, &e) == MFU_OK);
    after_b = now_s();
    /* The counter advances at 300 W on the fake's clock, read inside each
     * call: between a sample's time_s and the call's return. So the energy
     * between the readings is 300 J/s times a span within
     * [b.time_s - after_a, after_b - a.time_s], to the counter's 1 mJ. */
    CHECK(b.time_s > a.time_s && b.energy_j > a.energy_j);
    CHECK(b.energy_j - a.energy_j >= 300.0 * (b.time_s - after_a) - 1e-3);
    CHECK(b.energy_j - a.energy_j <= 300.0 * (after_b - a.time_s) + 1e-3);
    /* Throttle reasons: SwPowerCap (0x4) is a power reason; the app-clocks
     * setting (0x2) is not. */
    knobs.set("reasons", 0x2);
    CHECK(mfu_nvml_read(n, &b, &e) == MFU_OK && !mfu_nvml_throttled(b.throttle_reasons));
    knobs.set("reasons", 0x4);
    CHECK(mfu_nvml_read(n, &b, &e) == MFU_OK && mfu_nvml_throttled(b.throttle_reasons));
    /* A failing call leaves its figure out and is the one reported; the
     * other figures are read. */
    knobs.fail_next("nvmlDeviceGetPowerUsage", 15);
    knobs.fail_next("nvmlDeviceGetClockInfo", 999);
    CHECK(mfu_nvml_read(n, &b, &e) == MFU_ERR_DRIVER);
    CHECK(e.call != NULL && strcmp(e.call, "nvmlDeviceGetPowerUsage") == 0 && e.code == 15);
    CHECK(b.valid == (all & ~(unsigned)(MFU_NVML_POWER | MFU_NVML_SM_CLOCK)));
    CHECK(b.power_w == 0.0 && b.sm_clock_mhz == 0.0);
    /* Reads make one call per figure and nothing else. */
    CHECK(knobs.call_count("nvmlDeviceGetTotalEnergyConsumption") == 5);
    CHECK(knobs.call_count("nvmlInit_v2") == 1);
    mfu_nvml_close(n);
    CHECK(knobs.initialized() == 0 && knobs.call_count("nvmlShutdown") == 1);
}

static void test_throttle_bits(void)
{
    CHECK(!mfu_nvml_throttled(0));
    CHECK(!mfu_nvml_throttled(0x1)); /* GpuIdle */
    CHECK(mfu_nvml_throttled(0x8));  /* HwSlowdown */
    CHECK(mfu_nvml_throttled(0x20)); /* SwThermalSlowdown */
    CHECK(mfu_nvml_throttled(0x40)); /* HwThermalSlowdown */
    CHECK(mfu_nvml_throttled(0x80)); /* HwPowerBrakeSlowdown */
    CHECK(!mfu_nvml_throttled(0x100)); /* DisplayClockSetting */
}

int main(void)
{
    if (!CHECK(load_knobs()))
        return check_summary("test_nvml");
    test_library_name();
    test_open_failures();
    test_open_by_id();
    test_read();
    test_throttle_bits();
    dlclose(knobs.library);
    return check_summary("test_nvml");
}
