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
 * Exports for tests: fake_nvml_reset, fake_nvml_set(knob, value),
 * fake_nvml_call_count(name), fake_nvml_fail_next(name, code),
 * fake_nvml_initialized(). Knobs: "power_mw", "sm_mhz", "sm_max_mhz",
 * "reasons", "init_fails" (nvmlInit_v2 returns it when non-zero). Not
 * thread-safe (the tests drive it from one thread).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <string.h>
#include <time.h>

#define FAKE_NVML_UUID "GPU-00000000-fa4e-0000-0000-000000000001"
#define FAKE_NVML_PCI_BUS_ID "00000000:3B:00.0"

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_CLOCK_SM = 1
};

static const char *const call_names[] = {
    "nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetHandleByUUID",
    "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
};
enum { NCALLS = sizeof call_names / sizeof call_names[0] };

static struct {
    long calls[NCALLS];
    int fail_code[NCALLS]; /* returned by the next call of that name; 0 = none */
    int initialized;       /* nvmlInit_v2 minus nvmlShutdown */
    double start_s;
    unsigned long long power_mw, sm_mhz, sm_max_mhz, reasons, init_fails;
} fake = {.power_mw = 250000, .sm_mhz = 1755, .sm_max_mhz = 1980};

static int device_tag; /* the device handle points here */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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

int nvmlInit_v2(void)
{
    int code = enter(0);
    if (code == 0 && fake.init_fails != 0)
        code = (int)fake.init_fails;
    if (code != 0)
        return code;
    if (fake.initialized++ == 0)
        fake.start_s = now_s();
    return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
    int code = enter(1);
    if (code != 0)
        return code;
    if (fake.initialized == 0)
        return NVML_ERROR_UNINITIALIZED;
    fake.initialized--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(int code)
{
    switch (code) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    default:
        return "Unknown Error";
    }
}

int nvmlDeviceGetHandleByUUID(const char *uuid, void **device)
{
    int code = enter(2);
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

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **device)
{
    int code = enter(3);
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
static int query(int call, void *device, const void *out)
{
    int code = enter(call);
    if (code != 0)
        return code;
    if (!fake.initialized)
        return NVML_ERROR_UNINITIALIZED;
    if (device != &device_tag || out == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *mj)
{
    int code = query(4, device, mj);
    if (code == 0)
        *mj = (unsigned long long)((double)fake.power_mw * (now_s() - fake.start_s));
    return code;
}

int nvmlDeviceGetPowerUsage(void *device, unsigned int *mw)
{
    int code = query(5, device, mw);
    if (code == 0)
        *mw = (unsigned int)fake.power_mw;
    return code;
}

int nvmlDeviceGetClockInfo(void *device, int type, unsigned int *mhz)
{
    int code = query(6, device, mhz);
    if (code == 0 && type != NVML_CLOCK_SM)
        code = NVML_ERROR_INVALID_ARGUMENT;
    if (code == 0)
        *mhz = (unsigned int)fake.sm_mhz;
    return code;
}

int nvmlDeviceGetMaxClockInfo(void *device, int type, unsigned int *mhz)
{
    int code = query(7, device, mhz);
    if (code == 0 && type != NVML_CLOCK_SM)
        code = NVML_ERROR_INVALID_ARGUMENT;
    if (code == 0)
        *mhz = (unsigned int)fake.sm_max_mhz;
    return code;
}

int nvmlDeviceGetCurrentClocksEventReasons(void *device, unsigned long long *reasons)
{
    int code = query(8, device, reasons);
    if (code == 0)
        *reasons = fake.reasons;
    return code;
}
