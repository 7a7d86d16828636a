/*
 * py_step_tracker.c -- _C.StepTracker, the hot path of mfu_tracker.Tracker:
 * the core's step accounting (core/steps.h) for Python.
 *
 * Everything that is not Python lives in the core: the boundaries, the
 * pending ring, the masking rules, the drain, the fallback to the CPU clock.
 * This file converts arguments (py_args.h), holds the per-object lock (the
 * core tracker is single-threaded; the GIL is released around the waits of
 * flush() and close()), and turns what the core reports into at most one
 * RuntimeWarning per kind -- bad per-step values, a clock failure, a step
 * after close(), MFU above 1 -- emitted after the lock is released. Nothing
 * raises into the training loop once the tracker is configured. The phase
 * marks of the waterfall are in py_phases.c, the object's lock and queued
 * warnings in py_step_object.c.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "py_phases.h"
#include "py_step_comm.h"
#include "py_step_object.h"

/* step()'s parameter names, interned in module state (step_kwnames). No
 * metric key is built here: Tracker.metrics() formats them in Python
 * (mfu_tracker/timing/_metrics.py), the one place a key is spelled. */
enum {
    KW_NUM_TOKENS,
    KW_MODEL_FLOPS,
    KW_EXECUTED_FLOPS,
    KW_FLOPS_BY_DTYPE,
    KW_OVERCOMPUTE_FLOPS,
    KW_COUNT
};
enum { STEP_PARAMETERS = KW_COUNT };

/* ---- mixed precision -------------------------------------------------------- */

/* The message for FLOPs of a dtype the device has no peak for. */
static void no_peak_message(mfu_dtype dtype, char *message, size_t size)
{
    PyOS_snprintf(message, size,
                  "mfu_tracker: Tracker: flops_by_dtype has %s FLOPs but the "
                  "device has no %s peak: mfu_mixed is left out",
                  mfu_dtype_name(dtype), mfu_dtype_name(dtype));
}

/* step(flops_by_dtype=): the dict's ideal seconds into report->ideal_s and,
 * when model_flops is not given, its sum as the step's model FLOPs. A bad
 * dict is recorded as bad (NaN); FLOPs of a dtype without a peak leave the
 * step's ideal unknown, with one warning. Never raises. Lock not held. */
static void report_mixed(step_object *s, PyObject *obj, mfu_step_report *report,
                         int *no_peak, mfu_dtype *missing)
{
    double flops[MFU_DTYPE_COUNT];
    if (obj == Py_None)
        return;
    report->given |= MFU_STEP_IDEAL_S;
    report->ideal_s = NAN;
    if (mfu_py_dtype_flops_arg(obj, "flops_by_dtype", flops) < 0) {
        PyErr_Clear();
        return;
    }
    if (!(report->given & MFU_STEP_MODEL_FLOPS)) {
        double sum = 0.0;
        for (int d = 0; d < MFU_DTYPE_COUNT; d++)
            sum += flops[d];
        report->given |= MFU_STEP_MODEL_FLOPS;
        report->model_flops = sum;
    }
    /* MFU_ERR_OVERFLOW leaves ideal_s NaN: a bad value (one warning). */
    if (mfu_mixed_ideal_s(flops, s->dtype_peaks, &report->ideal_s, missing)
        == MFU_ERR_NOT_FOUND) {
        report->given &= ~(unsigned)MFU_STEP_IDEAL_S;
        report->ideal_s = NAN;
        *no_peak = 1;
    }
}

/* ---- step() ----------------------------------------------------------------- */

/* A per-step value: None is absent; a number is given; anything else is
 * given and bad (NaN), which the core records as unknown. Never raises. */
static void report_value(PyObject *obj, const char *argument, unsigned bit,
                         mfu_step_report *report, double *out)
{
    if (obj == Py_None)
        return;
    report->given |= bit;
    if (mfu_py_real_arg(obj, argument, MFU_ARG_ANY_FINITE, 0.0, out) < 0) {
        PyErr_Clear();
        *out = NAN;
    }
}

/* One warning for the bad per-step values of a step() call (`bad`: the
 * MFU_STEP_* bits the core reported). */
