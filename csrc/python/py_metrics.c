/*
 * py_metrics.c -- a timed block and the one-shot arithmetic:
 * _C.new_track() (the block of track() and track_step(), made by
 * py_result.c) and _C.compute_metrics() (compute_mfu(), compute_mbu(), the
 * CLI), their arguments checked by py_result_args.c.
 */
#include <math.h>

#include "py_result.h"

/*
 * _C.new_track(flop_count, param_bytes, hfu_flop_count, num_tokens,
 *              peak_flops_per_sec, peak_bytes_per_sec, num_gpus, dtype,
 *              gpu_spec) -> UtilizationResult
 *
 * Positional only (the Python wrapper has resolved dtype and peak): this is
 * the per-step hot path.
 */
static PyObject *py_new_track(PyObject *module, PyObject *const *args,
                              Py_ssize_t nargs)
{
    mfu_module_state *state = mfu_module_get_state(module);
    PyObject *timer = NULL;
    uintptr_t stream = 0;

    if (nargs != 9 && nargs != 11) {
        PyErr_Format(PyExc_TypeError,
                     "new_track() takes 9 or 11 positional arguments (%zd given)",
                     nargs);
        return NULL;
    }
    if (nargs == 11) {
        if (args[9] != Py_None) {
            if (!mfu_py_timer_check(state, args[9])) {
                PyErr_Format(PyExc_TypeError,
                             "timer must be a MarkTimer or None, not %.80s",
                             Py_TYPE(args[9])->tp_name);
                return NULL;
            }
            timer = args[9];
        }
        if (mfu_py_stream_arg(args[10], "stream", &stream) < 0)
            return NULL;
    }
    return mfu_py_result_new(state, args, timer, stream);
}

/*
 * _C.compute_metrics(model_flops, elapsed_s, *, executed_flops=None,
 *                    param_bytes=None, num_tokens=None,
 *                    peak_flops_per_sec=None, peak_bytes_per_sec=None,
 *                    num_gpus=1) -> dict
 *
 * One-shot arithmetic for compute_mfu(), compute_mbu() and the CLI.
 * elapsed_s must be > 0: a caller stating a duration of zero made an error.
 */
static PyObject *py_compute_metrics(PyObject *Py_UNUSED(module), PyObject *args,
                                    PyObject *kwargs)
{
    static char *keywords[] = {"model_flops", "elapsed_s", "executed_flops",
                               "param_bytes", "num_tokens",
                               "peak_flops_per_sec", "peak_bytes_per_sec",
                               "num_gpus", NULL};
    PyObject *model_obj, *elapsed_obj;
    PyObject *executed_obj = Py_None, *bytes_obj = Py_None;
    PyObject *tokens_obj = Py_None, *peak_flops_obj = Py_None;
    PyObject *peak_bytes_obj = Py_None, *gpus_obj = NULL;
    mfu_work work;
    mfu_peak peak = {.num_devices = 1};
    double elapsed_s;
    mfu_metrics m;

    mfu_work_unknown(&work);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOOOO:compute_metrics",
                                     keywords, &model_obj, &elapsed_obj,
                                     &executed_obj, &bytes_obj, &tokens_obj,
                                     &peak_flops_obj, &peak_bytes_obj,
                                     &gpus_obj))
        return NULL;
    if (mfu_py_number_arg(model_obj, "model_flops", 0, &work.model_flops) < 0
        || mfu_py_number_arg(elapsed_obj, "elapsed_sec", 0, &elapsed_s) < 0
        || mfu_py_number_arg(executed_obj, "executed_flops", 1,
                             &work.executed_flops) < 0
        || mfu_py_number_arg(bytes_obj, "param_bytes", 1, &work.param_bytes) < 0
        || mfu_py_number_arg(tokens_obj, "num_tokens", 1, &work.num_tokens) < 0
        || mfu_py_number_arg(peak_flops_obj, "peak_flops_per_sec", 1,
                             &peak.flops_per_sec) < 0
        || mfu_py_number_arg(peak_bytes_obj, "peak_bytes_per_sec", 1,
                             &peak.bytes_per_sec) < 0
        || (gpus_obj != NULL && mfu_py_num_gpus_arg(gpus_obj, &peak.num_devices) < 0))
        return NULL;
    if (!(isfinite(elapsed_s) && elapsed_s > 0.0))
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "elapsed_sec",
                            "must be a finite number of seconds > 0, got %g",
                            elapsed_s);
    if (mfu_py_check_work_and_peak(&work, &peak, NULL) < 0)
        return NULL;
    mfu_metrics_compute(&work, &peak, elapsed_s, &m);

    PyObject *values[7] = {
        mfu_py_float_or_none(m.mfu),
        mfu_py_float_or_none(m.hfu),
        mfu_py_float_or_none(m.mbu),
        mfu_py_float_or_none(m.achieved_flops_per_sec),
        mfu_py_float_or_none(m.achieved_bytes_per_sec),
        mfu_py_float_or_none(m.tokens_per_sec),
        mfu_py_float_or_none(m.elapsed_s),
    };
    static const char *const names[7] = {
        "mfu", "hfu", "mbu", "achieved_flops_per_sec",
        "achieved_bytes_per_sec", "tokens_per_sec", "elapsed_sec"};
    PyObject *result = PyDict_New();
    for (int i = 0; i < 7; i++) {
        if (result != NULL && values[i] != NULL
            && PyDict_SetItemString(result, names[i], values[i]) < 0)
            Py_CLEAR(result);
    }
    for (int i = 0; i < 7; i++) {
        if (values[i] == NULL)
            Py_CLEAR(result);
        Py_XDECREF(values[i]);
    }
    return result;
}

static PyMethodDef metrics_methods[] = {
    {"new_track", (PyCFunction)(void (*)(void))py_new_track, METH_FASTCALL,
     "new_track(flop_count, param_bytes, hfu_flop_count, num_tokens, "
     "peak_flops_per_sec, peak_bytes_per_sec, num_gpus, dtype, gpu_spec, "
     "timer=None, stream=0, /)\n"
     "--\n\nA timed block; used by mfu_tracker.track(). With a MarkTimer "
     "the block is timed on its GPU clock on `stream` (raw handle)."},
    {"compute_metrics", (PyCFunction)(void (*)(void))py_compute_metrics,
     METH_VARARGS | METH_KEYWORDS,
     "compute_metrics(model_flops, elapsed_s, *, executed_flops=None, "
     "param_bytes=None, num_tokens=None, peak_flops_per_sec=None, "
     "peak_bytes_per_sec=None, num_gpus=1)\n--\n\n"
     "MFU/HFU/MBU/rates for work done in elapsed_s seconds (dict; None = "
     "unavailable)."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_metrics_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, metrics_methods);
}
