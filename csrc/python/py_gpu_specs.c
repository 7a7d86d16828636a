/*
 * py_gpu_specs.c -- Python bindings for the peak table and its lookup
 * (core/peaks/gpu_table.h, gpu_lookup.h, gpu_name.h, peak_override.h, dtypes.h):
 *
 *   lookup_gpu_spec(name, cc_major=None, cc_minor=None, num_sms=None,
 *                   total_memory_bytes=None) -> dict | None
 *   gpu_candidates(name, ...same hints) -> dict | None  (an ambiguous name:
 *                   its tied rows and what they agree on, rule 3)
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
 * ({dtype: dense TFLOP/s}, only the dtypes the device has),
 * unpublished_dtypes (the dtypes it computes with no published dense peak),
 * mig_fraction, citation, tokens (the words the lookup reads in a name:
 * the row's model, variant, reject and required tokens, space-separated).
 * For a partition, peaks and bandwidth are scaled by mig_fraction.
 *
 * Every rule (which row a name is, what the override text means) is the
 * core's; this file only converts arguments (py_args.h) and results.
 */
#include <limits.h>

#include "mfu_module.h"

/* ---- spec -> dict -------------------------------------------------------- */

/* peaks[dtype name] = tflops; -1 with an exception set on failure. */
static int set_dtype_peak(PyObject *peaks, mfu_dtype dtype, double tflops)
{
    PyObject *value = PyFloat_FromDouble(tflops);
    int rc;
    if (value == NULL)
        return -1;
    rc = PyDict_SetItemString(peaks, mfu_dtype_name(dtype), value);
    Py_DECREF(value);
    return rc;
}

/* {dtype: TFLOP/s x fraction} for the dtypes the row has. */
static PyObject *peaks_dict(const mfu_gpu_spec *spec, double fraction)
{
    PyObject *peaks = PyDict_New();
    int d;
    if (peaks == NULL)
        return NULL;
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        double tflops;
        if (mfu_gpu_spec_peak_tflops(spec, (mfu_dtype)d, &tflops) != MFU_OK)
            continue; /* absent */
        if (set_dtype_peak(peaks, (mfu_dtype)d, tflops * fraction) < 0) {
            Py_DECREF(peaks);
            return NULL;
        }
    }
    return peaks;
}

/* The dtypes the device computes without a published dense peak, in the
 * core's dtype order (core/peaks/gpu_table.h). */
static PyObject *unpublished_tuple(const mfu_gpu_spec *spec)
{
    PyObject *names = PyList_New(0), *tuple;
    int d;
    if (names == NULL)
        return NULL;
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        PyObject *name;
        int rc;
        if (!mfu_gpu_spec_peak_unpublished(spec, (mfu_dtype)d))
            continue;
        name = PyUnicode_FromString(mfu_dtype_name((mfu_dtype)d));
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        rc = PyList_Append(names, name);
        Py_DECREF(name);
        if (rc < 0) {
            Py_DECREF(names);
            return NULL;
        }
    }
    tuple = PyList_AsTuple(names);
    Py_DECREF(names);
    return tuple;
}

static const char *or_empty(const char *text)
{
    return text != NULL ? text : "";
}

static PyObject *spec_to_dict(const mfu_gpu_spec *spec, double fraction,
                              int num_sms)
{
    PyObject *cc = spec->cc_major >= 0
                       ? Py_BuildValue("(ii)", spec->cc_major, spec->cc_minor)
                       : Py_NewRef(Py_None);
    PyObject *tokens = PyUnicode_FromFormat(
        "%s %s %s %s", or_empty(spec->model_token), or_empty(spec->variant_tokens),
        or_empty(spec->reject_tokens), or_empty(spec->required_token));
    if (cc == NULL || tokens == NULL) {
        Py_XDECREF(cc);
        Py_XDECREF(tokens);
        return NULL;
    }
    /* "N" hands each new object to the dict (or releases it on failure). */
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:N,s:z,s:i,s:i,s:d,s:K,s:d,s:N,s:N,s:d,s:s,s:N}",
        "name", spec->name, "vendor", spec->vendor,
        "architecture", spec->architecture, "compute_capability", cc,
        "gfx_arch", spec->gfx_arch, "num_sms", num_sms,
        "full_num_sms", spec->num_sms, "clock_rate_hz", spec->boost_clock_hz,
        "memory_bytes", (unsigned long long)spec->memory_bytes,
        "memory_bandwidth_bytes_per_sec",
        spec->memory_bandwidth_bytes_per_sec * fraction,
        "peak_tflops", peaks_dict(spec, fraction),
        "unpublished_dtypes", unpublished_tuple(spec), "mig_fraction", fraction,
        "citation", spec->source, "tokens", tokens);
}

