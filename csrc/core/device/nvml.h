/*
 * nvml.h -- device telemetry from NVML, loaded at run time with dlopen.
 *
 * Like the GPU driver (gpu_driver.h) the core never links against NVML:
 * on first use the library is opened and the few calls the telemetry needs
 * are resolved into function pointers. The environment variable
 * MFU_TRACKER_NVML_LIBRARY, when set and non-empty, names the library to
 * load instead of libnvidia-ml.so.1 (the tests load a fake NVML this way).
 *
 *   required  nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByUUID,
 *             nvmlDeviceGetHandleByPciBusId_v2
 *   optional  nvmlDeviceGetTotalEnergyConsumption (mJ since driver load,
 *             Volta and later), nvmlDeviceGetPowerUsage (mW),
 *             nvmlDeviceGetClockInfo / nvmlDeviceGetMaxClockInfo (SM clock,
 *             MHz), nvmlDeviceGetCurrentClocksEventReasons (else the older
 *             name nvmlDeviceGetCurrentClocksThrottleReasons; a bit mask),
 *             nvmlErrorString (messages)
 *
 * ## Which device
 *
 * NVML numbers devices in PCI order and ignores CUDA_VISIBLE_DEVICES, so a
 * CUDA device index is never an NVML index. The caller names the device
 * by what the CUDA driver reports for it: its UUID ("GPU-xxxxxxxx-...",
 * also "MIG-..." for a MIG instance) or its PCI bus id
 * ("0000:3b:00.0" / "00000000:3B:00.0"). A name starting with "GPU-" or
 * "MIG-" is looked up as a UUID, anything else as a PCI bus id.
 *
 * ## Reads
 *
 * mfu_nvml_read makes one call per figure, never waits and starts no
 * thread: the caller reads at window edges (logging time), not per step.
 * A figure whose call is missing or fails is left out of the sample (its
 * bit not in `valid`); the first failure is reported for one warning.
 *
 * A handle is used by one thread at a time.
 */
#ifndef MFU_NVML_H
#define MFU_NVML_H

#include <stdint.h>

#include "gpu_driver.h" /* mfu_gpu_error */
#include "mfu_status.h"

#define MFU_NVML_LIBRARY_DEFAULT "libnvidia-ml.so.1"
#define MFU_NVML_LIBRARY_ENV "MFU_TRACKER_NVML_LIBRARY"

/* NVML's clock-event reasons that mean a power or thermal limit is holding
 * the clock down: SwPowerCap 0x4, HwSlowdown 0x8, SwThermalSlowdown 0x20,
 * HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80 (nvml.h). */
#define MFU_NVML_THROTTLE_POWER_THERMAL 0xECull

/* Bits of mfu_nvml_sample.valid. */
enum {
    MFU_NVML_ENERGY = 1u << 0, MFU_NVML_POWER = 1u << 1,  /* energy_j, power_w */
    MFU_NVML_SM_CLOCK = 1u << 2, MFU_NVML_SM_CLOCK_MAX = 1u << 3,
    MFU_NVML_THROTTLE = 1u << 4 /* throttle_reasons */
};

/* One reading of the device. Fields whose bit is not in `valid` are 0. */
typedef struct mfu_nvml_sample {
    unsigned valid;
    /* Seconds on CLOCK_MONOTONIC when read; joules since the driver loaded;
     * board power now, watts. */
    double time_s, energy_j, power_w;
    /* The SM clock now and its maximum, MHz. */
    double sm_clock_mhz, sm_clock_max_mhz;
    uint64_t throttle_reasons; /* NVML's clock-event reason mask */
} mfu_nvml_sample;

typedef struct mfu_nvml mfu_nvml;

/* The library mfu_nvml_open(NULL, ...) opens: the environment override when
 * set and non-empty, else MFU_NVML_LIBRARY_DEFAULT. Never NULL. */
const char *mfu_nvml_library(void);

/* Load NVML from `path` (NULL: mfu_nvml_library()), initialise it and find
 * the device `device_id` (a UUID or a PCI bus id, see above). Status:
 *   MFU_ERR_INVALID_ARGUMENT  device_id NULL or empty
 *   MFU_ERR_UNAVAILABLE       the library cannot be opened or lacks a
 *                             required call (error->call names it)
 *   MFU_ERR_DRIVER            nvmlInit_v2 or the device lookup failed
 *                             (error->code is the nvmlReturn_t)
 *   MFU_ERR_NO_MEMORY
 * *error (never NULL) says what failed; error->call is NULL on success. */
mfu_status mfu_nvml_open(const char *path, const char *device_id, mfu_nvml **nvml,
                         mfu_gpu_error *error);

/* Read every figure NVML has for the device into *sample (never waits).
 * MFU_OK when every available call succeeded; MFU_ERR_DRIVER when one
 * failed (*error names the first; the sample holds the others). */
mfu_status mfu_nvml_read(mfu_nvml *nvml, mfu_nvml_sample *sample, mfu_gpu_error *error);

/* 1 when `reasons` holds a power or thermal throttle reason. */
int mfu_nvml_throttled(uint64_t reasons);

/* For the GPM counters (gpm.h), which share the loaded library and the
 * device: a call of the library (NULL when it lacks it), the device handle
 * (an nvmlDevice_t), and *error set to a failed call (its name, code and
 * NVML's text for the code). */
void *mfu_nvml_symbol(const mfu_nvml *nvml, const char *name);
void *mfu_nvml_device(const mfu_nvml *nvml);
void mfu_nvml_call_error(const mfu_nvml *nvml, mfu_gpu_error *error, const char *call, int code);

/* nvmlShutdown and dlclose; NULL is a no-op. */
void mfu_nvml_close(mfu_nvml *nvml);

#endif /* MFU_NVML_H */
