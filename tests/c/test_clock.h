/*
 * test_clock.h -- time in the C tests without a tolerance the scheduler can
 * break.
 *
 * test_clock_virtual(1) installs a virtual clock as the core's clock source
 * (timing.h mfu_clock_set_source): every CPU time the core takes is then
 * test_clock_ns, which only test_clock_advance_ns() moves, so an interval
 * the core measures is exactly the time advanced. test_clock_virtual(0)
 * gives the core CLOCK_MONOTONIC back.
 *
 * test_real_ns() is CLOCK_MONOTONIC read by the test itself: readings taken
 * before the core's first mark and after its last bracket the interval the
 * core measured on the real clock, an upper bound that holds however long
 * the machine kept the test waiting (a fixed bound does not). The test
 * includes <time.h> under _POSIX_C_SOURCE first.
 */
#ifndef MFU_TEST_CLOCK_H
#define MFU_TEST_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "timing.h"

static uint64_t test_clock_ns = 1000000000u; /* the virtual clock: 1 s at the start */

static inline int test_clock_read(uint64_t *now_ns)
{
    *now_ns = test_clock_ns;
    return 0;
}

static inline void test_clock_virtual(int on)
{
    mfu_clock_set_source(on ? test_clock_read : NULL);
}

static inline void test_clock_advance_ns(uint64_t ns)
{
    test_clock_ns += ns;
}

static inline uint64_t test_real_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Seconds from `before` to `after` (test_real_ns readings), converted as the
 * core converts (timing.c mfu_clock_elapsed_s): a measured interval inside the
 * bracket compares <= it exactly. */
static inline double test_bracket_s(uint64_t before, uint64_t after)
{
    return (double)(after - before) * 1e-9;
}

#endif /* MFU_TEST_CLOCK_H */
