/*
 * py_gpu_specs.c -- Python bindings for the peak table and its lookup
 * (core/gpu_table.h, gpu_lookup.h, gpu_name.h, peak_override.h, dtypes.h):
 *
 *   lookup_gpu_spec(name, cc_major=None, cc_minor=None, num_sms=None,
 *                   total_memory_bytes=None) -> dict | None
 *   gpu_spec_table() -> list[dict]
 *   normalize_gpu_name(name) -> str
 *   parse_peak_override(text, dtype) -> float | None
 *   dtype_names() -> tuple[str, ...]
 *
 * A spec dict has: name, vendor, architecture, compute_capability
 * ((major, minor) or None), gfx_arch (str or None), num_sms (the slice's
 * for a MIG slice / AMD partition; 0 = not sourced), full_num_sms,
 * clock_rate_hz (0.0 = not in the datasheet), memory_bytes,
 * memory_bandwidth_bytes_per_sec (0.0 = not sourced), peak_tflops
 * ({dtype: dense TFLOP/s}, only the dtypes the device has), mig_fraction,
 * citation. For a partition, peaks and bandwidth are scaled by mig_fraction.
 */
#include "mfu_module.h"

/* ---- fast-call argument parsing ----------------------------------------- */

/* Map positional args and keywords onto `slots` (NULL = not given).
 * Returns 0, or -1 with TypeError set. */
static int parse_fast_args(const char *func, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames,
                           const char *const *names, Py_ssize_t nnames,
                           Py_ssize_t nrequired, PyObject **slots)
{
    Py_ssize_t i, j, nkw;

    for (i = 0; i < nnames; i++)
        slots[i] = NULL;
    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes at most %zd arguments (%zd given)", func,
                     nnames, nargs);
        return -1;
    }
    for (i = 0; i < nargs; i++)
        slots[i] = args[i];
    nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        int matched = 0;
        for (j = 0; j < nnames; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                if (slots[j] != NULL) {
                    PyErr_Format(PyExc_TypeError,
                                 "%s() got multiple values for argument '%s'",
                                 func, names[j]);
                    return -1;
                }
                slots[j] = args[nargs + i];
                matched = 1;
                break;
            }
        }
        if (!matched) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%U'", func,
                         key);
            return -1;
        }
    }
    for (i = 0; i < nrequired; i++) {
        if (slots[i] == NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() missing required argument '%s'", func, names[i]);
            return -1;
        }
    }
    return 0;
}

/* An int argument (not bool) or None; None / not given -> `dflt`.
 * Out-of-range ints raise ValueError naming the argument. */
static int int_or_none(PyObject *obj, const char *argument, long lo, long hi,
                       long dflt, long *out)
{
    long v;
    if (obj == NULL || obj == Py_None) {
        *out = dflt;
        return 0;
    }
    if (PyBool_Check(obj) || !PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int or None, not %.80s",
                     argument, Py_TYPE(obj)->tp_name);
        return -1;
    }
    v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument, "out of range");
        return -1;
    }
    if (v < lo || v > hi) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "must be between %ld and %ld, got %ld", lo, hi, v);
        return -1;
    }
    *out = v;
    return 0;
}

/* A str argument -> its UTF-8 (borrowed from the object). */
static const char *str_arg(PyObject *obj, const char *argument)
{
    const char *s;
    Py_ssize_t size;
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.80s", argument,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    s = PyUnicode_AsUTF8AndSize(obj, &size);
    if (s == NULL)
        return NULL;
    if ((Py_ssize_t)strlen(s) != size) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "contains a NUL character");
        return NULL;
    }
    return s;
}

/* ---- spec -> dict -------------------------------------------------------- */

