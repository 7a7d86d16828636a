/* mixed.c -- ideal seconds of mixed-precision work (see mixed.h). */
#include <math.h>

#include "mixed.h"

mfu_status mfu_mixed_ideal_s(const double flops[MFU_DTYPE_COUNT],
                             const double peak_flops_per_sec[MFU_DTYPE_COUNT],
                             double *ideal_s, mfu_dtype *dtype)
{
    double sum = 0.0;
    int d;
    *ideal_s = NAN;
    /* Bad FLOPs first, whatever the peaks (mixed.h: the order of the checks). */
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        if (!(isfinite(flops[d]) && flops[d] >= 0.0)) {
            if (dtype != NULL)
                *dtype = (mfu_dtype)d;
            return MFU_ERR_INVALID_ARGUMENT;
        }
    }
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        const double peak = peak_flops_per_sec[d];
        if (flops[d] == 0.0)
            continue;
        if (!(isfinite(peak) && peak > 0.0)) {
            if (dtype != NULL)
                *dtype = (mfu_dtype)d;
            return MFU_ERR_NOT_FOUND;
        }
        sum += flops[d] / peak;
    }
    if (!isfinite(sum))
        return MFU_ERR_OVERFLOW;
    *ideal_s = sum;
    return MFU_OK;
}
