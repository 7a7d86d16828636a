/*
 * py_args.c -- the argument vocabulary of mfu_tracker._C (see py_args.h).
 */
#include <math.h>
#include <string.h>

#include "mfu_module.h"

static int type_error(PyObject *obj, const char *argument, const char *expected)
{
    PyErr_Format(PyExc_TypeError, "%s must be %s, not %.80s", argument,
                 expected, Py_TYPE(obj)->tp_name);
    return -1;
}

int mfu_py_int_arg(PyObject *obj, const char *argument, long long low,
                   long long high, long long *out)
{
    if (PyBool_Check(obj) || !PyLong_Check(obj))
        return type_error(obj, argument, "an int");
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (overflow || value < low || value > high) {
        /* PyErr_Format, not mfu_py_raise: only it knows %R (a huge int) */
        PyErr_Format(PyExc_ValueError, "%s: must be between %lld and %lld, got %R",
                     argument, low, high, obj);
        return -1;
    }
    *out = value;
    return 0;
}

int mfu_py_int64_arg(PyObject *obj, const char *argument, int64_t *out)
{
    if (PyBool_Check(obj) || !PyLong_Check(obj))
        return type_error(obj, argument, "an int");
    long long value = PyLong_AsLongLong(obj);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_OverflowError, "%s: %R does not fit in int64",
                     argument, obj);
        return -1;
    }
    *out = (int64_t)value;
    return 0;
}

int mfu_py_real_arg(PyObject *obj, const char *argument, unsigned flags,
                    double low, double *out)
{
    const int none_ok = (flags & MFU_ARG_NONE_OK) != 0;
    if (obj == Py_None) {
        if (!none_ok)
            return type_error(obj, argument, "a number");
        *out = NAN;
        return 0;
    }
    double value;
    /* Exact floats and ints first, without a call that allocates (an int
     * through PyFloat_AsDouble becomes a float object first): hot paths
     * such as Tracker.step(num_tokens) convert a number per call. */
    if (PyFloat_CheckExact(obj)) {
        value = PyFloat_AS_DOUBLE(obj);
    } else if (PyBool_Check(obj) || !(PyLong_Check(obj) || PyFloat_Check(obj))) {
        return type_error(obj, argument, none_ok ? "a number or None" : "a number");
    } else {
        value = PyLong_Check(obj) ? PyLong_AsDouble(obj) : PyFloat_AsDouble(obj);
        if (value == -1.0 && PyErr_Occurred())
            return -1; /* an int too large for a double */
    }
    const char *tail = none_ok ? " or None" : "";
    if (flags & MFU_ARG_ANY_FINITE) {
        if (!isfinite(value)) {
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                         "must be a finite number%s, got %g", tail, value);
            return -1;
        }
    } else if (flags & MFU_ARG_ABOVE_LOW) {
        if (!(isfinite(value) && value > low)) {
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                         "must be a finite number > %g%s, got %g", low, tail, value);
            return -1;
        }
    } else if (!(isfinite(value) && value >= low)) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "must be a finite number >= %g%s, got %g", low, tail, value);
        return -1;
    }
    *out = value;
    return 0;
}

int mfu_py_number_arg(PyObject *obj, const char *argument, int allow_none,
                      double *out)
{
    if (obj == Py_None && allow_none) {
        *out = NAN;
        return 0;
    }
    /* bool is an int subclass; True as a FLOP count is a bug, not a 1. */
    if (PyBool_Check(obj) || !(PyLong_Check(obj) || PyFloat_Check(obj))) {
        PyErr_Format(PyExc_TypeError, "%s must be a number%s, not %.80s",
                     argument, allow_none ? " or None" : "",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred())
        return -1; /* an int too large for a double */
    /* NaN is the core's "unknown"; from a caller it is a bad value (None
     * says unknown), so it must not slip through as "not given". */
    if (isnan(*out)) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "must be a finite number, got nan");
        return -1;
    }
    return 0;
}

int mfu_py_flag_arg(PyObject *obj, const char *argument, int *out)
{
    if (PyBool_Check(obj)) {
        *out = obj == Py_True;
        return 0;
    }
    if (PyLong_Check(obj)) {
        long value = PyLong_AsLong(obj);
        if (value == 0 || value == 1) {
            *out = (int)value;
            return 0;
        }
        PyErr_Clear();
    }
    PyErr_Format(PyExc_TypeError, "%s must be a bool, not %R", argument, obj);
    return -1;
}

int mfu_py_str_arg(PyObject *obj, const char *argument, const char **out)
{
    if (!PyUnicode_Check(obj))
        return type_error(obj, argument, "a str");
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(obj, &size);
    if (text == NULL)
        return -1; /* lone surrogates: UnicodeEncodeError */
    if ((Py_ssize_t)strlen(text) != size) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument, "contains a NUL character");
        return -1;
    }
    *out = text;
    return 0;
}

int mfu_py_choice_arg(PyObject *obj, const char *argument,
                      const mfu_py_choice *choices, int *out)
{
    if (!PyUnicode_Check(obj))
        return type_error(obj, argument, "a str");
    const char *text = PyUnicode_AsUTF8(obj);
    if (text == NULL)
        return -1;
    char valid[256] = "";
    size_t used = 0;
    for (const mfu_py_choice *c = choices; c->name != NULL; c++) {
        if (strcmp(text, c->name) == 0) {
            *out = c->value;
            return 0;
        }
        int n = PyOS_snprintf(valid + used, sizeof valid - used, "%s'%s'",
                              used ? ", " : "", c->name);
        if (n > 0 && (size_t)n < sizeof valid - used)
            used += (size_t)n;
    }
    PyErr_Format(PyExc_ValueError, "%s must be one of %s, got %R", argument,
                 valid, obj);
    return -1;
}

