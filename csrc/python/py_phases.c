/*
 * py_phases.c -- the phase marks of _C.StepTracker, for the MFU waterfall
 * (core/base/phases.h, mfu_tracker/timing/_waterfall.py).
 *
 * begin_phase / switch_phase / end_phase each put one mark on the tracker's
 * clock (never a sync); phase(name) is a small context manager doing the
 * same on entry and exit; phases() reads the window's seconds per phase,
 * ledger() the job ledger's running totals (core/steps/steps.h, "The job
 * ledger's totals").
 * Names are checked here: an unknown one is a ValueError naming it. Misuse
 * (an end without a phase, too deep a nesting) is one warning, ignored.
 */
#include <math.h>
#include <string.h>

#include "py_phases.h"

static const mfu_py_choice phase_choices[] = {
    {"data", MFU_PHASE_DATA},
    {"forward", MFU_PHASE_FORWARD},
    {"backward", MFU_PHASE_BACKWARD},
    {"optimizer", MFU_PHASE_OPTIMIZER},
    {"communication", MFU_PHASE_COMMUNICATION},
    {"checkpoint", MFU_PHASE_CHECKPOINT},
    {"eval", MFU_PHASE_EVAL},
    {"compile", MFU_PHASE_COMPILE},
    {NULL, 0},
};

/* A phase name: the interned names by identity (the hot path), else by
 * value; anything else is a ValueError naming it (a configuration error in
 * the loop's code, raised at its first run). */
static int phase_arg(const step_object *s, PyObject *name, mfu_phase *out)
{
    int value;
    for (int i = 0; i < MFU_PHASE_COUNT; i++) {
        if (name == s->state->phase_names[i]) {
            *out = (mfu_phase)i;
            return 0;
        }
    }
    if (mfu_py_choice_arg(name, "phase", phase_choices, &value) < 0)
        return -1;
    *out = (mfu_phase)value;
    return 0;
}

enum phase_op { PHASE_BEGIN, PHASE_END, PHASE_SWITCH, EXCLUDE_BEGIN, EXCLUDE_END };

/* One phase call on the core, under the lock; misuse (an end without a
 * phase, too deep a nesting) and a failing clock become one warning each. */
static void phase_call(step_object *s, enum phase_op op, mfu_phase phase)
{
    mfu_status status;
    mfu_py_lock_acquire(s->lock);
    if (s->steps == NULL) {
        mfu_py_step_unlock(s);
        return;
    }
    status = op == PHASE_BEGIN     ? mfu_steps_phase_begin(s->steps, phase)
             : op == PHASE_SWITCH  ? mfu_steps_phase_switch(s->steps, phase)
             : op == PHASE_END     ? mfu_steps_phase_end(s->steps)
             : op == EXCLUDE_BEGIN ? mfu_steps_exclude_begin(s->steps)
                                   : mfu_steps_exclude_end(s->steps);
    if (status == MFU_ERR_INVALID_ARGUMENT) {
        char message[300];
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.%s: %s; the call is ignored",
                      op == PHASE_END ? "end_phase()" : "begin_phase()",
                      op == PHASE_END ? "no phase is open"
                                      : "too many nested phases (more than "
                                        "_C.LIMIT_PHASE_DEPTH_MAX)");
        mfu_py_step_queue_warning(s, &s->warned_phase_misuse, message);
    }
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
}

/* The public class of `self` ("Tracker": the Python subclass users hold,
 * not this base type), for messages. */
static const char *public_type_name(PyObject *self)
{
    const char *name = Py_TYPE(self)->tp_name;
    const char *dot = strrchr(name, '.');
    return dot != NULL ? dot + 1 : name;
}

/* A phase method's arguments: `takes_name` -> exactly one positional (the
 * phase name), else none. A wrong call is a TypeError naming the public
 * method and what it takes -- not CPython's "StepTracker.end_phase() takes
 * no arguments", which names an internal class. */
