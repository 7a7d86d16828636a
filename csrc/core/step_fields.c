/* step_fields.c -- the record's fields as data (see step_fields.h). */
#include <math.h>

#include "step_fields.h"

_Static_assert(sizeof(mfu_work) == MFU_FIELD_COUNT * sizeof(double),
               "mfu_work is one double per field");

const mfu_step_field mfu_step_fields[MFU_FIELD_COUNT] = {
#define MFU_FIELD_ROW_(ID, name, unit, flags, unknown, loss, meaning) \
    {#name, unit, flags, unknown, loss, meaning, offsetof(mfu_work, name)},
    MFU_STEP_FIELDS(MFU_FIELD_ROW_)
#undef MFU_FIELD_ROW_
};

void mfu_work_unknown(mfu_work *work)
{
    for (int i = 0; i < MFU_FIELD_COUNT; i++)
        *mfu_work_at(work, i) = mfu_step_fields[i].unknown;
}

void mfu_work_nan(mfu_work *work)
{
    for (int i = 0; i < MFU_FIELD_COUNT; i++)
        *mfu_work_at(work, i) = NAN;
}

void mfu_work_add(mfu_work *into, const mfu_work *more)
{
    for (int i = 0; i < MFU_FIELD_COUNT; i++)
        *mfu_work_at(into, i) += mfu_work_get(more, i);
}
