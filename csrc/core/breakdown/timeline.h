/*
 * timeline.h -- a profiled step's time split by kernel class on the union
 * timeline: every instant of the step's window counted once.
 *
 * Input: intervals [start_ns, end_ns), each on a *lane* (a GPU stream, or a
 * host thread) and of a class (kernels.h). On one lane, intervals nest (a
 * host op inside its parent op) or follow each other (kernels on a
 * stream); at any instant a lane's *current* interval is its innermost one:
 * of the intervals covering the instant, the one that started last (ties:
 * the shorter; then the class first in priority), judged on the intervals'
 * own times even where the window cuts them. So on a host thread an op
 * owns its self time, and its parent only the time outside its children.
 *
 * Across lanes the instant goes to the current interval whose class comes
 * first in mfu_kclass order (kernels.h: gemm, attention, fused, reduction,
 * elementwise, optimizer, other, memory, communication): compute over
 * memory copies over communication. An instant no lane covers is idle.
 *
 * Output, over the window [window_start_ns, window_end_ns) (intervals are
 * clipped to it):
 *   time_ns[c]    the instants class c won: the classes' times and idle_ns
 *                 add up to window_ns exactly;
 *   active_ns[c]  the instants some lane's current interval was of class c
 *                 (its own union: overlap inside the class counted once,
 *                 overlap with others not subtracted), >= time_ns[c];
 *   count[c]      the intervals of class c that reach into the window.
 *
 * Cost: O(n log n) time; memory: three arrays of n indices and one of
 * `lanes` (the caller's intervals are reordered in place).
 */
#ifndef MFU_TIMELINE_H
#define MFU_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "mfu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mfu_interval {
    int64_t start_ns;
    int64_t end_ns;
    int32_t lane;   /* 0 <= lane < lanes */
    int32_t kclass; /* an mfu_kclass, 0 <= kclass < MFU_KCLASS_COUNT */
} mfu_interval;

typedef struct mfu_timeline {
    int64_t window_ns;
    int64_t idle_ns;
    int64_t time_ns[MFU_KCLASS_COUNT];
    int64_t active_ns[MFU_KCLASS_COUNT];
    int64_t count[MFU_KCLASS_COUNT];
} mfu_timeline;

/*
 * Split [window_start_ns, window_end_ns) (see above) into *out.
 * MFU_ERR_INVALID_ARGUMENT (out untouched): NULL out, NULL intervals with
 * n > 0, lanes outside [1, MFU_TIMELINE_LANES_MAX], n above
 * MFU_TIMELINE_INTERVALS_MAX, a window that ends before it starts, or an interval
 * that ends before it starts or has a lane or class out of range;
 * MFU_ERR_OVERFLOW for a window longer than INT64_MAX ns;
 * MFU_ERR_NO_MEMORY when the working arrays cannot be allocated.
 * `intervals` is reordered in place: those reaching into the window first,
 * sorted by start.
 */
mfu_status mfu_timeline_split(mfu_interval *intervals, size_t n, int32_t lanes,
                              int64_t window_start_ns, int64_t window_end_ns, mfu_timeline *out);

/* The index of the first interval that ends before it starts or has a lane
 * outside [0, lanes) or a class out of range; n when every one is valid. */
size_t mfu_timeline_first_invalid(const mfu_interval *intervals, size_t n, int32_t lanes);

#ifdef __cplusplus
}
#endif

#endif /* MFU_TIMELINE_H */
