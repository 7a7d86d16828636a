/* steps_phases.c -- phases and excluded intervals on the step tracker's
 * marks (steps.h, "Phases", "Excluded intervals"). */
#include <string.h>

#include "steps_internal.h"

/* A phase or exclusion mark on the tracker's stream. */
static mfu_status mark_phase(mfu_steps *s, enum mfu_mark_kind kind, uint8_t phase)
{
    mfu_mark proto;
    memset(&proto, 0, sizeof proto);
    proto.phase = phase;
    return mfu_steps_mark_within_step(s, kind, &proto, s->config.stream, NULL, NULL);
}

/* The phase running with the stack as it is now. */
static uint8_t innermost(const mfu_steps *s)
{
    return s->phase_depth > 0 ? s->phase_stack[s->phase_depth - 1] : MFU_PHASE_NONE;
}

mfu_status mfu_steps_phase_begin(mfu_steps *s, mfu_phase phase)
{
    if ((unsigned)phase >= MFU_PHASE_COUNT || s->phase_depth >= MFU_PHASE_DEPTH_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    s->phase_stack[s->phase_depth++] = (uint8_t)phase;
    return mark_phase(s, MFU_MARK_PHASE, (uint8_t)phase);
}

mfu_status mfu_steps_phase_end(mfu_steps *s)
{
    if (s->phase_depth == 0)
        return MFU_ERR_INVALID_ARGUMENT;
    s->phase_depth--;
    return mark_phase(s, MFU_MARK_PHASE, innermost(s));
}

mfu_status mfu_steps_phase_switch(mfu_steps *s, mfu_phase phase)
{
    if ((unsigned)phase >= MFU_PHASE_COUNT)
        return MFU_ERR_INVALID_ARGUMENT;
    if (s->phase_depth == 0)
        s->phase_depth = 1;
    s->phase_stack[s->phase_depth - 1] = (uint8_t)phase;
    return mark_phase(s, MFU_MARK_PHASE, (uint8_t)phase);
}

uint32_t mfu_steps_phase_depth(const mfu_steps *s)
{
    return s->phase_depth;
}

mfu_phase mfu_steps_phase_innermost(const mfu_steps *s)
{
    return (mfu_phase)innermost(s);
}

mfu_status mfu_steps_exclude_begin(mfu_steps *s)
{
    if (s->excluding)
        return MFU_OK;
    s->excluding = 1;
    return mark_phase(s, MFU_MARK_EXCLUDE_BEGIN, MFU_PHASE_NONE);
}

mfu_status mfu_steps_exclude_end(mfu_steps *s)
{
    if (!s->excluding)
        return MFU_OK;
    s->excluding = 0;
    return mark_phase(s, MFU_MARK_EXCLUDE_END, MFU_PHASE_NONE);
}
