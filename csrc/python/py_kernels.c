/*
 * py_kernels.c -- the kernel class table (core/breakdown/kernels.h) and the union
 * timeline (core/breakdown/timeline.h) for Python: the classes in priority order,
 * a name's class, the rows, and a profiled step's split. The kernel
 * breakdown (mfu_tracker/timing/_breakdown.py) calls these and never
 * repeats a rule.
 */
#include <string.h>

#include "mfu_module.h"

static const mfu_py_choice source_choices[] = {
    {"kernel", MFU_KSOURCE_KERNEL},
    {"op", MFU_KSOURCE_OP},
    {"annotation", MFU_KSOURCE_ANNOTATION},
    {NULL, 0},
};

static const char *const match_names[] = {"exact", "prefix", "contains", "contains_nocase"};

static PyObject *py_kernel_classes(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    PyObject *names = PyTuple_New(MFU_KCLASS_COUNT);
    for (int c = 0; names != NULL && c < MFU_KCLASS_COUNT; c++) {
        PyObject *name = PyUnicode_FromString(mfu_kclass_name((mfu_kclass)c));
        if (name == NULL)
            Py_CLEAR(names);
        else
            PyTuple_SET_ITEM(names, c, name);
    }
    return names;
}

/* kernel_class(name, source) -> (class name or None, scope, rule): rule is the
 * row's index, -1 for an op the FLOP op table counts, None when no row matched */
static PyObject *py_kernel_class(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *name_obj, *source_obj;
    const char *name;
    int source, scope = 0;
    mfu_kclass kclass;
    size_t rule = 0;
    if (!PyArg_ParseTuple(args, "OO:kernel_class", &name_obj, &source_obj)
        || mfu_py_str_arg(name_obj, "name", &name) < 0
        || mfu_py_choice_arg(source_obj, "source", source_choices, &source) < 0)
        return NULL;
    (void)mfu_kclass_of(name, (unsigned)source, &kclass, &scope, &rule); /* valid by now */
    PyObject *index = rule < mfu_krule_count()      ? PyLong_FromSize_t(rule)
                      : rule == MFU_KRULE_OP_TABLE ? PyLong_FromLong(-1)
                                                   : Py_NewRef(Py_None);
    if (index == NULL)
        return NULL;
    const char *class_name = mfu_kclass_name(kclass);
    return Py_BuildValue("(zNN)", class_name, PyBool_FromLong(scope), index);
}

static PyObject *sources_tuple(unsigned mask)
{
    PyObject *names = PyList_New(0);
    for (const mfu_py_choice *c = source_choices; names != NULL && c->name != NULL; c++) {
        if (!(mask & (unsigned)c->value))
            continue;
        PyObject *name = PyUnicode_FromString(c->name);
        if (name == NULL || PyList_Append(names, name) < 0)
            Py_CLEAR(names);
        Py_XDECREF(name);
    }
    if (names == NULL)
        return NULL;
    PyObject *out = PyList_AsTuple(names);
    Py_DECREF(names);
    return out;
}

static PyObject *py_kernel_rules(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    size_t n = mfu_krule_count();
    PyObject *rows = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; rows != NULL && i < n; i++) {
        const mfu_krule *row = mfu_krule_get(i);
        PyObject *item = Py_BuildValue("{sssssNsssNss}", "pattern", row->pattern, "match",
                                       match_names[row->match], "sources",
                                       sources_tuple(row->sources), "class",
                                       mfu_kclass_name(row->kclass), "scope",
                                       PyBool_FromLong(row->scope), "source", row->source);
        if (item == NULL)
            Py_CLEAR(rows);
        else
            PyTuple_SET_ITEM(rows, (Py_ssize_t)i, item);
    }
    return rows;
}

static PyObject *int64_tuple(const int64_t *values, int n)
{
    PyObject *out = PyTuple_New(n);
    for (int i = 0; out != NULL && i < n; i++) {
        PyObject *value = PyLong_FromLongLong(values[i]);
        if (value == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, value);
    }
    return out;
}

/* The four columns into one array of intervals (PyMem); NULL with the
 * exception set. The lengths must agree; values are checked by the core. */
