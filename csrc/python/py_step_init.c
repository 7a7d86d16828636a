/*
 * py_step_init.c -- the construction of _C.StepTracker: its arguments
 * checked and turned into the core's configuration (core/steps/steps.h), the
 * warnings of a successful __init__, and the read-only properties.
 */
#include <math.h>
#include <stddef.h>

#include "py_step_comm.h"
#include "py_step_init.h"

/* The message for FLOPs of a dtype the device has no peak for. */
void mfu_py_no_peak_message(mfu_dtype dtype, char *message, size_t size)
{
    PyOS_snprintf(message, size,
                  "mfu_tracker: Tracker: flops_by_dtype has %s FLOPs but the "
                  "device has no %s peak: mfu_mixed is left out",
                  mfu_dtype_name(dtype), mfu_dtype_name(dtype));
}

/* ---- construction ----------------------------------------------------------- */

PyObject *mfu_py_step_new(PyTypeObject *type, PyObject *Py_UNUSED(args),
                          PyObject *Py_UNUSED(kwargs))
{
    mfu_module_state *state = mfu_module_state_from_type(type);
    if (state == NULL)
        return NULL;
    step_object *s =
        (step_object *)mfu_py_alloc_locked(type, offsetof(step_object, lock));
    if (s != NULL) {
        s->state = state;
        s->comm_registry = state->comm_registry;
    }
    return (PyObject *)s;
}

/* An optional int argument in [low, high], left as is when not given. */
static int optional_int(PyObject *obj, const char *argument, long long low,
                        long long high, long long *out)
{
    return obj == NULL ? 0 : mfu_py_int_arg(obj, argument, low, high, out);
}

/* dtype_peaks: None (no dtype has a peak) or a sequence of MFU_DTYPE_COUNT
 * per-device peaks in FLOP/s, None for a dtype without one, in dtype order
 * (core/base/dtypes.h; _C.dtype_names()). */
int mfu_py_dtype_peaks_arg(PyObject *obj, double *out)
{
    PyObject *seq;
    int rc = 0;
    for (int d = 0; d < MFU_DTYPE_COUNT; d++)
        out[d] = NAN;
    if (obj == Py_None)
        return 0;
    seq = PySequence_Fast(obj, "dtype_peaks must be a sequence of peaks (FLOP/s) or None");
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != MFU_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "dtype_peaks: must have %d entries, one per dtype "
                     "(_C.dtype_names()), got %zd", MFU_DTYPE_COUNT,
                     PySequence_Fast_GET_SIZE(seq));
        rc = -1;
    }
    for (int d = 0; rc == 0 && d < MFU_DTYPE_COUNT; d++)
        rc = mfu_py_real_arg(PySequence_Fast_GET_ITEM(seq, d), "dtype_peaks",
                             MFU_ARG_NONE_OK | MFU_ARG_ABOVE_LOW, 0.0, &out[d]);
    Py_DECREF(seq);
    return rc;
}

/* __init__'s flops_by_dtype: the per-step ideal seconds into config (NaN
 * without it) and, when model_flops was not given, the split's sum as the
 * per-step model FLOPs. *no_peak: a dtype has FLOPs but no peak (*missing
 * names it). -1 with an exception for a bad dict or an overflow. */
static int init_mixed(step_object *s, PyObject *mixed_obj, int model_from_split,
                      mfu_steps_config *config, int *no_peak, mfu_dtype *missing)
{
    double flops[MFU_DTYPE_COUNT];
    config->per_step.ideal_s = NAN;
    if (mixed_obj == Py_None)
        return 0;
    if (mfu_py_dtype_flops_arg(mixed_obj, "flops_by_dtype", flops) < 0)
        return -1;
    mfu_status mixed = mfu_mixed_ideal_s(flops, s->dtype_peaks, &config->per_step.ideal_s,
                                         missing);
    if (mixed == MFU_ERR_OVERFLOW) {
        mfu_py_raise(mixed, "flops_by_dtype", "FLOPs / peak overflows a double");
        return -1;
    }
    *no_peak = mixed != MFU_OK;
    if (model_from_split) {
        double sum = 0.0;
        for (int d = 0; d < MFU_DTYPE_COUNT; d++)
            sum += flops[d];
        config->per_step.model_flops = sum;
    }
    return 0;
}