static int set_item(PyObject *dict, const char *key, PyObject *value)
{
    int rc;
    if (value == NULL)
        return -1;
    rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *str_or_none(const char *s)
{
    if (s == NULL)
        Py_RETURN_NONE;
    return PyUnicode_FromString(s);
}

static PyObject *spec_to_dict(const mfu_gpu_spec *spec, double fraction,
                              int num_sms)
{
    PyObject *dict = PyDict_New();
    PyObject *peaks = NULL;
    int d;

    if (dict == NULL)
        return NULL;
    if (set_item(dict, "name", PyUnicode_FromString(spec->name)) < 0 ||
        set_item(dict, "vendor", PyUnicode_FromString(spec->vendor)) < 0 ||
        set_item(dict, "architecture",
                 PyUnicode_FromString(spec->architecture)) < 0)
        goto error;
    if (spec->cc_major >= 0) {
        if (set_item(dict, "compute_capability",
                     Py_BuildValue("(ii)", spec->cc_major, spec->cc_minor)) < 0)
            goto error;
    } else if (PyDict_SetItemString(dict, "compute_capability", Py_None) < 0) {
        goto error;
    }
    if (set_item(dict, "gfx_arch", str_or_none(spec->gfx_arch)) < 0 ||
        set_item(dict, "num_sms", PyLong_FromLong(num_sms)) < 0 ||
        set_item(dict, "full_num_sms", PyLong_FromLong(spec->num_sms)) < 0 ||
        set_item(dict, "clock_rate_hz", PyFloat_FromDouble(spec->boost_clock_hz)) < 0 ||
        set_item(dict, "memory_bytes",
                 PyLong_FromUnsignedLongLong(spec->memory_bytes)) < 0 ||
        set_item(dict, "memory_bandwidth_bytes_per_sec",
                 PyFloat_FromDouble(spec->memory_bandwidth_bytes_per_sec *
                                    fraction)) < 0 ||
        set_item(dict, "mig_fraction", PyFloat_FromDouble(fraction)) < 0 ||
        set_item(dict, "citation", PyUnicode_FromString(spec->source)) < 0)
        goto error;
    peaks = PyDict_New();
    if (peaks == NULL)
        goto error;
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        double tflops;
        if (mfu_gpu_spec_peak_tflops(spec, (mfu_dtype)d, &tflops) != MFU_OK)
            continue; /* absent */
        if (set_item(peaks, mfu_dtype_name((mfu_dtype)d),
                     PyFloat_FromDouble(tflops * fraction)) < 0)
            goto error;
    }
    if (PyDict_SetItemString(dict, "peak_tflops", peaks) < 0)
        goto error;
    Py_DECREF(peaks);
    return dict;
error:
    Py_XDECREF(peaks);
    Py_DECREF(dict);
    return NULL;
}

/* ---- functions ----------------------------------------------------------- */

static PyObject *py_lookup_gpu_spec(PyObject *module, PyObject *const *args,
                                    Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"name", "cc_major", "cc_minor",
                                        "num_sms", "total_memory_bytes"};
    PyObject *slots[5];
    mfu_device_query query;
    mfu_gpu_match match;
    long cc_major, cc_minor, num_sms;
    unsigned long long memory = 0;
    mfu_status st;

    (void)module;
    if (parse_fast_args("lookup_gpu_spec", args, nargs, kwnames, names, 5, 1,
                        slots) < 0)
        return NULL;
    query.name = str_arg(slots[0], "name");
    if (query.name == NULL)
        return NULL;
    if (int_or_none(slots[1], "cc_major", 0, 99, -1, &cc_major) < 0 ||
        int_or_none(slots[2], "cc_minor", 0, 99, -1, &cc_minor) < 0 ||
        int_or_none(slots[3], "num_sms", 1, 1000000, -1, &num_sms) < 0)
        return NULL;
    if (slots[4] != NULL && slots[4] != Py_None) {
        if (PyBool_Check(slots[4]) || !PyLong_Check(slots[4])) {
            PyErr_Format(PyExc_TypeError,
                         "total_memory_bytes must be an int or None, not %.80s",
                         Py_TYPE(slots[4])->tp_name);
            return NULL;
        }
        memory = PyLong_AsUnsignedLongLong(slots[4]);
        if (memory == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "total_memory_bytes",
                                "must be a positive int that fits 64 bits");
        }
        if (memory == 0)
            return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "total_memory_bytes",
                                "must be > 0 or None");
    }
    query.cc_major = (int)cc_major;
    query.cc_minor = (int)cc_minor;
    query.num_sms = (int)num_sms;
    query.total_memory_bytes = (uint64_t)memory;
    st = mfu_gpu_lookup(&query, &match);
    if (st == MFU_ERR_NOT_FOUND)
        Py_RETURN_NONE;
    if (st != MFU_OK)
        return mfu_py_raise(st, "name",
                            "not a usable device name (empty, no letters or "
                            "digits, or longer than %d bytes)",
                            MFU_GPU_NAME_MAX);
    return spec_to_dict(match.spec, match.mig_fraction,
                        match.is_partition ? query.num_sms : match.spec->num_sms);
}