static void warn_bad_values(step_object *s, unsigned bad)
{
    /* Named in parameter order, the last bad one. */
    const char *name = (bad & MFU_STEP_OVERCOMPUTE_FLOPS) ? "overcompute_flops"
                       : (bad & MFU_STEP_IDEAL_S)          ? "flops_by_dtype"
                       : (bad & MFU_STEP_EXECUTED_FLOPS) ? "executed_flops"
                       : (bad & MFU_STEP_MODEL_FLOPS)    ? "model_flops"
                                                         : "num_tokens";
    char message[300];
    if (bad & MFU_STEP_OVERCOMPUTE_FLOPS)
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.step(): overcompute_flops must be a "
                      "finite int or float >= 0; that step's over-compute is taken "
                      "as 0 (the waterfall books all of hfu - mfu to recompute)");
    else if (bad & MFU_STEP_IDEAL_S)
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.step(): flops_by_dtype must be a "
                      "dict from dtype names (fp8, bf16, fp16, tf32, fp32, "
                      "fp64) to finite FLOPs >= 0; that step's mfu_mixed is "
                      "recorded as unknown and left out");
    else
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.step(): %s must be a finite int or "
                      "float >= 0 (a Python number, not a tensor); that step's "
                      "%s is recorded as unknown and the figures using it are "
                      "left out", name, name);
    mfu_py_step_queue_warning(s, &s->warned_args, message);
}

/* step(num_tokens=None, *, model_flops=None, executed_flops=None,
 *      flops_by_dtype=None, overcompute_flops=None) */
static PyObject *step_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *values[STEP_PARAMETERS] = {Py_None, Py_None, Py_None, Py_None, Py_None};
    mfu_step_report report = {.num_tokens = NAN, .model_flops = NAN, .executed_flops = NAN,
                              .ideal_s = NAN, .overcompute_flops = NAN};
    mfu_step_outcome outcome;
    int no_peak = 0;
    mfu_dtype missing = MFU_DTYPE_FP64;

    /* A positional num_tokens takes its name out of the keywords: then
     * step(10, num_tokens=10) is an unexpected keyword, as it always was. */
    const Py_ssize_t skip = nargs == 1 ? 1 : 0;
    if (skip)
        values[KW_NUM_TOKENS] = args[0];
    if ((nargs > 1 || kwnames != NULL) /* else nothing to bind */
        && mfu_py_bind("step", s->state->step_kwnames + skip, STEP_PARAMETERS - skip,
                       1 - skip, 0, args + skip, nargs - skip, kwnames, values + skip)
               < 0)
        return NULL;
    report_value(values[KW_NUM_TOKENS], "num_tokens", MFU_STEP_NUM_TOKENS, &report,
                 &report.num_tokens);
    report_value(values[KW_MODEL_FLOPS], "model_flops", MFU_STEP_MODEL_FLOPS, &report,
                 &report.model_flops);
    report_value(values[KW_EXECUTED_FLOPS], "executed_flops", MFU_STEP_EXECUTED_FLOPS,
                 &report, &report.executed_flops);
    report_mixed(s, values[KW_FLOPS_BY_DTYPE], &report, &no_peak, &missing);
    report_value(values[KW_OVERCOMPUTE_FLOPS], "overcompute_flops",
                 MFU_STEP_OVERCOMPUTE_FLOPS, &report, &report.overcompute_flops);

    mfu_py_lock_acquire(s->lock);
    if (s->steps == NULL) { /* __init__ never ran: nothing to time */
        mfu_py_step_unlock(s);
        Py_RETURN_NONE;
    }
    mfu_status status = mfu_steps_step(s->steps, &report, &outcome);
    if (outcome.bad != 0)
        warn_bad_values(s, outcome.bad);
    if (no_peak && s->any_peak && !s->warned_mixed) {
        char message[300];
        no_peak_message(missing, message, sizeof message);
        mfu_py_step_queue_warning(s, &s->warned_mixed, message);
    }
    if (status != MFU_OK && mfu_steps_closed(s->steps))
        mfu_py_step_queue_warning(s, &s->warned_closed,
                      "mfu_tracker: Tracker.step() after close() is ignored");
    if (outcome.fallbacks > 0)
        mfu_py_step_check_fallback(s);
    if (outcome.phases_closed > 0)
        mfu_py_step_queue_warning(s, &s->warned_phase_open,
                      "mfu_tracker: Tracker.step() closed a phase left open (a "
                      "begin_phase() without end_phase(), or step() inside a "
                      "phase() block); phases end at the step boundary");
    mfu_py_step_unlock(s);
    Py_RETURN_NONE;
}

