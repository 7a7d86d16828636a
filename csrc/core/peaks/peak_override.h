/*
 * peak_override.h -- the MFU_TRACKER_PEAK_TFLOPS text: the user's own peak,
 * which replaces the table's.
 *
 * Grammar (blanks = space or tab, allowed around every item and sign):
 *   text   := number                    one peak for every dtype ("989.4")
 *           | item ("," item)*          per dtype ("bf16=989.4, fp8=1978.9")
 *   item   := dtype "=" number          dtype: a canonical name of dtypes.h
 *                                       (ASCII case ignored), at most once
 *   number := digits, sign, point and exponent only (no "inf", "nan", hex),
 *             finite and > 0, in TFLOP/s
 * Anything else -- an empty item, a trailing comma, an unknown dtype, a
 * malformed entry for a dtype other than the one asked -- is malformed: the
 * answer never depends on which dtype is asked, except for NOT_FOUND.
 *
 * Texts longer than MFU_PEAK_OVERRIDE_MAX bytes are malformed; the parser
 * never reads past MFU_PEAK_OVERRIDE_MAX + 1 bytes.
 */
#ifndef MFU_PEAK_OVERRIDE_H
#define MFU_PEAK_OVERRIDE_H

#include "dtypes.h"
#include "mfu_limits.h"
#include "mfu_status.h"

/* The peak (TFLOP/s) that `text` gives for `dtype`, into *tflops_out.
 * MFU_ERR_NOT_FOUND: a well-formed list that does not name `dtype`.
 * MFU_ERR_INVALID_ARGUMENT: malformed text, NULL pointers, a bad dtype. */
mfu_status mfu_peak_override_parse(const char *text, mfu_dtype dtype,
                                   double *tflops_out);

#endif /* MFU_PEAK_OVERRIDE_H */
