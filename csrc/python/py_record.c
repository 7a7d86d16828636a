/*
 * py_record.c -- the record of a step's sums (core/step_fields.h) and the
 * one formula of every ratio (core/stats.h) for Python:
 *
 *   _C.STEP_FIELDS      one StepField per field, in the record's order: the
 *                       table the Python value type and the rank row are
 *                       made from (mfu_tracker/timing/_totals.py,
 *                       mfu_tracker/distributed/)
 *   _C.RATIOS           one Ratio per ratio the formula forms (core/stats.h):
 *                       its field and its ceiling
 *   _C.LOSSES           the waterfall's losses, in report order
 *   _C.ROLES            the roles of a post-training step (core/step_fields.h,
 *                       MFU_ROLES), in the record's order: (name, meaning)
 *   _C.form_figures()   mfu_figures_form over sums a caller gives: how the
 *                       cross-rank combination forms the job's figures
 *   _C.closing_share()  the share that closes a list to exactly 1
 */
#include <math.h>
#include <string.h>

#include "py_record.h"

const char *mfu_py_unknown_note(int field)
{
    return isnan(mfu_step_fields[field].unknown)
               ? "is recorded as unknown and the figures using it are left out"
               : "is taken as 0";
}

/* ---- the figures as a dict ------------------------------------------------ */

static int set_float(PyObject *d, const char *name, double value)
{
    PyObject *v = mfu_py_float_or_none(value);
    int rc = v == NULL ? -1 : PyDict_SetItemString(d, name, v);
    Py_XDECREF(v);
    return rc;
}

/* The waterfall's shares in report order: the phases' losses, the fields'
 * losses, recompute, compute, other. */
static PyObject *waterfall_dict(const mfu_waterfall *w)
{
    PyObject *d;
    if (!w->formed)
        Py_RETURN_NONE;
    d = PyDict_New();
    for (int l = 0; d != NULL && l < MFU_LOSS_COUNT; l++) {
        if (l == MFU_LOSS_RECOMPUTE) /* the fields' losses come before */
            for (int f = 0; d != NULL && f < MFU_FIELD_COUNT; f++)
                if ((w->fields_present & (1u << f))
                    && set_float(d, mfu_step_fields[f].loss, mfu_work_get(&w->field_share, f)) < 0)
                    Py_CLEAR(d);
        if (d != NULL && (w->present & (1u << l))
            && set_float(d, mfu_loss_name((mfu_loss)l), w->share[l]) < 0)
            Py_CLEAR(d);
    }
    return d;
}

int mfu_py_intern_ratio_names(mfu_module_state *state)
{
    for (int i = 0; i < MFU_RATIO_COUNT; i++)
        if ((state->ratio_names[i] = PyUnicode_InternFromString(mfu_ratios[i].name)) == NULL)
            return -1;
    return 0;
}

int mfu_py_figures_into(const mfu_module_state *state, PyObject *dict, const mfu_metrics *m,
                        const mfu_waterfall *waterfall)
{
    for (int i = 0; i < MFU_RATIO_COUNT; i++) {
        PyObject *value = mfu_py_float_or_none(m->ratio[i]);
        int rc = value == NULL ? -1 : PyDict_SetItem(dict, state->ratio_names[i], value);
        Py_XDECREF(value);
        if (rc < 0)
            return -1;
    }
    if (waterfall != NULL) {
        PyObject *shares = waterfall_dict(waterfall);
        int rc = shares == NULL ? -1 : PyDict_SetItemString(dict, "mfu_lost", shares);
        Py_XDECREF(shares);
        return rc;
    }
    return 0;
}

/* ---- form_figures() ------------------------------------------------------- */

/* The field called `name`, or -1. */
static int field_index(PyObject *name)
{
    const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    for (int f = 0; text != NULL && f < MFU_FIELD_COUNT; f++)
        if (strcmp(text, mfu_step_fields[f].name) == 0)
            return f;
    PyErr_Clear();
    return -1;
}

/* A mapping of field names to numbers (None: NaN) into *out (absent: NaN).
 * ValueError names a key that is no field. */