static mfu_interval *intervals_arg(PyObject *const columns[4], size_t *count)
{
    static const char *const names[4] = {"starts_ns", "ends_ns", "lanes", "classes"};
    int64_t *values[4] = {NULL, NULL, NULL, NULL};
    size_t sizes[4] = {0, 0, 0, 0};
    mfu_interval *out = NULL;
    int ok = 1;
    for (int c = 0; ok && c < 4; c++)
        ok = mfu_py_int64_array_arg(columns[c], names[c], &values[c], &sizes[c]) == 0;
    if (ok && (sizes[1] != sizes[0] || sizes[2] != sizes[0] || sizes[3] != sizes[0])) {
        PyErr_Format(PyExc_ValueError, "starts_ns, ends_ns, lanes, classes: lengths differ "
                     "(%zu, %zu, %zu, %zu)", sizes[0], sizes[1], sizes[2], sizes[3]);
        ok = 0;
    }
    if (ok && sizes[0] > MFU_TIMELINE_INTERVALS_MAX) {
        PyErr_Format(PyExc_ValueError, "starts_ns: %zu intervals, more than %u",
                     sizes[0], (unsigned)MFU_TIMELINE_INTERVALS_MAX);
        ok = 0;
    }
    if (ok) {
        out = PyMem_Malloc((sizes[0] > 0 ? sizes[0] : 1) * sizeof *out);
        if (out == NULL)
            PyErr_NoMemory();
    }
    for (size_t i = 0; out != NULL && i < sizes[0]; i++) {
        int32_t lane = values[2][i] < INT32_MIN || values[2][i] > INT32_MAX ? -1
                                                                            : (int32_t)values[2][i];
        int32_t kclass = values[3][i] < 0 || values[3][i] > INT32_MAX ? -1 : (int32_t)values[3][i];
        out[i] = (mfu_interval){values[0][i], values[1][i], lane, kclass};
    }
    for (int c = 0; c < 4; c++)
        PyMem_Free(values[c]);
    *count = sizes[0];
    return out;
}

static PyObject *timeline_dict(const mfu_timeline *t)
{
    return Py_BuildValue("{sLsLsNsNsN}", "window_ns", (long long)t->window_ns, "idle_ns",
                         (long long)t->idle_ns, "time_ns", int64_tuple(t->time_ns, MFU_KCLASS_COUNT),
                         "active_ns", int64_tuple(t->active_ns, MFU_KCLASS_COUNT), "count",
                         int64_tuple(t->count, MFU_KCLASS_COUNT));
}

/* timeline_split(starts_ns, ends_ns, lanes, classes, lane_count, window_start_ns,
 * window_end_ns) -> dict */
static PyObject *py_timeline_split(PyObject *Py_UNUSED(module), PyObject *tuple)
{
    PyObject *args[7];
    long long lane_count;
    int64_t start, end;
    size_t n = 0;
    if (!PyArg_ParseTuple(tuple, "OOOOOOO:timeline_split", &args[0], &args[1], &args[2],
                          &args[3], &args[4], &args[5], &args[6])
        || mfu_py_int_arg(args[4], "lane_count", 1, MFU_TIMELINE_LANES_MAX, &lane_count) < 0
        || mfu_py_int64_arg(args[5], "window_start_ns", &start) < 0
        || mfu_py_int64_arg(args[6], "window_end_ns", &end) < 0)
        return NULL;
    if (end < start)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "window_end_ns",
                            "%lld is before window_start_ns %lld", (long long)end,
                            (long long)start);
    mfu_interval *intervals = intervals_arg(args, &n);
    if (intervals == NULL)
        return NULL;
    size_t bad = mfu_timeline_first_invalid(intervals, n, (int32_t)lane_count);
    if (bad < n) {
        mfu_interval iv = intervals[bad];
        PyMem_Free(intervals);
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "intervals",
                            "interval %zu: [%lld, %lld) on lane %d of class %d (an end before "
                            "its start, a lane outside [0, %lld) or a class outside [0, %d))",
                            bad, (long long)iv.start_ns, (long long)iv.end_ns, (int)iv.lane,
                            (int)iv.kclass, lane_count, MFU_KCLASS_COUNT);
    }
    mfu_timeline t;
    mfu_status status;
    Py_BEGIN_ALLOW_THREADS
    status = mfu_timeline_split(intervals, n, (int32_t)lane_count, start, end, &t);
    Py_END_ALLOW_THREADS
    PyMem_Free(intervals);
    if (status != MFU_OK)
        return mfu_py_raise(status, "window_start_ns / window_end_ns", NULL);
    return timeline_dict(&t);
}

static PyMethodDef kernels_methods[] = {
    {"kernel_classes", py_kernel_classes, METH_NOARGS,
     "kernel_classes()\n--\n\nThe kernel classes, in the priority order that settles overlap "
     "(core/breakdown/kernels.h)."},
    {"kernel_class", py_kernel_class, METH_VARARGS,
     "kernel_class(name, source, /)\n--\n\n(class or None, scope, rule) of a name from source "
     "'kernel', 'op' or 'annotation'; rule: the row's index, -1 for an op the FLOP op table "
     "counts, None for no row."},
    {"kernel_rules", py_kernel_rules, METH_NOARGS,
     "kernel_rules()\n--\n\nEvery row of the kernel class table (core/breakdown/kernels.c), as dicts."},
    {"timeline_split", py_timeline_split, METH_VARARGS,
     "timeline_split(starts_ns, ends_ns, lanes, classes, lane_count, window_start_ns, "
     "window_end_ns, /)\n--\n\nA profiled step's window split by class on the union timeline "
     "(core/breakdown/timeline.h): window_ns, idle_ns and per class time_ns, active_ns, count."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_kernels_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, kernels_methods);
}
