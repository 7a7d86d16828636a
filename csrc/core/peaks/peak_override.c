/* peak_override.c -- the MFU_TRACKER_PEAK_TFLOPS parser (see peak_override.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mfu_text.h"
#include "peak_override.h"

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static void trim(const char **s, size_t *len)
{
    while (*len > 0 && is_blank(**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && is_blank((*s)[*len - 1]))
        (*len)--;
}

/* A number occupying exactly s[0..len) (blanks already trimmed). */
static mfu_status parse_tflops(const char *s, size_t len, double *out)
{
    char buf[64];
    char *end = NULL;
    double value;
    size_t i;
    if (len == 0 || len >= sizeof buf)
        return MFU_ERR_INVALID_ARGUMENT;
    for (i = 0; i < len; i++) {
        char c = s[i];
        /* digits, sign, point, exponent only: no "inf", "nan", hex */
        if (!((c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' ||
              c == 'e' || c == 'E'))
            return MFU_ERR_INVALID_ARGUMENT;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    value = strtod(buf, &end);
    if (end != buf + len || errno == ERANGE || !isfinite(value) || !(value > 0.0))
        return MFU_ERR_INVALID_ARGUMENT;
    *out = value;
    return MFU_OK;
}

mfu_status mfu_peak_override_parse(const char *text, mfu_dtype dtype,
                                   double *tflops_out)
{
    size_t len, pos = 0;
    int seen[MFU_DTYPE_COUNT] = {0};
    double found = 0.0;
    int have = 0;

    if (text == NULL || tflops_out == NULL || mfu_dtype_name(dtype) == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    len = mfu_text_bounded_len(text, MFU_PEAK_OVERRIDE_MAX + 1);
    if (len == 0 || len > MFU_PEAK_OVERRIDE_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    if (memchr(text, '=', len) == NULL) {
        const char *s = text;
        size_t n = len;
        trim(&s, &n);
        return parse_tflops(s, n, tflops_out);
    }
    while (pos <= len) {
        const char *item = text + pos;
        const char *comma = memchr(item, ',', len - pos);
        size_t item_len = comma ? (size_t)(comma - item) : len - pos;
        const char *eq = memchr(item, '=', item_len);
        const char *key, *val;
        size_t key_len, val_len;
        mfu_dtype which;
        double value;
        mfu_status st;

        if (eq == NULL)
            return MFU_ERR_INVALID_ARGUMENT; /* "bf16=1,300" or empty item */
        key = item;
        key_len = (size_t)(eq - item);
        val = eq + 1;
        val_len = item_len - key_len - 1;
        trim(&key, &key_len);
        trim(&val, &val_len);
        if (mfu_dtype_from_span(key, key_len, &which) != MFU_OK)
            return MFU_ERR_INVALID_ARGUMENT;
        if (seen[which])
            return MFU_ERR_INVALID_ARGUMENT; /* named twice */
        seen[which] = 1;
        st = parse_tflops(val, val_len, &value);
        if (st != MFU_OK)
            return st;
        if (which == dtype) {
            found = value;
            have = 1;
        }
        if (comma == NULL)
            break;
        pos += item_len + 1;
    }
    if (!have)
        return MFU_ERR_NOT_FOUND;
    *tflops_out = found;
    return MFU_OK;
}
