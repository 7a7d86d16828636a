/* gpm.c -- NVML GPM counters at window edges (see gpm.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpm.h"
#include "timing.h"

enum { NVML_SUCCESS = 0 };

typedef int (*gpm_support_fn)(void *device, mfu_nvml_gpm_support *support);
typedef int (*gpm_alloc_fn)(void **sample);
typedef int (*gpm_free_fn)(void *sample);
typedef int (*gpm_get_fn)(void *device, void *sample);
typedef int (*gpm_metrics_fn)(mfu_nvml_gpm_metrics_get *metrics);

/* The metrics asked for, in request order: one per figure, and NVLink's
 * transmit rate last (its figure adds it to the receive rate). */
static const unsigned int request[] = {
    [MFU_GPM_TENSOR_ACTIVE] = MFU_NVML_GPM_ANY_TENSOR_UTIL,
    [MFU_GPM_DRAM_BW_UTIL] = MFU_NVML_GPM_DRAM_BW_UTIL,
    [MFU_GPM_SM_ACTIVE] = MFU_NVML_GPM_SM_UTIL,
    [MFU_GPM_SM_OCCUPANCY] = MFU_NVML_GPM_SM_OCCUPANCY,
    [MFU_GPM_NVLINK_GBS] = MFU_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC,
    [MFU_GPM_GPU_BUSY] = MFU_NVML_GPM_GRAPHICS_UTIL,
    [MFU_GPM_FIGURES] = MFU_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC,
};
enum { NREQUEST = sizeof request / sizeof request[0] };

static const char *const metric_names[] = {
    [MFU_GPM_TENSOR_ACTIVE] = "ANY_TENSOR_UTIL",
    [MFU_GPM_DRAM_BW_UTIL] = "DRAM_BW_UTIL",
    [MFU_GPM_SM_ACTIVE] = "SM_UTIL",
    [MFU_GPM_SM_OCCUPANCY] = "SM_OCCUPANCY",
    [MFU_GPM_NVLINK_GBS] = "NVLINK_TOTAL_RX/TX_PER_SEC",
    [MFU_GPM_GPU_BUSY] = "GRAPHICS_UTIL",
};

/* NVLink's rates are MiB/s (nvml.h); the figure is GB/s (1e9 bytes/s). */
#define MIB_PER_S_TO_GBS (1048576.0 / 1e9)

struct mfu_gpm {
    const mfu_nvml *nvml;
    void *device;
    gpm_free_fn sample_free;
    gpm_get_fn sample_get;
    gpm_metrics_fn metrics_get;
    void *sample[2];
    int last;            /* index of the previous window edge's sample; -1 none */
    double last_time_s;
    mfu_nvml_gpm_metrics_get query; /* ~19 KB: NVML's layout, reused */
};

static void set_error(mfu_gpu_error *error, const char *call, int code, const char *detail)
{
    error->call = call;
    error->code = code;
    snprintf(error->detail, sizeof error->detail, "%s", detail);
}

const char *mfu_gpm_metric_name(int figure)
{
    return figure >= 0 && figure < MFU_GPM_FIGURES ? metric_names[figure] : NULL;
}

void mfu_gpm_close(mfu_gpm *g)
{
    if (g == NULL)
        return;
    for (int i = 0; i < 2; i++)
        if (g->sample[i] != NULL && g->sample_free != NULL)
            (void)g->sample_free(g->sample[i]);
    free(g);
}

/* The GPM calls of the library; UNAVAILABLE naming the first one missing. */
static mfu_status resolve(mfu_gpm *g, gpm_support_fn *support, gpm_alloc_fn *alloc,
                          mfu_gpu_error *error)
{
    static const char *const names[] = {"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc",
                                        "nvmlGpmSampleFree", "nvmlGpmSampleGet",
                                        "nvmlGpmMetricsGet"};
    void *calls[5];
    for (int i = 0; i < 5; i++) {
        calls[i] = mfu_nvml_symbol(g->nvml, names[i]);
        if (calls[i] == NULL) {
            set_error(error, names[i], 0, "not in the NVML library: a driver older than GPM");
            return MFU_ERR_UNAVAILABLE;
        }
    }
    *support = (gpm_support_fn)calls[0];
    *alloc = (gpm_alloc_fn)calls[1];
    g->sample_free = (gpm_free_fn)calls[2];
    g->sample_get = (gpm_get_fn)calls[3];
    g->metrics_get = (gpm_metrics_fn)calls[4];
    return MFU_OK;
}

