/* stats.c -- utilization arithmetic (see stats.h for the formulas) and the
 * waterfall's shares (waterfall.h). */
#include <math.h>
#include <string.h>

#include "stats.h"

const mfu_ratio mfu_ratios[MFU_RATIO_COUNT] = {
#define MFU_RATIO_ROW_(ID, name, field, ceiling, flags, meaning) \
    {#name, MFU_FIELD_##field, ceiling, flags, meaning, offsetof(mfu_metrics, name)},
    MFU_RATIOS(MFU_RATIO_ROW_)
#undef MFU_RATIO_ROW_
};

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
    if (peak->measured_flops_per_sec != 0.0 && !optional_positive_ok(peak->measured_flops_per_sec)) {
        *bad_field = "measured_flops_per_sec";
        return MFU_ERR_INVALID_ARGUMENT;
    }
    return MFU_OK;
}

/* ---- the waterfall --------------------------------------------------------- */

/* A phase's seconds per step, 0 when it was not marked. */
static double phase_or_zero(const mfu_waterfall_in *in, mfu_phase phase)
{
    return (in->marked & (1u << phase)) ? in->phase_s[phase] : 0.0;
}

/* Exposed communication per step: the exact sum of the hand-marked phase
 * and every collective kind's; NaN when none of them was marked. */
static double communication_s(const mfu_waterfall_in *in)
{
    double kinds[MFU_PHASE_P2P - MFU_PHASE_COMMUNICATION + 1];
    size_t n = 0;
    for (int p = MFU_PHASE_COMMUNICATION; p <= MFU_PHASE_P2P; p++)
        if (in->marked & (1u << p))
            kinds[n++] = in->phase_s[p];
    return n > 0 ? mfu_fsum(kinds, n, 0.0) : NAN;
}

/* A field's seconds per step in the waterfall: a part of exposed
 * communication (MFU_FIELD_IN_COMMUNICATION) is at most all of it, where it
 * was marked (a part given from a sampled step may exceed a window's). */
static double field_s(const mfu_waterfall_in *in, int f, double communication)
{
    const double value = mfu_work_get(&in->per_step, f);
    if ((mfu_step_fields[f].flags & MFU_FIELD_IN_COMMUNICATION) && !isnan(communication))
        return fmin(value, communication);
    return value;
}

/* Exposed communication less the seconds of the fields formed that are part
 * of it (step_fields.h, MFU_FIELD_IN_COMMUNICATION): their losses are carved
 * out of it. */
static double communication_left(const mfu_waterfall_in *in, const mfu_waterfall *w,
                                 double communication)
{
    double parts[MFU_FIELD_COUNT];
    size_t n = 0;
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        if ((mfu_step_fields[f].flags & MFU_FIELD_IN_COMMUNICATION)
            && (w->fields_present & (1u << f)))
            parts[n++] = -field_s(in, f, communication);
    return n > 0 ? mfu_fsum(parts, n, communication) : communication;
}

/* One loss: its share, into the closing sum's list. */
static void put(mfu_waterfall *w, mfu_loss loss, double share, double *all, size_t *n)
{
    w->share[loss] = share;
    w->present |= 1u << loss;
    all[(*n)++] = share;
}