const char *mfu_py_choice_name(const mfu_py_choice *choices, int value)
{
    for (const mfu_py_choice *c = choices; c->name != NULL; c++) {
        if (c->value == value)
            return c->name;
    }
    return "?";
}

int mfu_py_int64_array_arg(PyObject *obj, const char *argument, int64_t **out,
                           size_t *count)
{
    PyObject *seq = PySequence_Fast(obj, "");
    if (seq == NULL) {
        PyErr_Clear();
        return type_error(obj, argument, "a sequence of ints");
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *values = (size_t)n > SIZE_MAX / sizeof(int64_t)
                          ? NULL
                          : (int64_t *)PyMem_Malloc((n > 0 ? (size_t)n : 1)
                                                    * sizeof(int64_t));
    if (values == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (mfu_py_int64_arg(PySequence_Fast_GET_ITEM(seq, i), argument,
                             &values[i]) < 0) {
            PyMem_Free(values);
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *out = values;
    *count = (size_t)n;
    return 0;
}

int mfu_py_shape_arg(PyObject *obj, const char *argument, size_t ndim,
                     int64_t *out)
{
    int64_t *values = NULL;
    size_t count = 0;
    if (mfu_py_int64_array_arg(obj, argument, &values, &count) < 0)
        return -1;
    if (count != ndim) {
        PyMem_Free(values);
        PyErr_Format(PyExc_ValueError, "%s: expected %zu dims, got %zu",
                     argument, ndim, count);
        return -1;
    }
    memcpy(out, values, ndim * sizeof *out);
    PyMem_Free(values);
    return 0;
}

int mfu_py_stream_arg(PyObject *obj, const char *argument, uintptr_t *out)
{
    if (PyBool_Check(obj) || !PyLong_Check(obj))
        return type_error(obj, argument, "a raw stream handle (int)");
    unsigned long long value = PyLong_AsUnsignedLongLong(obj);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "%s must be a stream handle in [0, 2**64), got %R",
                     argument, obj);
        return -1;
    }
    if (value > (unsigned long long)UINTPTR_MAX) {
        PyErr_Format(PyExc_ValueError, "%s does not fit a pointer: %R",
                     argument, obj);
        return -1;
    }
    *out = (uintptr_t)value;
    return 0;
}

/* Index of keyword `name` among `names`, or -1. Interned names (what the
 * compiler emits for f(name=...)) match by identity. */
static Py_ssize_t keyword_index(PyObject *const *names, Py_ssize_t n,
                                PyObject *name)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (names[i] == name)
            return i;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int eq = PyUnicode_Compare(names[i], name);
        if (eq == 0)
            return i;
        if (eq == -1 && PyErr_Occurred())
            PyErr_Clear();
    }
    return -1;
}

int mfu_py_bind(const char *function, PyObject *const *names, Py_ssize_t n,
                Py_ssize_t max_positional, Py_ssize_t required,
                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                PyObject **out)
{
    /* Which parameters were passed: a bit each (n is small). */
    uint64_t given = 0;
    if (n > 64) {
        PyErr_Format(PyExc_SystemError, "%s(): too many parameters to bind", function);
        return -1;
    }
    if (nargs > max_positional) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes at most %zd positional argument%s (%zd given)",
                     function, max_positional, max_positional == 1 ? "" : "s", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
        given |= (uint64_t)1 << i;
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t index = keyword_index(names, n, name);
        if (index < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%U'", function, name);
            return -1;
        }
        if (given & ((uint64_t)1 << index)) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument '%U'", function,
                         names[index]);
            return -1;
        }
        given |= (uint64_t)1 << index;
        out[index] = args[nargs + k];
    }
    for (Py_ssize_t i = 0; i < required; i++) {
        if (!(given & ((uint64_t)1 << i))) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%U'",
                         function, names[i]);
            return -1;
        }
    }
    return 0;
}

int mfu_py_dtype_flops_arg(PyObject *obj, const char *argument, double *out)
{
    double flops[MFU_DTYPE_COUNT] = {0};
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (!PyDict_Check(obj))
        return type_error(obj, argument, "a dict {dtype name: FLOPs}");
    while (PyDict_Next(obj, &pos, &key, &value)) {
        const char *name;
        mfu_dtype dtype;
        char element[MFU_DTYPE_NAME_MAX + 64];
        if (!PyUnicode_Check(key))
            return type_error(key, argument, "a dict with str keys (dtype names)");
        if (mfu_py_str_arg(key, argument, &name) < 0)
            return -1;
        if (mfu_dtype_from_name(name, &dtype) != MFU_OK) {
            char valid[160] = "";
            for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
                size_t used = strlen(valid);
                PyOS_snprintf(valid + used, sizeof valid - used, "%s%s", d ? ", " : "",
                              mfu_dtype_name((mfu_dtype)d));
            }
            PyErr_Format(PyExc_ValueError, "%s: unknown dtype %R; valid names: %s",
                         argument, key, valid);
            return -1;
        }
        PyOS_snprintf(element, sizeof element, "%s['%s']", argument,
                      mfu_dtype_name(dtype));
        double f;
        if (mfu_py_real_arg(value, element, 0, 0.0, &f) < 0)
            return -1;
        flops[dtype] += f; /* "bf16" and "BF16" name one dtype */
    }
    memcpy(out, flops, sizeof flops);
    return 0;
}
