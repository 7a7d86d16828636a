/*
 * py_nvml.c -- _C.Nvml, device telemetry (core/device/nvml.h) for Python.
 *
 * Nvml(device_id, library=None) opens NVML and finds the device by UUID or
 * PCI bus id; failing, it raises RuntimeError naming the failing call (the
 * Python layer, mfu_tracker/timing/_telemetry.py, turns that into one warning and
 * missing keys). read() never raises for a driver failure: it returns the
 * figures NVML gave and the first failure's description.
 *
 * The GPM counters (core/device/gpm.h) ride on the same handle: gpm_open() once,
 * then gpm_sample() at each window edge; neither raises for a driver
 * failure: they say why in a string.
 */
#include <math.h>
#include <stddef.h>

#include "py_result.h" /* the critical-section fallback for Python < 3.13 */

/* Holds no Python object (no GC); reads are serialised by a critical
 * section on the object (core/device/nvml.h: one thread at a time). */
typedef struct {
    PyObject_HEAD
    mfu_nvml *nvml; /* NULL until __init__ succeeds */
    mfu_gpm *gpm;   /* NULL until gpm_open() succeeds */
} nvml_object;

/* "nvmlInit_v2 failed with 999 (Unknown Error)" or "dlopen: <detail>". */
static void describe(const mfu_gpu_error *error, char *buffer, size_t size)
{
    const char *call = error->call != NULL ? error->call : "an NVML call";
    if (error->code != 0)
        PyOS_snprintf(buffer, size, "%s failed with %d%s%s%s", call, error->code,
                      error->detail[0] ? " (" : "", error->detail,
                      error->detail[0] ? ")" : "");
    else if (error->detail[0] != '\0')
        PyOS_snprintf(buffer, size, "%s: %s", call, error->detail);
    else
        PyOS_snprintf(buffer, size, "%s failed", call);
}

/* Nvml(device_id, library=None) */
static int nvml_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"device_id", "library", NULL};
    nvml_object *n = (nvml_object *)self;
    PyObject *id_obj, *library_obj = Py_None;
    const char *device_id, *library = NULL;
    mfu_gpu_error error;
    mfu_status status;
    char cause[300];

    if (n->nvml != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "an Nvml is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Nvml", keywords, &id_obj,
                                     &library_obj)
        || mfu_py_str_arg(id_obj, "device_id", &device_id) < 0
        || (library_obj != Py_None && mfu_py_str_arg(library_obj, "library", &library) < 0))
        return -1;
    if (device_id[0] == '\0') {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "device_id",
                     "must name a device (a UUID 'GPU-...' or a PCI bus id)");
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    status = mfu_nvml_open(library, device_id, &n->nvml, &error);
    Py_END_ALLOW_THREADS
    if (status == MFU_ERR_NO_MEMORY) {
        PyErr_NoMemory();
        return -1;
    }
    if (status != MFU_OK) {
        describe(&error, cause, sizeof cause);
        PyErr_Format(PyExc_RuntimeError, "NVML (%s) for device %s: %s",
                     library != NULL ? library : mfu_nvml_library(), device_id, cause);
        return -1;
    }
    return 0;
}

/* A figure of the sample, or None when NVML did not give it. */
static PyObject *figure(const mfu_nvml_sample *s, unsigned bit, double value)
{
    return mfu_py_float_or_none((s->valid & bit) ? value : NAN);
}

