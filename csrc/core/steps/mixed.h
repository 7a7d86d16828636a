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
 * (steps.h sums ideal_s over the window). With a single dtype d it is
 * F_d / peak_d / T, i.e. exactly mfu against d's peak.
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

/* mfu_mixed = ideal_s / elapsed_s / num_devices: the share of the devices'
 * time the work would need at each dtype's peak. NaN when ideal_s is NaN or
 * elapsed_s is not > 0. The one place the ratio is formed: the step
 * engine's window (steps.c) and a track() block (py_result.c) call it. */
double mfu_mixed_utilization(double ideal_s, double elapsed_s, int num_devices);

#endif /* MFU_MIXED_H */
