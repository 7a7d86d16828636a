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
#include "py_record.h"
#include "py_step_comm.h"
#include "py_step_figures.h"
#include "py_step_init.h"

/* step()'s parameters are interned in module state (step_kwnames): the
 * positional num_tokens, flops_by_dtype, then every other field of the
 * record a caller gives (core/step_fields.h; py_step_figures.c). No metric
 * key is built here: Tracker.metrics() formats them in Python
 * (mfu_tracker/timing/_metrics.py), the one place a key is spelled. */
enum { KW_NUM_TOKENS = 0, KW_FLOPS_BY_DTYPE = 1, STEP_PARAMETERS_MAX = MFU_FIELD_COUNT + 1 };

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
    report->work.ideal_s = NAN;
    if (mfu_py_dtype_flops_arg(obj, "flops_by_dtype", flops) < 0) {
        PyErr_Clear();
        return;
    }
    if (!(report->given & MFU_STEP_MODEL_FLOPS)) {
        double sum = 0.0;
        for (int d = 0; d < MFU_DTYPE_COUNT; d++)
            sum += flops[d];
        report->given |= MFU_STEP_MODEL_FLOPS;
        report->work.model_flops = sum;
    }
    /* MFU_ERR_OVERFLOW leaves ideal_s NaN: a bad value (one warning). */
    if (mfu_mixed_ideal_s(flops, s->dtype_peaks, &report->work.ideal_s, missing)
        == MFU_ERR_NOT_FOUND) {
        report->given &= ~(unsigned)MFU_STEP_IDEAL_S;
        report->work.ideal_s = NAN;
        *no_peak = 1;
    }
}

/* ---- step() ----------------------------------------------------------------- */

/* A per-step value: None is absent; a number is given; anything else is
 * given and bad (NaN), which the core records as unknown. Never raises. */
static void report_value(PyObject *obj, int field, mfu_step_report *report)
{
    double *out = &report->work.v[field];
    if (obj == Py_None)
        return;
    report->given |= 1u << field;
    if (mfu_py_real_arg(obj, mfu_step_fields[field].name, MFU_ARG_ANY_FINITE, 0.0, out) < 0) {
        PyErr_Clear();
        *out = NAN;
    }
}

/* One warning for the bad per-step values of a step() call (`bad`: the
 * MFU_STEP_* bits the core reported), naming the last one; bad ideal
 * seconds from flops_by_dtype name the dict. */
static void warn_bad_values(step_object *s, unsigned bad, int mixed)
{
    char message[300];
    int field = MFU_FIELD_COUNT - 1;
    while (field > 0 && !(bad & (1u << field)))
        field--;
    if (mixed && field == MFU_FIELD_IDEAL_S)
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.step(): flops_by_dtype must be a "
                      "dict from dtype names (fp8, bf16, fp16, tf32, fp32, "
                      "fp64) to finite FLOPs >= 0; that step's mfu_mixed is "
                      "recorded as unknown and left out");
    else
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.step(): %s must be a finite int or "
                      "float >= 0 (a Python number, not a tensor); that step's "
                      "%s %s", mfu_step_fields[field].name, mfu_step_fields[field].name,
                      mfu_py_unknown_note(field));
    mfu_py_step_queue_warning(s, &s->warned_args, message);
}

/* The report of a step() call from its bound parameters (only the fields
 * whose bit is set are read). -1 (TypeError) when both ideal_s and
 * flops_by_dtype are given. */
static int step_report(step_object *s, PyObject *const *values, mfu_step_report *report,
                       int *no_peak, mfu_dtype *missing)
{
    const mfu_module_state *state = s->state;
    report->given = 0;
    for (int i = 0; i < state->step_count; i++)
        if (state->step_fields[i] >= 0)
            report_value(values[i], state->step_fields[i], report);
    if (values[KW_FLOPS_BY_DTYPE] != Py_None) {
        if (report->given & MFU_STEP_IDEAL_S) {
            PyErr_SetString(PyExc_TypeError, "step(): give ideal_s or flops_by_dtype "
                            "(which gives it), not both");
            return -1;
        }
        report_mixed(s, values[KW_FLOPS_BY_DTYPE], report, no_peak, missing);
    }
    return 0;
}

