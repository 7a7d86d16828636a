/*
 * checked.h -- checked int64 arithmetic on non-negative operands, for the
 * op formulas (flops_*.c). Overflow is detected before it happens; nothing
 * ever wraps. Private to csrc/core: not part of mfu_core.h.
 */
#ifndef MFU_CHECKED_H
#define MFU_CHECKED_H

#include <stddef.h>
#include <stdint.h>

#include "mfu_status.h"

static inline mfu_status mfu_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    if (a != 0 && b > INT64_MAX / a)
        return MFU_ERR_OVERFLOW;
    *out = a * b;
    return MFU_OK;
}

static inline mfu_status mfu_add_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    if (b > INT64_MAX - a)
        return MFU_ERR_OVERFLOW;
    *out = a + b;
    return MFU_OK;
}

/* The product of `count` factors (1 for count == 0). A zero factor makes
 * it 0 however large the others: overflow is judged on the exact result,
 * never on a partial product. */
static inline mfu_status mfu_product_i64(const int64_t *factors, size_t count, int64_t *out)
{
    int64_t acc = 1;
    int zero = 0;
    for (size_t i = 0; i < count; i++) {
        if (factors[i] < 0)
            return MFU_ERR_INVALID_ARGUMENT;
        zero |= factors[i] == 0;
    }
    if (zero) {
        *out = 0;
        return MFU_OK;
    }
    for (size_t i = 0; i < count; i++) {
        mfu_status st = mfu_mul_i64(acc, factors[i], &acc);
        if (st != MFU_OK)
            return st;
    }
    *out = acc;
    return MFU_OK;
}

#endif /* MFU_CHECKED_H */