/* read() -> (figures dict, None or the first failure's description) */
static PyObject *nvml_read(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    nvml_object *n = (nvml_object *)self;
    mfu_nvml_sample s;
    mfu_gpu_error error;
    mfu_status status;
    char cause[300];
    PyObject *values[7], *dict = NULL, *result = NULL, *failure;
    static const char *const names[7] = {"time_s", "energy_j", "power_w", "sm_clock_mhz",
                                         "sm_clock_max_mhz", "throttle_reasons",
                                         "throttled"};

    if (n->nvml == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Nvml.__init__ was not called");
        return NULL;
    }
    Py_BEGIN_CRITICAL_SECTION(self);
    status = mfu_nvml_read(n->nvml, &s, &error);
    Py_END_CRITICAL_SECTION();

    values[0] = PyFloat_FromDouble(s.time_s);
    values[1] = figure(&s, MFU_NVML_ENERGY, s.energy_j);
    values[2] = figure(&s, MFU_NVML_POWER, s.power_w);
    values[3] = figure(&s, MFU_NVML_SM_CLOCK, s.sm_clock_mhz);
    values[4] = figure(&s, MFU_NVML_SM_CLOCK_MAX, s.sm_clock_max_mhz);
    if (s.valid & MFU_NVML_THROTTLE) {
        values[5] = PyLong_FromUnsignedLongLong(s.throttle_reasons);
        values[6] = PyLong_FromLong(mfu_nvml_throttled(s.throttle_reasons));
    } else {
        values[5] = Py_NewRef(Py_None);
        values[6] = Py_NewRef(Py_None);
    }
    dict = PyDict_New();
    for (int i = 0; i < 7; i++) {
        if (values[i] == NULL || (dict != NULL && PyDict_SetItemString(dict, names[i], values[i]) < 0))
            Py_CLEAR(dict);
    }
    for (int i = 0; i < 7; i++)
        Py_XDECREF(values[i]);
    if (dict == NULL)
        return NULL;
    if (status == MFU_OK) {
        failure = Py_NewRef(Py_None);
    } else {
        describe(&error, cause, sizeof cause);
        failure = PyUnicode_FromString(cause);
    }
    if (failure != NULL)
        result = PyTuple_Pack(2, dict, failure);
    Py_DECREF(dict);
    Py_XDECREF(failure);
    return result;
}

/* gpm_open() -> None when the GPM counters are available, else why not. */
static PyObject *nvml_gpm_open(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    nvml_object *n = (nvml_object *)self;
    mfu_gpu_error error;
    mfu_status status;
    char cause[300];

    if (n->nvml == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Nvml.__init__ was not called");
        return NULL;
    }
    if (n->gpm != NULL)
        Py_RETURN_NONE;
    Py_BEGIN_CRITICAL_SECTION(self);
    status = mfu_gpm_open(n->nvml, &n->gpm, &error);
    Py_END_CRITICAL_SECTION();
    if (status == MFU_OK)
        Py_RETURN_NONE;
    if (status == MFU_ERR_NO_MEMORY)
        return PyErr_NoMemory();
    describe(&error, cause, sizeof cause);
    return PyUnicode_FromString(cause);
}

