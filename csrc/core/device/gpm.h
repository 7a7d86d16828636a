/*
 * gpm.h -- what the hardware did over a window: NVML's GPU Performance
 * Monitoring (GPM) counters, read at window edges.
 *
 * GPM (Hopper and later) gives, between two samples of the device's
 * counters, the share of time the tensor pipes were busy, DRAM bandwidth use
 * against its peak, SM activity and occupancy, NVLink traffic and the share
 * of time any kernel ran (GPU busy, what nvidia-smi's GPU-Util reports) -- out of
 * band, with no stream synchronization. It shares the NVML library and the
 * device of an mfu_nvml (nvml.h) and, like it, never links against NVML:
 *
 *   required  nvmlGpmQueryDeviceSupport, nvmlGpmSampleAlloc,
 *             nvmlGpmSampleFree, nvmlGpmSampleGet, nvmlGpmMetricsGet
 *
 * A window is the interval between two mfu_gpm_sample calls (the caller's
 * window edges: logging time, never per step). NVML documents that samples
 * closer than 100 ms apart read its internal counters' refresh, not the
 * window: such a window gives no figures (MFU_GPM_MIN_INTERVAL_S).
 *
 * The layouts below are NVML's (nvml.h of the nvidia-nvml-dev package,
 * NVML API 13): tests/c/test_gpm.c checks every offset and size against the
 * real header, and the fake NVML the tests load is compiled from it.
 *
 * A handle is used by one thread at a time.
 */
#ifndef MFU_GPM_H
#define MFU_GPM_H

#include "nvml.h"

/* NVML: "The interval between these two nvmlGpmSampleGet() calls should be
 * greater than 100ms due to the internal sample refresh rate." */
#define MFU_GPM_MIN_INTERVAL_S 0.1

/* ---- NVML's GPM structures (nvml.h, "GPM Structs") ---------------------- */

/* nvmlGpmMetricId_t values read here (nvml.h). */
enum {
    MFU_NVML_GPM_GRAPHICS_UTIL = 1,            /* % of time any compute/graphics app ran */
    MFU_NVML_GPM_SM_UTIL = 2,                  /* % of SMs busy */
    MFU_NVML_GPM_SM_OCCUPANCY = 3,             /* % of warps active vs maximum */
    MFU_NVML_GPM_ANY_TENSOR_UTIL = 5,          /* % of time SMs did any tensor op */
    MFU_NVML_GPM_DRAM_BW_UTIL = 10,            /* % of DRAM bandwidth vs maximum */
    MFU_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC = 60, /* MiB/s, all links */
    MFU_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC = 61  /* MiB/s, all links */
};

/* NVML_GPM_METRIC_MAX of NVML API 13: the length of nvmlGpmMetricsGet_t's
 * array. NVML reads and writes only the first numMetrics entries, so a
 * library built with a shorter array works with this layout too. */
#define MFU_NVML_GPM_METRIC_MAX 477
#define MFU_NVML_GPM_METRICS_GET_VERSION 1 /* NVML_GPM_METRICS_GET_VERSION */
#define MFU_NVML_GPM_SUPPORT_VERSION 1     /* NVML_GPM_SUPPORT_VERSION */

/* nvmlGpmMetric_t */
typedef struct mfu_nvml_gpm_metric {
    unsigned int metric_id; /* IN: the metric */
    int nvml_return;        /* OUT: nvmlReturn_t of this metric; value valid iff 0 */
    double value;           /* OUT */
    struct {
        char *short_name, *long_name, *unit;
    } info;                 /* OUT: may be NULL */
} mfu_nvml_gpm_metric;

/* nvmlGpmMetricsGet_t */
typedef struct mfu_nvml_gpm_metrics_get {
    unsigned int version;     /* IN: MFU_NVML_GPM_METRICS_GET_VERSION */
    unsigned int num_metrics; /* IN */
    void *sample1, *sample2;  /* IN: nvmlGpmSample_t, the earlier first */
    mfu_nvml_gpm_metric metrics[MFU_NVML_GPM_METRIC_MAX];
} mfu_nvml_gpm_metrics_get;

/* nvmlGpmSupport_t */
typedef struct mfu_nvml_gpm_support {
    unsigned int version;             /* IN: MFU_NVML_GPM_SUPPORT_VERSION */
    unsigned int is_supported_device; /* OUT */
} mfu_nvml_gpm_support;

/* ---- the window's figures ------------------------------------------------ */

/* Figures of a window, and bits of mfu_gpm_window.valid. */
enum {
    MFU_GPM_TENSOR_ACTIVE = 0, /* ANY_TENSOR_UTIL / 100 */
    MFU_GPM_DRAM_BW_UTIL,      /* DRAM_BW_UTIL / 100: the measured MBU */
    MFU_GPM_SM_ACTIVE,         /* SM_UTIL / 100 */
    MFU_GPM_SM_OCCUPANCY,      /* SM_OCCUPANCY / 100 */
    MFU_GPM_NVLINK_GBS,        /* (NVLINK_TOTAL_RX + TX) MiB/s x 2^20 / 1e9 */
    MFU_GPM_GPU_BUSY,          /* GRAPHICS_UTIL / 100: any kernel running */
    MFU_GPM_FIGURES
};

typedef struct mfu_gpm_window {
    /* Seconds between the two samples on CLOCK_MONOTONIC; NaN when there is
     * no earlier sample (the first call). Below MFU_GPM_MIN_INTERVAL_S the
     * window has no figures. */
    double seconds;
    unsigned valid;                 /* bit (1u << i): value[i] given */
    double value[MFU_GPM_FIGURES];  /* shares of the window 0..1 (not clamped), GB/s */
} mfu_gpm_window;

typedef struct mfu_gpm mfu_gpm;

/* GPM on the device of `nvml` (which must outlive it): checks the calls
 * and the device's support and allocates two samples. Status:
 *   MFU_ERR_UNAVAILABLE  the library lacks a GPM call (a driver older than
 *                        GPM; error->call names it), or the device does not
 *                        support GPM (before Hopper, a MIG instance or vGPU
 *                        without it; error->call "nvmlGpmQueryDeviceSupport",
 *                        code 0)
 *   MFU_ERR_DRIVER       a GPM call failed (error->code: its nvmlReturn_t,
 *                        e.g. 3 not supported, 4 no permission)
 *   MFU_ERR_NO_MEMORY */
mfu_status mfu_gpm_open(const mfu_nvml *nvml, mfu_gpm **gpm, mfu_gpu_error *error);

/* A window edge: sample the counters now and give the figures over the
 * window since the previous call's sample (*window; valid 0 on the first
 * call, after a failed sample, or for a window under the minimum). Never
 * waits. MFU_OK, also when a single metric failed (its bit is left out and
 * *error names the first such metric: call "nvmlGpmMetricsGet", its code);
 * MFU_ERR_DRIVER when the sample or the metrics call failed (*error says
 * which; no figures): after a failed sample the next call starts a new
 * window, after a failed metrics call this edge's sample starts it. */
mfu_status mfu_gpm_sample(mfu_gpm *gpm, mfu_gpm_window *window, mfu_gpu_error *error);

/* NVML's name of the metric behind figure `figure` ("ANY_TENSOR_UTIL", ...;
 * for MFU_GPM_NVLINK_GBS "NVLINK_TOTAL_RX/TX_PER_SEC"); NULL out of range. */
const char *mfu_gpm_metric_name(int figure);

/* The samples freed; NULL is a no-op. */
void mfu_gpm_close(mfu_gpm *gpm);

#endif /* MFU_GPM_H */