static int fields_arg(PyObject *obj, const char *argument, mfu_work *out)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    mfu_work_nan(out);
    if (obj == Py_None)
        return 0;
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a dict of the record's fields, not %.80s",
                     argument, Py_TYPE(obj)->tp_name);
        return -1;
    }
    while (PyDict_Next(obj, &pos, &key, &value)) {
        const int f = field_index(key);
        if (f < 0) {
            PyErr_Format(PyExc_ValueError, "%s: %R is not a field of the record "
                         "(_C.STEP_FIELDS)", argument, key);
            return -1;
        }
        if (mfu_py_number_arg(value, mfu_step_fields[f].name, 1, mfu_work_at(out, f)) < 0)
            return -1;
    }
    return 0;
}

/* phase_s: {phase name: seconds per step} (None: unmarked) into `in`. */
static int phases_arg(PyObject *obj, mfu_waterfall_in *in)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (obj == Py_None)
        return 0;
    if (!PyDict_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "phase_s must be a dict, not %.80s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    while (PyDict_Next(obj, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        mfu_phase phase;
        if (name == NULL || mfu_phase_from_name(name, &phase) != MFU_OK) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "phase_s: %R is not a phase", key);
            return -1;
        }
        if (value == Py_None)
            continue;
        if (mfu_py_number_arg(value, "phase_s", 0, &in->phase_s[phase]) < 0)
            return -1;
        in->marked |= 1u << phase;
    }
    return 0;
}

/* form_figures(sums, seconds, /, *, peak_flops_per_sec=None,
 *              peak_bytes_per_sec=None, devices=None,
 *              measured_flops_per_sec=None, step_s=None, phase_s=None,
 *              per_step=None) -> dict */
static PyObject *py_form_figures(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"", "", "peak_flops_per_sec", "peak_bytes_per_sec", "devices",
                               "measured_flops_per_sec", "step_s", "phase_s", "per_step",
                               NULL};
    PyObject *sums_obj, *seconds_obj, *peak_obj = Py_None, *bytes_obj = Py_None;
    PyObject *devices_obj = Py_None, *measured_obj = Py_None, *step_obj = Py_None;
    PyObject *phases_obj = Py_None, *per_step_obj = Py_None, *out;
    mfu_work sums;
    mfu_ceilings ceilings;
    mfu_waterfall_in phases;
    mfu_metrics m;
    mfu_waterfall waterfall;
    double seconds;
    memset(&phases, 0, sizeof phases);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OOOOOOO:form_figures", keywords,
                                     &sums_obj, &seconds_obj, &peak_obj, &bytes_obj,
                                     &devices_obj, &measured_obj, &step_obj, &phases_obj,
                                     &per_step_obj))
        return NULL;
    if (fields_arg(sums_obj, "sums", &sums) < 0
        || mfu_py_number_arg(seconds_obj, "seconds", 1, &seconds) < 0
        || mfu_py_number_arg(peak_obj, "peak_flops_per_sec", 1, &ceilings.flops_per_sec) < 0
        || mfu_py_number_arg(bytes_obj, "peak_bytes_per_sec", 1, &ceilings.bytes_per_sec) < 0
        || mfu_py_number_arg(devices_obj, "devices", 1, &ceilings.devices) < 0
        || mfu_py_number_arg(measured_obj, "measured_flops_per_sec", 1,
                             &ceilings.measured_flops_per_sec) < 0
        || mfu_py_number_arg(step_obj, "step_s", 1, &phases.step_s) < 0
        || phases_arg(phases_obj, &phases) < 0
        || fields_arg(per_step_obj, "per_step", &phases.per_step) < 0)
        return NULL;
    mfu_figures_form(&sums, seconds, &ceilings, step_obj == Py_None ? NULL : &phases, &m,
                     &waterfall);
    out = PyDict_New();
    if (out != NULL
        && mfu_py_figures_into(mfu_module_get_state(module), out, &m,
                               step_obj == Py_None ? NULL : &waterfall) < 0)
        Py_CLEAR(out);
    return out;
}

/* closing_share(shares, /) -> float */
static PyObject *py_closing_share(PyObject *Py_UNUSED(module), PyObject *obj)
{
    PyObject *seq = PySequence_Fast(obj, "closing_share() takes a sequence of shares");
    double *shares, x;
    Py_ssize_t n;
    if (seq == NULL)
        return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    shares = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *shares);
    if (shares == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (mfu_py_number_arg(PySequence_Fast_GET_ITEM(seq, i), "shares", 0, &shares[i]) < 0) {
            PyMem_Free(shares);
            Py_DECREF(seq);
            return NULL;
        }
    }
    x = mfu_closing_share(shares, (size_t)n);
    PyMem_Free(shares);
    Py_DECREF(seq);
    return PyFloat_FromDouble(x);
}

