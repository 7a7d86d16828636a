/* gpu_name.c -- device-name normalisation (see gpu_name.h). */
#include "gpu_name.h"
#include "mfu_text.h"

static const char *const mfu_vendor_words[] = {
    "nvidia", "tesla", "geforce", "amd", "instinct", "radeon",
};

static int is_vendor_word(const char *s, size_t len)
{
    size_t i;
    for (i = 0; i < sizeof mfu_vendor_words / sizeof mfu_vendor_words[0]; i++) {
        if (mfu_text_span_equals(s, len, mfu_vendor_words[i]))
            return 1;
    }
    return 0;
}

mfu_status mfu_gpu_normalize_name(const char *raw, char *out, size_t out_size)
{
    size_t len, i, used = 0;
    if (raw == NULL || out == NULL || out_size == 0)
        return MFU_ERR_INVALID_ARGUMENT;
    len = mfu_text_bounded_len(raw, MFU_GPU_NAME_MAX + 1);
    if (len == 0 || len > MFU_GPU_NAME_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    i = 0;
    while (i < len) {
        size_t start, tok_len, k;
        while (i < len && !mfu_text_is_alnum(raw[i]))
            i++;
        if (i >= len)
            break;
        start = i;
        while (i < len && mfu_text_is_alnum(raw[i]))
            i++;
        tok_len = i - start;
        if (is_vendor_word(raw + start, tok_len))
            continue;
        /* separator + token + NUL must fit */
        if (used + (used > 0 ? 1 : 0) + tok_len + 1 > out_size)
            return MFU_ERR_INVALID_ARGUMENT;
        if (used > 0)
            out[used++] = ' ';
        for (k = 0; k < tok_len; k++)
            out[used++] = mfu_text_lower(raw[start + k]);
    }
    if (used == 0)
        return MFU_ERR_INVALID_ARGUMENT; /* nothing but vendor words/blanks */
    out[used] = '\0';
    return MFU_OK;
}
