/*
 * py_step_figures.c -- what _C.StepTracker reads from and books onto its
 * step records (core/steps/records.h, core/steps/steps.h): summary() (the window's
 * figures, with window totals a caller gives), book() (a step's work
 * learned late, by step id) and window_steps() (the window's records). The
 * fields are the record's (core/step_fields.h): no name is spelled here.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "py_phases.h"
#include "py_record.h"
#include "py_step_figures.h"

int mfu_py_work_fields_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    int given = 0, step = 2;
    if ((state->step_kwnames[0] = PyUnicode_InternFromString("num_tokens")) == NULL
        || (state->step_kwnames[1] = PyUnicode_InternFromString("flops_by_dtype")) == NULL)
        return -1;
    state->step_fields[0] = MFU_FIELD_NUM_TOKENS;
    state->step_fields[1] = -1;
    for (int f = 0; f < MFU_FIELD_COUNT; f++) {
        PyObject *name = PyUnicode_InternFromString(mfu_step_fields[f].name);
        if (name == NULL)
            return -1;
        state->field_names[f] = name;
        if (!(mfu_step_fields[f].flags & MFU_FIELD_GIVEN))
            continue;
        state->given_kwnames[given] = Py_NewRef(name);
        state->given_fields[given++] = f;
        if (f != MFU_FIELD_NUM_TOKENS) {
            state->step_kwnames[step] = Py_NewRef(name);
            state->step_fields[step++] = f;
        }
    }
    state->given_count = given;
    state->step_count = step;
    return 0;
}

/* values[i] (NULL or None: not given) of the given field given_fields[i]
 * into report. strict: a NaN float is given and unknown, anything else bad
 * raises, naming it; not strict: a bad value is given as NaN (the core
 * records it unknown and reports it). */
static int work_report(const mfu_module_state *state, PyObject *const values[], int strict,
                       mfu_step_report *report)
{
    memset(report, 0, sizeof *report);
    for (int i = 0; i < state->given_count; i++) {
        const int f = state->given_fields[i];
        double *out = mfu_work_at(&report->work, f);
        PyObject *value = values[i];
        if (value == NULL || value == Py_None)
            continue;
        report->given |= 1u << f;
        if (PyFloat_Check(value) && isnan(PyFloat_AS_DOUBLE(value))) {
            *out = NAN; /* an unknown value: given, and unknown */
        } else if (mfu_py_real_arg(value, mfu_step_fields[f].name,
                                   strict ? 0 : MFU_ARG_ANY_FINITE, 0.0, out) < 0) {
            if (strict)
                return -1;
            PyErr_Clear();
            *out = NAN;
        }
    }
    return 0;
}

/* ---- summary() ------------------------------------------------------------ */

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

/* Set d[name] = value (None for NaN); -1 on failure. */
static int set_figure(PyObject *d, PyObject *name, double value)
{
    PyObject *v = mfu_py_float_or_none(value);
    int rc = v == NULL ? -1 : PyDict_SetItem(d, name, v);
    Py_XDECREF(v);
    return rc;
}

/* A per-step field's seconds per step over the window, as
 * "<field>_per_step" (core/step_fields.h, MFU_FIELD_PER_STEP). */
static int set_per_step(PyObject *d, int field, double value)
{
    PyObject *name = PyUnicode_FromFormat("%s_per_step", mfu_step_fields[field].name);
    int rc = name == NULL ? -1 : set_figure(d, name, value);
    Py_XDECREF(name);
    return rc;
}

/* d["phase_s"]: the window's seconds per step of each marked phase (every
 * one, as phases() gives them). */
static int set_phases(const step_object *s, PyObject *d, const mfu_phase_summary *phases)
{
    const unsigned marked = phases->steps > 0 ? phases->marked : 0u;
    PyObject *seconds = mfu_py_phase_dict(s, phases->seconds, marked,
                                          phases->steps > 0 ? (double)phases->steps : 1.0);
    int rc = seconds == NULL ? -1 : PyDict_SetItemString(d, "phase_s", seconds);
    Py_XDECREF(seconds);
    return rc;
}

/* The summary's dict: counts, the window's times, every field's sum (and a
 * per-step field's seconds per step), every ratio, the peak, the phases'
 * seconds per step and -- when a phase of the waterfall was marked -- the
 * waterfall (None without MFU). None = unavailable. */
static PyObject *summary_dict(const step_object *s, const mfu_steps_summary *sum)
{
    const mfu_module_state *state = s->state;
    const mfu_window_summary *w = &sum->window;
    const double peak = sum->peak_flops_per_sec;
    const struct {
        const char *name;
        double value;
    } figures[] = {
        {"window_s", w->window_s}, {"step_time_s", w->step_s_mean},
        {"step_time_min_s", w->step_s_min}, {"step_time_max_s", w->step_s_max},
        {"achieved_tflops", w->metrics.achieved_flops_per_sec * 1e-12},
        {"peak_flops_per_sec", peak}, {"peak_tflops", peak * 1e-12},
    };
    PyObject *result = Py_BuildValue(
        "{sIsKsKsIsKsKss}", "steps", (unsigned int)w->steps, "steps_seen",
        (unsigned long long)w->steps_seen, "steps_skipped",
        (unsigned long long)w->steps_skipped, "steps_pending", (unsigned int)sum->pending,
        "steps_dropped", (unsigned long long)sum->dropped, "boundaries",
        (unsigned long long)sum->boundaries, "clock", mfu_py_clock_name(sum->clock));
    for (size_t i = 0; result != NULL && i < sizeof figures / sizeof figures[0]; i++) {
        PyObject *value = mfu_py_float_or_none(figures[i].value);
        if (value == NULL || PyDict_SetItemString(result, figures[i].name, value) < 0)
            Py_CLEAR(result);
        Py_XDECREF(value);
    }
    for (int f = 0; result != NULL && f < MFU_FIELD_COUNT; f++) {
        const double sum = mfu_work_get(&w->totals, f);
        if (set_figure(result, state->field_names[f], sum) < 0
            || ((mfu_step_fields[f].flags & MFU_FIELD_PER_STEP)
                && set_per_step(result, f, w->steps > 0 ? sum / (double)w->steps : NAN) < 0))
            Py_CLEAR(result);
    }
    if (result != NULL
        && (set_phases(s, result, &sum->phases) < 0
            || mfu_py_figures_into(state, result, &w->metrics,
                                   w->steps > 0 && mfu_waterfall_asked(sum->phases.marked, &w->totals)
                                       ? &w->waterfall : NULL)
                   < 0))
        Py_CLEAR(result);
    return result;
}

