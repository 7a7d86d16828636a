/*
 * mfu_text.h -- ASCII text helpers shared by the core's parsers (device
 * names, dtype names, MFU_TRACKER_PEAK_TFLOPS). Private to csrc/core: not
 * part of mfu_core.h.
 *
 * Every helper is locale-independent (plain ASCII, no <ctype.h>) and reads
 * no byte past the bound it is given.
 */
#ifndef MFU_TEXT_H
#define MFU_TEXT_H

#include <stddef.h>

/* strlen bounded by `max` (strnlen is POSIX, not C11): never reads s[max]. */
static inline size_t mfu_text_bounded_len(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n] != '\0')
        n++;
    return n;
}

static inline char mfu_text_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static inline int mfu_text_is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

/* Space, tab, and the line/page breaks: what " x ".strip() removes in ASCII. */
static inline int mfu_text_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
}

/* s[0..len) equals the NUL-terminated `word`, ignoring ASCII case. */
static inline int mfu_text_span_equals(const char *s, size_t len,
                                       const char *word)
{
    size_t i;
    for (i = 0; i < len; i++) {
        if (word[i] == '\0' ||
            mfu_text_lower(s[i]) != mfu_text_lower(word[i]))
            return 0;
    }
    return word[len] == '\0';
}

#endif /* MFU_TEXT_H */