static int phase_method_args(PyObject *self, const char *method, int takes_name,
                             Py_ssize_t nargs, PyObject *kwnames, PyObject *const *args)
{
    const char *type = public_type_name(self);
    Py_ssize_t given = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    if (kwnames == NULL && nargs == (takes_name ? 1 : 0))
        return 0;
    if (!takes_name && nargs > 0)
        PyErr_Format(PyExc_TypeError,
                     "%s.%s() takes no arguments (%zd given: %R): it ends the innermost "
                     "open phase, whatever its name; `with tracker.phase(name):` begins "
                     "and ends one by name", type, method, given, args[0]);
    else if (!takes_name)
        PyErr_Format(PyExc_TypeError,
                     "%s.%s() takes no arguments (%zd given): it ends the innermost open "
                     "phase, whatever its name", type, method, given);
    else
        PyErr_Format(PyExc_TypeError,
                     "%s.%s() takes one argument, the phase name ('data', 'forward', "
                     "'backward', 'optimizer', 'communication'), passed by position "
                     "(%zd argument(s) given)", type, method, given);
    return -1;
}

/* begin_phase(name) / switch_phase(name): the name checked, then the call. */
static PyObject *named_phase_call(PyObject *self, const char *method, PyObject *const *args,
                                  Py_ssize_t nargs, PyObject *kwnames, enum phase_op op)
{
    mfu_phase phase;
    if (phase_method_args(self, method, 1, nargs, kwnames, args) < 0 ||
        phase_arg((step_object *)self, args[0], &phase) < 0)
        return NULL;
    phase_call((step_object *)self, op, phase);
    Py_RETURN_NONE;
}

PyObject *mfu_py_step_begin_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
    return named_phase_call(self, "begin_phase", args, nargs, kwnames, PHASE_BEGIN);
}

PyObject *mfu_py_step_switch_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    return named_phase_call(self, "switch_phase", args, nargs, kwnames, PHASE_SWITCH);
}

PyObject *mfu_py_step_end_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    if (phase_method_args(self, "end_phase", 0, nargs, kwnames, args) < 0)
        return NULL;
    phase_call((step_object *)self, PHASE_END, MFU_PHASE_NONE);
    Py_RETURN_NONE;
}

PyObject *mfu_py_step_exclude_begin(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    phase_call((step_object *)self, EXCLUDE_BEGIN, MFU_PHASE_NONE);
    Py_RETURN_NONE;
}

PyObject *mfu_py_step_exclude_end(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    phase_call((step_object *)self, EXCLUDE_END, MFU_PHASE_NONE);
    Py_RETURN_NONE;
}

PyObject *mfu_py_step_phase_depth(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    uint32_t depth = 0;
    mfu_py_lock_acquire(s->lock);
    if (s->steps != NULL)
        depth = mfu_steps_phase_depth(s->steps);
    PyThread_release_lock(s->lock);
    return PyLong_FromUnsignedLong(depth);
}

/* phase(name): a context manager whose __enter__ begins the phase and
 * whose __exit__ ends it (exceptions propagate unchanged). A small object
 * per call, holding the tracker. */
typedef struct {
    PyObject_HEAD
    PyObject *tracker;
    mfu_phase phase;
} phase_block;

PyObject *mfu_py_step_phase(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    mfu_phase phase;
    phase_block *block;
    if (phase_method_args(self, "phase", 1, nargs, kwnames, args) < 0 ||
        phase_arg(s, args[0], &phase) < 0)
        return NULL;
    block = PyObject_New(phase_block, s->state->phase_type);
    if (block == NULL)
        return NULL;
    block->tracker = Py_NewRef(self);
    block->phase = phase;
    return (PyObject *)block;
}

static PyObject *phase_enter(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    phase_block *b = (phase_block *)self;
    phase_call((step_object *)b->tracker, PHASE_BEGIN, b->phase);
    return Py_NewRef(self);
}

static PyObject *phase_exit(PyObject *self, PyObject *const *Py_UNUSED(args),
                            Py_ssize_t Py_UNUSED(nargs))
{
    phase_block *b = (phase_block *)self;
    phase_call((step_object *)b->tracker, PHASE_END, MFU_PHASE_NONE);
    Py_RETURN_FALSE;
}

static void phase_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_XDECREF(((phase_block *)self)->tracker);
    PyObject_Free(self);
    Py_DECREF(type);
}

