/*
 * stats.h -- utilization arithmetic: from a record of sums (step_fields.h)
 * and the time it took to every ratio -- MFU, HFU, MBU, achieved FLOP/s,
 * tokens/s, mfu_mixed, mfu_language, the over-compute share, the measured
 * peak's -- and the waterfall's shares (waterfall.h), all formed by one
 * function, mfu_figures_form(). A track() block, a step tracker's window
 * and the cross-rank combination of every rank's window call it.
 *
 * Units are spelled out in every name: *_flops are FLOPs (a count),
 * *_flops_per_sec are FLOP/s (a rate), *_s are seconds.
 *
 * Every ratio is one row of MFU_RATIOS: a field's sum over the seconds the
 * sums took, over a ceiling -- a total over every device the sums cover:
 *
 *   MFU = model_flops    / seconds / peak FLOP/s
 *   HFU = executed_flops / seconds / peak FLOP/s
 *   MBU = param_bytes    / seconds / peak bytes/s
 *   mfu_mixed = ideal_s  / seconds / devices (mixed.h)
 *   achieved FLOP/s = model_flops / seconds (a rate: the ceiling is 1)
 *
 * A figure that cannot be formed (no peak known, no token count given, no
 * time) is NaN; the Python layer turns NaN into None. MFU above 1 is
 * returned as is, never clamped: it means a wrong peak or a wrong count.
 */
#ifndef MFU_STATS_H
#define MFU_STATS_H

#include <stdint.h>

#include "mfu_status.h"
#include "step_fields.h"
#include "waterfall.h"

/* The ceiling the work is measured against. */
typedef struct mfu_peak {
    double flops_per_sec; /* per device, for the dtype in use; NaN = unknown */
    double bytes_per_sec; /* per device memory bandwidth; NaN = unknown */
    int num_devices;      /* devices the work ran on; >= 1 */
    double measured_flops_per_sec; /* per device, a measured GEMM peak
                                      (mfu_vs_measured); NaN or 0 = none */
} mfu_peak;

/* The ceilings of the ratios: totals over every device the sums cover.
 * NaN = unknown. */
typedef struct mfu_ceilings {
    double flops_per_sec;          /* peak FLOP/s */
    double bytes_per_sec;          /* memory bandwidth, bytes/s */
    double devices;                /* device count */
    double measured_flops_per_sec; /* measured GEMM peak, FLOP/s */
} mfu_ceilings;

/* A peak's ceilings: each per-device figure x num_devices. */
static inline void mfu_peak_ceilings(const mfu_peak *peak, mfu_ceilings *out)
{
    const double devices = (double)peak->num_devices;
    const double measured = peak->measured_flops_per_sec;
    out->flops_per_sec = peak->flops_per_sec * devices;
    out->bytes_per_sec = peak->bytes_per_sec * devices;
    out->devices = devices;
    out->measured_flops_per_sec = measured > 0.0 ? measured * devices : (double)NAN;
}

/* What a ratio's field is divided by besides the seconds. */
typedef enum mfu_ceiling {
    MFU_CEILING_RATE,           /* none: a rate per second */
    MFU_CEILING_PEAK_FLOPS,
    MFU_CEILING_PEAK_BYTES,
    MFU_CEILING_DEVICES,
    MFU_CEILING_MEASURED_FLOPS
} mfu_ceiling;

/* A ratio's flags: NaN unless the model FLOPs are > 0 (the share of no
 * work is no figure). */
enum { MFU_RATIO_NEEDS_MODEL = 1u << 0 };

/* X(ID, name, field, ceiling, flags, meaning): ratio = the field's sum /
 * seconds / the ceiling. */
#define MFU_RATIOS(X)                                                                      \
    X(ACHIEVED_FLOPS, achieved_flops_per_sec, MODEL_FLOPS, MFU_CEILING_RATE, 0,            \
      "model FLOP/s over all the devices")                                                 \
    X(ACHIEVED_BYTES, achieved_bytes_per_sec, PARAM_BYTES, MFU_CEILING_RATE, 0,            \
      "parameter bytes/s over all the devices")                                            \
    X(TOKENS_PER_SEC, tokens_per_sec, NUM_TOKENS, MFU_CEILING_RATE, 0, "tokens / time")    \
    X(MFU, mfu, MODEL_FLOPS, MFU_CEILING_PEAK_FLOPS, 0, "model FLOPs / time / peak")       \
    X(HFU, hfu, EXECUTED_FLOPS, MFU_CEILING_PEAK_FLOPS, 0, "executed FLOPs / time / peak") \
    X(MBU, mbu, PARAM_BYTES, MFU_CEILING_PEAK_BYTES, 0,                                    \
      "parameter bytes / time / peak bandwidth")                                           \
    X(MFU_MIXED, mfu_mixed, IDEAL_S, MFU_CEILING_DEVICES, 0,                               \
      "ideal seconds at each dtype's peak / time / devices")                               \
    X(MFU_LANGUAGE, mfu_language, LANGUAGE_FLOPS, MFU_CEILING_PEAK_FLOPS,                  \
      MFU_RATIO_NEEDS_MODEL, "language-model FLOPs / time / peak")                         \
    X(OVERCOMPUTE, overcompute, OVERCOMPUTE_FLOPS, MFU_CEILING_PEAK_FLOPS, 0,              \
      "over-compute FLOPs / time / peak: the share the waterfall books to compute")        \
    X(MFU_VS_MEASURED, mfu_vs_measured, MODEL_FLOPS, MFU_CEILING_MEASURED_FLOPS, 0,        \
      "model FLOPs / time / the measured GEMM peak")                                         \
    X(WAIT_RATIO, wait_ratio, WAIT_S, MFU_CEILING_RATE, 0,                                 \
      "seconds no role ran / time: the share of the wall time the devices waited")         \
    MFU_ROLES(MFU_ROLE_SHARE_, X)

