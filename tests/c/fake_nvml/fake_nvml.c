/*
 * fake_nvml.c -- a fake NVML for the telemetry tests, built as a shared
 * library and loaded through MFU_TRACKER_NVML_LIBRARY.
 *
 * One simulated device, found by its UUID (FAKE_NVML_UUID) or its PCI bus
 * id (FAKE_NVML_PCI_BUS_ID, matched ignoring case and the domain's width:
 * "0000:3b:00.0" and "00000000:3B:00.0" are the same device).
 *
 * The energy counter advances at a set power: `power_mw` milliwatts times
 * the CLOCK_MONOTONIC seconds since nvmlInit_v2 (in whole mJ, as NVML
 * reports it); nvmlDeviceGetPowerUsage returns the same power. So a caller
 * pairing two readings of the counter with the times it read them gets
 * power_mw / 1000 watts.
 *
 * GPM (GPU Performance Monitoring): nvmlGpmQueryDeviceSupport reports the
 * "gpm_supported" knob; samples come from nvmlGpmSampleAlloc (each one
 * records the CLOCK_MONOTONIC time and the count of nvmlGpmSampleGet when it
 * was taken); nvmlGpmMetricsGet checks the version, that both samples are
 * the fake's, taken, and in order, and fills each requested metric with its
 * scripted value and return code (fake_nvml_set_gpm), NVML_ERROR_NOT_SUPPORTED
 * for a metric never scripted.
 *
 * Every NVML call here has the signature, and every structure the layout, of
 * the real nvml.h (the nvidia-nvml-dev package; tests/c/fake_nvml/nvml_include.py
 * finds it): the compiler refuses a fake that differs from the real library.
 *
 * Exports for tests: fake_nvml_reset, fake_nvml_set(knob, value),
 * fake_nvml_set_gpm(metric id, value, code), fake_nvml_call_count(name),
 * fake_nvml_fail_next(name, code), fake_nvml_initialized(),
 * fake_nvml_live_samples(), fake_nvml_last_window_s() (the seconds between
 * the samples of the last nvmlGpmMetricsGet), and the clock (below).
 * Knobs: "power_mw", "sm_mhz", "sm_max_mhz",
 * "reasons", "init_fails" (nvmlInit_v2 returns it when non-zero),
 * "gpm_supported" (1 by default). Not thread-safe (the tests drive it from
 * one thread).
 *
 * The clock. The fake reads CLOCK_MONOTONIC, or a virtual clock a test
 * drives: fake_nvml_virtual_clock(1) freezes it at the real time of the
 * call, fake_nvml_advance_ns(ns) moves it, fake_nvml_virtual_clock(0) goes
 * back to the real clock. fake_nvml_clock_ns(&ns) reads the fake's clock
 * with the signature of the core's clock source (timing.h
 * mfu_clock_set_source): installed there, the core and the fake read one
 * virtual time, so a test advances it instead of sleeping and the windows,
 * energies and powers it checks are exact. fake_nvml_reset leaves the
 * clock as it is.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvml.h>

#define FAKE_NVML_UUID "GPU-00000000-fa4e-0000-0000-000000000001"
#define FAKE_NVML_PCI_BUS_ID "00000000:3B:00.0"

/* The opaque handles of nvml.h, defined by the fake. */
struct nvmlDevice_st {
    int tag;
};
struct nvmlGpmSample_st {
    int taken;       /* nvmlGpmSampleGet filled it */
    long order;      /* the nvmlGpmSampleGet call that filled it */
    double time_s;
};

enum { GPM_SCRIPT_MAX = 16 };

static const char *const call_names[] = {
    "nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByUUID",
    "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc", "nvmlGpmSampleFree", "nvmlGpmSampleGet", "nvmlGpmMetricsGet",
};
enum { NCALLS = sizeof call_names / sizeof call_names[0] };

static struct {
    long calls[NCALLS];
    int fail_code[NCALLS]; /* returned by the next call of that name; 0 = none */
    int initialized;       /* nvmlInit_v2 minus nvmlShutdown */
    double start_s;
    unsigned long long power_mw, sm_mhz, sm_max_mhz, reasons, init_fails, gpm_supported;
    struct { unsigned int id; double value; int code; } gpm[GPM_SCRIPT_MAX];
    int gpm_scripted;
    long live_samples;   /* allocated minus freed */
    double last_window_s; /* the samples of the last nvmlGpmMetricsGet: seconds apart */
    int virtual_clock;    /* the clock is virtual_ns, not CLOCK_MONOTONIC */
    uint64_t virtual_ns;
} fake = {.power_mw = 250000, .sm_mhz = 1755, .sm_max_mhz = 1980, .gpm_supported = 1};