/* The window's figures, keyed by name: only those NVML gave. */
static PyObject *gpm_figures(const mfu_gpm_window *w)
{
    static const char *const names[MFU_GPM_FIGURES] = {
        [MFU_GPM_TENSOR_ACTIVE] = "tensor_active", [MFU_GPM_DRAM_BW_UTIL] = "dram_bw_util",
        [MFU_GPM_SM_ACTIVE] = "sm_active", [MFU_GPM_SM_OCCUPANCY] = "sm_occupancy",
        [MFU_GPM_NVLINK_GBS] = "nvlink_gbs", [MFU_GPM_GPU_BUSY] = "gpu_busy"};
    PyObject *dict = PyDict_New();
    for (int i = 0; dict != NULL && i < MFU_GPM_FIGURES; i++) {
        PyObject *value;
        if (!(w->valid & (1u << i)))
            continue;
        value = PyFloat_FromDouble(w->value[i]);
        if (value == NULL || PyDict_SetItemString(dict, names[i], value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

/* gpm_sample() -> (figures, seconds, failure) */
static PyObject *nvml_gpm_sample(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    nvml_object *n = (nvml_object *)self;
    mfu_gpm_window w;
    mfu_gpu_error error;
    mfu_status status;
    char cause[300];
    PyObject *figures, *seconds, *failure, *result = NULL;

    if (n->gpm == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Nvml.gpm_open() did not succeed");
        return NULL;
    }
    Py_BEGIN_CRITICAL_SECTION(self);
    status = mfu_gpm_sample(n->gpm, &w, &error);
    Py_END_CRITICAL_SECTION();
    (void)status; /* error.call says whether anything failed */
    figures = gpm_figures(&w);
    seconds = mfu_py_float_or_none(w.seconds);
    if (error.call == NULL) {
        failure = Py_NewRef(Py_None);
    } else {
        describe(&error, cause, sizeof cause);
        failure = PyUnicode_FromString(cause);
    }
    if (figures != NULL && seconds != NULL && failure != NULL)
        result = PyTuple_Pack(3, figures, seconds, failure);
    Py_XDECREF(figures);
    Py_XDECREF(seconds);
    Py_XDECREF(failure);
    return result;
}

/* NVML shut down and unloaded with the object (its GPM samples first). */
static void nvml_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    mfu_gpm_close(((nvml_object *)self)->gpm);
    mfu_nvml_close(((nvml_object *)self)->nvml);
    type->tp_free(self);
    Py_DECREF(type); /* a heap type's instances hold a reference to it */
}

static PyObject *nvml_library(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyUnicode_FromString(mfu_nvml_library());
}

static PyMethodDef nvml_methods[] = {
    {"read", nvml_read, METH_NOARGS,
     "read($self, /)\n--\n\nOne reading (never waits): (figures, failure). figures: "
     "time_s (CLOCK_MONOTONIC seconds), energy_j (J since the driver loaded), "
     "power_w (W), sm_clock_mhz, sm_clock_max_mhz (MHz), throttle_reasons "
     "(NVML's mask), throttled (1: a power or thermal reason); None where NVML "
     "did not give it. failure: None, or the first failing call described."},
    {"gpm_open", nvml_gpm_open, METH_NOARGS,
     "gpm_open($self, /)\n--\n\nStart the GPM counters (Hopper and later): None, or "
     "why they are unavailable (a call missing or failing, the device not supported)."},
    {"gpm_sample", nvml_gpm_sample, METH_NOARGS,
     "gpm_sample($self, /)\n--\n\nA window edge (never waits): (figures, seconds, failure). "
     "figures over the window since the previous edge: tensor_active, dram_bw_util, "
     "sm_active, sm_occupancy, gpu_busy (0-1 shares) and nvlink_gbs (GB/s), only those NVML "
     "gave ({} on the first edge and for a window under 0.1 s). seconds: the window, "
     "None on the first edge. failure: None, or the first failing call or metric."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef nvml_module_methods[] = {
    {"nvml_library", nvml_library, METH_NOARGS,
     "nvml_library()\n--\n\nThe NVML library Nvml() opens by default: "
     "MFU_TRACKER_NVML_LIBRARY when set, else libnvidia-ml.so.1."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(nvml_doc,
             "Nvml(device_id, library=None)\n--\n\n"
             "NVML telemetry of one device (core/device/nvml.h), found by its UUID "
             "('GPU-...', 'MIG-...') or PCI bus id. RuntimeError when NVML or "
             "the device cannot be had.");

static PyType_Slot nvml_slots[] = {
    {Py_tp_doc, (void *)nvml_doc}, {Py_tp_methods, nvml_methods},
    {Py_tp_new, PyType_GenericNew}, {Py_tp_init, nvml_init},
    {Py_tp_dealloc, nvml_dealloc}, {0, NULL},
};

static PyType_Spec nvml_spec = MFU_PY_TYPE_SPEC(
    "Nvml", nvml_object, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    nvml_slots);

int mfu_py_nvml_exec(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &nvml_spec, NULL), *interval;
    int rc = type == NULL ? -1 : PyModule_AddType(module, (PyTypeObject *)type);
    Py_XDECREF(type);
    if (rc < 0)
        return -1;
    /* GPM's shortest window, seconds (core/device/gpm.h) */
    interval = PyFloat_FromDouble(MFU_GPM_MIN_INTERVAL_S);
    rc = interval == NULL ? -1 : PyModule_AddObjectRef(module, "GPM_MIN_INTERVAL_S", interval);
    Py_XDECREF(interval);
    if (rc < 0)
        return -1;
    return PyModule_AddFunctions(module, nvml_module_methods);
}