/* A role's share of the wall time: its seconds / time. */
#define MFU_ROLE_SHARE_(X, ID, name, meaning) \
    X(ID##_TIME_SHARE, name##_time_share, ID##_S, MFU_CEILING_RATE, 0, "role " #name ": seconds / time")

enum mfu_ratio_index {
#define MFU_RATIO_INDEX_(ID, name, field, ceiling, flags, meaning) MFU_RATIO_##ID,
    MFU_RATIOS(MFU_RATIO_INDEX_)
#undef MFU_RATIO_INDEX_
    MFU_RATIO_COUNT
};

/* The figures users read: each ratio by name or as ratio[i] (i =
 * MFU_RATIO_<ID>). NaN = unavailable. */
typedef struct mfu_metrics {
    double elapsed_s; /* the seconds the ratios are over */
    union {
        struct {
#define MFU_RATIO_MEMBER_(ID, name, field, ceiling, flags, meaning) double name;
            MFU_RATIOS(MFU_RATIO_MEMBER_)
#undef MFU_RATIO_MEMBER_
        };
        double ratio[MFU_RATIO_COUNT];
    };
} mfu_metrics;


/* One row of MFU_RATIOS, as data (stats.c). */
typedef struct mfu_ratio {
    const char *name;
    int field;          /* MFU_FIELD_* */
    mfu_ceiling ceiling;
    unsigned flags;
    const char *meaning;
    size_t offset;      /* of the member in mfu_metrics */
} mfu_ratio;

extern const mfu_ratio mfu_ratios[MFU_RATIO_COUNT];

static inline double mfu_metrics_get(const mfu_metrics *m, int i)
{
    return m->ratio[i];
}

/* Check the work of a track() block and a peak. On MFU_ERR_INVALID_ARGUMENT,
 * *bad_field names the offending field by its Python argument name
 * ("model_flops", "num_gpus", ...). */
mfu_status mfu_work_validate(const mfu_work *work, const char **bad_field);
mfu_status mfu_peak_validate(const mfu_peak *peak, const char **bad_field);

/* THE formula of every figure: each ratio of MFU_RATIOS from `sums` over
 * `seconds` against `ceilings` into *out (every rate NaN unless seconds is
 * finite and > 0: a block that took no measurable time has no rate; a ratio
 * whose ceiling is not > 0 is NaN), and -- when `phases` and `waterfall`
 * are not NULL -- the waterfall's shares from those ratios and the phases
 * into *waterfall (waterfall.h). Cannot fail. */
void mfu_figures_form(const mfu_work *sums, double seconds, const mfu_ceilings *ceilings,
                      const mfu_waterfall_in *phases, mfu_metrics *out,
                      mfu_waterfall *waterfall);

/* mfu_figures_form(work, elapsed_s, the peak's ceilings, no waterfall). */
void mfu_metrics_compute(const mfu_work *work, const mfu_peak *peak,
                         double elapsed_s, mfu_metrics *out);

/* ---- a window's figures --------------------------------------------------
 *
 * A step tracker's window is a view over its steps' records (records.h):
 * the last `window` steps timed after the first `warmup`. Over them:
 *   step_s_mean / _min / _max   of the step periods
 *   ratios                      sums over the window / time over the window:
 *       tokens/s = sum(tokens) / sum(step_s), MFU = sum(model_flops) /
 *       sum(step_s) / peak, ... through mfu_figures_form -- NOT the mean of
 *       per-step ratios, which would overweight short steps: the window's
 *       figure is what the run achieved over that stretch of wall time.
 * A field left NaN (unknown) by any step in the window makes its sum and
 * its ratios NaN until that step leaves the window. No steps in the window:
 * every figure NaN.
 */
typedef struct mfu_window_summary {
    uint64_t steps_seen;    /* steps timed, warm-up included */
    uint64_t steps_skipped; /* of those, ignored as warm-up */
    uint32_t steps;         /* steps in the window; the figures cover these */
    double window_s;        /* sum of their step periods */
    double step_s_mean;
    double step_s_min;
    double step_s_max;
    mfu_work totals;        /* their sums, field by field */
    mfu_metrics metrics;    /* mfu_figures_form(&totals, window_s, ...) */
    mfu_waterfall waterfall; /* and the waterfall of their phases */
} mfu_window_summary;

#endif /* MFU_STATS_H */