/* The shares (waterfall.h) from the window's mfu, hfu and over-compute. */
static void form_waterfall(const mfu_metrics *m, const mfu_waterfall_in *in, mfu_waterfall *w)
{
    static const struct { mfu_loss loss; mfu_phase phase; } phase_losses[] = {
        {MFU_LOSS_DATA, MFU_PHASE_DATA}, {MFU_LOSS_PIPELINE_BUBBLE, MFU_PHASE_PIPELINE_BUBBLE},
        {MFU_LOSS_OPTIMIZER, MFU_PHASE_OPTIMIZER},
    };
    double all[MFU_LOSS_COUNT + MFU_FIELD_COUNT + 1];
    const double t = in->step_s, communication = communication_s(in);
    size_t n = 0;
    memset(w, 0, sizeof *w);
    if (isnan(m->mfu) || !(t > 0.0) || !mfu_waterfall_asked(in->marked, &in->per_step))
        return;
    w->formed = 1;
    all[n++] = m->mfu;
    for (size_t i = 0; i < sizeof phase_losses / sizeof phase_losses[0]; i++)
        if (in->marked & (1u << phase_losses[i].phase))
            put(w, phase_losses[i].loss, in->phase_s[phase_losses[i].phase] / t, all, &n);
    for (int f = 0; f < MFU_FIELD_COUNT; f++) {
        /* A field's loss, where the field is known (an unknown one leaves
         * its time in other, as an unmarked phase does). */
        if (mfu_step_fields[f].loss == NULL || isnan(mfu_work_get(&in->per_step, f)))
            continue;
        *mfu_work_at(&w->field_share, f) = field_s(in, f, communication) / t;
        w->fields_present |= 1u << f;
        all[n++] = mfu_work_get(&w->field_share, f);
    }
    if (!isnan(communication))
        put(w, MFU_LOSS_COMMUNICATION, communication_left(in, w, communication) / t, all, &n);
    if (in->marked & ((1u << MFU_PHASE_FORWARD) | (1u << MFU_PHASE_BACKWARD))) {
        double compute = (phase_or_zero(in, MFU_PHASE_FORWARD)
                          + phase_or_zero(in, MFU_PHASE_BACKWARD)) / t - m->mfu;
        if (!isnan(m->hfu)) {
            const double over = isnan(m->overcompute) ? 0.0 : m->overcompute;
            const double recompute = m->hfu - m->mfu - over;
            put(w, MFU_LOSS_RECOMPUTE, recompute, all, &n);
            compute -= recompute;
        }
        put(w, MFU_LOSS_COMPUTE, compute, all, &n);
    }
    w->share[MFU_LOSS_OTHER] = mfu_closing_share(all, n);
    w->present |= 1u << MFU_LOSS_OTHER;
}

/* ---- the one formula ------------------------------------------------------- */

void mfu_figures_form(const mfu_work *sums, double seconds, const mfu_ceilings *ceilings,
                      const mfu_waterfall_in *phases, mfu_metrics *out,
                      mfu_waterfall *waterfall)
{
    const double by_ceiling[] = {
        [MFU_CEILING_RATE] = 1.0,
        [MFU_CEILING_PEAK_FLOPS] = ceilings->flops_per_sec,
        [MFU_CEILING_PEAK_BYTES] = ceilings->bytes_per_sec,
        [MFU_CEILING_DEVICES] = ceilings->devices,
        [MFU_CEILING_MEASURED_FLOPS] = ceilings->measured_flops_per_sec,
    };
    const int model = sums->model_flops > 0.0 && isfinite(sums->model_flops);
    out->elapsed_s = seconds;
    if (!(seconds > 0.0 && isfinite(seconds))) {
        for (int i = 0; i < MFU_RATIO_COUNT; i++) /* no time, no rate */
            out->ratio[i] = NAN;
    } else {
        /* One ratio per row, unrolled: the field's sum / seconds / the
         * ceiling. An unknown (NaN) sum gives an unavailable figure
         * (skipped, so as not to divide); so does a ceiling not > 0
         * (unknown, or none). */
#define MFU_FORM_RATIO_(ID, name, field, ceiling, flags, meaning)                    \
        {                                                                            \
            const double sum = sums->v[MFU_FIELD_##field], by = by_ceiling[ceiling]; \
            out->name = by > 0.0 && !isnan(sum)                                      \
                                && (model || !((flags) & MFU_RATIO_NEEDS_MODEL))     \
                            ? sum / seconds / by                                     \
                            : NAN;                                                   \
        }
        MFU_RATIOS(MFU_FORM_RATIO_)
#undef MFU_FORM_RATIO_
    }
    if (phases != NULL && waterfall != NULL)
        form_waterfall(out, phases, waterfall);
}

void mfu_metrics_compute(const mfu_work *work, const mfu_peak *peak,
                         double elapsed_s, mfu_metrics *out)
{
    mfu_ceilings ceilings;
    mfu_peak_ceilings(peak, &ceilings);
    mfu_figures_form(work, elapsed_s, &ceilings, NULL, out, NULL);
}