/* ---- arguments ------------------------------------------------------------ */

/* An optional int hint: None or not given -> `unknown`, else in [low, high]. */
static int hint_arg(PyObject *obj, const char *argument, long long low,
                    long long high, long long unknown, long long *out)
{
    if (obj == NULL || obj == Py_None) {
        *out = unknown;
        return 0;
    }
    return mfu_py_int_arg(obj, argument, low, high, out);
}

static PyObject *bad_name(mfu_status status)
{
    return mfu_py_raise(status, "name",
                        "not a usable device name (empty, no letters or "
                        "digits, or longer than %d bytes)",
                        MFU_GPU_NAME_MAX);
}

/* ---- functions ----------------------------------------------------------- */

/* Parse (name, cc_major=None, cc_minor=None, num_sms=None,
 * total_memory_bytes=None) into *query and look it up. -1 with an exception
 * set on a bad argument or name; else 0 with *status the lookup's. */
static int lookup_args(PyObject *args, PyObject *kwargs, const char *format,
                       mfu_device_query *query, mfu_gpu_match *match,
                       mfu_status *status)
{
    static char *keywords[] = {"name", "cc_major", "cc_minor", "num_sms",
                               "total_memory_bytes", NULL};
    PyObject *name = NULL, *cc_major = NULL, *cc_minor = NULL;
    PyObject *num_sms = NULL, *memory = NULL;
    long long major, minor, sms, bytes;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &name,
                                     &cc_major, &cc_minor, &num_sms, &memory))
        return -1;
    if (mfu_py_str_arg(name, "name", &query->name) < 0
        || hint_arg(cc_major, "cc_major", 0, MFU_GPU_CC_MAX, -1, &major) < 0
        || hint_arg(cc_minor, "cc_minor", 0, MFU_GPU_CC_MAX, -1, &minor) < 0
        || hint_arg(num_sms, "num_sms", 1, INT_MAX, -1, &sms) < 0
        || hint_arg(memory, "total_memory_bytes", 1, LLONG_MAX, 0, &bytes) < 0)
        return -1;
    query->cc_major = (int)major;
    query->cc_minor = (int)minor;
    query->num_sms = (int)sms;
    query->total_memory_bytes = (uint64_t)bytes;
    *status = mfu_gpu_lookup(query, match);
    if (*status != MFU_OK && *status != MFU_ERR_NOT_FOUND) {
        bad_name(*status);
        return -1;
    }
    return 0;
}

static PyObject *py_lookup_gpu_spec(PyObject *module, PyObject *args,
                                    PyObject *kwargs)
{
    mfu_device_query query;
    mfu_gpu_match match;
    mfu_status st;

    (void)module;
    if (lookup_args(args, kwargs, "O|OOOO:lookup_gpu_spec", &query, &match, &st) < 0)
        return NULL;
    if (st == MFU_ERR_NOT_FOUND)
        Py_RETURN_NONE;
    return spec_to_dict(match.spec, match.mig_fraction,
                        match.is_partition ? query.num_sms : match.spec->num_sms);
}