/* ---- the figures ------------------------------------------------------------ */

/* Summarize under the lock (with the window totals in `totals`), queueing
 * the MFU > 1 and clock warnings. */
static void summarize(step_object *s, const mfu_step_report *totals, mfu_steps_summary *sum)
{
    mfu_py_lock_acquire(s->lock);
    mfu_steps_summarize_with(s->steps, totals, sum);
    if (sum->window.metrics.mfu > 1.0 && !s->warned_mfu) {
        char message[300];
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker MFU %.3f > 1 against a peak of %.4g "
                      "FLOP/s: the peak or the FLOP count is wrong; the value is "
                      "reported unclamped",
                      sum->window.metrics.mfu, sum->peak_flops_per_sec);
        mfu_py_step_queue_warning(s, &s->warned_mfu, message);
    }
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
}

/* summary(model_flops=, executed_flops=, num_tokens=, ideal_s=,
 * overcompute_flops=): a window total given at logging time, None (not
 * given), or NaN (unknown). */
enum { SUMMARY_TOTALS = 5 };
static int window_totals(PyObject *const values[SUMMARY_TOTALS], mfu_step_report *totals)
{
    static const struct {
        const char *name;
        unsigned bit;
        size_t offset;
    } fields[] = {
        {"model_flops", MFU_STEP_MODEL_FLOPS, offsetof(mfu_step_report, model_flops)},
        {"executed_flops", MFU_STEP_EXECUTED_FLOPS, offsetof(mfu_step_report, executed_flops)},
        {"num_tokens", MFU_STEP_NUM_TOKENS, offsetof(mfu_step_report, num_tokens)},
        {"ideal_s", MFU_STEP_IDEAL_S, offsetof(mfu_step_report, ideal_s)},
        {"overcompute_flops", MFU_STEP_OVERCOMPUTE_FLOPS,
         offsetof(mfu_step_report, overcompute_flops)},
    };
    _Static_assert(sizeof fields / sizeof fields[0] == SUMMARY_TOTALS, "one field per total");
    memset(totals, 0, sizeof *totals);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        double *out = (double *)((char *)totals + fields[i].offset);
        PyObject *value = values[i];
        if (value == NULL || value == Py_None)
            continue;
        if (PyFloat_Check(value) && isnan(PyFloat_AS_DOUBLE(value)))
            *out = NAN; /* an unknown total: given, and unknown */
        else if (mfu_py_real_arg(value, fields[i].name, 0, 0.0, out) < 0)
            return -1;
        totals->given |= fields[i].bit;
    }
    return 0;
}

static PyObject *step_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *given[SUMMARY_TOTALS] = {NULL, NULL, NULL, NULL, NULL};
    mfu_step_report totals;
    mfu_steps_summary sum;
    if ((nargs > 0 || kwnames != NULL) /* else nothing to bind: the common call */
        && mfu_py_bind("summary", s->state->summary_kwnames, SUMMARY_TOTALS, 0, 0, args, nargs,
                       kwnames,
                       given) < 0)
        return NULL;
    if (window_totals(given, &totals) < 0 || mfu_py_step_require_init(s) < 0)
        return NULL;
    summarize(s, &totals, &sum);

    const mfu_window_summary *w = &sum.window;
    const mfu_metrics *m = &w->metrics;
    const double peak = sum.peak_flops_per_sec;
    PyObject *values[] = {
        mfu_py_float_or_none(w->window_s),
        mfu_py_float_or_none(w->step_s_mean),
        mfu_py_float_or_none(w->step_s_min),
        mfu_py_float_or_none(w->step_s_max),
        mfu_py_float_or_none(m->tokens_per_sec),
        mfu_py_float_or_none(m->achieved_flops_per_sec),
        mfu_py_float_or_none(m->achieved_flops_per_sec * 1e-12),
        mfu_py_float_or_none(m->mfu),
        mfu_py_float_or_none(m->hfu),
        mfu_py_float_or_none(m->mbu),
        mfu_py_float_or_none(peak),
        mfu_py_float_or_none(peak * 1e-12),
        mfu_py_float_or_none(sum.mfu_mixed),
        mfu_py_float_or_none(sum.ideal_s),
        mfu_py_float_or_none(sum.overcompute_flops),
        mfu_py_float_or_none(sum.overcompute),
    };
    enum { NVALUES = sizeof values / sizeof values[0] };
    static const char *const names[NVALUES] = {
        "window_s", "step_time_s", "step_time_min_s", "step_time_max_s",
        "tokens_per_sec", "achieved_flops_per_sec", "achieved_tflops", "mfu",
        "hfu", "mbu", "peak_flops_per_sec", "peak_tflops", "mfu_mixed", "ideal_s",
        "overcompute_flops", "overcompute"};
    PyObject *result = Py_BuildValue(
        "{sIsKsKsIsKsKss}", "steps", (unsigned int)w->steps, "steps_seen",
        (unsigned long long)w->steps_seen, "steps_skipped",
        (unsigned long long)w->steps_skipped, "steps_pending", (unsigned int)sum.pending,
        "steps_dropped", (unsigned long long)sum.dropped, "boundaries",
        (unsigned long long)sum.boundaries, "clock", mfu_py_clock_name(sum.clock));
    for (int i = 0; i < NVALUES; i++) {
        if (values[i] == NULL
            || (result != NULL && PyDict_SetItemString(result, names[i], values[i]) < 0))
            Py_CLEAR(result);
    }
    for (int i = 0; i < NVALUES; i++)
        Py_XDECREF(values[i]);
    return result;
}

