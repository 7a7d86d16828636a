/*
 * fuzz_override.c -- mfu_peak_override_parse(), the MFU_TRACKER_PEAK_TFLOPS
 * text, for every dtype.
 *
 * Input: flags u8, then the text (the rest). Flag bit 0 passes a text
 * longer than MFU_PEAK_OVERRIDE_MAX + 1 bytes unterminated (the parser
 * must stop at MFU_PEAK_OVERRIDE_MAX + 1 bytes).
 *
 * Properties:
 *  - each dtype gives OK (a finite value > 0), NOT_FOUND or INVALID;
 *  - well-formedness does not depend on the dtype asked for: either every
 *    dtype is INVALID_ARGUMENT or none is;
 *  - a text without '=' gives every dtype the same status and value;
 *  - round trip: printing the values found as "dtype=%.17g,..." and
 *    parsing that gives the same values, and NOT_FOUND for the others;
 *  - an out-of-range dtype, a NULL text or a NULL output is INVALID.
 */
#include <math.h>

#include "fuzz_input.h"
#include "peak_override.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    uint8_t flags = fi_u8(&in);
    size_t len;
    char *text = fi_rest_cstr(&in, &len);
    mfu_status st[MFU_DTYPE_COUNT];
    double value[MFU_DTYPE_COUNT];
    int invalid = 0, found = 0, has_eq = 0;
    double v;

    if ((flags & 1) && len > MFU_PEAK_OVERRIDE_MAX + 1) {
        char *raw = malloc(MFU_PEAK_OVERRIDE_MAX + 1);
        memcpy(raw, text, MFU_PEAK_OVERRIDE_MAX + 1);
        free(text);
        text = raw;
    }
    for (size_t i = 0; i <= MFU_PEAK_OVERRIDE_MAX && text[i] != '\0'; i++)
        has_eq |= text[i] == '=';

    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        value[d] = -1.0;
        st[d] = mfu_peak_override_parse(text, (mfu_dtype)d, &value[d]);
        FUZZ_CHECK(st[d] == MFU_OK || st[d] == MFU_ERR_NOT_FOUND ||
                   st[d] == MFU_ERR_INVALID_ARGUMENT);
        if (st[d] == MFU_OK) {
            FUZZ_CHECK(isfinite(value[d]) && value[d] > 0.0);
            found++;
        } else {
            FUZZ_CHECK(value[d] == -1.0); /* untouched on failure */
        }
        invalid += st[d] == MFU_ERR_INVALID_ARGUMENT;
    }
    FUZZ_CHECK(invalid == 0 || invalid == MFU_DTYPE_COUNT);
    if (!has_eq) {
        for (int d = 1; d < MFU_DTYPE_COUNT; d++) {
            FUZZ_CHECK(st[d] == st[0]);
            FUZZ_CHECK(st[d] != MFU_OK || value[d] == value[0]);
        }
    }

    if (found > 0) {
        char canon[MFU_DTYPE_COUNT * 40];
        size_t used = 0;
        for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
            if (st[d] == MFU_OK)
                used += (size_t)snprintf(canon + used, sizeof canon - used,
                                         "%s%s=%.17g", used ? "," : "",
                                         mfu_dtype_name((mfu_dtype)d), value[d]);
        }
        for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
            mfu_status s = mfu_peak_override_parse(canon, (mfu_dtype)d, &v);
            if (st[d] == MFU_OK)
                FUZZ_CHECK(s == MFU_OK && v == value[d]);
            else
                FUZZ_CHECK(s == MFU_ERR_NOT_FOUND);
        }
    }

    FUZZ_CHECK(mfu_peak_override_parse(text, (mfu_dtype)-1, &v) ==
               MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(mfu_peak_override_parse(text, MFU_DTYPE_COUNT, &v) ==
               MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(mfu_peak_override_parse(NULL, MFU_DTYPE_BF16, &v) ==
               MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(mfu_peak_override_parse(text, MFU_DTYPE_BF16, NULL) ==
               MFU_ERR_INVALID_ARGUMENT);
    free(text);
    return 0;
}
