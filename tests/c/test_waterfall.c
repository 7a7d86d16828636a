/* test_waterfall.c -- the one formula (core/stats.h: mfu_figures_form) over
 * the record's fields (core/step_fields.h), the waterfall's shares and the
 * exact sums that close them (core/waterfall.h), against hand arithmetic
 * and against Python's math.fsum on the cases written beside them. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "stats.h"

static const mfu_ceilings UNIT = {.flops_per_sec = 1.0, .bytes_per_sec = NAN,
                                  .devices = 1.0, .measured_flops_per_sec = NAN};

/* The table: one member of mfu_work per row, in order, each named; the
 * field of every ratio is one of them. */
static void test_the_table(void)
{
    mfu_work w;
    CHECK(sizeof(mfu_work) == MFU_FIELD_COUNT * sizeof(double));
    CHECK(strcmp(mfu_step_fields[MFU_FIELD_MODEL_FLOPS].name, "model_flops") == 0);
    CHECK(mfu_step_fields[MFU_FIELD_MODEL_FLOPS].offset == offsetof(mfu_work, model_flops));
    CHECK(MFU_STEP_MODEL_FLOPS == 1u << MFU_FIELD_MODEL_FLOPS);
    mfu_work_unknown(&w);
    for (int f = 0; f < MFU_FIELD_COUNT; f++) {
        const double unknown = mfu_step_fields[f].unknown;
        CHECK(isnan(unknown) ? isnan(mfu_work_get(&w, f)) : mfu_work_get(&w, f) == unknown);
        CHECK(mfu_step_fields[f].name != NULL && mfu_step_fields[f].meaning != NULL);
    }
    CHECK(w.overcompute_flops == 0.0 && isnan(w.num_tokens)); /* "none" and unknown */
    for (int i = 0; i < MFU_RATIO_COUNT; i++)
        CHECK(mfu_ratios[i].field >= 0 && mfu_ratios[i].field < MFU_FIELD_COUNT);
}

/* Every ratio: a field's sum / seconds / its ceiling. 6e12 model FLOPs,
 * 9e12 executed, 2e9 bytes, 4096 tokens, 1.5e-2 ideal seconds, 3e11
 * over-compute, 4.5e12 language in 2 s on 3 devices of 1e12 FLOP/s and
 * 1e11 B/s, measured at 0.5e12 each. */
static void test_every_ratio_by_hand(void)
{
    mfu_work sums = {.model_flops = 6e12, .executed_flops = 9e12, .param_bytes = 2e9,
                     .num_tokens = 4096, .ideal_s = 1.5e-2, .overcompute_flops = 3e11,
                     .language_flops = 4.5e12};
    mfu_peak peak = {.flops_per_sec = 1e12, .bytes_per_sec = 1e11, .num_devices = 3,
                     .measured_flops_per_sec = 0.5e12};
    mfu_ceilings c;
    mfu_metrics m;
    mfu_peak_ceilings(&peak, &c);
    CHECK(c.flops_per_sec == 3e12 && c.bytes_per_sec == 3e11 && c.devices == 3.0);
    CHECK(c.measured_flops_per_sec == 1.5e12);
    mfu_figures_form(&sums, 2.0, &c, NULL, &m, NULL);
    CHECK(m.elapsed_s == 2.0);
    CHECK(m.achieved_flops_per_sec == 3e12);            /* 6e12 / 2 */
    CHECK(m.achieved_bytes_per_sec == 1e9);             /* 2e9 / 2 */
    CHECK(m.tokens_per_sec == 2048.0);                  /* 4096 / 2 */
    CHECK(m.mfu == 6e12 / 2.0 / 3e12);                  /* 1.0 */
    CHECK(m.hfu == 9e12 / 2.0 / 3e12);                  /* 1.5 */
    CHECK(m.mbu == 2e9 / 2.0 / 3e11);
    CHECK(m.mfu_mixed == 1.5e-2 / 2.0 / 3.0);           /* 2.5e-3 */
    CHECK(m.mfu_language == 4.5e12 / 2.0 / 3e12);       /* 0.75 */
    CHECK(m.overcompute == 3e11 / 2.0 / 3e12);          /* 0.05 */
    CHECK(m.mfu_vs_measured == 6e12 / 2.0 / 1.5e12);    /* 2.0 */

    /* mfu_language needs model FLOPs > 0; a ceiling not > 0 forms nothing;
     * no time forms nothing. */
    sums.model_flops = 0.0;
    c.devices = 0.0;
    mfu_figures_form(&sums, 2.0, &c, NULL, &m, NULL);
    CHECK(isnan(m.mfu_language) && m.mfu == 0.0 && isnan(m.mfu_mixed));
    mfu_figures_form(&sums, 0.0, &c, NULL, &m, NULL);
    CHECK(isnan(m.mfu) && isnan(m.tokens_per_sec) && isnan(m.achieved_flops_per_sec));
}