static struct nvmlDevice_st device_tag; /* the device handle points here */

static uint64_t real_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The fake's clock: an mfu_clock_source (timing.h). Always 0 (read). */
int fake_nvml_clock_ns(uint64_t *now_ns)
{
    *now_ns = fake.virtual_clock ? fake.virtual_ns : real_ns();
    return 0;
}

void fake_nvml_virtual_clock(int on)
{
    if (on && !fake.virtual_clock)
        fake.virtual_ns = real_ns(); /* continuous: a counter started before keeps going */
    fake.virtual_clock = on != 0;
}

void fake_nvml_advance_ns(uint64_t ns)
{
    fake.virtual_ns += ns;
}

/* Seconds on the fake's clock, converted as the core converts its readings. */
static double now_s(void)
{
    uint64_t ns;
    fake_nvml_clock_ns(&ns);
    return (double)ns * 1e-9;
}

/* Count a call; the failure queued for it, or 0. */
static int enter(int call)
{
    int code = fake.fail_code[call];
    fake.calls[call]++;
    fake.fail_code[call] = 0;
    return code;
}

static int find_call(const char *name)
{
    for (int i = 0; name != NULL && i < NCALLS; i++)
        if (strcmp(name, call_names[i]) == 0)
            return i;
    return -1;
}

void fake_nvml_reset(void)
{
    memset(fake.calls, 0, sizeof fake.calls);
    memset(fake.fail_code, 0, sizeof fake.fail_code);
    fake.power_mw = 250000;
    fake.sm_mhz = 1755;
    fake.sm_max_mhz = 1980;
    fake.reasons = 0;
    fake.init_fails = 0;
    fake.gpm_supported = 1;
    fake.gpm_scripted = 0;
}

/* Script GPM metric `id` (an nvmlGpmMetricId_t): nvmlGpmMetricsGet returns
 * `value` with return code `code` for it. 0, or -1 when the script is full. */
int fake_nvml_set_gpm(unsigned int id, double value, int code)
{
    int i = 0;
    while (i < fake.gpm_scripted && fake.gpm[i].id != id)
        i++;
    if (i == GPM_SCRIPT_MAX)
        return -1;
    fake.gpm[i].id = id;
    fake.gpm[i].value = value;
    fake.gpm[i].code = code;
    if (i == fake.gpm_scripted)
        fake.gpm_scripted++;
    return 0;
}

long fake_nvml_live_samples(void)
{
    return fake.live_samples;
}

/* The seconds between the two samples the last nvmlGpmMetricsGet used. */
double fake_nvml_last_window_s(void)
{
    return fake.last_window_s;
}

/* 0, or -1 for an unknown knob. */
int fake_nvml_set(const char *knob, unsigned long long value)
{
    if (strcmp(knob, "power_mw") == 0)
        fake.power_mw = value;
    else if (strcmp(knob, "sm_mhz") == 0)
        fake.sm_mhz = value;
    else if (strcmp(knob, "sm_max_mhz") == 0)
        fake.sm_max_mhz = value;
    else if (strcmp(knob, "reasons") == 0)
        fake.reasons = value;
    else if (strcmp(knob, "init_fails") == 0)
        fake.init_fails = value;
    else if (strcmp(knob, "gpm_supported") == 0)
        fake.gpm_supported = value;
    else
        return -1;
    return 0;
}

long fake_nvml_call_count(const char *name)
{
    int call = find_call(name);
    return call < 0 ? -1 : fake.calls[call];
}

int fake_nvml_fail_next(const char *name, int code)
{
    int call = find_call(name);
    if (call < 0)
        return -1;
    fake.fail_code[call] = code;
    return 0;
}

int fake_nvml_initialized(void)
{
    return fake.initialized;
}

/* ---- the NVML calls ------------------------------------------------------ */

