/*
 * fuzz_mixed.c -- mixed precision (core/steps/mixed.h): the per-dtype FLOPs users
 * hand the tracker (flops_by_dtype) and the per-dtype peaks, through
 * mfu_mixed_ideal_s.
 *
 * Input: per dtype (MFU_DTYPE_COUNT of them) a FLOPs double then a peak
 * double, each from fd_double (tag % 8: raw bits, a small integer, NaN,
 * +-inf, a negative, DBL_MAX, the smallest denormal, u16 / 1000).
 *
 * Properties (against a model of the documented rules):
 *  - a negative or non-finite FLOPs value gives MFU_ERR_INVALID_ARGUMENT
 *    naming the first such dtype;
 *  - else FLOPs > 0 over a peak that is not finite and > 0 gives
 *    MFU_ERR_NOT_FOUND naming the first such dtype;
 *  - else MFU_OK with a finite ideal >= 0, or MFU_ERR_OVERFLOW;
 *  - on any error *ideal_s is NaN.
 */
#include "fuzz_input.h"
#include "mixed.h"

/* A picked double (fuzz_input.h); ratios: the least denormal, u16 / 1000. */
static double fd_double(fuzz_input *in)
{
    return fi_double(in, 4.9406564584124654e-324, 1e-3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    double flops[MFU_DTYPE_COUNT], peaks[MFU_DTYPE_COUNT], ideal = 0.0;
    int bad = -1, missing = -1;
    mfu_dtype named = MFU_DTYPE_COUNT;
    mfu_status status;

    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        flops[d] = fd_double(&in);
        peaks[d] = fd_double(&in);
    }
    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        if (bad < 0 && !(isfinite(flops[d]) && flops[d] >= 0.0))
            bad = d;
    }
    for (int d = 0; bad < 0 && d < MFU_DTYPE_COUNT; d++) {
        if (missing < 0 && flops[d] > 0.0 && !(isfinite(peaks[d]) && peaks[d] > 0.0))
            missing = d;
    }
    status = mfu_mixed_ideal_s(flops, peaks, &ideal, &named);
    if (bad >= 0) {
        FUZZ_CHECK(status == MFU_ERR_INVALID_ARGUMENT && (int)named == bad);
    } else if (missing >= 0) {
        FUZZ_CHECK(status == MFU_ERR_NOT_FOUND && (int)named == missing);
    } else {
        FUZZ_CHECK(status == MFU_OK || status == MFU_ERR_OVERFLOW);
        if (status == MFU_OK)
            FUZZ_CHECK(isfinite(ideal) && ideal >= 0.0);
    }
    if (status != MFU_OK)
        FUZZ_CHECK(isnan(ideal));
    return 0;
}
