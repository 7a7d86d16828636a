/* dtypes.c -- dtype names (see dtypes.h). */
#include "dtypes.h"
#include "mfu_text.h"

static const char *const mfu_dtype_names[MFU_DTYPE_COUNT] = {
    "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4",
};

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
