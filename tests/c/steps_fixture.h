/*
 * steps_fixture.h -- the step engine as the phase and communication tests set
 * it up: a window of 10 steps, no warm-up, 1e12 model FLOPs per step against a
 * 1e15 FLOP/s peak on one device, nothing else known.
 *
 *   steps_on(clock, stream)  a new engine on `clock` (CHECKed); the caller
 *                            destroys it
 *   boundary(s)              one step() with an empty report; the phases it
 *                            closed
 */
#ifndef MFU_TEST_STEPS_FIXTURE_H
#define MFU_TEST_STEPS_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "steps.h"

static const mfu_step_report NO_REPORT = {.given = 0};

static mfu_steps *steps_on(mfu_clock_kind clock, uintptr_t stream)
{
    mfu_steps_config c;
    mfu_steps *s = NULL;
    memset(&c, 0, sizeof c);
    c.timer.clock = clock;
    c.stream = stream;
    c.window = 10;
    c.per_step.model_flops = 1e12;
    c.per_step.executed_flops = NAN;
    c.per_step.param_bytes = NAN;
    c.peak.flops_per_sec = 1e15;
    c.peak.bytes_per_sec = NAN;
    c.peak.num_devices = 1;
    CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    return s;
}

static uint32_t boundary(mfu_steps *s)
{
    mfu_step_outcome outcome;
    CHECK(mfu_steps_step(s, &NO_REPORT, &outcome) == MFU_OK);
    return outcome.phases_closed;
}

#endif /* MFU_TEST_STEPS_FIXTURE_H */
