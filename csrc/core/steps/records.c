/* records.c -- the step records, their ring and its views (see records.h). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"

struct mfu_step_ring {
    uint32_t capacity, head, count;
    uint64_t newest_id; /* the newest record's id (count > 0) */
    int comm;           /* mfu_step_ring_track_comm() was called */
    mfu_step_record records[];
};

/* The slot of the i-th oldest record: head + i < 2 x capacity, so one
 * subtraction instead of a division (a step touches a few records). */
static inline uint32_t slot_of(const mfu_step_ring *ring, uint32_t i)
{
    const uint32_t slot = ring->head + i;
    return slot >= ring->capacity ? slot - ring->capacity : slot;
}

mfu_status mfu_step_ring_create(uint32_t capacity, mfu_step_ring **out)
{
    mfu_step_ring *ring;
    *out = NULL;
    if (capacity < 1 || capacity > MFU_STEP_RING_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    /* capacity <= 2^26 records of a few hundred bytes: fits a size_t */
    ring = calloc(1, sizeof *ring + (size_t)capacity * sizeof ring->records[0]);
    if (ring == NULL)
        return MFU_ERR_NO_MEMORY;
    ring->capacity = capacity;
    *out = ring;
    return MFU_OK;
}

void mfu_step_ring_destroy(mfu_step_ring *ring)
{
    free(ring);
}

void mfu_step_ring_track_comm(mfu_step_ring *ring)
{
    ring->comm = 1;
}

uint32_t mfu_step_ring_capacity(const mfu_step_ring *ring)
{
    return ring->capacity;
}

uint32_t mfu_step_ring_count(const mfu_step_ring *ring)
{
    return ring->count;
}

mfu_step_record *mfu_step_ring_at(const mfu_step_ring *ring, uint32_t i)
{
    if (i >= ring->count)
        return NULL;
    return (mfu_step_record *)&ring->records[slot_of(ring, i)];
}

mfu_step_record *mfu_step_ring_append(mfu_step_ring *ring, uint64_t id)
{
    mfu_step_record *r;
    if (ring->count == ring->capacity || (ring->count > 0 && id <= ring->newest_id))
        return NULL;
    r = &ring->records[slot_of(ring, ring->count)];
    ring->count++;
    ring->newest_id = id;
    /* Everything before the communication; that only once it is tracked
     * (until then every slot's is still the allocation's zeros). */
    memset(r, 0, ring->comm ? sizeof *r : offsetof(mfu_step_record, comm));
    r->id = id;
    r->state = MFU_STEP_OPEN;
    r->period_s = NAN;
    r->work = MFU_WORK_UNKNOWN;
    return r;
}

mfu_step_record *mfu_step_ring_find(const mfu_step_ring *ring, uint64_t id)
{
    uint32_t lo = 0, hi = ring->count;
    uint64_t newest;
    if (ring->count == 0)
        return NULL;
    newest = ring->newest_id;
    if (id > newest)
        return NULL;
    /* Ids are consecutive unless a step was removed: try that slot first. */
    if (newest - id < ring->count) {
        mfu_step_record *r = mfu_step_ring_at(ring, ring->count - 1 - (uint32_t)(newest - id));
        if (r->id == id)
            return r;
    }
    while (lo < hi) { /* ids increase with the index */
        const uint32_t mid = lo + (hi - lo) / 2;
        mfu_step_record *r = mfu_step_ring_at(ring, mid);
        if (r->id == id)
            return r;
        if (r->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void mfu_step_ring_pop_oldest(mfu_step_ring *ring)
{
    if (ring->count == 0)
        return;
    ring->head = slot_of(ring, 1);
    ring->count--;
}

void mfu_step_ring_remove(mfu_step_ring *ring, uint32_t i)
{
    if (i >= ring->count)
        return;
    for (uint32_t j = i; j + 1 < ring->count; j++)
        *mfu_step_ring_at(ring, j) = *mfu_step_ring_at(ring, j + 1);
    ring->count--;
    if (ring->count > 0)
        ring->newest_id = mfu_step_ring_at(ring, ring->count - 1)->id;
}

void mfu_step_ring_truncate(mfu_step_ring *ring, uint32_t count)
{
    if (count < ring->count) {
        ring->count = count;
        if (count > 0)
            ring->newest_id = mfu_step_ring_at(ring, count - 1)->id;
    }
}

/* ---- views --------------------------------------------------------------- */

static void add_phases(mfu_phase_summary *sum, const mfu_phase_times *t)
{
    for (int p = 0; p < MFU_PHASE_COUNT; p++)
        sum->seconds[p] += t->seconds[p];
    sum->marked |= t->marked;
    sum->excluded_s += t->excluded_s;
}

/* The work part: periods and work of every record, NaN propagating. */
static void sum_work(const mfu_step_ring *ring, uint32_t first, uint32_t steps,
                     mfu_step_sums *out)
{
    out->period_min_s = INFINITY;
    out->period_max_s = -INFINITY;
    for (uint32_t i = first; i < first + steps; i++) {
        const mfu_step_record *r = mfu_step_ring_at(ring, i);
        out->period_s += r->period_s;
        out->period_min_s = fmin(out->period_min_s, r->period_s);
        out->period_max_s = fmax(out->period_max_s, r->period_s);
        mfu_work_add(&out->work, &r->work);
    }
}

void mfu_step_view_sum(const mfu_step_view *view, unsigned parts, mfu_step_sums *out)
{
    const uint32_t count = mfu_step_ring_count(view->ring);
    const uint32_t first = view->first < count ? view->first : count;
    const uint32_t steps = view->steps < count - first ? view->steps : count - first;
    memset(out, 0, sizeof *out);
    out->steps = steps;
    out->phases.steps = steps;
    if ((parts & MFU_SUM_WORK) && steps > 0) {
        sum_work(view->ring, first, steps, out);
    } else {
        out->period_s = out->period_min_s = out->period_max_s = NAN;
        mfu_work_nan(&out->work);
    }
    for (uint32_t i = first; (parts & MFU_SUM_PHASES) && i < first + steps; i++)
        add_phases(&out->phases, &mfu_step_ring_at(view->ring, i)->phases);
    for (uint32_t i = first; (parts & MFU_SUM_COMM) && i < first + steps; i++)
        mfu_comm_times_add(&out->comm, &mfu_step_ring_at(view->ring, i)->comm);
}

void mfu_step_sums_window(const mfu_step_sums *sums, const mfu_peak *peak,
                          mfu_window_summary *out)
{
    mfu_ceilings ceilings;
    mfu_waterfall_in phases;
    out->steps = sums->steps;
    out->window_s = sums->period_s;
    out->step_s_min = sums->period_min_s;
    out->step_s_max = sums->period_max_s;
    out->step_s_mean = sums->steps > 0 ? sums->period_s / (double)sums->steps : NAN;
    out->totals = sums->work;
    mfu_peak_ceilings(peak, &ceilings);
    mfu_step_sums_waterfall_in(sums, out->step_s_mean, &phases);
    mfu_figures_form(&out->totals, out->window_s, &ceilings, &phases, &out->metrics,
                     &out->waterfall);
}

void mfu_step_sums_waterfall_in(const mfu_step_sums *sums, double step_s, mfu_waterfall_in *out)
{
    const double steps = (double)sums->steps;
    memset(out, 0, sizeof *out);
    out->step_s = step_s;
    out->marked = sums->steps > 0 ? sums->phases.marked : 0u;
    for (int p = 0; p < MFU_PHASE_COUNT; p++)
        out->phase_s[p] = (out->marked & (1u << p)) ? sums->phases.seconds[p] / steps : 0.0;
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        *mfu_work_at(&out->per_step, f) =
            (mfu_step_fields[f].flags & MFU_FIELD_PER_STEP) ? mfu_work_get(&sums->work, f) / steps
                                                            : NAN;
}
