/*
 * fuzz_input.h -- what every fuzz target shares: a reader that turns the
 * fuzzer's bytes into typed values, and FUZZ_CHECK.
 *
 * The reader is a cursor over (data, size). Every read succeeds: past the
 * end it yields zeros, so a short input is just an input with small values.
 * Integers are little-endian. The "picked" readers spend one tag byte to
 * choose how the value is made, so a mutation of the tag jumps between
 * exact values, small values, negatives and the edges of the type (where
 * overflow lives) instead of waiting for random bytes to land there:
 *
 *   fi_i64  tag % 8: 0, 7 raw 8 bytes   1 u8          2 u16
 *                    3 -(u8 + 1)        4 edge[u8]    5 2^(u8 % 63) + d
 *                    6 u32                            (d = u8 - 128)
 *   fi_i32  tag % 4: 0 raw 4 bytes      1 u8          2 -(u8 + 1)
 *                    3 edge32[u8]
 *   fi_double tag % 8: 0 raw 8 bytes  1 u8          2 NaN
 *                    3 +-inf (tag & 8)  4 -(u8 + 0.5)  5 DBL_MAX
 *                    6 `small`          7 u16 * `scale`
 *
 * Corpus files (tests/c/fuzz/make_corpus.py) always use tag 0 plus the raw
 * bytes, so every committed entry spells its exact values.
 *
 * FUZZ_CHECK(cond) prints the broken property and aborts: under a
 * sanitizer or libFuzzer that is a crash with a reproducer, like any other
 * bug the target finds.
 */
#ifndef MFU_FUZZ_INPUT_H
#define MFU_FUZZ_INPUT_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: fuzz property broken: %s\n", __FILE__,    \
                    __LINE__, #cond);                                         \
            abort();                                                          \
        }                                                                     \
    } while (0)

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    size_t pos;
} fuzz_input;

static inline fuzz_input fi_make(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    return in;
}

static inline size_t fi_left(const fuzz_input *in)
{
    return in->size - in->pos;
}

static inline uint8_t fi_u8(fuzz_input *in)
{
    return in->pos < in->size ? in->data[in->pos++] : 0;
}

static inline uint64_t fi_bytes_le(fuzz_input *in, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)fi_u8(in) << (8 * i);
    return v;
}

static inline uint64_t fi_u64(fuzz_input *in)
{
    return fi_bytes_le(in, 8);
}

/* Two's complement reinterpretation without implementation-defined casts. */
static inline int64_t fi_as_i64(uint64_t u)
{
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline int32_t fi_as_i32(uint32_t u)
{
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static const int64_t fi_edge64[] = {
    0, 1, -1, 2, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
    INT64_MAX / 2, INT64_MAX / 2 + 1, INT64_MAX / 3, INT64_MAX / 4,
    INT32_MAX, (int64_t)INT32_MAX + 1, INT32_MIN, UINT32_MAX,
    (int64_t)UINT32_MAX + 1, 3037000499, 3037000500, /* sqrt(2^63) */
    2097151, 2097152,                                /* cbrt(2^63) */
    55108, 55109,                                    /* 2^63^(1/4) */
    (int64_t)1 << 62, ((int64_t)1 << 62) - 1, (int64_t)1 << 61,
    (int64_t)1 << 31, (int64_t)1 << 21, (int64_t)1 << 16, 4096, 8192,
    128000, 151936, 32000, 50257, 65536, 131072, 1 << 20,
};

static const int32_t fi_edge32[] = {
    0, 1, -1, -2, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1,
    99, 100, 7, 8, 9, 10, 12, 80, 108, 114, 132, 144, 148, 160, 228, 256,
    304, 65535, 65536,
};

#define FI_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static inline int64_t fi_i64(fuzz_input *in)
{
    uint8_t tag = fi_u8(in);
    switch (tag % 8) {
    case 1: return fi_u8(in);
    case 2: return (int64_t)fi_bytes_le(in, 2);
    case 3: return -(int64_t)fi_u8(in) - 1;
    case 4: return fi_edge64[fi_u8(in) % FI_COUNT(fi_edge64)];
    case 5: {
        int shift = fi_u8(in) % 63;
        int delta = (int)fi_u8(in) - 128;
        return ((int64_t)1 << shift) + delta;
    }
    case 6: return (int64_t)fi_bytes_le(in, 4);
    default: return fi_as_i64(fi_u64(in));
    }
}

static inline int32_t fi_i32(fuzz_input *in)
{
    uint8_t tag = fi_u8(in);
    switch (tag % 4) {
    case 1: return fi_u8(in);
    case 2: return -(int32_t)fi_u8(in) - 1;
    case 3: return fi_edge32[fi_u8(in) % FI_COUNT(fi_edge32)];
    default: return fi_as_i32((uint32_t)fi_bytes_le(in, 4));
    }
}

/* A picked double: the target chooses its own small edge (the least
 * denormal for a ratio, 0 for a duration) and the scale of u16 values. */
static inline double fi_double(fuzz_input *in, double small, double scale)
{
    uint8_t tag = fi_u8(in);
    switch (tag % 8) {
    case 1: return (double)fi_u8(in);
    case 2: return NAN;
    case 3: return (tag & 8) ? -INFINITY : INFINITY;
    case 4: return -(double)fi_u8(in) - 0.5;
    case 5: return DBL_MAX;
    case 6: return small;
    case 7: return (double)fi_bytes_le(in, 2) * scale;
    default: {
        uint64_t bits = fi_u64(in);
        double v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    }
}

/* The unread rest as a NUL-terminated heap string of exactly the right
 * size (ASan sees any over-read). Caller frees. */
static inline char *fi_rest_cstr(fuzz_input *in, size_t *len)
{
    size_t n = fi_left(in);
    char *s = malloc(n + 1);
    if (s == NULL)
        abort();
    if (n > 0)
        memcpy(s, in->data + in->pos, n);
    s[n] = '\0';
    in->pos = in->size;
    if (len != NULL)
        *len = n;
    return s;
}

#endif /* MFU_FUZZ_INPUT_H */
