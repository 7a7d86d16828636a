/* steps_ledger.c -- the job ledger's totals (steps.h, "The job ledger's
 * totals"): running sums of what outlives a step's record, and the model
 * FLOPs of the pushed steps, read from their records -- where a FLOP count
 * booked late (mfu_steps_book) lands like one given at the boundary. */
#include "steps_internal.h"

void mfu_steps_ledger_push(mfu_steps *s, const mfu_step_record *r)
{
    if (isnan(s->ledger.first_step_s))
        s->ledger.first_step_s = r->period_s;
    s->ledger.step_s += r->period_s;
    for (int p = 0; p < MFU_PHASE_COUNT; p++)
        if (!mfu_phase_leaves_step((mfu_phase)p)) /* badput: counted as it ended */
            s->ledger.phase_s[p] += r->phases.seconds[p];
}

void mfu_steps_ledger_retire(mfu_steps *s, const mfu_step_record *r)
{
    if (r->state != MFU_STEP_PUSHED)
        return;
    if (isnan(r->work.model_flops))
        s->retired_unknown_flops++;
    else
        s->retired_model_flops += r->work.model_flops;
}

void mfu_steps_get_ledger(mfu_steps *s, mfu_steps_ledger *out)
{
    double model_flops;
    uint64_t unknown;
    mfu_steps_catch_up(s);
    model_flops = s->retired_model_flops;
    unknown = s->retired_unknown_flops;
    /* Oldest first, as the retired sum was made: the same sum as one kept
     * from the first push on. */
    for (uint32_t i = 0; i < s->pushed_held; i++) {
        const mfu_step_record *r = mfu_step_ring_at(s->records, i);
        if (isnan(r->work.model_flops))
            unknown++;
        else
            model_flops += r->work.model_flops;
    }
    *out = s->ledger;
    out->model_flops = model_flops;
    out->unknown_flops_steps = unknown;
    out->steps = s->pushed + s->dropped;
    out->dropped = s->dropped;
}