/* The warnings of a successful __init__: a GPU clock that is unavailable
 * (the CPU clock took over) and a mixed-precision dtype without a peak. */
static void init_warnings(step_object *s, int no_peak, mfu_dtype missing)
{
    mfu_clock_kind failed;
    mfu_gpu_error error;
    if (mfu_steps_fallback(s->steps, &failed, &error) > 0) {
        char message[400];
        mfu_py_fallback_message(failed, "Tracker", &error, message, sizeof message);
        s->warned_failure = 1;
        mfu_py_warn_keep_exception(message);
    }
    if (no_peak && s->any_peak) {
        char message[300];
        mfu_py_no_peak_message(missing, message, sizeof message);
        s->warned_mixed = 1;
        mfu_py_warn_keep_exception(message);
    }
}

/* StepTracker(*, clock="cpu", stream=0, model_flops=None, executed_flops=None,
 *             param_bytes=None, peak_flops_per_sec=None,
 *             peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1,
 *             dtype_peaks=None, flops_by_dtype=None,
 *             measured_flops_per_sec=None) */
int mfu_py_step_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"clock", "stream", "model_flops", "executed_flops",
                               "param_bytes", "peak_flops_per_sec",
                               "peak_bytes_per_sec", "num_gpus", "window", "warmup",
                               "dtype_peaks", "flops_by_dtype", "measured_flops_per_sec",
                               NULL};
    const unsigned optional = MFU_ARG_NONE_OK;
    const unsigned positive = MFU_ARG_NONE_OK | MFU_ARG_ABOVE_LOW;
    step_object *s = (step_object *)self;
    PyObject *clock_obj = NULL, *stream_obj = NULL, *model_obj = Py_None;
    PyObject *executed_obj = Py_None, *bytes_obj = Py_None;
    PyObject *peak_flops_obj = Py_None, *peak_bytes_obj = Py_None;
    PyObject *gpus_obj = NULL, *window_obj = NULL, *warmup_obj = NULL;
    PyObject *peaks_obj = Py_None, *mixed_obj = Py_None, *measured_obj = Py_None;
    int no_peak = 0;
    mfu_dtype missing = MFU_DTYPE_FP64;
    mfu_steps_config config = {.timer = {.clock = MFU_CLOCK_CPU}};
    long long gpus = 1, window = 100, warmup = 1;
    const char *bad = NULL;

    if (s->steps != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a StepTracker is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOOOOOOOOOO:StepTracker",
                                     keywords, &clock_obj, &stream_obj, &model_obj,
                                     &executed_obj, &bytes_obj, &peak_flops_obj,
                                     &peak_bytes_obj, &gpus_obj, &window_obj,
                                     &warmup_obj, &peaks_obj, &mixed_obj, &measured_obj))
        return -1;
    mfu_work_unknown(&config.per_step);
    if ((clock_obj != NULL && mfu_py_clock_arg(clock_obj, &config.timer.clock) < 0)
        || (stream_obj != NULL
            && mfu_py_stream_arg(stream_obj, "stream", &config.stream) < 0)
        || mfu_py_real_arg(model_obj, "model_flops", optional, 0.0,
                           &config.per_step.model_flops) < 0
        || mfu_py_real_arg(executed_obj, "executed_flops", optional, 0.0,
                           &config.per_step.executed_flops) < 0
        || mfu_py_real_arg(bytes_obj, "param_bytes", optional, 0.0,
                           &config.per_step.param_bytes) < 0
        || mfu_py_real_arg(peak_flops_obj, "peak_flops_per_sec", positive, 0.0,
                           &config.peak.flops_per_sec) < 0
        || mfu_py_real_arg(peak_bytes_obj, "peak_bytes_per_sec", positive, 0.0,
                           &config.peak.bytes_per_sec) < 0
        || mfu_py_real_arg(measured_obj, "measured_flops_per_sec", positive, 0.0,
                           &config.peak.measured_flops_per_sec) < 0
        || optional_int(gpus_obj, "num_gpus", 1, MFU_NUM_GPUS_MAX, &gpus) < 0
        || optional_int(window_obj, "window", 1, MFU_WINDOW_MAX, &window) < 0
        || optional_int(warmup_obj, "warmup", 0, (long long)MFU_WARMUP_MAX, &warmup) < 0)
        return -1;
    if (mfu_py_dtype_peaks_arg(peaks_obj, s->dtype_peaks) < 0)
        return -1;
    for (int d = 0; d < MFU_DTYPE_COUNT; d++)
        s->any_peak |= !isnan(s->dtype_peaks[d]);
    if (init_mixed(s, mixed_obj, model_obj == Py_None, &config, &no_peak, &missing) < 0)
        return -1;
    config.peak.num_devices = (int)gpus;
    config.window = (uint32_t)window;
    config.warmup = (uint64_t)warmup;

    mfu_status status = mfu_steps_create(&config, &s->steps, &bad);
    if (status != MFU_OK) {
        /* The arguments were checked above: only memory can run out. */
        mfu_py_raise(status, bad != NULL ? bad : "StepTracker", NULL);
        return -1;
    }
    init_warnings(s, no_peak, missing);
    return 0;
}

