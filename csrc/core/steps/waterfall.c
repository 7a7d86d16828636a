/* waterfall.c -- the losses' names and the exact sums that close the
 * waterfall (see waterfall.h); the shares are formed in stats.c. */
#include <math.h>

#include "waterfall.h"

/* Non-overlapping partials of a double sum: at most one per 53 bits of the
 * exponent range (~2100 bits), so 64 always suffice. */
enum { FSUM_PARTIALS = 64 };

static const char *const loss_names[MFU_LOSS_COUNT] = {
    "data", "communication", "pipeline_bubble", "optimizer", "recompute", "compute", "other",
};

const char *mfu_loss_name(mfu_loss loss)
{
    return (unsigned)loss < MFU_LOSS_COUNT ? loss_names[loss] : NULL;
}

int mfu_waterfall_marked(unsigned marked)
{
    unsigned waterfall = 0;
    for (int p = MFU_PHASE_DATA; p <= MFU_PHASE_PIPELINE_BUBBLE; p++)
        waterfall |= 1u << p;
    return (marked & waterfall) != 0;
}

int mfu_waterfall_asked(unsigned marked, const mfu_work *fields)
{
    if (mfu_waterfall_marked(marked))
        return 1;
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        if (mfu_step_fields[f].loss != NULL && (mfu_step_fields[f].flags & MFU_FIELD_GIVEN)
            && !isnan(mfu_work_get(fields, f)))
            return 1;
    return 0;
}

static double plain_sum(const double *values, size_t n, double extra)
{
    double sum = 0.0;
    for (size_t k = 0; k < n; k++)
        sum += values[k];
    return sum + extra;
}

/* The exact sum of the partials (increasing magnitude, non-overlapping),
 * rounded half-even to a double. */
static double round_partials(const double *partials, size_t count)
{
    double hi = 0.0, lo = 0.0;
    if (count == 0)
        return 0.0;
    hi = partials[--count];
    while (count > 0) { /* add from the top while the sum stays exact */
        const double x = hi, y = partials[--count];
        hi = x + y;
        lo = y - (hi - x);
        if (lo != 0.0)
            break;
    }
    /* The rest, below lo, decides a tie: when it has lo's sign, the exact
     * sum is past the halfway point hi + lo sits on. */
    if (count > 0 && ((lo < 0.0 && partials[count - 1] < 0.0)
                      || (lo > 0.0 && partials[count - 1] > 0.0))) {
        const double y = lo * 2.0, x = hi + y;
        if (y == x - hi)
            hi = x;
    }
    return hi;
}

double mfu_fsum(const double *values, size_t n, double extra)
{
    double partials[FSUM_PARTIALS];
    size_t count = 0;
    for (size_t k = 0; k <= n; k++) {
        double x = k < n ? values[k] : extra;
        size_t kept = 0;
        if (!isfinite(x))
            return plain_sum(values, n, extra);
        for (size_t j = 0; j < count; j++) { /* x + partials: exact, as partials */
            double y = partials[j], hi, lo;
            if (fabs(x) < fabs(y)) {
                const double t = x;
                x = y;
                y = t;
            }
            hi = x + y;
            lo = y - (hi - x);
            if (lo != 0.0)
                partials[kept++] = lo;
            x = hi;
        }
        if (!isfinite(x) || (x != 0.0 && kept == FSUM_PARTIALS))
            return plain_sum(values, n, extra); /* an overflowing sum */
        count = kept;
        if (x != 0.0)
            partials[count++] = x;
    }
    return round_partials(partials, count);
}

double mfu_closing_share(const double *shares, size_t n)
{
    double x = 1.0 - mfu_fsum(shares, n, 0.0), step = 0.0;
    if (isnan(x))
        return NAN;
    for (int i = 0; i < 64; i++) {
        const double total = mfu_fsum(shares, n, x);
        if (total == 1.0 || !isfinite(total))
            break;
        /* total is an ulp of 1 off: move x by half of that, then smaller. */
        step = step == 0.0 ? (total - 1.0) / 2.0 : step / 2.0;
        if (x - step == x)
            x = nextafter(x, total > 1.0 ? -INFINITY : INFINITY);
        else
            x -= step;
    }
    return x;
}
