/*
 * ring.h -- the bookkeeping of a window of the last `capacity` records pushed
 * after `warmup` skipped ones: the phase window (phases.c) and the
 * communication window (comm.c) keep their own records, in an array right
 * after this header, and share its arithmetic.
 *
 *   mfu_ring_alloc(size, n, warmup, seen, &p)
 *                      one zeroed allocation of `size` bytes (the window's
 *                      struct with its n records), whose first member is an
 *                      mfu_ring; INVALID_ARGUMENT for n outside
 *                      1..MFU_WINDOW_MAX, NO_MEMORY. `seen` records count as
 *                      pushed already (toward the warm-up).
 *   mfu_ring_push(r)   counts one record: the slot to store it in, or -1
 *                      while in the warm-up; the oldest is overwritten when
 *                      the ring is full.
 *   mfu_ring_slot(r, i)
 *                      the slot of the i-th oldest kept record, i < count.
 */
#ifndef MFU_RING_H
#define MFU_RING_H

#include <stdint.h>
#include <stdlib.h>

#include "mfu_limits.h"
#include "mfu_status.h"

typedef struct mfu_ring {
    uint32_t capacity, head, count;
    uint64_t warmup, seen;
} mfu_ring;

static inline mfu_status mfu_ring_alloc(size_t header_size, size_t record_size,
                                        uint32_t capacity, uint64_t warmup, uint64_t seen,
                                        void **out)
{
    mfu_ring *ring;
    *out = NULL;
    if (capacity < 1 || capacity > MFU_WINDOW_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    /* capacity <= 2^24 records of at most a few hundred bytes: fits a size_t */
    ring = calloc(1, header_size + (size_t)capacity * record_size);
    if (ring == NULL)
        return MFU_ERR_NO_MEMORY;
    ring->capacity = capacity;
    ring->warmup = warmup;
    ring->seen = seen;
    *out = ring;
    return MFU_OK;
}

static inline int64_t mfu_ring_push(mfu_ring *r)
{
    uint32_t slot;
    if (++r->seen <= r->warmup)
        return -1;
    slot = (r->head + r->count) % r->capacity;
    if (r->count < r->capacity)
        r->count++;
    else
        r->head = (r->head + 1) % r->capacity;
    return slot;
}

static inline uint32_t mfu_ring_slot(const mfu_ring *r, uint32_t i)
{
    return (r->head + i) % r->capacity;
}

#endif /* MFU_RING_H */
