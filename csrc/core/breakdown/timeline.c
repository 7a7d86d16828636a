/*
 * timeline.c -- the union-timeline split of a profiled step (timeline.h).
 *
 * A sweep over the intervals' starts and ends in time order. Each lane keeps
 * a stack of the intervals open on it (linked through `below`), its top the
 * lane's current interval; an interval that ends under another stays in the
 * stack, marked, and leaves when it reaches the top. `top_count[c]` counts
 * the lanes whose current interval is of class c, so each segment between
 * two consecutive boundaries is charged in O(MFU_KCLASS_COUNT): to the first
 * class with a lane (time_ns) and to every class with one (active_ns).
 */
#include <stdlib.h>

#include "mfu_limits.h"
#include "timeline.h"

#define NONE ((size_t)-1)

typedef struct sweep {
    const mfu_interval *iv;
    int64_t window_start_ns, window_end_ns; /* the intervals' times are clipped to it */
    size_t *heap;         /* open intervals, a min-heap by end */
    size_t heap_size;
    size_t *below;        /* the interval under each one in its lane's stack */
    unsigned char *ended; /* ended but still in a stack */
    size_t *lane_top;     /* each lane's current interval, NONE when idle */
    int64_t top_count[MFU_KCLASS_COUNT];
} sweep;

static int64_t start_of(const sweep *s, size_t i)
{
    return s->iv[i].start_ns > s->window_start_ns ? s->iv[i].start_ns : s->window_start_ns;
}

static int64_t end_of(const sweep *s, size_t i)
{
    return s->iv[i].end_ns < s->window_end_ns ? s->iv[i].end_ns : s->window_end_ns;
}

/* By the *unclipped* times, so that intervals which begin before the window
 * keep their nesting: start ascending; a longer interval first (it encloses); then the class
 * later in priority first, so among identical intervals the one first in
 * priority is on top; then the lane (a total order: qsort is not stable). */
static int by_start(const void *a, const void *b)
{
    const mfu_interval *x = a, *y = b;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns > y->end_ns ? -1 : 1;
    if (x->kclass != y->kclass)
        return x->kclass > y->kclass ? -1 : 1;
    return (x->lane > y->lane) - (x->lane < y->lane);
}

static void heap_push(sweep *s, size_t index)
{
    size_t at = s->heap_size++;
    while (at > 0) {
        size_t parent = (at - 1) / 2;
        if (end_of(s, s->heap[parent]) <= end_of(s, index))
            break;
        s->heap[at] = s->heap[parent];
        at = parent;
    }
    s->heap[at] = index;
}

static size_t heap_pop(sweep *s)
{
    size_t top = s->heap[0], last = s->heap[--s->heap_size], at = 0;
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= s->heap_size)
            break;
        if (child + 1 < s->heap_size
            && end_of(s, s->heap[child + 1]) < end_of(s, s->heap[child]))
            child++;
        if (end_of(s, last) <= end_of(s, s->heap[child]))
            break;
        s->heap[at] = s->heap[child];
        at = child;
    }
    if (s->heap_size > 0)
        s->heap[at] = last;
    return top;
}

/* The lane's current interval changes from its top to `next`. */
static void set_top(sweep *s, int32_t lane, size_t next)
{
    size_t old = s->lane_top[lane];
    if (old != NONE)
        s->top_count[s->iv[old].kclass]--;
    s->lane_top[lane] = next;
    if (next != NONE)
        s->top_count[s->iv[next].kclass]++;
}

static void charge(const sweep *s, int64_t length, mfu_timeline *out)
{
    int won = 0;
    for (int c = 0; c < MFU_KCLASS_COUNT; c++) {
        if (s->top_count[c] > 0) {
            out->active_ns[c] += length;
            if (!won) {
                out->time_ns[c] += length;
                won = 1;
            }
        }
    }
}

