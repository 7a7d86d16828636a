/* nvml.c -- NVML telemetry, dlopen'd (see nvml.h). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"
#include "timing.h"

/* NVML's types, as nvml.h declares them: nvmlReturn_t is an int enum
 * (0 = NVML_SUCCESS), nvmlDevice_t an opaque pointer, nvmlClockType_t an
 * int enum (NVML_CLOCK_SM = 1). */
typedef void *nvml_device;
enum { NVML_SUCCESS = 0, NVML_CLOCK_SM = 1 };

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_shutdown_fn)(void);
typedef int (*nvml_handle_fn)(const char *id, nvml_device *device);
typedef int (*nvml_energy_fn)(nvml_device device, unsigned long long *millijoules);
typedef int (*nvml_power_fn)(nvml_device device, unsigned int *milliwatts);
typedef int (*nvml_clock_fn)(nvml_device device, int type, unsigned int *mhz);
typedef int (*nvml_reasons_fn)(nvml_device device, unsigned long long *reasons);
typedef const char *(*nvml_error_string_fn)(int code);

struct mfu_nvml {
    void *library;
    nvml_shutdown_fn shutdown;
    nvml_energy_fn energy;     /* optional: NULL when absent */
    nvml_power_fn power;
    nvml_clock_fn clock;
    nvml_clock_fn clock_max;
    nvml_reasons_fn reasons;
    const char *reasons_name;
    nvml_error_string_fn error_string;
    nvml_device device;
};

static void set_error(mfu_gpu_error *error, const char *call, int code, const char *detail)
{
    error->call = call;
    error->code = code;
    snprintf(error->detail, sizeof error->detail, "%s", detail ? detail : "");
}

/* A failed NVML call: its name, code and NVML's text for the code. */
static void call_error(const mfu_nvml *n, mfu_gpu_error *error, const char *call, int code)
{
    const char *text = n->error_string != NULL ? n->error_string(code) : NULL;
    set_error(error, call, code, text);
}

/* dlsym as a function pointer (POSIX guarantees the conversion). */
static void *symbol(void *library, const char *name)
{
    return dlsym(library, name);
}

const char *mfu_nvml_library(void)
{
    const char *env = getenv(MFU_NVML_LIBRARY_ENV);
    return env != NULL && env[0] != '\0' ? env : MFU_NVML_LIBRARY_DEFAULT;
}

void mfu_nvml_close(mfu_nvml *n)
{
    if (n == NULL)
        return;
    if (n->shutdown != NULL)
        (void)n->shutdown();
    if (n->library != NULL)
        dlclose(n->library);
    free(n);
}

/* A UUID ("GPU-...", "MIG-...") or else a PCI bus id. */
static int is_uuid(const char *id)
{
    return strncmp(id, "GPU-", 4) == 0 || strncmp(id, "MIG-", 4) == 0;
}