/* step(num_tokens=None, *, flops_by_dtype=None, **fields): the record's
 * fields a caller gives (core/step_fields.h) for the step this call closes. */
static PyObject *step_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    const mfu_module_state *state = s->state;
    PyObject *values[STEP_PARAMETERS_MAX];
    mfu_step_report report;
    mfu_step_outcome outcome;
    int no_peak = 0, mixed = 0;
    mfu_dtype missing = MFU_DTYPE_FP64;

    if (nargs <= 1 && kwnames == NULL) { /* step() or step(num_tokens): the common call */
        report.given = 0;
        if (nargs == 1)
            report_value(args[0], MFU_FIELD_NUM_TOKENS, &report);
    } else {
        /* A positional num_tokens takes its name out of the keywords: then
         * step(10, num_tokens=10) is an unexpected keyword, as it always was. */
        const Py_ssize_t skip = nargs == 1 ? 1 : 0;
        for (int i = 0; i < state->step_count; i++)
            values[i] = Py_None;
        if (skip)
            values[KW_NUM_TOKENS] = args[0];
        if (mfu_py_bind("step", state->step_kwnames + skip, state->step_count - skip,
                        1 - skip, 0, args + skip, nargs - skip, kwnames, values + skip) < 0
            || step_report(s, values, &report, &no_peak, &missing) < 0)
            return NULL;
        mixed = values[KW_FLOPS_BY_DTYPE] != Py_None;
    }

    mfu_py_lock_acquire(s->lock);
    if (s->steps == NULL) { /* __init__ never ran: nothing to time */
        mfu_py_step_unlock(s);
        Py_RETURN_NONE;
    }
    mfu_status status = mfu_steps_step(s->steps, &report, &outcome);
    if (outcome.bad != 0)
        warn_bad_values(s, outcome.bad, mixed);
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
     "step($self, num_tokens=None, *, flops_by_dtype=None, **fields)\n--\n\n"
     "Mark a step boundary (the first call starts the clock). The arguments "
     "describe the step this call closes: tokens processed, and any field of "
     "the record a caller gives (_C.STEP_FIELDS: model / executed / over-compute / "
     "language FLOPs, ...), replacing the per-step defaults; flops_by_dtype "
     "({dtype name: FLOPs}) gives the ideal seconds of mfu_mixed (and, without "
     "model_flops, the model FLOPs as its sum). Never blocks in steady state, "
     "never raises on bad values (one warning; the value is unknown)."},
    {"summary", (PyCFunction)(void (*)(void))mfu_py_step_summary, METH_FASTCALL | METH_KEYWORDS,
     "summary($self, /, **totals)\n--\n\nWindowed figures over the last `window` "
     "resolved steps after warm-up (None = unavailable): every field's sum, every "
     "ratio, phase_s (as phases() gives it), the waterfall. A window total given here "
     "(any field a caller gives, _C.STEP_FIELDS; NaN = unknown) replaces the window's "
     "own and the ratios are formed from it."},
    {"book", (PyCFunction)(void (*)(void))mfu_py_step_book, METH_FASTCALL | METH_KEYWORDS,
     "book($self, step, /, **fields)\n--\n\nBook work learned "
     "after its boundary (any field a caller gives, _C.STEP_FIELDS) onto closed step `step` (the step a step() call closed is the "
     "number of step() calls before it): each value given replaces the step's. True when "
     "booked; False when the step is not held (not closed, lost, or past the window and "
     "LIMIT_STEPS_KEPT more). A bad value: one warning, recorded as unknown."},
    {"window_steps", mfu_py_step_window_steps, METH_NOARGS,
     "window_steps($self, /)\n--\n\nThe records of the steps in the window, oldest first: "
     "step, period_s, every field of _C.STEP_FIELDS, excluded_s (None = unknown)."},
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
             "dtype_peaks=None, flops_by_dtype=None, measured_flops_per_sec=None)\n--\n\n"
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
    mfu_module_state *state = mfu_module_get_state(module);
    if (PyModule_AddFunctions(module, step_module_methods) < 0)
        return -1; /* ideal_seconds() */
    state->step_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &step_spec, NULL);
    if (state->step_type == NULL || PyModule_AddType(module, state->step_type) < 0)
        return -1;
    return 0;
}