void mfu_py_step_dealloc(PyObject *self)
{
    step_object *s = (step_object *)self;
    mfu_py_comm_forget(s); /* before the engine goes: no sink call reaches it */
    mfu_steps_destroy(s->steps);
    mfu_py_dealloc_locked(self, s->lock);
}

/* ---- properties and the type ------------------------------------------------ */

/* The configuration, or NULL before __init__ (the properties then read as
 * the defaults' zeros: clock 'cpu', stream 0, window 0, warmup 0). */
static const mfu_steps_config *config_of(PyObject *self)
{
    const step_object *s = (const step_object *)self;
    return s->steps != NULL ? mfu_steps_get_config(s->steps) : NULL;
}

static PyObject *step_get_clock(PyObject *self, void *Py_UNUSED(c))
{
    const step_object *s = (const step_object *)self;
    return PyUnicode_FromString(
        mfu_py_clock_name(s->steps != NULL ? mfu_steps_clock(s->steps) : MFU_CLOCK_CPU));
}

static PyObject *step_get_stream(PyObject *self, void *Py_UNUSED(c))
{
    const mfu_steps_config *c = config_of(self);
    return PyLong_FromUnsignedLongLong(c != NULL ? c->stream : 0);
}

static PyObject *step_get_window(PyObject *self, void *Py_UNUSED(c))
{
    const mfu_steps_config *c = config_of(self);
    return PyLong_FromUnsignedLong(c != NULL ? c->window : 0);
}

static PyObject *step_get_warmup(PyObject *self, void *Py_UNUSED(c))
{
    const mfu_steps_config *c = config_of(self);
    return PyLong_FromUnsignedLongLong(c != NULL ? c->warmup : 0);
}

static PyObject *step_get_closed(PyObject *self, void *Py_UNUSED(c))
{
    const step_object *s = (const step_object *)self;
    return PyBool_FromLong(s->steps != NULL && mfu_steps_closed(s->steps));
}

PyGetSetDef mfu_py_step_getset[] = {
    {"clock", step_get_clock, NULL,
     "The clock timing the steps: 'cpu', 'cuda' or 'hip' ('cpu' after a "
     "fallback).", NULL},
    {"stream", step_get_stream, NULL, "The raw stream handle marks go to.", NULL},
    {"window", step_get_window, NULL, "Steps the figures cover.", NULL},
    {"warmup", step_get_warmup, NULL, "Timed steps ignored at the start.", NULL},
    {"closed", step_get_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
