/*
 * stats.h -- utilization arithmetic: from work done and time taken to
 * MFU, HFU, MBU, achieved FLOP/s and tokens/s.
 *
 * Units are spelled out in every name: *_flops are FLOPs (a count),
 * *_flops_per_sec are FLOP/s (a rate), *_s are seconds.
 *
 *   MFU = model_flops    / elapsed_s / (peak_flops_per_sec * num_devices)
 *   HFU = executed_flops / elapsed_s / (peak_flops_per_sec * num_devices)
 *   MBU = param_bytes    / elapsed_s / (peak_bytes_per_sec * num_devices)
 *
 * A figure that cannot be computed (no peak known, no token count given,
 * no elapsed time) is NaN; the Python layer turns NaN into None. MFU above
 * 1 is returned as is, never clamped: it means a wrong peak or a wrong count.
 */
#ifndef MFU_STATS_H
#define MFU_STATS_H

#include "mfu_status.h"

/* What one block or step did. Optional fields are NaN when unknown. */
typedef struct mfu_work {
    double model_flops;    /* MFU numerator (FLOPs); required, finite, >= 0 */
    double executed_flops; /* HFU numerator (FLOPs); NaN = unknown */
    double param_bytes;    /* MBU numerator (bytes); NaN = unknown */
    double num_tokens;     /* tokens processed; NaN = unknown */
} mfu_work;

/* The ceiling the work is measured against. */
typedef struct mfu_peak {
    double flops_per_sec; /* per device, for the dtype in use; NaN = unknown */
    double bytes_per_sec; /* per device memory bandwidth; NaN = unknown */
    int num_devices;      /* devices the work ran on; >= 1 */
} mfu_peak;

/* The figures users read. NaN = unavailable. */
typedef struct mfu_metrics {
    double elapsed_s;
    double achieved_flops_per_sec; /* model_flops / elapsed_s, all devices */
    double achieved_bytes_per_sec; /* param_bytes / elapsed_s, all devices */
    double mfu;
    double hfu;
    double mbu;
    double tokens_per_sec;
} mfu_metrics;

/* Check `work` and `peak`. On MFU_ERR_INVALID_ARGUMENT, *bad_field names the
 * offending field by its Python argument name ("model_flops", "num_gpus", ...). */
mfu_status mfu_work_validate(const mfu_work *work, const char **bad_field);
mfu_status mfu_peak_validate(const mfu_peak *peak, const char **bad_field);

/* Fill *out from already-validated inputs (cannot fail). elapsed_s <= 0 or
 * NaN leaves every rate NaN (a block that took no measurable time has no
 * rate): the caller decides whether that is an error. */
void mfu_metrics_compute(const mfu_work *work, const mfu_peak *peak,
                         double elapsed_s, mfu_metrics *out);

/* ---- a window's figures --------------------------------------------------
 *
 * A step tracker's window is a view over its steps' records (records.h):
 * the last `window` steps timed after the first `warmup`. Over them:
 *   step_s_mean / _min / _max   of the step periods
 *   rates                       sums over the window / time over the window:
 *       tokens/s = sum(tokens) / sum(step_s), FLOP/s = sum(model_flops) /
 *       sum(step_s), and MFU / HFU / MBU from those through
 *       mfu_metrics_compute -- NOT the mean of per-step ratios, which
 *       would overweight short steps: the window's figure is what the run
 *       achieved over that stretch of wall time.
 * A work field left NaN (unknown) by any step in the window makes its total
 * and its rates NaN until that step leaves the window. No steps in the
 * window: every figure NaN.
 */
#include <stdint.h>

typedef struct mfu_window_summary {
    uint64_t steps_seen;    /* steps timed, warm-up included */
    uint64_t steps_skipped; /* of those, ignored as warm-up */
    uint32_t steps;         /* steps in the window; the figures cover these */
    double window_s;        /* sum of their step periods */
    double step_s_mean;
    double step_s_min;
    double step_s_max;
    mfu_work totals;        /* their work, summed field by field */
    mfu_metrics metrics;    /* mfu_metrics_compute(&totals, peak, window_s) */
} mfu_window_summary;

#endif /* MFU_STATS_H */