static PyMethodDef record_functions[] = {
    {"form_figures", (PyCFunction)(void (*)(void))py_form_figures, METH_VARARGS | METH_KEYWORDS,
     "form_figures(sums, seconds, /, *, peak_flops_per_sec=None, peak_bytes_per_sec=None, "
     "devices=None, measured_flops_per_sec=None, step_s=None, phase_s=None, per_step=None)\n"
     "--\n\nThe one formula of every figure (core/stats.h, mfu_figures_form): each ratio "
     "of `sums` ({field: value}, absent or None: unknown) over `seconds` against the "
     "ceilings (totals over the devices the sums cover; None: unknown) and, with "
     "`step_s`, the waterfall's shares ('mfu_lost', None when it is not formed) from "
     "`phase_s` ({phase: seconds per step}) and `per_step` ({field: seconds per step}). "
     "A dict, None where a figure is unavailable."},
    {"closing_share", py_closing_share, METH_O,
     "closing_share(shares, /)\n--\n\nThe share x that makes the exact sum of shares + "
     "[x] 1.0 (core/waterfall.h): the waterfall's and the job ledger's `other`."},
    {NULL, NULL, 0, NULL},
};

static PyStructSequence_Field step_field_fields[] = {
    {"name", "the member, keyword and key"},
    {"unit", "FLOPs, bytes, tokens or s"},
    {"given", "a caller gives it (step(), book(), metrics()); else the tracker measures it"},
    {"defaulted", "the tracker's configuration gives a per-step default"},
    {"per_step", "across ranks: seconds per step, peak-weighted like a phase"},
    {"loss", "the waterfall's share it makes, or None"},
    {"meaning", "one line"},
    {NULL, NULL},
};

static PyStructSequence_Desc step_field_desc = {
    "mfu_tracker._C.StepField", "One field of the step record (core/step_fields.h).",
    step_field_fields, 7,
};

static PyStructSequence_Field ratio_fields[] = {
    {"name", "the figure's name"},
    {"field", "the record's field it divides"},
    {"ceiling", "rate (per second), peak_flops, peak_bytes, devices or measured_flops"},
    {"meaning", "one line"},
    {NULL, NULL},
};

static PyStructSequence_Desc ratio_desc = {
    "mfu_tracker._C.Ratio", "One ratio of the one formula (core/stats.h).", ratio_fields, 4,
};

/* A struct sequence of `type` from n new references (NULL for a failure):
 * a new reference, or NULL. */
static PyObject *row_of(PyTypeObject *type, PyObject **items, int n)
{
    PyObject *row = PyStructSequence_New(type);
    int failed = row == NULL;
    for (int i = 0; i < n; i++) {
        failed |= items[i] == NULL;
        if (row != NULL)
            PyStructSequence_SetItem(row, i, items[i]); /* steals; NULL for a failure */
        else
            Py_XDECREF(items[i]);
    }
    if (failed)
        Py_CLEAR(row);
    return row;
}

static PyObject *ratio_row(PyTypeObject *type, int i)
{
    static const char *const ceilings[] = {
        [MFU_CEILING_RATE] = "rate", [MFU_CEILING_PEAK_FLOPS] = "peak_flops",
        [MFU_CEILING_PEAK_BYTES] = "peak_bytes", [MFU_CEILING_DEVICES] = "devices",
        [MFU_CEILING_MEASURED_FLOPS] = "measured_flops",
    };
    const mfu_ratio *r = &mfu_ratios[i];
    PyObject *items[4] = {
        PyUnicode_FromString(r->name), PyUnicode_FromString(mfu_step_fields[r->field].name),
        PyUnicode_FromString(ceilings[r->ceiling]), PyUnicode_FromString(r->meaning),
    };
    return row_of(type, items, 4);
}

