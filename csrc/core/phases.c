/* phases.c -- phase names and the window's phase record (see phases.h). */
#include <stdlib.h>
#include <string.h>

#include "mfu_limits.h"
#include "phases.h"
#include "ring.h"

static const char *const phase_names[MFU_PHASE_COUNT] = {
    [MFU_PHASE_DATA] = "data",
    [MFU_PHASE_FORWARD] = "forward",
    [MFU_PHASE_BACKWARD] = "backward",
    [MFU_PHASE_OPTIMIZER] = "optimizer",
    [MFU_PHASE_COMMUNICATION] = "communication",
    [MFU_PHASE_ALL_GATHER] = "all_gather",
    [MFU_PHASE_REDUCE_SCATTER] = "reduce_scatter",
    [MFU_PHASE_ALL_REDUCE] = "all_reduce",
    [MFU_PHASE_ALL_TO_ALL] = "all_to_all",
    [MFU_PHASE_BROADCAST] = "broadcast",
    [MFU_PHASE_P2P] = "p2p",
    [MFU_PHASE_PIPELINE_BUBBLE] = "pipeline_bubble",
    [MFU_PHASE_CHECKPOINT] = "checkpoint",
    [MFU_PHASE_EVAL] = "eval",
    [MFU_PHASE_COMPILE] = "compile",
};

const char *mfu_phase_name(mfu_phase phase)
{
    return (unsigned)phase < MFU_PHASE_COUNT ? phase_names[phase] : NULL;
}

int mfu_phase_leaves_step(mfu_phase phase)
{
    return phase == MFU_PHASE_CHECKPOINT || phase == MFU_PHASE_EVAL
           || phase == MFU_PHASE_COMPILE;
}

mfu_status mfu_phase_from_name(const char *name, mfu_phase *phase)
{
    if (name == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < MFU_PHASE_COUNT; i++) {
        if (strcmp(name, phase_names[i]) == 0) {
            *phase = (mfu_phase)i;
            return MFU_OK;
        }
    }
    return MFU_ERR_INVALID_ARGUMENT;
}

/* One allocation: the ring's bookkeeping and its records (ring.h). */
struct mfu_phase_window {
    mfu_ring ring;
    mfu_phase_times records[];
};

mfu_status mfu_phase_window_create(uint32_t capacity, uint64_t warmup_steps,
                                   mfu_phase_window **out)
{
    void *w;
    const mfu_status status = mfu_ring_alloc(sizeof **out, sizeof(mfu_phase_times), capacity,
                                             warmup_steps, 0, &w);
    *out = w;
    return status;
}

void mfu_phase_window_destroy(mfu_phase_window *w)
{
    free(w);
}

void mfu_phase_window_push(mfu_phase_window *w, const mfu_phase_times *times)
{
    const int64_t slot = mfu_ring_push(&w->ring);
    if (slot >= 0)
        w->records[slot] = *times;
}

void mfu_phase_window_summarize(const mfu_phase_window *w, mfu_phase_summary *out)
{
    memset(out, 0, sizeof *out);
    out->steps = w->ring.count;
    for (uint32_t i = 0; i < w->ring.count; i++) {
        const mfu_phase_times *t = &w->records[mfu_ring_slot(&w->ring, i)];
        for (int p = 0; p < MFU_PHASE_COUNT; p++)
            out->seconds[p] += t->seconds[p];
        out->marked |= t->marked;
        out->excluded_s += t->excluded_s;
    }
}
