/*
 * py_step_figures.c -- what _C.StepTracker reads from and books onto its
 * step records (core/steps/records.h, core/steps/steps.h): summary() (the window's
 * figures, with window totals a caller gives), book() (a step's work
 * learned late, by step id) and window_steps() (the window's records).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "py_step_figures.h"

/* The window totals summary() takes and the step fields book() takes, by
 * name, in the order of state->summary_kwnames. */
static const struct {
    const char *name;
    unsigned bit;
    size_t offset;
} work_fields[MFU_PY_WORK_FIELDS] = {
    {"model_flops", MFU_STEP_MODEL_FLOPS, offsetof(mfu_step_report, model_flops)},
    {"executed_flops", MFU_STEP_EXECUTED_FLOPS, offsetof(mfu_step_report, executed_flops)},
    {"num_tokens", MFU_STEP_NUM_TOKENS, offsetof(mfu_step_report, num_tokens)},
    {"ideal_s", MFU_STEP_IDEAL_S, offsetof(mfu_step_report, ideal_s)},
    {"overcompute_flops", MFU_STEP_OVERCOMPUTE_FLOPS,
     offsetof(mfu_step_report, overcompute_flops)},
    {"language_flops", MFU_STEP_LANGUAGE_FLOPS, offsetof(mfu_step_report, language_flops)},
};

int mfu_py_work_fields_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    for (int i = 0; i < MFU_PY_WORK_FIELDS; i++)
        if ((state->summary_kwnames[i] = PyUnicode_InternFromString(work_fields[i].name)) == NULL)
            return -1;
    return 0;
}

/* values[i] (NULL or None: not given) into report. strict: a NaN float is
 * given and unknown, anything else bad raises, naming it; not strict: a
 * bad value is given as NaN (the core records it unknown and reports it). */
static int work_report(PyObject *const values[MFU_PY_WORK_FIELDS], int strict,
                       mfu_step_report *report)
{
    memset(report, 0, sizeof *report);
    for (int i = 0; i < MFU_PY_WORK_FIELDS; i++) {
        double *out = (double *)((char *)report + work_fields[i].offset);
        PyObject *value = values[i];
        if (value == NULL || value == Py_None)
            continue;
        report->given |= work_fields[i].bit;
        if (PyFloat_Check(value) && isnan(PyFloat_AS_DOUBLE(value))) {
            *out = NAN; /* an unknown value: given, and unknown */
        } else if (mfu_py_real_arg(value, work_fields[i].name, strict ? 0 : MFU_ARG_ANY_FINITE,
                                   0.0, out) < 0) {
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

/* The summary's dict: counts, then each figure (None = unavailable). */
static PyObject *summary_dict(const mfu_steps_summary *sum)
{
    const mfu_window_summary *w = &sum->window;
    const mfu_metrics *m = &w->metrics;
    const double peak = sum->peak_flops_per_sec;
    const struct {
        const char *name;
        double value;
    } figures[] = {
        {"window_s", w->window_s}, {"step_time_s", w->step_s_mean},
        {"step_time_min_s", w->step_s_min}, {"step_time_max_s", w->step_s_max},
        {"tokens_per_sec", m->tokens_per_sec},
        {"achieved_flops_per_sec", m->achieved_flops_per_sec},
        {"achieved_tflops", m->achieved_flops_per_sec * 1e-12}, {"mfu", m->mfu},
        {"hfu", m->hfu}, {"mbu", m->mbu}, {"peak_flops_per_sec", peak},
        {"peak_tflops", peak * 1e-12}, {"mfu_mixed", sum->mfu_mixed},
        {"ideal_s", sum->ideal_s}, {"overcompute_flops", sum->overcompute_flops},
        {"overcompute", sum->overcompute}, {"language_flops", sum->language_flops},
        {"mfu_language", sum->mfu_language},
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
    return result;
}

PyObject *mfu_py_step_summary(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *given[MFU_PY_WORK_FIELDS] = {NULL};
    mfu_step_report totals;
    mfu_steps_summary sum;
    if ((nargs > 0 || kwnames != NULL) /* else nothing to bind: the common call */
        && mfu_py_bind("summary", s->state->summary_kwnames, MFU_PY_WORK_FIELDS, 0, 0, args,
                       nargs, kwnames, given) < 0)
        return NULL;
    if (work_report(given, 1, &totals) < 0 || mfu_py_step_require_init(s) < 0)
        return NULL;
    summarize(s, &totals, &sum);
    return summary_dict(&sum);
}

/* ---- book() --------------------------------------------------------------- */

/* One warning for the bad values of a book() call (`bad`: MFU_STEP_* bits). */
static void warn_bad_booking(step_object *s, unsigned bad)
{
    char message[300];
    const char *name = "a value";
    for (int i = 0; i < MFU_PY_WORK_FIELDS; i++)
        if (bad & work_fields[i].bit)
            name = work_fields[i].name;
    PyOS_snprintf(message, sizeof message,
                  "mfu_tracker: Tracker.book(): %s must be a finite int or float >= 0; "
                  "that step's %s is recorded as unknown and the figures using it are "
                  "left out", name, name);
    mfu_py_step_queue_warning(s, &s->warned_args, message);
}

PyObject *mfu_py_step_book(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *given[MFU_PY_WORK_FIELDS] = {NULL};
    mfu_step_report report;
    unsigned long long step;
    unsigned bad = 0;
    mfu_status status = MFU_ERR_NOT_FOUND;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "book() missing required argument 'step' (pos 1)");
        return NULL;
    }
    if (mfu_py_bind("book", s->state->summary_kwnames, MFU_PY_WORK_FIELDS, 0, 0, args + 1,
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
    (void)work_report(given, 0, &report);
    mfu_py_lock_acquire(s->lock);
    if (s->steps != NULL)
        status = mfu_steps_book(s->steps, (uint64_t)step, &report, &bad);
    if (bad != 0)
        warn_bad_booking(s, bad);
    mfu_py_step_unlock(s);
    return PyBool_FromLong(status == MFU_OK);
}

/* ---- window_steps() ------------------------------------------------------- */

/* One record as a dict (None = unknown). */
static PyObject *record_dict(const mfu_step_record *r)
{
    const struct {
        const char *name;
        double value;
    } fields[] = {
        {"period_s", r->period_s}, {"model_flops", r->work.model_flops},
        {"executed_flops", r->work.executed_flops}, {"param_bytes", r->work.param_bytes},
        {"num_tokens", r->work.num_tokens}, {"ideal_s", r->ideal_s},
        {"overcompute_flops", r->overcompute_flops}, {"language_flops", r->language_flops},
        {"excluded_s", r->phases.excluded_s},
    };
    PyObject *d = Py_BuildValue("{sK}", "step", (unsigned long long)r->id);
    for (size_t i = 0; d != NULL && i < sizeof fields / sizeof fields[0]; i++) {
        PyObject *value = mfu_py_float_or_none(fields[i].value);
        if (value == NULL || PyDict_SetItemString(d, fields[i].name, value) < 0)
            Py_CLEAR(d);
        Py_XDECREF(value);
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
        PyObject *d = record_dict(&records[i]);
        if (d == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    PyMem_Free(records);
    return list;
}
