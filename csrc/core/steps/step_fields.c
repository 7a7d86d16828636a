/* step_fields.c -- the record's fields as data (see step_fields.h). */
#include <math.h>

#include "step_fields.h"

_Static_assert(sizeof(mfu_work) == MFU_FIELD_COUNT * sizeof(double),
               "mfu_work is one double per field");
/* Each named member is v[its index]. */
#define MFU_FIELD_AT_(ID, name, unit, flags, unknown, loss, meaning)                \
    _Static_assert(offsetof(mfu_work, name) == MFU_FIELD_##ID * sizeof(double), \
                   #name " is v[MFU_FIELD_" #ID "]");
MFU_STEP_FIELDS(MFU_FIELD_AT_)
#undef MFU_FIELD_AT_

const mfu_step_field mfu_step_fields[MFU_FIELD_COUNT] = {
#define MFU_FIELD_ROW_(ID, name, unit, flags, unknown, loss, meaning) \
    {#name, unit, flags, unknown, loss, meaning, offsetof(mfu_work, name)},
    MFU_STEP_FIELDS(MFU_FIELD_ROW_)
#undef MFU_FIELD_ROW_
};

void mfu_work_nan(mfu_work *work)
{
    for (int i = 0; i < MFU_FIELD_COUNT; i++)
        *mfu_work_at(work, i) = NAN;
}

