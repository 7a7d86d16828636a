/* mixed.c -- ideal seconds of mixed-precision work (see mixed.h). */
#include <math.h>

#include "mixed.h"

mfu_status mfu_mixed_ideal_s(const double flops[MFU_DTYPE_COUNT],
                             const double peak_flops_per_sec[MFU_DTYPE_COUNT],
                             double *ideal_s, mfu_dtype *dtype)
{
    double sum = 0.0;
    *ideal_s = NAN;
    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        const double f = flops[d];
        const double peak = peak_flops_per_sec[d];
        if (!isfinite(f) || f < 0.0) {
            if (dtype != NULL)
                *dtype = (mfu_dtype)d;
            return MFU_ERR_INVALID_ARGUMENT;
        }
        if (f == 0.0)
            continue;
        if (!(isfinite(peak) && peak > 0.0)) {
            if (dtype != NULL)
                *dtype = (mfu_dtype)d;
            return MFU_ERR_NOT_FOUND;
        }
        sum += f / peak;
    }
    *ideal_s = sum;
    return MFU_OK;
}