static PyObject *step_field(PyTypeObject *type, int f)
{
    const mfu_step_field *field = &mfu_step_fields[f];
    PyObject *items[7] = {
        PyUnicode_FromString(field->name),
        PyUnicode_FromString(field->unit),
        PyBool_FromLong((field->flags & MFU_FIELD_GIVEN) != 0),
        PyBool_FromLong((field->flags & MFU_FIELD_DEFAULTED) != 0),
        PyBool_FromLong((field->flags & MFU_FIELD_PER_STEP) != 0),
        field->loss != NULL ? PyUnicode_FromString(field->loss) : Py_NewRef(Py_None),
        PyUnicode_FromString(field->meaning),
    };
    return row_of(type, items, 7);
}

/* Append a new str to a list: 0, or -1 with an exception. */
static int append_str(PyObject *list, const char *text)
{
    PyObject *s = PyUnicode_FromString(text);
    int rc = s == NULL ? -1 : PyList_Append(list, s);
    Py_XDECREF(s);
    return rc;
}

static PyObject *loss_names(void)
{
    PyObject *names = PyList_New(0);
    for (int l = 0; names != NULL && l < MFU_LOSS_COUNT; l++) {
        if (l == MFU_LOSS_RECOMPUTE)
            for (int f = 0; names != NULL && f < MFU_FIELD_COUNT; f++)
                if (mfu_step_fields[f].loss != NULL
                    && append_str(names, mfu_step_fields[f].loss) < 0)
                    Py_CLEAR(names);
        if (names != NULL && append_str(names, mfu_loss_name((mfu_loss)l)) < 0)
            Py_CLEAR(names);
    }
    if (names != NULL)
        Py_SETREF(names, PyList_AsTuple(names));
    return names;
}

/* A tuple of n rows of a new struct sequence type (added to the module),
 * made by row(type, i), as module attribute `name`. */
static int add_table(PyObject *module, PyStructSequence_Desc *desc, const char *name, int n,
                     PyObject *(*row)(PyTypeObject *, int))
{
    PyTypeObject *type = PyStructSequence_NewType(desc);
    PyObject *rows;
    int rc;
    if (type == NULL)
        return -1;
    rc = PyModule_AddType(module, type);
    rows = rc < 0 ? NULL : PyTuple_New(n);
    for (int i = 0; rows != NULL && i < n; i++) {
        PyObject *item = row(type, i);
        if (item == NULL)
            Py_CLEAR(rows);
        else
            PyTuple_SET_ITEM(rows, i, item);
    }
    Py_DECREF(type);
    if (rows == NULL)
        return -1;
    rc = PyModule_AddObjectRef(module, name, rows);
    Py_DECREF(rows);
    return rc;
}

/* ((name, meaning), ...) of the roles, in the table's order. */
static PyObject *role_rows(void)
{
#define MFU_PY_ROLE_COUNT_(X, ID, name, meaning) +1
    enum { ROLE_COUNT = 0 MFU_ROLES(MFU_PY_ROLE_COUNT_, X) };
    static const char *const rows[][2] = {
#define MFU_PY_ROLE_(X, ID, name, meaning) {#name, meaning},
        MFU_ROLES(MFU_PY_ROLE_, X)
    };
#undef MFU_PY_ROLE_
#undef MFU_PY_ROLE_COUNT_
    PyObject *roles = PyTuple_New(ROLE_COUNT);
    for (int i = 0; roles != NULL && i < ROLE_COUNT; i++) {
        PyObject *row = Py_BuildValue("(ss)", rows[i][0], rows[i][1]);
        if (row == NULL)
            Py_CLEAR(roles);
        else
            PyTuple_SET_ITEM(roles, i, row);
    }
    return roles;
}

int mfu_py_record_exec(PyObject *module)
{
    PyObject *losses;
    int rc;
    if (add_table(module, &step_field_desc, "STEP_FIELDS", MFU_FIELD_COUNT, step_field) < 0
        || add_table(module, &ratio_desc, "RATIOS", MFU_RATIO_COUNT, ratio_row) < 0)
        return -1;
    if (mfu_py_intern_ratio_names(mfu_module_get_state(module)) < 0)
        return -1;
    losses = loss_names();
    if (losses == NULL)
        return -1;
    rc = PyModule_AddObjectRef(module, "LOSSES", losses);
    Py_DECREF(losses);
    if (rc < 0)
        return -1;
    losses = role_rows();
    if (losses == NULL)
        return -1;
    rc = PyModule_AddObjectRef(module, "ROLES", losses);
    Py_DECREF(losses);
    if (rc < 0)
        return -1;
    return PyModule_AddFunctions(module, record_functions);
}
