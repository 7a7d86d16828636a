/*
 * fuzz_normalize.c -- mfu_gpu_normalize_name() into output buffers of every
 * size, and mfu_dtype_from_name() on the same bytes.
 *
 * Input: size selector u8, flags u8, then the name (the rest). The output
 * buffer is a heap block of exactly out_size bytes, so a write past it is
 * an ASan report. Selector < 250: out_size = selector (0 included); 250..
 * 255: MFU_GPU_NAME_MAX + {-1, 0, 1, 2, 1000, 65536}. Flag bit 0 passes an
 * over-long name unterminated (MFU_GPU_NAME_MAX + 1 readable bytes).
 *
 * Properties:
 *  - with a MFU_GPU_NAME_MAX + 1 buffer: OK iff the name is 1..MAX bytes
 *    and holds a token that is not a vendor word; the result is
 *    lower-case letters, digits and single spaces, no space at either end;
 *    normalising it again gives it back (idempotent);
 *  - with any other size: OK with the same text iff it fits (length + 1 <=
 *    out_size), INVALID_ARGUMENT otherwise, and never a write past it;
 *  - mfu_dtype_from_name: OK only for a canonical dtype name (any case),
 *    and then mfu_dtype_name() of the result equals it case-insensitively.
 */
#include "fuzz_input.h"
#include "dtypes.h"
#include "gpu_name.h"

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static int alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t big_sizes[] = {
        MFU_GPU_NAME_MAX - 1, MFU_GPU_NAME_MAX, MFU_GPU_NAME_MAX + 1,
        MFU_GPU_NAME_MAX + 2, MFU_GPU_NAME_MAX + 1000, 65536,
    };
    fuzz_input in = fi_make(data, size);
    uint8_t selector = fi_u8(&in);
    uint8_t flags = fi_u8(&in);
    size_t out_size = selector < 250 ? selector : big_sizes[selector - 250];
    char full[MFU_GPU_NAME_MAX + 1];
    char again[MFU_GPU_NAME_MAX + 1];
    char *out, *name;
    size_t len, full_len = 0;
    mfu_status st_full, st;
    int has_alnum = 0;
    mfu_dtype dtype;

    name = fi_rest_cstr(&in, &len);
    if ((flags & 1) && len > MFU_GPU_NAME_MAX + 1) {
        char *raw = malloc(MFU_GPU_NAME_MAX + 1);
        memcpy(raw, name, MFU_GPU_NAME_MAX + 1);
        free(name);
        name = raw;
    }
    len = 0;
    while (len <= MFU_GPU_NAME_MAX && name[len] != '\0')
        len++;
    for (size_t i = 0; i < len && i <= MFU_GPU_NAME_MAX; i++)
        has_alnum |= alnum(name[i]);

    st_full = mfu_gpu_normalize_name(name, full, sizeof full);
    FUZZ_CHECK(st_full == MFU_OK || st_full == MFU_ERR_INVALID_ARGUMENT);
    if (len == 0 || len > MFU_GPU_NAME_MAX || !has_alnum)
        FUZZ_CHECK(st_full == MFU_ERR_INVALID_ARGUMENT);
    if (st_full == MFU_OK) {
        full_len = strlen(full);
        FUZZ_CHECK(full_len >= 1 && full_len <= MFU_GPU_NAME_MAX);
        FUZZ_CHECK(full[0] != ' ' && full[full_len - 1] != ' ');
        for (size_t i = 0; i < full_len; i++) {
            char c = full[i];
            FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       (c == ' ' && full[i + 1] != ' '));
            FUZZ_CHECK(c == ' ' || lower(c) == c);
        }
        FUZZ_CHECK(mfu_gpu_normalize_name(full, again, sizeof again) == MFU_OK);
        FUZZ_CHECK(strcmp(full, again) == 0);
    }

    out = malloc(out_size > 0 ? out_size : 1);
    st = mfu_gpu_normalize_name(name, out, out_size);
    if (st_full != MFU_OK) {
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
    } else if (full_len + 1 <= out_size) {
        FUZZ_CHECK(st == MFU_OK && strcmp(out, full) == 0);
    } else {
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
    }
    free(out);

    /* NULL arguments */
    FUZZ_CHECK(mfu_gpu_normalize_name(NULL, full, sizeof full) ==
               MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(mfu_gpu_normalize_name(name, NULL, sizeof full) ==
               MFU_ERR_INVALID_ARGUMENT);

    /* dtype names from the same bytes */
    if (mfu_dtype_from_name(name, &dtype) == MFU_OK) {
        const char *canon = mfu_dtype_name(dtype);
        size_t k;
        FUZZ_CHECK(canon != NULL);
        for (k = 0; canon[k] != '\0'; k++)
            FUZZ_CHECK(lower(name[k]) == canon[k]);
        FUZZ_CHECK(name[k] == '\0');
    }
    free(name);
    return 0;
}