mfu_status mfu_gpm_open(const mfu_nvml *nvml, mfu_gpm **out, mfu_gpu_error *error)
{
    mfu_nvml_gpm_support support = {.version = MFU_NVML_GPM_SUPPORT_VERSION};
    gpm_support_fn query_support = NULL;
    gpm_alloc_fn alloc = NULL;
    mfu_status status;
    mfu_gpm *g;
    int code;

    *out = NULL;
    set_error(error, NULL, 0, "");
    if (nvml == NULL) {
        set_error(error, "mfu_gpm_open", 0, "no NVML handle");
        return MFU_ERR_INVALID_ARGUMENT;
    }
    g = calloc(1, sizeof *g);
    if (g == NULL)
        return MFU_ERR_NO_MEMORY;
    g->nvml = nvml;
    g->device = mfu_nvml_device(nvml);
    g->last = -1;
    status = resolve(g, &query_support, &alloc, error);
    if (status != MFU_OK)
        goto error;
    status = MFU_ERR_DRIVER;
    code = query_support(g->device, &support);
    if (code != NVML_SUCCESS) {
        mfu_nvml_call_error(nvml, error, "nvmlGpmQueryDeviceSupport", code);
        goto error;
    }
    if (!support.is_supported_device) {
        set_error(error, "nvmlGpmQueryDeviceSupport", 0,
                  "the device does not support GPM (before Hopper, or a MIG instance or "
                  "vGPU without it)");
        status = MFU_ERR_UNAVAILABLE;
        goto error;
    }
    for (int i = 0; i < 2; i++) {
        code = alloc(&g->sample[i]);
        if (code != NVML_SUCCESS) {
            g->sample[i] = NULL;
            mfu_nvml_call_error(nvml, error, "nvmlGpmSampleAlloc", code);
            goto error;
        }
    }
    *out = g;
    return MFU_OK;
error:
    mfu_gpm_close(g);
    return status;
}

static double now_s(void)
{
    uint64_t ns;
    if (mfu_clock_monotonic_ns(&ns) != MFU_OK)
        return NAN;
    return (double)ns * 1e-9;
}

/* A metric's value when NVML gave one that is a finite value >= 0; else
 * NAN, noting the first failing metric in *error. */
static double metric_value(const mfu_gpm *g, int i, mfu_gpu_error *error)
{
    const mfu_nvml_gpm_metric *m = &g->query.metrics[i];
    if (m->nvml_return == NVML_SUCCESS && isfinite(m->value) && m->value >= 0.0)
        return m->value;
    if (error->call == NULL) {
        if (m->nvml_return != NVML_SUCCESS)
            mfu_nvml_call_error(g->nvml, error, "nvmlGpmMetricsGet", m->nvml_return);
        else
            set_error(error, "nvmlGpmMetricsGet", 0, "a value that is not a number >= 0");
        /* the metric's name ahead of NVML's text: "ANY_TENSOR_UTIL: Not Supported" */
        char text[64];
        snprintf(text, sizeof text, "%.63s", error->detail);
        snprintf(error->detail, sizeof error->detail, "%s: %s",
                 mfu_gpm_metric_name(i < MFU_GPM_FIGURES ? i : MFU_GPM_NVLINK_GBS), text);
    }
    return NAN;
}

/* The window's figures from the metrics NVML filled in. */
static void window_figures(const mfu_gpm *g, mfu_gpm_window *w, mfu_gpu_error *error)
{
    double values[NREQUEST];
    for (int i = 0; i < NREQUEST; i++)
        values[i] = metric_value(g, i, error);
    for (int i = 0; i < MFU_GPM_FIGURES; i++) {
        double v = i == MFU_GPM_NVLINK_GBS
                       ? (values[i] + values[MFU_GPM_FIGURES]) * MIB_PER_S_TO_GBS
                       : values[i] / 100.0; /* NVML gives percent */
        if (!isnan(v)) {
            w->value[i] = v;
            w->valid |= 1u << i;
        }
    }
}

mfu_status mfu_gpm_sample(mfu_gpm *g, mfu_gpm_window *w, mfu_gpu_error *error)
{
    int next = g->last == 0 ? 1 : 0, code;
    double now;

    memset(w, 0, sizeof *w);
    w->seconds = NAN;
    set_error(error, NULL, 0, "");
    now = now_s();
    code = g->sample_get(g->device, g->sample[next]);
    if (code != NVML_SUCCESS) {
        g->last = -1; /* the next window starts at the next edge */
        mfu_nvml_call_error(g->nvml, error, "nvmlGpmSampleGet", code);
        return MFU_ERR_DRIVER;
    }
    if (g->last >= 0)
        w->seconds = now - g->last_time_s;
    if (g->last >= 0 && w->seconds >= MFU_GPM_MIN_INTERVAL_S) {
        memset(&g->query, 0, sizeof g->query);
        g->query.version = MFU_NVML_GPM_METRICS_GET_VERSION;
        g->query.num_metrics = NREQUEST;
        g->query.sample1 = g->sample[g->last];
        g->query.sample2 = g->sample[next];
        for (int i = 0; i < NREQUEST; i++)
            g->query.metrics[i].metric_id = request[i];
        code = g->metrics_get(&g->query);
        if (code != NVML_SUCCESS)
            mfu_nvml_call_error(g->nvml, error, "nvmlGpmMetricsGet", code);
        else
            window_figures(g, w, error);
    }
    /* This edge's sample starts the next window (also after a failed
     * metrics call: the sample itself is good). */
    g->last = next;
    g->last_time_s = now;
    return code == NVML_SUCCESS ? MFU_OK : MFU_ERR_DRIVER;
}
