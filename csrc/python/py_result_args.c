/*
 * py_result_args.c -- the checks of a timed block's and of the one-shot
 * arithmetic's arguments (_C.new_track(), _C.compute_metrics(): py_metrics.c),
 * which name the caller's argument.
 */
#include <string.h>

#include "py_result.h"

/* ---- argument helpers ------------------------------------------------- */

const mfu_py_field_rename mfu_py_track_renames[] = {
    {"model_flops", "flop_count"},
    {"executed_flops", "hfu_flop_count"},
    {NULL, NULL},
};

static const char *python_name(const char *core, const mfu_py_field_rename *renames)
{
    for (; renames != NULL && renames->core != NULL; renames++) {
        if (strcmp(core, renames->core) == 0)
            return renames->python;
    }
    return core;
}

/* The value the core rejected, for the error message. */
static double rejected_value(const mfu_work *work, const mfu_peak *peak,
                             const char *core)
{
    if (strcmp(core, "model_flops") == 0) return work->model_flops;
    if (strcmp(core, "executed_flops") == 0) return work->executed_flops;
    if (strcmp(core, "param_bytes") == 0) return work->param_bytes;
    if (strcmp(core, "num_tokens") == 0) return work->num_tokens;
    if (strcmp(core, "peak_flops_per_sec") == 0) return peak->flops_per_sec;
    if (strcmp(core, "peak_bytes_per_sec") == 0) return peak->bytes_per_sec;
    return (double)peak->num_devices;
}

int mfu_py_check_work_and_peak(const mfu_work *work, const mfu_peak *peak,
                                const mfu_py_field_rename *renames)
{
    const char *bad = NULL;
    if (mfu_work_validate(work, &bad) != MFU_OK) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, python_name(bad, renames),
                     "must be a finite number >= 0, got %g",
                     rejected_value(work, peak, bad));
        return -1;
    }
    if (mfu_peak_validate(peak, &bad) != MFU_OK) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, python_name(bad, renames),
                     "must be a finite number > 0, got %g",
                     rejected_value(work, peak, bad));
        return -1;
    }
    return 0;
}

int mfu_py_num_gpus_arg(PyObject *obj, int *out)
{
    long long value;
    if (mfu_py_int_arg(obj, "num_gpus", 1, MFU_NUM_GPUS_MAX, &value) < 0)
        return -1;
    *out = (int)value;
    return 0;
}
