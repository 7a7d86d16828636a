/* steps_comm.c -- the collectives a step tracker records: launches and
 * completions on its marks, and the table of those in flight (steps.h,
 * "Communication"). */
#include <stdlib.h>
#include <string.h>

#include "mfu_limits.h"
#include "steps_internal.h"

mfu_status mfu_steps_comm_enable(mfu_steps *s)
{
    if (s->inflight != NULL)
        return MFU_OK;
    /* The steps before had no communication: their records say so. */
    s->inflight = calloc(MFU_COMM_INFLIGHT_MAX, sizeof *s->inflight);
    if (s->inflight == NULL)
        return MFU_ERR_NO_MEMORY;
    mfu_step_ring_track_comm(s->records);
    return MFU_OK;
}

int mfu_steps_comm_enabled(const mfu_steps *s)
{
    return s->inflight != NULL && !s->closed;
}

/* A kind in range, bytes finite >= 0, bus bytes and the link NaN (unknown)
 * or finite >= 0. */
static int valid_launch(const mfu_comm_launch *launch)
{
    return (unsigned)launch->kind < MFU_COMM_KIND_COUNT && mfu_steps_usable(launch->bytes)
           && mfu_steps_usable_or_unknown(launch->bus_bytes)
           && mfu_steps_usable_or_unknown(launch->link_bytes_per_sec);
}

mfu_status mfu_steps_comm_begin(mfu_steps *s, const mfu_comm_launch *launch, uint64_t *token)
{
    mfu_mark proto;
    int appended;
    mfu_status status;
    *token = 0;
    if (s->inflight == NULL)
        return MFU_OK;
    if (!valid_launch(launch))
        return MFU_ERR_INVALID_ARGUMENT;
    if (mfu_phase_leaves_step(mfu_steps_phase_innermost(s)))
        return MFU_OK; /* the badput phase's own work (steps.h) */
    memset(&proto, 0, sizeof proto);
    proto.phase = MFU_PHASE_NONE;
    proto.launch = *launch;
    /* A host collective under a GPU clock: bytes, but no GPU-timeline time. */
    if (!launch->host || s->clock == MFU_CLOCK_CPU)
        proto.token = ++s->comm_next_token;
    status = mfu_steps_mark_within_step(s, MFU_MARK_COMM_BEGIN, &proto, s->config.stream, NULL,
                                        &appended);
    if (status == MFU_OK && appended)
        *token = proto.token;
    return status;
}

/* The end of the collective of `token`, on `stream` or at `at_ns`. */
static mfu_status comm_end(mfu_steps *s, uint64_t token, uintptr_t stream, const uint64_t *at_ns)
{
    mfu_mark proto;
    memset(&proto, 0, sizeof proto);
    proto.phase = MFU_PHASE_NONE;
    proto.token = token;
    return mfu_steps_mark_within_step(s, MFU_MARK_COMM_END, &proto, stream, at_ns, NULL);
}

mfu_status mfu_steps_comm_end(mfu_steps *s, uint64_t token, uintptr_t stream)
{
    if (token == 0 || s->inflight == NULL)
        return MFU_OK;
    return comm_end(s, token, stream, NULL);
}

mfu_status mfu_steps_comm_end_at(mfu_steps *s, uint64_t token, uint64_t monotonic_ns)
{
    if (token == 0 || s->inflight == NULL)
        return MFU_OK;
    if (s->clock != MFU_CLOCK_CPU)
        return MFU_ERR_UNAVAILABLE;
    return comm_end(s, token, 0, &monotonic_ns);
}

uint64_t mfu_steps_comm_unpaired(const mfu_steps *s)
{
    return s->comm_unpaired;
}
