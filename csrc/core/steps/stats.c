/* stats.c -- utilization arithmetic (see stats.h for the formulas). */
#include <math.h>

#include "stats.h"

/* NaN means "unknown"; anything else must be finite and non-negative. */
static int optional_nonnegative_ok(double value)
{
    return isnan(value) || (isfinite(value) && value >= 0.0);
}

/* Unknown (NaN) or finite and strictly positive. */
static int optional_positive_ok(double value)
{
    return isnan(value) || (isfinite(value) && value > 0.0);
}

mfu_status mfu_work_validate(const mfu_work *work, const char **bad_field)
{
    if (!(isfinite(work->model_flops) && work->model_flops >= 0.0)) {
        *bad_field = "model_flops";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (!optional_nonnegative_ok(work->executed_flops)) {
        *bad_field = "executed_flops";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (!optional_nonnegative_ok(work->param_bytes)) {
        *bad_field = "param_bytes";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (!optional_nonnegative_ok(work->num_tokens)) {
        *bad_field = "num_tokens";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    return MFU_OK;
}

mfu_status mfu_peak_validate(const mfu_peak *peak, const char **bad_field)
{
    if (!optional_positive_ok(peak->flops_per_sec)) {
        *bad_field = "peak_flops_per_sec";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (!optional_positive_ok(peak->bytes_per_sec)) {
        *bad_field = "peak_bytes_per_sec";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (peak->num_devices < 1) {
        *bad_field = "num_gpus";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    return MFU_OK;
}

/* numerator / elapsed / ceiling, NaN when any input is unknown. */
static double utilization(double numerator, double elapsed_s, double ceiling)
{
    return numerator / elapsed_s / ceiling;
}

void mfu_metrics_compute(const mfu_work *work, const mfu_peak *peak,
                         double elapsed_s, mfu_metrics *out)
{
    const double devices = (double)peak->num_devices;
    const double peak_flops = peak->flops_per_sec * devices;
    const double peak_bytes = peak->bytes_per_sec * devices;

    out->elapsed_s = elapsed_s;
    if (!(elapsed_s > 0.0) || !isfinite(elapsed_s)) {
        out->achieved_flops_per_sec = NAN;
        out->achieved_bytes_per_sec = NAN;
        out->mfu = NAN;
        out->hfu = NAN;
        out->mbu = NAN;
        out->tokens_per_sec = NAN;
        return;
    }
    /* NaN propagates through the divisions, so an unknown input yields an
     * unavailable figure without a branch per field. */
    out->achieved_flops_per_sec = work->model_flops / elapsed_s;
    out->achieved_bytes_per_sec = work->param_bytes / elapsed_s;
    out->mfu = utilization(work->model_flops, elapsed_s, peak_flops);
    out->hfu = utilization(work->executed_flops, elapsed_s, peak_flops);
    out->mbu = utilization(work->param_bytes, elapsed_s, peak_bytes);
    out->tokens_per_sec = work->num_tokens / elapsed_s;
}