/* ---- flush, close, counters ------------------------------------------------- */

/* Run a waiting core call (flush or close) with the GIL released. */
static PyObject *step_wait(step_object *s, void (*call)(mfu_steps *))
{
    mfu_py_lock_acquire(s->lock);
    if (s->steps != NULL) {
        Py_BEGIN_ALLOW_THREADS
        call(s->steps);
        Py_END_ALLOW_THREADS
        mfu_py_step_check_fallback(s);
    }
    mfu_py_step_unlock(s);
    Py_RETURN_NONE;
}

static PyObject *step_flush(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return step_wait((step_object *)self, mfu_steps_flush);
}

static PyObject *step_close(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return step_wait((step_object *)self, mfu_steps_close);
}

static PyObject *step_counters(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_steps_counters c = {0};
    mfu_py_lock_acquire(s->lock);
    if (s->steps != NULL)
        mfu_steps_get_counters(s->steps, &c);
    PyThread_release_lock(s->lock);
    PyObject *d = mfu_py_timer_counters_dict(&c.timer);
    PyObject *extra = Py_BuildValue("{sKsIsK}", "boundaries",
                                    (unsigned long long)c.boundaries, "pending",
                                    (unsigned int)c.pending, "dropped",
                                    (unsigned long long)c.dropped);
    if (d == NULL || extra == NULL || PyDict_Update(d, extra) < 0)
        Py_CLEAR(d);
    Py_XDECREF(extra);
    return d;
}

/* ---- construction ----------------------------------------------------------- */

static PyObject *step_new(PyTypeObject *type, PyObject *Py_UNUSED(args),
                          PyObject *Py_UNUSED(kwargs))
{
    mfu_module_state *state = mfu_module_state_from_type(type);
    if (state == NULL)
        return NULL;
    step_object *s =
        (step_object *)mfu_py_alloc_locked(type, offsetof(step_object, lock));
    if (s != NULL)
        s->state = state;
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
 * (core/dtypes.h; _C.dtype_names()). */
static int dtype_peaks_arg(PyObject *obj, double *out)
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
    config->per_step_ideal_s = NAN;
    if (mixed_obj == Py_None)
        return 0;
    if (mfu_py_dtype_flops_arg(mixed_obj, "flops_by_dtype", flops) < 0)
        return -1;
    mfu_status mixed = mfu_mixed_ideal_s(flops, s->dtype_peaks, &config->per_step_ideal_s,
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
        no_peak_message(missing, message, sizeof message);
        s->warned_mixed = 1;
        mfu_py_warn_keep_exception(message);
    }
}

/* StepTracker(*, clock="cpu", stream=0, model_flops=None, executed_flops=None,
 *             param_bytes=None, peak_flops_per_sec=None,
 *             peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1,
 *             dtype_peaks=None, flops_by_dtype=None) */
