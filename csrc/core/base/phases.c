/* phases.c -- phase names (see phases.h). */
#include <string.h>

#include "phases.h"

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
