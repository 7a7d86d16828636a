/*
 * timing.h -- clocks.
 *
 * The CPU clock is CLOCK_MONOTONIC: never steps backwards, unaffected by NTP
 * slews of the wall clock, nanosecond resolution on Linux. Durations are
 * differences of two readings, reported in seconds (double).
 */
#ifndef MFU_TIMING_H
#define MFU_TIMING_H

#include <stdint.h>

#include "mfu_status.h"

/* Current CLOCK_MONOTONIC reading in nanoseconds.
 * MFU_ERR_UNAVAILABLE if the clock cannot be read (never on Linux). */
mfu_status mfu_clock_monotonic_ns(uint64_t *now_ns);

/* Seconds from `start_ns` to `end_ns`; negative if end precedes start. */
double mfu_clock_elapsed_s(uint64_t start_ns, uint64_t end_ns);

#endif /* MFU_TIMING_H */