static int step_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"clock", "stream", "model_flops", "executed_flops",
                               "param_bytes", "peak_flops_per_sec",
                               "peak_bytes_per_sec", "num_gpus", "window", "warmup",
                               "dtype_peaks", "flops_by_dtype", NULL};
    const unsigned optional = MFU_ARG_NONE_OK;
    const unsigned positive = MFU_ARG_NONE_OK | MFU_ARG_ABOVE_LOW;
    step_object *s = (step_object *)self;
    PyObject *clock_obj = NULL, *stream_obj = NULL, *model_obj = Py_None;
    PyObject *executed_obj = Py_None, *bytes_obj = Py_None;
    PyObject *peak_flops_obj = Py_None, *peak_bytes_obj = Py_None;
    PyObject *gpus_obj = NULL, *window_obj = NULL, *warmup_obj = NULL;
    PyObject *peaks_obj = Py_None, *mixed_obj = Py_None;
    int no_peak = 0;
    mfu_dtype missing = MFU_DTYPE_FP64;
    mfu_steps_config config = {.timer = {.clock = MFU_CLOCK_CPU}};
    long long gpus = 1, window = 100, warmup = 1;
    const char *bad = NULL;

    if (s->steps != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a StepTracker is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOOOOOOOOO:StepTracker",
                                     keywords, &clock_obj, &stream_obj, &model_obj,
                                     &executed_obj, &bytes_obj, &peak_flops_obj,
                                     &peak_bytes_obj, &gpus_obj, &window_obj,
                                     &warmup_obj, &peaks_obj, &mixed_obj))
        return -1;
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
        || optional_int(gpus_obj, "num_gpus", 1, MFU_NUM_GPUS_MAX, &gpus) < 0
        || optional_int(window_obj, "window", 1, MFU_WINDOW_MAX, &window) < 0
        || optional_int(warmup_obj, "warmup", 0, (long long)MFU_WARMUP_MAX, &warmup) < 0)
        return -1;
    if (dtype_peaks_arg(peaks_obj, s->dtype_peaks) < 0)
        return -1;
    for (int d = 0; d < MFU_DTYPE_COUNT; d++)
        s->any_peak |= !isnan(s->dtype_peaks[d]);
    if (init_mixed(s, mixed_obj, model_obj == Py_None, &config, &no_peak, &missing) < 0)
        return -1;
    config.per_step.num_tokens = NAN;
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

static void step_dealloc(PyObject *self)
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

