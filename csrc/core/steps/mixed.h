/*
 * mixed.h -- mixed precision: the time a step's work would take at peak.
 *
 * A step whose matmuls run in several dtypes (fp8 GEMMs beside bf16 ones)
 * has no single peak. Its *ideal seconds* charge each dtype's FLOPs to
 * that dtype's peak:
 *
 *     ideal_s = sum_d F_d / peak_d          (FLOPs / (FLOP/s) = seconds)
 *
 * and a window's mixed-precision utilization is
 *
 *     mfu_mixed = sum over steps of ideal_s / window_s / num_devices
 *
 * (ideal_s is a field of the step record, step_fields.h, summed over the
 * window; the ratio is a row of stats.h's MFU_RATIOS). With a single dtype
 * d it is F_d / peak_d / T, i.e. exactly mfu against d's peak.
 *
 * Peaks are per device, in FLOP/s, one per mfu_dtype (dtypes.h); NaN (or
 * <= 0) = the device has no peak for that dtype.
 */
#ifndef MFU_MIXED_H
#define MFU_MIXED_H

#include "dtypes.h"
#include "mfu_status.h"

/* sum_d flops[d] / peak_flops_per_sec[d] over every dtype into *ideal_s.
 * A dtype with flops[d] == 0 costs nothing, whatever its peak. Status, in
 * the order checked (every FLOPs value first, then the peaks):
 *   MFU_ERR_INVALID_ARGUMENT  a flops[d] is negative or not finite:
 *                             *dtype (when not NULL) is that dtype
 *   MFU_ERR_NOT_FOUND         flops[d] > 0 for a dtype with no peak:
 *                             *dtype (when not NULL) is the first such one
 *   MFU_ERR_OVERFLOW          the sum is not finite (FLOPs near DBL_MAX
 *                             over a tiny peak)
 * On any of them, *ideal_s is NaN. */
mfu_status mfu_mixed_ideal_s(const double flops[MFU_DTYPE_COUNT],
                             const double peak_flops_per_sec[MFU_DTYPE_COUNT],
                             double *ideal_s, mfu_dtype *dtype);

#endif /* MFU_MIXED_H */
