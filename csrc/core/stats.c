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

/* ---- windowed statistics (see stats.h) -------------------------------- */

#include <stdlib.h>

#include "mfu_limits.h"

/* One resolved step. */
struct window_record {
    double step_s;
    mfu_work work;
};

struct mfu_window {
    struct window_record *records; /* ring of `capacity` */
    uint32_t capacity;
    uint32_t count; /* records held, <= capacity */
    uint32_t next;  /* slot the next record goes to */
    uint64_t warmup_steps;
    uint64_t seen;  /* pushes accepted since create / clear */
};

mfu_status mfu_window_create(uint32_t capacity, uint64_t warmup_steps,
                             mfu_window **window)
{
    mfu_window *w;
    *window = NULL;
    if (capacity < 1 || capacity > MFU_WINDOW_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    w = calloc(1, sizeof *w);
    if (w == NULL)
        return MFU_ERR_NO_MEMORY;
    w->records = calloc(capacity, sizeof *w->records);
    if (w->records == NULL) {
        free(w);
        return MFU_ERR_NO_MEMORY;
    }
    w->capacity = capacity;
    w->warmup_steps = warmup_steps;
    *window = w;
    return MFU_OK;
}

void mfu_window_destroy(mfu_window *window)
{
    if (window == NULL)
        return;
    free(window->records);
    free(window);
}

void mfu_window_clear(mfu_window *window)
{
    window->count = 0;
    window->next = 0;
    window->seen = 0;
}

mfu_status mfu_window_push(mfu_window *window, double step_s, const mfu_work *work,
                           const char **bad_field)
{
    const char *bad = NULL;
    mfu_status status = MFU_OK;
    if (!(isfinite(step_s) && step_s >= 0.0)) {
        bad = "step_s";
        status = MFU_ERR_INVALID_ARGUMENT;
    } else {
        status = mfu_work_validate(work, &bad);
    }
    if (status != MFU_OK) {
        if (bad_field != NULL)
            *bad_field = bad;
        return status;
    }
    window->seen++;
    if (window->seen <= window->warmup_steps)
        return MFU_OK;
    window->records[window->next].step_s = step_s;
    window->records[window->next].work = *work;
    window->next = (window->next + 1) % window->capacity;
    if (window->count < window->capacity)
        window->count++;
    return MFU_OK;
}

mfu_status mfu_window_summarize(const mfu_window *window, const mfu_peak *peak,
                                mfu_window_summary *out, const char **bad_field)
{
    const char *bad = NULL;
    mfu_status status = mfu_peak_validate(peak, &bad);
    if (status != MFU_OK) {
        if (bad_field != NULL)
            *bad_field = bad;
        return status;
    }
    out->steps_seen = window->seen;
    out->steps_skipped = window->seen < window->warmup_steps ? window->seen
                                                             : window->warmup_steps;
    out->steps = window->count;
    out->window_s = 0.0;
    out->step_s_min = INFINITY;
    out->step_s_max = -INFINITY;
    out->totals.model_flops = 0.0;
    out->totals.executed_flops = 0.0;
    out->totals.param_bytes = 0.0;
    out->totals.num_tokens = 0.0;
    /* Records sit at [0, count) until the ring fills; the sums do not
     * depend on order. NaN in an optional field propagates to its total. */
    for (uint32_t i = 0; i < window->count; i++) {
        const struct window_record *r = &window->records[i];
        out->window_s += r->step_s;
        out->step_s_min = fmin(out->step_s_min, r->step_s);
        out->step_s_max = fmax(out->step_s_max, r->step_s);
        out->totals.model_flops += r->work.model_flops;
        out->totals.executed_flops += r->work.executed_flops;
        out->totals.param_bytes += r->work.param_bytes;
        out->totals.num_tokens += r->work.num_tokens;
    }
    if (window->count == 0) {
        out->window_s = NAN;
        out->step_s_mean = NAN;
        out->step_s_min = NAN;
        out->step_s_max = NAN;
        out->totals.model_flops = NAN;
        out->totals.executed_flops = NAN;
        out->totals.param_bytes = NAN;
        out->totals.num_tokens = NAN;
    } else {
        out->step_s_mean = out->window_s / (double)window->count;
    }
    mfu_metrics_compute(&out->totals, peak, out->window_s, &out->metrics);
    return MFU_OK;
}