static PyObject *py_gpu_spec_table(PyObject *module, PyObject *unused)
{
    size_t i, n = mfu_gpu_spec_count();
    PyObject *list = PyList_New((Py_ssize_t)n);
    (void)module;
    (void)unused;
    if (list == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        const mfu_gpu_spec *spec;
        PyObject *item;
        if (mfu_gpu_spec_get(i, &spec) != MFU_OK) {
            Py_DECREF(list);
            return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "index", NULL);
        }
        item = spec_to_dict(spec, 1.0, spec->num_sms);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *py_normalize_gpu_name(PyObject *module, PyObject *arg)
{
    char out[MFU_GPU_NAME_MAX + 1];
    const char *name = str_arg(arg, "name");
    mfu_status st;
    (void)module;
    if (name == NULL)
        return NULL;
    st = mfu_gpu_normalize_name(name, out, sizeof out);
    if (st != MFU_OK)
        return mfu_py_raise(st, "name",
                            "not a usable device name (empty, no letters or "
                            "digits, or longer than %d bytes)",
                            MFU_GPU_NAME_MAX);
    return PyUnicode_FromString(out);
}

static PyObject *py_parse_peak_override(PyObject *module, PyObject *const *args,
                                        Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "dtype"};
    PyObject *slots[2];
    const char *text, *dtype_name;
    mfu_dtype dtype;
    double tflops;
    mfu_status st;

    (void)module;
    if (parse_fast_args("parse_peak_override", args, nargs, kwnames, names, 2,
                        2, slots) < 0)
        return NULL;
    text = str_arg(slots[0], "MFU_TRACKER_PEAK_TFLOPS");
    if (text == NULL)
        return NULL;
    dtype_name = str_arg(slots[1], "dtype");
    if (dtype_name == NULL)
        return NULL;
    if (mfu_dtype_from_name(dtype_name, &dtype) != MFU_OK)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "dtype",
                            "unknown dtype '%.40s'; valid: fp64, fp32, tf32, "
                            "fp16, bf16, fp8, int8, int4, fp4",
                            dtype_name);
    st = mfu_peak_override_parse(text, dtype, &tflops);
    if (st == MFU_ERR_NOT_FOUND)
        Py_RETURN_NONE;
    if (st != MFU_OK)
        return mfu_py_raise(st, "MFU_TRACKER_PEAK_TFLOPS",
                            "malformed value '%.100s': expected one number of "
                            "TFLOP/s (e.g. \"989.4\") or dtype=number pairs "
                            "(e.g. \"bf16=989.4,fp8=1978.9\"), finite and > 0",
                            text);
    return PyFloat_FromDouble(tflops);
}

static PyObject *py_dtype_names(PyObject *module, PyObject *unused)
{
    PyObject *tuple = PyTuple_New(MFU_DTYPE_COUNT);
    int d;
    (void)module;
    (void)unused;
    if (tuple == NULL)
        return NULL;
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        PyObject *s = PyUnicode_FromString(mfu_dtype_name((mfu_dtype)d));
        if (s == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, d, s);
    }
    return tuple;
}

static PyMethodDef mfu_gpu_specs_methods[] = {
    {"lookup_gpu_spec", (PyCFunction)(void (*)(void))py_lookup_gpu_spec,
     METH_FASTCALL | METH_KEYWORDS,
     "lookup_gpu_spec(name, cc_major=None, cc_minor=None, num_sms=None, "
     "total_memory_bytes=None)\n--\n\n"
     "The peak-table row for a device name plus hints, as a dict, or None "
     "when the device is unknown or ambiguous. Peaks are dense TFLOP/s."},
    {"gpu_spec_table", py_gpu_spec_table, METH_NOARGS,
     "gpu_spec_table()\n--\n\nEvery row of the peak table, as dicts."},
    {"normalize_gpu_name", py_normalize_gpu_name, METH_O,
     "normalize_gpu_name(name)\n--\n\n"
     "The lower-case token form the lookup uses (vendor words dropped)."},
    {"parse_peak_override", (PyCFunction)(void (*)(void))py_parse_peak_override,
     METH_FASTCALL | METH_KEYWORDS,
     "parse_peak_override(text, dtype)\n--\n\n"
     "The MFU_TRACKER_PEAK_TFLOPS peak (TFLOP/s) for dtype, or None when a "
     "dtype=number list does not name it. Malformed text -> ValueError."},
    {"dtype_names", py_dtype_names, METH_NOARGS,
     "dtype_names()\n--\n\nThe canonical dtype names, in table order."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_gpu_specs_exec(PyObject *module)
{
    return PyModule_AddFunctions(module, mfu_gpu_specs_methods);
}
