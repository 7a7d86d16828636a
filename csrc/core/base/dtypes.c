/* dtypes.c -- dtype names (see dtypes.h). */
#include "dtypes.h"
#include "mfu_text.h"

static const char *const mfu_dtype_names[MFU_DTYPE_COUNT] = {
    "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4",
};

/* Bytes one element takes in memory: tf32 is stored as fp32, int4 and fp4
 * pack two elements per byte. */
static const double mfu_dtype_sizes[MFU_DTYPE_COUNT] = {
    8.0, 4.0, 4.0, 2.0, 2.0, 1.0, 1.0, 0.5, 0.5,
};

double mfu_dtype_bytes(mfu_dtype dtype)
{
    if ((int)dtype < 0 || (int)dtype >= MFU_DTYPE_COUNT)
        return 0.0;
    return mfu_dtype_sizes[dtype];
}

const char *mfu_dtype_name(mfu_dtype dtype)
{
    if ((int)dtype < 0 || (int)dtype >= MFU_DTYPE_COUNT)
        return NULL;
    return mfu_dtype_names[dtype];
}

mfu_status mfu_dtype_from_span(const char *name, size_t len, mfu_dtype *out)
{
    int i;
    if (name == NULL || out == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (i = 0; i < MFU_DTYPE_COUNT; i++) {
        if (mfu_text_span_equals(name, len, mfu_dtype_names[i])) {
            *out = (mfu_dtype)i;
            return MFU_OK;
        }
    }
    return MFU_ERR_NOT_FOUND;
}

mfu_status mfu_dtype_from_name(const char *name, mfu_dtype *out)
{
    size_t len;
    if (name == NULL || out == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    len = mfu_text_bounded_len(name, MFU_DTYPE_NAME_MAX + 1);
    if (len == 0 || len > MFU_DTYPE_NAME_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    return mfu_dtype_from_span(name, len, out);
}