nvmlReturn_t nvmlInit_v2(void)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(0);
    if (code == NVML_SUCCESS && fake.init_fails != 0)
        code = (nvmlReturn_t)fake.init_fails;
    if (code != 0)
        return code;
    if (fake.initialized++ == 0)
        fake.start_s = now_s();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(1);
    if (code != 0)
        return code;
    if (fake.initialized == 0)
        return NVML_ERROR_UNINITIALIZED;
    fake.initialized--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t code)
{
    switch (code) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    default:
        return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(2);
    if (code != 0)
        return code;
    if (!fake.initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (uuid == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strcmp(uuid, FAKE_NVML_UUID) != 0)
        return NVML_ERROR_NOT_FOUND;
    *device = &device_tag;
    return NVML_SUCCESS;
}

/* "domain:bus:device.function" without the domain, lower case. */
static int same_bus_id(const char *a, const char *b)
{
    const char *ca = strchr(a, ':'), *cb = strchr(b, ':');
    if (ca == NULL || cb == NULL || strlen(ca) != strlen(cb))
        return 0;
    for (; *ca != '\0'; ca++, cb++)
        if (tolower((unsigned char)*ca) != tolower((unsigned char)*cb))
            return 0;
    return 1;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(3);
    if (code != 0)
        return code;
    if (!fake.initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (bus_id == NULL || device == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!same_bus_id(bus_id, FAKE_NVML_PCI_BUS_ID))
        return NVML_ERROR_NOT_FOUND;
    *device = &device_tag;
    return NVML_SUCCESS;
}

/* Common checks of a device query. */
static nvmlReturn_t query(int call, nvmlDevice_t device, const void *out)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(call);
    if (code != NVML_SUCCESS)
        return code;
    if (!fake.initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (device != &device_tag || out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *mj)
{
    nvmlReturn_t code = query(4, device, mj);
    if (code == 0)
        *mj = (unsigned long long)((double)fake.power_mw * (now_s() - fake.start_s));
    return code;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *mw)
{
    nvmlReturn_t code = query(5, device, mw);
    if (code == 0)
        *mw = (unsigned int)fake.power_mw;
    return code;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz)
{
    nvmlReturn_t code = query(6, device, mhz);
    if (code == 0 && type != NVML_CLOCK_SM)
        code = NVML_ERROR_INVALID_ARGUMENT;
    if (code == 0)
        *mhz = (unsigned int)fake.sm_mhz;
    return code;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz)
{
    nvmlReturn_t code = query(7, device, mhz);
    if (code == 0 && type != NVML_CLOCK_SM)
        code = NVML_ERROR_INVALID_ARGUMENT;
    if (code == 0)
        *mhz = (unsigned int)fake.sm_max_mhz;
    return code;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long *clocksEventReasons)
{
    nvmlReturn_t code = query(8, device, clocksEventReasons);
    if (code == NVML_SUCCESS)
        *clocksEventReasons = fake.reasons;
    return code;
}

/* ---- GPM ----------------------------------------------------------------- */

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    nvmlReturn_t code = query(9, device, gpmSupport);
    if (code == NVML_SUCCESS && gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        code = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (code == NVML_SUCCESS)
        gpmSupport->isSupportedDevice = fake.gpm_supported != 0;
    return code;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(10);
    if (code != NVML_SUCCESS)
        return code;
    if (gpmSample == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *gpmSample = calloc(1, sizeof **gpmSample);
    if (*gpmSample == NULL)
        return NVML_ERROR_MEMORY;
    fake.live_samples++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(11);
    if (code != NVML_SUCCESS)
        return code;
    if (gpmSample == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(gpmSample);
    fake.live_samples--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
    nvmlReturn_t code = query(12, device, gpmSample);
    if (code != NVML_SUCCESS)
        return code;
    gpmSample->taken = 1;
    gpmSample->order = fake.calls[12];
    gpmSample->time_s = now_s();
    return NVML_SUCCESS;
}

/* The scripted value of metric `id`: its return code, *value set on success. */
static nvmlReturn_t scripted(unsigned int id, double *value)
{
    for (int i = 0; i < fake.gpm_scripted; i++) {
        if (fake.gpm[i].id == id) {
            *value = fake.gpm[i].value;
            return (nvmlReturn_t)fake.gpm[i].code;
        }
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet)
{
    nvmlReturn_t code = (nvmlReturn_t)enter(13);
    if (code != NVML_SUCCESS)
        return code;
    if (!fake.initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (metricsGet == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || metricsGet->sample1 == NULL
        || metricsGet->sample2 == NULL || !metricsGet->sample1->taken
        || !metricsGet->sample2->taken || metricsGet->sample1->order >= metricsGet->sample2->order)
        return NVML_ERROR_INVALID_ARGUMENT;
    fake.last_window_s = metricsGet->sample2->time_s - metricsGet->sample1->time_s;
    for (unsigned int i = 0; i < metricsGet->numMetrics; i++) {
        nvmlGpmMetric_t *m = &metricsGet->metrics[i];
        m->value = 0.0;
        m->nvmlReturn = scripted(m->metricId, &m->value);
        m->metricInfo.shortName = m->metricInfo.longName = m->metricInfo.unit = NULL;
    }
    return NVML_SUCCESS;
}