static PyMethodDef phase_methods[] = {
    {"__enter__", phase_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))phase_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot phase_slots[] = {
    {Py_tp_doc, (void *)"A phase() block: begins the phase on entry, ends it on exit."},
    {Py_tp_dealloc, phase_dealloc},
    {Py_tp_methods, phase_methods},
    {0, NULL},
};

static PyType_Spec phase_spec = MFU_PY_TYPE_SPEC(
    "PhaseBlock", phase_block,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    phase_slots);

PyObject *mfu_py_phase_dict(const step_object *s, const double *seconds, unsigned marked,
                            double divisor)
{
    PyObject *dict = PyDict_New();
    if (dict == NULL)
        return NULL;
    for (int p = 0; p < MFU_PHASE_COUNT; p++) {
        PyObject *value;
        if (!(marked & (1u << p)))
            continue;
        value = PyFloat_FromDouble(seconds[p] / divisor);
        if (value == NULL || PyDict_SetItem(dict, s->state->phase_names[p], value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(dict);
            return NULL;
        }
        Py_DECREF(value);
    }
    return dict;
}

/* phases(): the window's seconds per step of each marked phase, and the
 * excluded seconds per step. */
PyObject *mfu_py_step_phases(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_phase_summary sum;
    PyObject *seconds, *result;
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    mfu_py_lock_acquire(s->lock);
    mfu_steps_phases(s->steps, &sum);
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
    seconds = mfu_py_phase_dict(s, sum.seconds, sum.steps > 0 ? sum.marked : 0u,
                         sum.steps > 0 ? (double)sum.steps : 1.0);
    if (seconds == NULL)
        return NULL;
    result = Py_BuildValue("{sIsNsd}", "steps", (unsigned int)sum.steps, "phase_s",
                           seconds, "excluded_s",
                           sum.steps > 0 ? sum.excluded_s / sum.steps : 0.0);
    return result;
}

/* ledger(): the job ledger's running totals (core/steps/steps.h): steps (closed,
 * accounted for), dropped, step_s, phase_s (every phase, seconds), own_s,
 * model_flops (known steps), unknown_flops_steps, first_boundary_unix_s
 * (None before the first boundary), first_step_s (None before the first
 * pushed step). */
PyObject *mfu_py_step_ledger(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_steps_ledger totals;
    PyObject *seconds, *first, *first_step;
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    mfu_py_lock_acquire(s->lock);
    mfu_steps_get_ledger(s->steps, &totals);
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
    seconds = mfu_py_phase_dict(s, totals.phase_s, ~0u, 1.0);
    if (seconds == NULL)
        return NULL;
    first = isnan(totals.first_boundary_unix_s)
                ? Py_NewRef(Py_None)
                : PyFloat_FromDouble(totals.first_boundary_unix_s);
    if (first == NULL) {
        Py_DECREF(seconds);
        return NULL;
    }
    first_step = isnan(totals.first_step_s) ? Py_NewRef(Py_None)
                                            : PyFloat_FromDouble(totals.first_step_s);
    if (first_step == NULL) {
        Py_DECREF(seconds);
        Py_DECREF(first);
        return NULL;
    }
    return Py_BuildValue("{sKsKsdsNsdsdsKsNsN}", "steps", (unsigned long long)totals.steps,
                         "dropped", (unsigned long long)totals.dropped, "step_s",
                         totals.step_s, "phase_s", seconds, "own_s", totals.own_s,
                         "model_flops", totals.model_flops, "unknown_flops_steps",
                         (unsigned long long)totals.unknown_flops_steps,
                         "first_boundary_unix_s", first, "first_step_s", first_step);
}

int mfu_py_phases_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    state->phase_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &phase_spec, NULL);
    if (state->phase_type == NULL || PyModule_AddType(module, state->phase_type) < 0)
        return -1;
    for (int i = 0; i < MFU_PHASE_COUNT; i++) {
        state->phase_names[i] = PyUnicode_InternFromString(mfu_phase_name((mfu_phase)i));
        if (state->phase_names[i] == NULL)
            return -1;
    }
    return 0;
}
