/*
 * dtypes.h -- the compute dtypes a peak is given for, and their names.
 *
 * One enum for the whole core: the peak table has one column per dtype
 * (gpu_table.h), MFU_TRACKER_PEAK_TFLOPS names them (peak_override.h), and
 * the Python layer maps its aliases ("bfloat16", torch dtypes) onto the
 * canonical names here. The order is the table's column order.
 *
 * Canonical names: "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8",
 * "int4", "fp4". Lookup by name ignores ASCII case ("BF16" is bf16) and
 * knows no aliases.
 */
#ifndef MFU_DTYPES_H
#define MFU_DTYPES_H

#include <stddef.h>

#include "mfu_limits.h"
#include "mfu_status.h"

typedef enum mfu_dtype {
    MFU_DTYPE_FP64 = 0,
    MFU_DTYPE_FP32 = 1,
    MFU_DTYPE_TF32 = 2,
    MFU_DTYPE_FP16 = 3,
    MFU_DTYPE_BF16 = 4,
    MFU_DTYPE_FP8 = 5,
    MFU_DTYPE_INT8 = 6,
    MFU_DTYPE_INT4 = 7,
    MFU_DTYPE_FP4 = 8,
    MFU_DTYPE_COUNT = 9
} mfu_dtype;

/* Canonical name of `dtype`, or NULL for a value outside the enum. */
const char *mfu_dtype_name(mfu_dtype dtype);

/* Bytes one element of `dtype` takes in memory (tf32: stored as fp32, 4;
 * int4 / fp4: 0.5); 0.0 for a value outside the enum. */
double mfu_dtype_bytes(mfu_dtype dtype);

/* The dtype whose canonical name equals the NUL-terminated `name`.
 * NULL, empty or longer than MFU_DTYPE_NAME_MAX -> MFU_ERR_INVALID_ARGUMENT;
 * any other unknown name -> MFU_ERR_NOT_FOUND. */
mfu_status mfu_dtype_from_name(const char *name, mfu_dtype *out);

/* The same for the `len` bytes at `name` (no terminator needed; only those
 * bytes are read). len 0 or a name matching no dtype -> MFU_ERR_NOT_FOUND;
 * NULL pointers -> MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_dtype_from_span(const char *name, size_t len, mfu_dtype *out);

#endif /* MFU_DTYPES_H */
