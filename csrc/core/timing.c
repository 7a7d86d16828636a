/* timing.c -- the monotonic CPU clock. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "timing.h"

mfu_status mfu_clock_monotonic_ns(uint64_t *now_ns)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return MFU_ERR_UNAVAILABLE;
    *now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return MFU_OK;
}

double mfu_clock_elapsed_s(uint64_t start_ns, uint64_t end_ns)
{
    /* Subtract in unsigned then sign the result, so a reversed pair does not
     * wrap to ~584 years. */
    if (end_ns >= start_ns)
        return (double)(end_ns - start_ns) * 1e-9;
    return -(double)(start_ns - end_ns) * 1e-9;
}