/* Correctly rounded sums, each case's math.fsum written beside it. */
static void test_fsum(void)
{
    const double cancel[] = {1e100, 1.0, -1e100};
    const double tenths[] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
    const double tie[] = {1.0, 0x1p-53, 0x1p-106};
    const double small[] = {1.0, 1e-16, 1e-16};
    CHECK(mfu_fsum(cancel, 3, 0.0) == 1.0);          /* math.fsum: 1.0 (plain: 0.0) */
    CHECK(mfu_fsum(tenths, 10, 0.0) == 1.0);         /* 1.0 (plain: 0.9999999999999999) */
    CHECK(mfu_fsum(tie, 3, 0.0) == 1.0000000000000002); /* past the tie: rounds up */
    CHECK(mfu_fsum(small, 3, 0.0) == 1.0000000000000002);
    CHECK(mfu_fsum(tenths, 9, 0.1) == 1.0);          /* the extra value counts */
    CHECK(mfu_fsum(NULL, 0, 0.0) == 0.0);
    CHECK(isnan(mfu_fsum(tenths, 9, NAN)));
}

/* The closing share makes the exact sum 1.0, and is NaN with a NaN. */
static void test_closing_share(void)
{
    const double shares[] = {0.1, 0.2, 0.3, 1e-17, 0.15};
    const double x = mfu_closing_share(shares, 5);
    const double with_nan[] = {0.1, NAN};
    CHECK(mfu_fsum(shares, 5, x) == 1.0);
    CHECK(fabs(x - 0.25) < 1e-15);
    CHECK(isnan(mfu_closing_share(with_nan, 2)));
    CHECK(mfu_closing_share(NULL, 0) == 1.0);
}

/* The waterfall by hand: mfu 0.25, hfu 0.30, over-compute 0.02 (ratios given
 * as sums over one second against a unit peak), T = 10 s, data 1 s, forward
 * 2 s, backward 3 s, communication 0.5 s of one kind and 0.25 s by hand. */
static void test_waterfall_by_hand(void)
{
    mfu_work sums;
    mfu_waterfall_in in;
    mfu_metrics m;
    mfu_waterfall water;
    mfu_waterfall *w = &water;
    double all[MFU_LOSS_COUNT + 1];
    size_t n = 0;
    mfu_work_unknown(&sums);
    sums.model_flops = 0.25;
    sums.executed_flops = 0.30;
    sums.overcompute_flops = 0.02;
    memset(&in, 0, sizeof in);
    mfu_work_nan(&in.per_step);
    in.step_s = 10.0;
    in.phase_s[MFU_PHASE_DATA] = 1.0;
    in.phase_s[MFU_PHASE_FORWARD] = 2.0;
    in.phase_s[MFU_PHASE_BACKWARD] = 3.0;
    in.phase_s[MFU_PHASE_ALL_REDUCE] = 0.5;
    in.phase_s[MFU_PHASE_COMMUNICATION] = 0.25;
    in.marked = (1u << MFU_PHASE_DATA) | (1u << MFU_PHASE_FORWARD) | (1u << MFU_PHASE_BACKWARD)
                | (1u << MFU_PHASE_ALL_REDUCE) | (1u << MFU_PHASE_COMMUNICATION);
    mfu_figures_form(&sums, 1.0, &UNIT, &in, &m, w);
    CHECK(w->formed);
    CHECK(w->share[MFU_LOSS_DATA] == 1.0 / 10.0);
    CHECK(w->share[MFU_LOSS_COMMUNICATION] == 0.75 / 10.0);       /* 0.5 + 0.25 */
    CHECK_NEAR(w->share[MFU_LOSS_RECOMPUTE], 0.30 - 0.25 - 0.02, 1e-12);
    CHECK_NEAR(w->share[MFU_LOSS_COMPUTE], 0.5 - 0.25 - 0.03, 1e-12); /* fwd + bwd, less */
    CHECK(!(w->present & (1u << MFU_LOSS_OPTIMIZER)));            /* never marked */
    all[n++] = m.mfu;
    for (int l = 0; l < MFU_LOSS_COUNT; l++)
        if (w->present & (1u << l))
            all[n++] = w->share[l];
    CHECK(mfu_fsum(all, n, 0.0) == 1.0);                          /* exactly */

    /* Without HFU no recompute (it stays in compute); an unknown
     * over-compute counts 0; no MFU, no step time or no phase: none. */
    sums.executed_flops = NAN;
    mfu_figures_form(&sums, 1.0, &UNIT, &in, &m, w);
    CHECK(!(w->present & (1u << MFU_LOSS_RECOMPUTE)));
    CHECK_NEAR(w->share[MFU_LOSS_COMPUTE], 0.5 - 0.25, 1e-12);
    sums.executed_flops = 0.30;
    sums.overcompute_flops = NAN;
    mfu_figures_form(&sums, 1.0, &UNIT, &in, &m, w);
    CHECK_NEAR(w->share[MFU_LOSS_RECOMPUTE], 0.05, 1e-12);
    in.step_s = 0.0;
    mfu_figures_form(&sums, 1.0, &UNIT, &in, &m, w);
    CHECK(!w->formed);
    in.step_s = 10.0;
    in.marked = 1u << MFU_PHASE_CHECKPOINT;                       /* badput only */
    mfu_figures_form(&sums, 1.0, &UNIT, &in, &m, w);
    CHECK(!w->formed);
}

int main(void)
{
    test_the_table();
    test_every_ratio_by_hand();
    test_fsum();
    test_closing_share();
    test_waterfall_by_hand();
    return check_summary("test_waterfall");
}