mfu_status mfu_nvml_open(const char *path, const char *device_id, mfu_nvml **out,
                         mfu_gpu_error *error)
{
    static const char *const required[] = {"nvmlInit_v2", "nvmlShutdown",
                                           "nvmlDeviceGetHandleByUUID",
                                           "nvmlDeviceGetHandleByPciBusId_v2"};
    void *calls[4];
    mfu_nvml *n;
    int code;

    *out = NULL;
    set_error(error, NULL, 0, "");
    if (device_id == NULL || device_id[0] == '\0') {
        set_error(error, "mfu_nvml_open", 0, "no device id");
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (path == NULL)
        path = mfu_nvml_library();
    n = calloc(1, sizeof *n);
    if (n == NULL)
        return MFU_ERR_NO_MEMORY;
    n->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (n->library == NULL) {
        const char *why = dlerror();
        set_error(error, "dlopen", 0, why != NULL ? why : path);
        mfu_nvml_close(n);
        return MFU_ERR_UNAVAILABLE;
    }
    for (int i = 0; i < 4; i++) {
        calls[i] = symbol(n->library, required[i]);
        if (calls[i] == NULL) {
            set_error(error, required[i], 0, "symbol not found in the NVML library");
            mfu_nvml_close(n);
            return MFU_ERR_UNAVAILABLE;
        }
    }
    n->error_string = (nvml_error_string_fn)symbol(n->library, "nvmlErrorString");
    n->energy = (nvml_energy_fn)symbol(n->library, "nvmlDeviceGetTotalEnergyConsumption");
    n->power = (nvml_power_fn)symbol(n->library, "nvmlDeviceGetPowerUsage");
    n->clock = (nvml_clock_fn)symbol(n->library, "nvmlDeviceGetClockInfo");
    n->clock_max = (nvml_clock_fn)symbol(n->library, "nvmlDeviceGetMaxClockInfo");
    n->reasons_name = "nvmlDeviceGetCurrentClocksEventReasons";
    n->reasons = (nvml_reasons_fn)symbol(n->library, n->reasons_name);
    if (n->reasons == NULL) {
        n->reasons_name = "nvmlDeviceGetCurrentClocksThrottleReasons";
        n->reasons = (nvml_reasons_fn)symbol(n->library, n->reasons_name);
    }
    code = ((nvml_init_fn)calls[0])();
    if (code != NVML_SUCCESS) {
        call_error(n, error, required[0], code);
        mfu_nvml_close(n); /* not initialised: no shutdown */
        return MFU_ERR_DRIVER;
    }
    n->shutdown = (nvml_shutdown_fn)calls[1];
    code = ((nvml_handle_fn)calls[is_uuid(device_id) ? 2 : 3])(device_id, &n->device);
    if (code != NVML_SUCCESS) {
        call_error(n, error, required[is_uuid(device_id) ? 2 : 3], code);
        mfu_nvml_close(n);
        return MFU_ERR_DRIVER;
    }
    *out = n;
    return MFU_OK;
}

void *mfu_nvml_symbol(const mfu_nvml *n, const char *name)
{
    return symbol(n->library, name);
}

void *mfu_nvml_device(const mfu_nvml *n)
{
    return n->device;
}

void mfu_nvml_call_error(const mfu_nvml *n, mfu_gpu_error *error, const char *call, int code)
{
    call_error(n, error, call, code);
}

int mfu_nvml_throttled(uint64_t reasons)
{
    return (reasons & MFU_NVML_THROTTLE_POWER_THERMAL) != 0;
}

/* Note a failed call: the first failure of a read is the one reported. */
static void failed(const mfu_nvml *n, mfu_gpu_error *error, mfu_status *status,
                   const char *call, int code)
{
    if (*status == MFU_OK)
        call_error(n, error, call, code);
    *status = MFU_ERR_DRIVER;
}

/* One figure of a sample: read it through its call (the value as an
 * unsigned long long) into *value x scale, setting `bit`; a missing call
 * reads nothing, a failing one is noted. */
static void read_figure(const mfu_nvml *n, mfu_nvml_sample *s, mfu_gpu_error *error,
                        mfu_status *status, unsigned bit, double *value, double scale)
{
    unsigned long long u64 = 0;
    unsigned int u32 = 0;
    const char *call = NULL;
    int code = -1;
    switch (bit) {
    case MFU_NVML_ENERGY:
        if (n->energy != NULL)
            code = n->energy(n->device, &u64), call = "nvmlDeviceGetTotalEnergyConsumption";
        break;
    case MFU_NVML_POWER:
        if (n->power != NULL)
            code = n->power(n->device, &u32), call = "nvmlDeviceGetPowerUsage";
        break;
    case MFU_NVML_SM_CLOCK:
        if (n->clock != NULL)
            code = n->clock(n->device, NVML_CLOCK_SM, &u32), call = "nvmlDeviceGetClockInfo";
        break;
    case MFU_NVML_SM_CLOCK_MAX:
        if (n->clock_max != NULL)
            code = n->clock_max(n->device, NVML_CLOCK_SM, &u32), call = "nvmlDeviceGetMaxClockInfo";
        break;
    default: /* MFU_NVML_THROTTLE */
        if (n->reasons != NULL)
            code = n->reasons(n->device, &u64), call = n->reasons_name;
        break;
    }
    if (call == NULL)
        return;
    if (code != NVML_SUCCESS) {
        failed(n, error, status, call, code);
        return;
    }
    s->valid |= bit;
    if (value != NULL)
        *value = (double)(u64 + u32) * scale; /* one of them is 0 */
    else
        s->throttle_reasons = (uint64_t)u64;
}

mfu_status mfu_nvml_read(mfu_nvml *n, mfu_nvml_sample *s, mfu_gpu_error *error)
{
    mfu_status status = MFU_OK;
    uint64_t now_ns;

    memset(s, 0, sizeof *s);
    set_error(error, NULL, 0, "");
    /* The time right before the energy counter, so energy / time pairs. */
    if (mfu_clock_monotonic_ns(&now_ns) == MFU_OK)
        s->time_s = (double)now_ns * 1e-9;
    read_figure(n, s, error, &status, MFU_NVML_ENERGY, &s->energy_j, 1e-3);  /* mJ */
    read_figure(n, s, error, &status, MFU_NVML_POWER, &s->power_w, 1e-3);    /* mW */
    read_figure(n, s, error, &status, MFU_NVML_SM_CLOCK, &s->sm_clock_mhz, 1.0);
    read_figure(n, s, error, &status, MFU_NVML_SM_CLOCK_MAX, &s->sm_clock_max_mhz, 1.0);
    read_figure(n, s, error, &status, MFU_NVML_THROTTLE, NULL, 1.0);
    return status;
}