/* The listed rows of an ambiguous match, as spec dicts (scaled). */
static PyObject *candidate_list(const mfu_gpu_match *match, const mfu_device_query *query)
{
    int i, listed = match->num_candidates < MFU_GPU_CANDIDATES_MAX
                        ? match->num_candidates : MFU_GPU_CANDIDATES_MAX;
    PyObject *rows = PyList_New(listed);
    if (rows == NULL)
        return NULL;
    for (i = 0; i < listed; i++) {
        const mfu_gpu_spec *row = match->candidates[i];
        double fraction = match->candidate_fraction[i];
        PyObject *item = spec_to_dict(row, fraction,
                                      fraction < 1.0 ? query->num_sms : row->num_sms);
        if (item == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
        PyList_SET_ITEM(rows, i, item);
    }
    return rows;
}

/* Rule 3 (core/peaks/gpu_lookup.h) per dtype: {dtype: TFLOP/s} where every row
 * agrees, and their bandwidth (bytes/s; 0.0 when the rows differ). */
static PyObject *agreed_peaks(const mfu_gpu_match *match, double *bandwidth)
{
    PyObject *peaks = PyDict_New();
    int d;
    *bandwidth = 0.0;
    if (peaks == NULL)
        return NULL;
    for (d = 0; d < MFU_DTYPE_COUNT; d++) {
        double tflops, bytes_per_sec;
        if (mfu_gpu_candidates_peak(match, (mfu_dtype)d, &tflops, &bytes_per_sec) != MFU_OK)
            continue;
        *bandwidth = bytes_per_sec; /* the same for every dtype that agrees */
        if (set_dtype_peak(peaks, (mfu_dtype)d, tflops) < 0) {
            Py_DECREF(peaks);
            return NULL;
        }
    }
    return peaks;
}

static PyObject *py_gpu_candidates(PyObject *module, PyObject *args, PyObject *kwargs)
{
    mfu_device_query query;
    mfu_gpu_match match;
    mfu_status st;
    double bandwidth;
    PyObject *peaks;

    (void)module;
    if (lookup_args(args, kwargs, "O|OOOO:gpu_candidates", &query, &match, &st) < 0)
        return NULL;
    if (st != MFU_ERR_NOT_FOUND || match.num_candidates < 2)
        Py_RETURN_NONE;
    peaks = agreed_peaks(&match, &bandwidth);
    if (peaks == NULL)
        return NULL;
    /* "N" hands each new object to the dict (or releases it on failure). */
    return Py_BuildValue("{s:i,s:N,s:N,s:d}", "num_candidates", match.num_candidates,
                         "rows", candidate_list(&match, &query), "peak_tflops", peaks,
                         "memory_bandwidth_bytes_per_sec", bandwidth);
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
    const char *name;
    mfu_status st;
    (void)module;
    if (mfu_py_str_arg(arg, "name", &name) < 0)
        return NULL;
    st = mfu_gpu_normalize_name(name, out, sizeof out);
    if (st != MFU_OK)
        return bad_name(st);
    return PyUnicode_FromString(out);
}

static PyObject *py_parse_peak_override(PyObject *module, PyObject *args,
                                        PyObject *kwargs)
{
    static char *keywords[] = {"text", "dtype", NULL};
    PyObject *text_obj = NULL, *dtype_obj = NULL;
    const char *text, *dtype_name;
    char valid[128] = "";
    size_t used = 0;
    mfu_dtype dtype;
    double tflops;
    mfu_status st;
    int d;

    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:parse_peak_override",
                                     keywords, &text_obj, &dtype_obj))
        return NULL;
    if (mfu_py_str_arg(text_obj, "MFU_TRACKER_PEAK_TFLOPS", &text) < 0
        || mfu_py_str_arg(dtype_obj, "dtype", &dtype_name) < 0)
        return NULL;
    if (mfu_dtype_from_name(dtype_name, &dtype) != MFU_OK) {
        for (d = 0; d < MFU_DTYPE_COUNT; d++) {
            int n = PyOS_snprintf(valid + used, sizeof valid - used, "%s%s",
                                  d ? ", " : "", mfu_dtype_name((mfu_dtype)d));
            if (n > 0 && (size_t)n < sizeof valid - used)
                used += (size_t)n;
        }
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "dtype",
                            "unknown dtype '%.40s'; valid: %s", dtype_name, valid);
    }
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
     METH_VARARGS | METH_KEYWORDS,
     "lookup_gpu_spec(name, cc_major=None, cc_minor=None, num_sms=None, "
     "total_memory_bytes=None)\n--\n\n"
     "The peak-table row for a device name plus hints, as a dict, or None "
     "when the device is unknown or ambiguous. Peaks are dense TFLOP/s."},
    {"gpu_candidates", (PyCFunction)(void (*)(void))py_gpu_candidates,
     METH_VARARGS | METH_KEYWORDS,
     "gpu_candidates(name, cc_major=None, cc_minor=None, num_sms=None, "
     "total_memory_bytes=None)\n--\n\n"
     "For a name the lookup finds ambiguous: {'num_candidates': n, 'rows': "
     "[spec dicts of the tied rows], 'peak_tflops': {dtype: TFLOP/s every row "
     "has}, 'memory_bandwidth_bytes_per_sec': their common bandwidth or 0.0}; "
     "None when the name is one row or none."},
    {"gpu_spec_table", py_gpu_spec_table, METH_NOARGS,
     "gpu_spec_table()\n--\n\nEvery row of the peak table, as dicts."},
    {"normalize_gpu_name", py_normalize_gpu_name, METH_O,
     "normalize_gpu_name(name, /)\n--\n\n"
     "The lower-case token form the lookup uses (vendor words dropped)."},
    {"parse_peak_override", (PyCFunction)(void (*)(void))py_parse_peak_override,
     METH_VARARGS | METH_KEYWORDS,
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
