/* steps_clock.c -- the step tracker's clock: marks on its timer, polls, and
 * the fallback to the CPU clock when the GPU clock fails (steps.h,
 * "Failures"). */
#include "steps_internal.h"

mfu_status mfu_steps_make_timer(const mfu_steps *s, mfu_clock_kind clock, mfu_timer **timer,
                                mfu_gpu_error *error)
{
    mfu_timer_config config = s->config.timer;
    config.clock = clock;
    if (clock == MFU_CLOCK_CPU)
        config.driver = NULL;
    return mfu_timer_create(&config, timer, error);
}

void mfu_steps_note_failure(mfu_steps *s, mfu_clock_kind clock, const mfu_gpu_error *error)
{
    s->fallbacks++;
    s->failed_clock = clock;
    s->failure = *error;
}

/* The timer failed: drop what is in flight -- the pending steps and the
 * open one, whose times are on the failed clock -- and continue on a CPU
 * timer (the next boundary restarts the clock). */
static void fall_back(mfu_steps *s)
{
    mfu_gpu_error error;
    mfu_timer_error(s->timer, &error);
    mfu_steps_note_failure(s, s->clock, &error);
    s->dropped += s->pending;
    s->pending = 0;
    s->marks_count = 0;
    mfu_step_ring_truncate(s->records, s->pushed_held);
    s->step_open = 0;
    s->open_known = 0;
    s->excluding = 0;
    /* The drain side too: an exclusion or a segment begun on the failed
     * clock must never be ended by a time of the new one. */
    s->drain_excluding = 0;
    s->exclude_known = 0;
    s->segment_known = 0;
    s->running = MFU_PHASE_NONE;
    mfu_timer_destroy(s->timer);
    s->clock = MFU_CLOCK_CPU;
    if (mfu_steps_make_timer(s, MFU_CLOCK_CPU, &s->timer, NULL) != MFU_OK)
        s->timer = NULL; /* out of memory: boundaries are refused */
}

void mfu_steps_catch_up(mfu_steps *s)
{
    if (s->timer == NULL)
        return;
    if (s->clock != MFU_CLOCK_CPU && mfu_timer_poll(s->timer) != MFU_OK)
        fall_back(s);
    else
        mfu_steps_drain(s);
}

mfu_status mfu_steps_take_mark(mfu_steps *s, uintptr_t stream, uint64_t *id)
{
    if (mfu_timer_mark(s->timer, stream, id) == MFU_OK)
        return MFU_OK;
    fall_back(s);
    if (s->timer == NULL)
        return MFU_ERR_NO_MEMORY;
    return mfu_timer_mark(s->timer, stream, id);
}

void mfu_steps_flush(mfu_steps *s)
{
    if (s->timer == NULL)
        return;
    if (s->clock != MFU_CLOCK_CPU && mfu_timer_flush(s->timer) != MFU_OK) {
        fall_back(s);
        return;
    }
    mfu_steps_drain(s);
}

void mfu_steps_poll(mfu_steps *s)
{
    mfu_steps_catch_up(s);
}

mfu_clock_kind mfu_steps_clock(const mfu_steps *s)
{
    return s->clock;
}

uint32_t mfu_steps_fallback(const mfu_steps *s, mfu_clock_kind *clock, mfu_gpu_error *error)
{
    if (s->fallbacks > 0) {
        if (clock != NULL)
            *clock = s->failed_clock;
        if (error != NULL)
            *error = s->failure;
    }
    return s->fallbacks;
}
