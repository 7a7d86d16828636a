/*
 * waterfall.h -- where a step's time went: the MFU waterfall's losses, what
 * they are formed from, and the exact sums that close them to 1.
 *
 * Over a window, let T be the (mean) step time and ideal = model FLOPs /
 * peak, the time the devices would need at their peak: mfu = ideal / T. The
 * rest of T is split into losses, each a fraction of T:
 *
 *   data, communication, pipeline_bubble, optimizer
 *                  the marked phase's seconds per step / T (communication:
 *                  the exact sum of every collective kind's phase and the
 *                  hand-marked one)
 *   <field>        a per-step field with a loss (step_fields.h): its seconds
 *                  per step / T, carved out of `other`
 *   recompute      hfu - mfu - overcompute (needs executed FLOPs)
 *   compute        (t_forward + t_backward) / T - mfu - recompute (needs
 *                  forward or backward marked)
 *   other          what closes mfu + the losses to exactly 1
 *
 * The waterfall is formed when a phase of it was marked or a given field
 * with a loss is known (mfu_waterfall_asked): a post-training loop that
 * marks no phase still sees its wait beside mfu and other.
 * A phase never marked has no loss (its time is in `other`); without hfu
 * recompute has none (recomputation stays in compute); an unknown
 * over-compute share counts 0. Shares are never clamped. The shares are
 * formed by mfu_figures_form (stats.h), with every ratio; the sums here are
 * correctly rounded (the result of summing the exact values), so the closing
 * share makes the sum of the shares exactly 1.0 in double arithmetic.
 */
#ifndef MFU_WATERFALL_H
#define MFU_WATERFALL_H

#include <stddef.h>

#include "phases.h"
#include "step_fields.h"

/* The losses of the phases and of the FLOPs, in report order; the field
 * losses (step_fields.h) are reported after OPTIMIZER, before RECOMPUTE. */
typedef enum mfu_loss {
    MFU_LOSS_DATA,
    MFU_LOSS_COMMUNICATION,
    MFU_LOSS_PIPELINE_BUBBLE,
    MFU_LOSS_OPTIMIZER,
    MFU_LOSS_RECOMPUTE,
    MFU_LOSS_COMPUTE,
    MFU_LOSS_OTHER,
    MFU_LOSS_COUNT
} mfu_loss;

/* "data", "communication", "pipeline_bubble", "optimizer", "recompute",
 * "compute", "other"; NULL out of range. */
const char *mfu_loss_name(mfu_loss loss);

/* What the waterfall is formed from beside the ratios. */
typedef struct mfu_waterfall_in {
    double step_s;                   /* T; no waterfall unless > 0 */
    double phase_s[MFU_PHASE_COUNT]; /* seconds per step of each marked phase */
    unsigned marked;                 /* bit (1u << phase) per marked phase */
    mfu_work per_step;               /* seconds per step of the fields with a
                                        loss (the others are not read); NaN:
                                        unknown, no loss */
} mfu_waterfall_in;

/* The shares (fractions of T). */
typedef struct mfu_waterfall {
    int formed;                   /* 0: no waterfall (no MFU, no step time,
                                     no phase of the waterfall marked) */
    unsigned present;             /* bit (1u << loss) per loss formed */
    double share[MFU_LOSS_COUNT];
    unsigned fields_present;      /* MFU_STEP_* bit per field loss formed */
    mfu_work field_share;         /* the field losses' shares */
} mfu_waterfall;

/* 1 when a phase of the waterfall (data, forward, backward, optimizer,
 * communication of any kind, the bubble) is in `marked`. */
int mfu_waterfall_marked(unsigned marked);

/* 1 when the waterfall is asked for: a phase of it is in `marked`, or a
 * field with a loss that a caller gives (the roles' wait_s) is known in
 * `fields` (a step's or a window's: only known-ness is read). */
int mfu_waterfall_asked(unsigned marked, const mfu_work *fields);

/* The correctly rounded sum of values[0 .. n - 1] (Shewchuk's exact
 * partials; half-even rounding of the exact sum), plus `extra` (0.0 for
 * none). A non-finite value or sum: the plain sum. */
double mfu_fsum(const double *values, size_t n, double extra);

/* The share x with mfu_fsum(shares, n, x) == 1.0 exactly: 1 - sum, moved by
 * halves of the error left, then by single ulps, where the rounding of
 * 1 - sum leaves the total off. Such an x exists, and is found, when 1 - sum
 * is in [0, 1) (the rest of a step is a share of it); above 1 the doubles
 * are twice as sparse and the total may stay an ulp off. NaN when a share
 * is. */
double mfu_closing_share(const double *shares, size_t n);

#endif /* MFU_WATERFALL_H */