static void run(sweep *s, size_t n, mfu_timeline *out)
{
    size_t next = 0;
    int64_t now = s->window_start_ns;
    while (next < n || s->heap_size > 0) {
        int64_t at = next < n ? start_of(s, next) : INT64_MAX;
        if (s->heap_size > 0 && end_of(s, s->heap[0]) < at)
            at = end_of(s, s->heap[0]);
        if (at > now)
            charge(s, at - now, out);
        now = at;
        while (s->heap_size > 0 && end_of(s, s->heap[0]) == at) {
            size_t done = heap_pop(s);
            int32_t lane = s->iv[done].lane;
            s->ended[done] = 1;
            size_t top = s->lane_top[lane];
            while (top != NONE && s->ended[top])
                top = s->below[top];
            if (top != s->lane_top[lane])
                set_top(s, lane, top);
        }
        while (next < n && start_of(s, next) == at) {
            s->below[next] = s->lane_top[s->iv[next].lane];
            set_top(s, s->iv[next].lane, next);
            heap_push(s, next);
            next++;
        }
    }
}

static int valid(const mfu_interval *iv, int32_t lanes)
{
    return iv->end_ns >= iv->start_ns && iv->lane >= 0 && iv->lane < lanes && iv->kclass >= 0
           && iv->kclass < MFU_KCLASS_COUNT;
}

/* Keep the intervals that reach into the window (non-empty once clipped)
 * at the front, counting them per class; returns how many were kept. */
static size_t keep(mfu_interval *intervals, size_t n, int64_t start, int64_t end, int64_t *count)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const mfu_interval *iv = &intervals[i];
        if ((iv->end_ns < end ? iv->end_ns : end) > (iv->start_ns > start ? iv->start_ns : start)) {
            count[iv->kclass]++;
            intervals[kept++] = *iv;
        }
    }
    return kept;
}

size_t mfu_timeline_first_invalid(const mfu_interval *intervals, size_t n, int32_t lanes)
{
    for (size_t i = 0; intervals != NULL && i < n; i++)
        if (!valid(&intervals[i], lanes))
            return i;
    return n;
}

mfu_status mfu_timeline_split(mfu_interval *intervals, size_t n, int32_t lanes,
                              int64_t window_start_ns, int64_t window_end_ns, mfu_timeline *out)
{
    if (out == NULL || (intervals == NULL && n > 0) || lanes < 1
        || lanes > MFU_TIMELINE_LANES_MAX || n > MFU_TIMELINE_INTERVALS_MAX
        || window_end_ns < window_start_ns || mfu_timeline_first_invalid(intervals, n, lanes) < n)
        return MFU_ERR_INVALID_ARGUMENT;
    if (window_start_ns < 0 && window_end_ns > INT64_MAX + window_start_ns)
        return MFU_ERR_OVERFLOW;
    mfu_timeline result = {.window_ns = window_end_ns - window_start_ns};
    size_t kept = keep(intervals, n, window_start_ns, window_end_ns, result.count);
    sweep s = {.iv = intervals, .window_start_ns = window_start_ns, .window_end_ns = window_end_ns};
    if (kept > 0) {
        s.heap = malloc(kept * sizeof *s.heap);
        s.below = malloc(kept * sizeof *s.below);
        s.ended = calloc(kept, 1);
        s.lane_top = malloc((size_t)lanes * sizeof *s.lane_top);
        if (s.heap == NULL || s.below == NULL || s.ended == NULL || s.lane_top == NULL) {
            free(s.heap);
            free(s.below);
            free(s.ended);
            free(s.lane_top);
            return MFU_ERR_NO_MEMORY;
        }
        for (int32_t lane = 0; lane < lanes; lane++)
            s.lane_top[lane] = NONE;
        qsort(intervals, kept, sizeof *intervals, by_start);
        run(&s, kept, &result);
        free(s.heap);
        free(s.below);
        free(s.ended);
        free(s.lane_top);
    }
    int64_t busy = 0;
    for (int c = 0; c < MFU_KCLASS_COUNT; c++)
        busy += result.time_ns[c];
    result.idle_ns = result.window_ns - busy;
    *out = result;
    return MFU_OK;
}