static PyMethodDef step_methods[] = {
    {"step", (PyCFunction)(void (*)(void))step_step, METH_FASTCALL | METH_KEYWORDS,
     "step($self, num_tokens=None, *, model_flops=None, executed_flops=None, "
     "flops_by_dtype=None, overcompute_flops=None)\n--\n\n"
     "Mark a step boundary (the first call starts the clock). The arguments "
     "describe the step this call closes: tokens processed, and model / "
     "executed FLOPs overriding the per-step defaults; flops_by_dtype "
     "({dtype name: FLOPs}) gives mfu_mixed (and, without model_flops, the "
     "model FLOPs as its sum); overcompute_flops: executed FLOPs beyond the "
     "model convention that are not recompute (FlopCounter.overcompute_flops; "
     "the waterfall books them to compute). Never blocks in steady "
     "state, never raises on bad values (one warning; the value is unknown)."},
    {"summary", (PyCFunction)(void (*)(void))step_summary, METH_FASTCALL | METH_KEYWORDS,
     "summary($self, /, *, model_flops=None, executed_flops=None, num_tokens=None, "
     "ideal_s=None, overcompute_flops=None)\n--\n\nWindowed figures over the last "
     "`window` resolved steps after warm-up (None = unavailable). A window total "
     "given here (FLOPs, tokens, ideal seconds; NaN = unknown) replaces the "
     "window's own and the ratios are formed from it."},
    {"flush", step_flush, METH_NOARGS,
     "flush($self, /)\n--\n\nWait for every step taken so far (one wait)."},
    {"close", step_close, METH_NOARGS,
     "close($self, /)\n--\n\nFlush and release the GPU events; the figures "
     "stay readable."},
    {"begin_phase", (PyCFunction)(void (*)(void))mfu_py_step_begin_phase, METH_FASTCALL | METH_KEYWORDS,
     "begin_phase($self, name, /)\n--\n\nBegin phase `name` ('data', 'forward', "
     "'backward', 'optimizer', 'communication') inside the running one (the inner "
     "phase wins; the outer resumes at end_phase()). One mark, never blocks."},
    {"end_phase", (PyCFunction)(void (*)(void))mfu_py_step_end_phase, METH_FASTCALL | METH_KEYWORDS,
     "end_phase($self, /)\n--\n\nEnd the innermost phase (none open: one warning)."},
    {"switch_phase", (PyCFunction)(void (*)(void))mfu_py_step_switch_phase, METH_FASTCALL | METH_KEYWORDS,
     "switch_phase($self, name, /)\n--\n\nRelabel the innermost phase `name` "
     "(begin it when none is open): one mark, for hooks."},
    {"phase", (PyCFunction)(void (*)(void))mfu_py_step_phase, METH_FASTCALL | METH_KEYWORDS,
     "phase($self, name, /)\n--\n\nA context manager: begin_phase(name) on "
     "entry, end_phase() on exit."},
    {"phase_depth", mfu_py_step_phase_depth, METH_NOARGS,
     "phase_depth($self, /)\n--\n\nThe number of phases open now."},
    {"phases", mfu_py_step_phases, METH_NOARGS,
     "phases($self, /)\n--\n\nThe window's seconds per step of each marked "
     "phase ('phase_s') and the excluded seconds per step ('excluded_s')."},
    {"ledger", mfu_py_step_ledger, METH_NOARGS,
     "ledger($self, /)\n--\n\nThe job ledger's running totals since creation: "
     "steps, dropped, step_s, phase_s, own_s, model_flops, unknown_flops_steps, "
     "first_boundary_unix_s, first_step_s."},
    {"_exclude_begin", mfu_py_step_exclude_begin, METH_NOARGS,
     "_exclude_begin($self, /)\n--\n\nBegin the tracker's own time: left out "
     "of the step it falls in."},
    {"_exclude_end", mfu_py_step_exclude_end, METH_NOARGS,
     "_exclude_end($self, /)\n--\n\nEnd the tracker's own time."},
    {"_comm_subscribe", mfu_py_step_comm_subscribe, METH_NOARGS,
     "_comm_subscribe()\n--\n\nRecord the process's communication here (True; False when\n"
     "every sink slot is taken)."},
    {"_comm_unsubscribe", mfu_py_step_comm_unsubscribe, METH_NOARGS,
     "_comm_unsubscribe()\n--\n\nStop receiving the process's communication."},
    {"comm", mfu_py_step_comm, METH_NOARGS,
     "comm()\n--\n\nThe window's communication: bytes, calls and bus bandwidth per kind,\n"
     "duration, net utilization, overlap (GPU clocks)."},
    {"_comm_begin", mfu_py_step_comm_begin, METH_VARARGS,
     "_comm_begin(kind, bytes, bus_bytes, link_bytes_per_sec, host=False, /)\n--\n\n"
     "Record one collective launched in this tracker; its token (0: not timed)."},
    {"_comm_end", mfu_py_step_comm_end, METH_VARARGS,
     "_comm_end(token, stream=0, /)\n--\n\nThe collective of `token` completed."},
    {"counters", step_counters, METH_NOARGS,
     "counters($self, /)\n--\n\nTimer counters plus boundaries, pending, dropped."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef step_getset[] = {
    {"clock", step_get_clock, NULL,
     "The clock timing the steps: 'cpu', 'cuda' or 'hip' ('cpu' after a "
     "fallback).", NULL},
    {"stream", step_get_stream, NULL, "The raw stream handle marks go to.", NULL},
    {"window", step_get_window, NULL, "Steps the figures cover.", NULL},
    {"warmup", step_get_warmup, NULL, "Timed steps ignored at the start.", NULL},
    {"closed", step_get_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(step_doc,
             "StepTracker(*, clock='cpu', stream=0, model_flops=None, "
             "executed_flops=None, param_bytes=None, peak_flops_per_sec=None, "
             "peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1, "
             "dtype_peaks=None, flops_by_dtype=None)\n--\n\n"
             "The hot path of mfu_tracker.Tracker: one mark per step boundary, "
             "windowed statistics in C (core/steps.h).");

static PyType_Slot step_slots[] = {
    {Py_tp_doc, (void *)step_doc},
    {Py_tp_new, step_new},
    {Py_tp_init, step_init},
    {Py_tp_dealloc, step_dealloc},
    {Py_tp_traverse, mfu_py_traverse_type},
    {Py_tp_methods, step_methods},
    {Py_tp_getset, step_getset},
    {0, NULL},
};

/* BASETYPE: mfu_tracker.Tracker subclasses it. */
static PyType_Spec step_spec = MFU_PY_TYPE_SPEC(
    "StepTracker", step_object,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE,
    step_slots);

/* _C.ideal_seconds(flops_by_dtype, dtype_peaks) -> float or None: the
 * seconds the work takes at each dtype's peak (core/mixed.h), None when a
 * dtype with FLOPs has no peak. Bad arguments raise, naming them. For the
 * integrations that resolve a window's work at logging time. */
static PyObject *py_ideal_seconds(PyObject *Py_UNUSED(module), PyObject *const *args,
                                  Py_ssize_t nargs)
{
    double flops[MFU_DTYPE_COUNT], peaks[MFU_DTYPE_COUNT], ideal_s;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "ideal_seconds() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (mfu_py_dtype_flops_arg(args[0], "flops_by_dtype", flops) < 0
        || dtype_peaks_arg(args[1], peaks) < 0)
        return NULL;
    (void)mfu_mixed_ideal_s(flops, peaks, &ideal_s, NULL);
    return mfu_py_float_or_none(ideal_s);
}

/* gpu_driver_library(api, /) -> the library the GPU clock of api opens (the
 * environment override, else the default name): one rule, in gpu_driver.c. */
static PyObject *py_gpu_driver_library(PyObject *Py_UNUSED(module), PyObject *api)
{
    int clock;
    if (mfu_py_choice_arg(api, "api", mfu_py_clock_choices, &clock) < 0)
        return NULL;
    if (clock == MFU_CLOCK_CPU) {
        PyErr_SetString(PyExc_ValueError, "api must be 'cuda' or 'hip', not 'cpu'");
        return NULL;
    }
    return PyUnicode_FromString(
        mfu_gpu_driver_library(clock == MFU_CLOCK_HIP ? MFU_GPU_HIP : MFU_GPU_CUDA));
}

static PyMethodDef step_module_methods[] = {
    {"gpu_driver_library", py_gpu_driver_library, METH_O,
     "gpu_driver_library(api, /)\n--\n\n"
     "The driver library the GPU clock of api ('cuda' or 'hip') opens: "
     "MFU_TRACKER_CUDA_LIBRARY / MFU_TRACKER_HIP_LIBRARY when set, else "
     "libcuda.so.1 / libamdhip64.so."},
    {"ideal_seconds", (PyCFunction)(void (*)(void))py_ideal_seconds, METH_FASTCALL,
     "ideal_seconds(flops_by_dtype, dtype_peaks, /)\n--\n\n"
     "sum over dtypes of FLOPs / peak FLOP/s (seconds at each dtype's peak); "
     "None when a dtype with FLOPs has no peak. dtype_peaks: one per "
     "_C.dtype_names() entry, None where the device has none."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_step_tracker_exec(PyObject *module)
{
    static const char *const names[] = {"num_tokens", "model_flops", "executed_flops",
                                        "flops_by_dtype", "overcompute_flops"};
    /* summary()'s, in window_totals()' order */
    static const char *const summary_names[SUMMARY_TOTALS] = {
        "model_flops", "executed_flops", "num_tokens", "ideal_s", "overcompute_flops"};
    mfu_module_state *state = mfu_module_get_state(module);
    _Static_assert(sizeof state->step_kwnames / sizeof state->step_kwnames[0] == KW_COUNT,
                   "one interned name per parameter");
    if (PyModule_AddFunctions(module, step_module_methods) < 0)
        return -1; /* ideal_seconds() */
    state->step_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &step_spec, NULL);
    if (state->step_type == NULL || PyModule_AddType(module, state->step_type) < 0)
        return -1;
    _Static_assert(sizeof state->summary_kwnames / sizeof state->summary_kwnames[0] ==
                       SUMMARY_TOTALS,
                   "one interned name per window total");
    for (int i = 0; i < KW_COUNT; i++)
        if ((state->step_kwnames[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    for (int i = 0; i < SUMMARY_TOTALS; i++)
        if ((state->summary_kwnames[i] = PyUnicode_InternFromString(summary_names[i])) == NULL)
            return -1;
    return mfu_py_phases_exec(module);
}
