/*
 * py_step_tracker.c -- _C.StepTracker, the hot path of mfu_tracker.Tracker:
 * the core's step accounting (core/steps/steps.h) for Python.
 *
 * Everything that is not Python lives in the core: the boundaries, the
 * step records, the masking rules, the drain, the fallback to the CPU clock.
 * This file converts arguments (py_args.h), holds the per-object lock (the
 * core tracker is single-threaded; the GIL is released around the waits of
 * flush() and close()), and turns what the core reports into at most one
 * RuntimeWarning per kind -- bad per-step values, a clock failure, a step
 * after close(), MFU above 1 -- emitted after the lock is released. Nothing
 * raises into the training loop once the tracker is configured. The phase
 * marks of the waterfall are in py_phases.c, the object's lock and queued
 * warnings in py_step_object.c, construction in py_step_init.c, the
 * figures and late booking in py_step_figures.c.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "py_phases.h"
#include "py_step_comm.h"
#include "py_step_figures.h"
#include "py_step_init.h"

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
                              .ideal_s = NAN, .overcompute_flops = NAN,
                              .language_flops = NAN};
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
        mfu_py_no_peak_message(missing, message, sizeof message);
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
    {"summary", (PyCFunction)(void (*)(void))mfu_py_step_summary, METH_FASTCALL | METH_KEYWORDS,
     "summary($self, /, *, model_flops=None, executed_flops=None, num_tokens=None, "
     "ideal_s=None, overcompute_flops=None, language_flops=None)\n--\n\nWindowed figures "
     "over the last `window` resolved steps after warm-up (None = unavailable). A window "
     "total given here (FLOPs, tokens, ideal seconds; NaN = unknown) replaces the "
     "window's own and the ratios are formed from it."},
    {"book", (PyCFunction)(void (*)(void))mfu_py_step_book, METH_FASTCALL | METH_KEYWORDS,
     "book($self, step, /, *, model_flops=None, executed_flops=None, num_tokens=None, "
     "ideal_s=None, overcompute_flops=None, language_flops=None)\n--\n\nBook work learned "
     "after its boundary onto closed step `step` (the step a step() call closed is the "
     "number of step() calls before it): each value given replaces the step's. True when "
     "booked; False when the step is not held (not closed, lost, or past the window and "
     "LIMIT_STEPS_KEPT more). A bad value: one warning, recorded as unknown."},
    {"window_steps", mfu_py_step_window_steps, METH_NOARGS,
     "window_steps($self, /)\n--\n\nThe records of the steps in the window, oldest first: "
     "step, period_s, model_flops, executed_flops, param_bytes, num_tokens, ideal_s, "
     "overcompute_flops, language_flops, excluded_s (None = unknown)."},
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
     "_comm_subscribe($self, /)\n--\n\nRecord the process's communication here (True; False when\n"
     "every sink slot is taken)."},
    {"_comm_unsubscribe", mfu_py_step_comm_unsubscribe, METH_NOARGS,
     "_comm_unsubscribe($self, /)\n--\n\nStop receiving the process's communication."},
    {"comm", mfu_py_step_comm, METH_NOARGS,
     "comm($self, /)\n--\n\nThe window's communication: bytes, calls and bus bandwidth per kind,\n"
     "duration, net utilization, overlap (GPU clocks)."},
    {"_comm_begin", mfu_py_step_comm_begin, METH_VARARGS,
     "_comm_begin($self, kind, bytes, bus_bytes, link_bytes_per_sec, host=False, /)\n--\n\n"
     "Record one collective launched in this tracker; its token (0: not timed)."},
    {"_comm_end", mfu_py_step_comm_end, METH_VARARGS,
     "_comm_end($self, token, stream=0, /)\n--\n\nThe collective of `token` completed."},
    {"counters", step_counters, METH_NOARGS,
     "counters($self, /)\n--\n\nTimer counters plus boundaries, pending, dropped."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(step_doc,
             "StepTracker(*, clock='cpu', stream=0, model_flops=None, "
             "executed_flops=None, param_bytes=None, peak_flops_per_sec=None, "
             "peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1, "
             "dtype_peaks=None, flops_by_dtype=None)\n--\n\n"
             "The hot path of mfu_tracker.Tracker: one mark per step boundary, "
             "windowed statistics in C (core/steps/steps.h).");

static PyType_Slot step_slots[] = {
    {Py_tp_doc, (void *)step_doc},
    {Py_tp_new, mfu_py_step_new},
    {Py_tp_init, mfu_py_step_init},
    {Py_tp_dealloc, mfu_py_step_dealloc},
    {Py_tp_traverse, mfu_py_traverse_type},
    {Py_tp_methods, step_methods},
    {Py_tp_getset, mfu_py_step_getset},
    {0, NULL},
};

/* BASETYPE: mfu_tracker.Tracker subclasses it. */
static PyType_Spec step_spec = MFU_PY_TYPE_SPEC(
    "StepTracker", step_object,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE,
    step_slots);

/* _C.ideal_seconds(flops_by_dtype, dtype_peaks) -> float or None: the
 * seconds the work takes at each dtype's peak (core/steps/mixed.h), None when a
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
        || mfu_py_dtype_peaks_arg(args[1], peaks) < 0)
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
    mfu_module_state *state = mfu_module_get_state(module);
    _Static_assert(sizeof state->step_kwnames / sizeof state->step_kwnames[0] == KW_COUNT,
                   "one interned name per parameter");
    _Static_assert(sizeof state->summary_kwnames / sizeof state->summary_kwnames[0] ==
                       MFU_PY_WORK_FIELDS,
                   "one interned name per work field");
    if (PyModule_AddFunctions(module, step_module_methods) < 0)
        return -1; /* ideal_seconds() */
    state->step_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &step_spec, NULL);
    if (state->step_type == NULL || PyModule_AddType(module, state->step_type) < 0)
        return -1;
    for (int i = 0; i < KW_COUNT; i++)
        if ((state->step_kwnames[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    return 0;
}