PyObject *mfu_py_step_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *given[MFU_FIELD_COUNT] = {NULL};
    mfu_step_report totals;
    mfu_steps_summary sum;
    if ((nargs > 0 || kwnames != NULL) /* else nothing to bind: the common call */
        && mfu_py_bind("summary", s->state->given_kwnames, s->state->given_count, 0, 0, args,
                       nargs, kwnames, given) < 0)
        return NULL;
    if (work_report(s->state, given, 1, &totals) < 0 || mfu_py_step_require_init(s) < 0)
        return NULL;
    summarize(s, &totals, &sum);
    return summary_dict(s, &sum);
}

/* ---- book() --------------------------------------------------------------- */

/* One warning for the bad values of a book() call (`bad`: MFU_STEP_* bits):
 * the last one named, with what its step records instead. */
static void warn_bad_booking(step_object *s, unsigned bad)
{
    char message[300];
    int field = MFU_FIELD_COUNT - 1;
    while (field > 0 && !(bad & (1u << field)))
        field--;
    PyOS_snprintf(message, sizeof message,
                  "mfu_tracker: Tracker.book(): %s must be a finite int or float >= 0; "
                  "that step's %s %s", mfu_step_fields[field].name,
                  mfu_step_fields[field].name, mfu_py_unknown_note(field));
    mfu_py_step_queue_warning(s, &s->warned_args, message);
}

PyObject *mfu_py_step_book(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *given[MFU_FIELD_COUNT] = {NULL};
    mfu_step_report report;
    unsigned long long step;
    unsigned bad = 0;
    mfu_status status = MFU_ERR_NOT_FOUND;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "book() missing required argument 'step' (pos 1)");
        return NULL;
    }
    if (mfu_py_bind("book", s->state->given_kwnames, s->state->given_count, 0, 0, args + 1,
                    nargs - 1, kwnames, given) < 0)
        return NULL;
    if (!PyLong_Check(args[0]) || PyBool_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "book(): step must be an int, not %.100s",
                     Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    step = PyLong_AsUnsignedLongLong(args[0]);
    if (step == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear(); /* negative or too large: no such step */
        step = 0;
    }
    (void)work_report(s->state, given, 0, &report);
    mfu_py_lock_acquire(s->lock);
    if (s->steps != NULL)
        status = mfu_steps_book(s->steps, (uint64_t)step, &report, &bad);
    if (bad != 0)
        warn_bad_booking(s, bad);
    mfu_py_step_unlock(s);
    return PyBool_FromLong(status == MFU_OK);
}

/* ---- window_steps() ------------------------------------------------------- */

/* One record as a dict: step, period_s, every field, excluded_s (None =
 * unknown). */
static PyObject *record_dict(const mfu_module_state *state, const mfu_step_record *r)
{
    PyObject *d = Py_BuildValue("{sK}", "step", (unsigned long long)r->id);
    PyObject *period = d == NULL ? NULL : mfu_py_float_or_none(r->period_s);
    if (period == NULL || PyDict_SetItemString(d, "period_s", period) < 0)
        Py_CLEAR(d);
    Py_XDECREF(period);
    for (int f = 0; d != NULL && f < MFU_FIELD_COUNT; f++)
        if (set_figure(d, state->field_names[f], mfu_work_get(&r->work, f)) < 0)
            Py_CLEAR(d);
    if (d != NULL) {
        PyObject *excluded = mfu_py_float_or_none(r->phases.excluded_s);
        if (excluded == NULL || PyDict_SetItemString(d, "excluded_s", excluded) < 0)
            Py_CLEAR(d);
        Py_XDECREF(excluded);
    }
    return d;
}

PyObject *mfu_py_step_window_steps(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_step_record *records = NULL;
    uint32_t n = 0;
    PyObject *list;
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    mfu_py_lock_acquire(s->lock);
    n = mfu_steps_window(s->steps, 0, NULL); /* how many, then a copy of them */
    records = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *records);
    if (records != NULL)
        n = mfu_steps_window(s->steps, n, records) < n ? 0 : n;
    mfu_py_step_unlock(s);
    if (records == NULL)
        return PyErr_NoMemory();
    list = PyList_New((Py_ssize_t)n);
    for (uint32_t i = 0; list != NULL && i < n; i++) {
        PyObject *d = record_dict(s->state, &records[i]);
        if (d == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    PyMem_Free(records);
    return list;
}
