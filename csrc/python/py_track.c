/*
 * py_track.c -- mfu_tracker.track(): the fast-call entry point that turns
 * its arguments into a timed block (py_result.c).
 *
 * The peak and the clock of (dtype, device, spec, peak_tflops, clock) are
 * resolved by a Python function (mfu_tracker.timing._clock.resolve_track,
 * registered with set_track_resolver()) and kept in a one-entry cache in
 * the module state, hit when a loop passes the same objects again: a block
 * then costs about as much as contextlib.nullcontext().
 *
 * Free threading: the cache is read and swapped only inside a critical
 * section on the module (py_result.h); the resolver runs outside it.
 */
#include <math.h>

#include "py_result.h"

/* ---- track(): the public entry point ------------------------------------ */

/* Keyword names of track(), in parameter order. */
static const char *const track_parameter_names[12] = {
    "flop_count", "param_bytes", "hfu_flop_count", "num_tokens", "dtype",
    "num_gpus", "device", "spec", "peak_tflops", "clock", "stream",
    "flops_by_dtype",
};

enum {
    ARG_FLOP_COUNT, ARG_PARAM_BYTES, ARG_HFU_FLOP_COUNT, ARG_NUM_TOKENS,
    ARG_DTYPE, ARG_NUM_GPUS, ARG_DEVICE, ARG_SPEC, ARG_PEAK_TFLOPS, ARG_CLOCK,
    ARG_STREAM, ARG_FLOPS_BY_DTYPE, ARG_COUNT
};

/* A raw stream handle from a torch stream (its cuda_stream) or an int. */
static int stream_handle(PyObject *obj, uintptr_t *out)
{
    if (PyLong_Check(obj) && !PyBool_Check(obj))
        return mfu_py_stream_arg(obj, "stream", out);
    PyObject *raw = PyObject_GetAttrString(obj, "cuda_stream");
    if (raw == NULL || !PyLong_Check(raw) || PyBool_Check(raw)) {
        Py_XDECREF(raw);
        PyErr_Format(PyExc_TypeError,
                     "stream must be a torch.cuda.Stream, a raw stream handle "
                     "(int) or None, not %.80s", Py_TYPE(obj)->tp_name);
        return -1;
    }
    int rc = mfu_py_stream_arg(raw, "stream", out);
    Py_DECREF(raw);
    return rc;
}

/* The fields of the resolver's record, timing/_clock.py's TrackResolution,
 * by position (a named tuple: its order is this one). */
enum {
    RESOLVED_PEAK_FLOPS,     /* peak FLOP/s per device, or None */
    RESOLVED_PEAK_BYTES,     /* peak bytes/s per device, or None */
    RESOLVED_DTYPE,          /* the peak's dtype name */
    RESOLVED_SPEC,           /* the GPUSpec, or None */
    RESOLVED_TIMER,          /* the MarkTimer, or None: the CPU clock */
    RESOLVED_INDEX,          /* the torch device index */
    RESOLVED_CURRENT_STREAM, /* device index -> current raw stream, or None */
    RESOLVED_DTYPE_PEAKS,    /* FLOP/s per dtype, for mfu_mixed */
    RESOLVED_COUNT
};

/* The resolver's record (above) for track()'s resolution key, from
 * the one-entry cache when the caller passes the same objects as last time
 * (a training loop does), else from the Python resolver. New reference.
 *
 * The cache is read and swapped in a critical section on the module; the
 * resolver runs outside it (it is Python code, and may itself call
 * track()), and what the swap replaces is released after it. */
static PyObject *track_resolution(PyObject *module, mfu_module_state *state,
                                  PyObject *const *key)
{
    PyObject *resolved = NULL, *resolver = NULL;
    Py_BEGIN_CRITICAL_SECTION(module);
    int hit = state->track_last_resolved != NULL;
    for (int i = 0; hit && i < 5; i++)
        hit = state->track_last_key[i] == key[i];
    if (hit)
        resolved = Py_NewRef(state->track_last_resolved);
    else
        resolver = Py_XNewRef(state->track_resolver);
    Py_END_CRITICAL_SECTION();
    if (resolved != NULL)
        return resolved;
    if (resolver == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "track(): no resolver registered (import mfu_tracker)");
        return NULL;
    }
    resolved = PyObject_Vectorcall(resolver, key, 5, NULL);
    Py_DECREF(resolver);
    if (resolved == NULL)
        return NULL;
    if (!PyTuple_Check(resolved) || PyTuple_GET_SIZE(resolved) != RESOLVED_COUNT) {
        Py_DECREF(resolved);
        PyErr_SetString(PyExc_TypeError, "track(): the resolver must return an 8-tuple");
        return NULL;
    }
    /* Key and value together; the old ones are released outside. */
    PyObject *old[6];
    Py_BEGIN_CRITICAL_SECTION(module);
    for (int i = 0; i < 5; i++) {
        old[i] = state->track_last_key[i];
        state->track_last_key[i] = Py_NewRef(key[i]);
    }
    old[5] = state->track_last_resolved;
    state->track_last_resolved = Py_NewRef(resolved);
    Py_END_CRITICAL_SECTION();
    for (int i = 0; i < 6; i++)
        Py_XDECREF(old[i]);
    return resolved;
}

/* track(flops_by_dtype=): the block's ideal seconds (core/steps/mixed.h) from the
 * dict and the resolution's per-dtype peaks (a tuple of MFU_DTYPE_COUNT
 * floats or None). A bad dict raises, naming it; FLOPs of a dtype with no
 * peak give NaN (mfu_mixed None) and one warning per module. */
static int mixed_ideal_s(mfu_module_state *state, PyObject *obj, PyObject *peaks_obj,
                         double *ideal_s)
{
    double flops[MFU_DTYPE_COUNT], peaks[MFU_DTYPE_COUNT];
    mfu_dtype missing = MFU_DTYPE_FP64;
    if (mfu_py_dtype_flops_arg(obj, "flops_by_dtype", flops) < 0)
        return -1;
    if (!PyTuple_Check(peaks_obj) || PyTuple_GET_SIZE(peaks_obj) != MFU_DTYPE_COUNT) {
        PyErr_SetString(PyExc_TypeError, "track(): the resolver gave no per-dtype peaks");
        return -1;
    }
    for (int d = 0; d < MFU_DTYPE_COUNT; d++) {
        if (mfu_py_real_arg(PyTuple_GET_ITEM(peaks_obj, d), "dtype_peaks",
                            MFU_ARG_NONE_OK | MFU_ARG_ABOVE_LOW, 0.0, &peaks[d]) < 0)
            return -1;
    }
    int any_peak = 0;
    for (int d = 0; d < MFU_DTYPE_COUNT; d++)
        any_peak |= !isnan(peaks[d]);
    /* No peak at all (a CPU, an unknown GPU): the peak lookup warned. */
    mfu_status status = mfu_mixed_ideal_s(flops, peaks, ideal_s, &missing);
    if (status == MFU_ERR_OVERFLOW) {
        mfu_py_raise(status, "flops_by_dtype", "FLOPs / peak overflows a double");
        return -1;
    }
    if (status != MFU_OK && any_peak && !state->warned_track_mixed) {
        char message[200];
        state->warned_track_mixed = 1; /* the GIL (or a race to warn twice at worst) */
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: track(): flops_by_dtype has %s FLOPs but the device "
                      "has no %s peak: mfu_mixed is None", mfu_dtype_name(missing),
                      mfu_dtype_name(missing));
        if (PyErr_WarnEx(PyExc_RuntimeWarning, message, 1) < 0)
            return -1;
    }
    return 0;
}

/* The value of a number (an int or a float, not a bool) in *out; 0 for
 * anything else (left to the argument checks that follow). */
static int number_value(PyObject *obj, double *out)
{
    if (!(PyFloat_Check(obj) || (PyLong_Check(obj) && !PyBool_Check(obj))))
        return 0;
    *out = PyFloat_Check(obj) ? PyFloat_AS_DOUBLE(obj) : PyLong_AsDouble(obj);
    if (*out == -1.0 && PyErr_Occurred()) {   /* an int too large for a double */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* flop_count and param_bytes must be finite and > 0: 0 would give MFU (MBU)
 * 0 by definition -- a count that is missing, never a measurement. One
 * wording for every bad value, before any work. */
static int check_positive_work(PyObject *const *values)
{
    double v;
    if (number_value(values[ARG_FLOP_COUNT], &v) && !(isfinite(v) && v > 0.0)) {
        if (v == 0.0)
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "flop_count",
                         "must be a finite number > 0, got 0: a block of 0 model FLOPs has "
                         "MFU 0 by definition; count them with transformer_flops(), "
                         "profile_flops() or FlopCounter");
        else
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "flop_count",
                         "must be a finite number > 0, got %g", v);
        return -1;
    }
    if (values[ARG_PARAM_BYTES] != Py_None && number_value(values[ARG_PARAM_BYTES], &v)
        && !(isfinite(v) && v > 0.0)) {
        if (v == 0.0)
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "param_bytes",
                         "must be a finite number > 0 or None, got 0 (a model without "
                         "parameters?): 0 bytes would give MBU 0; pass None to leave MBU out");
        else
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "param_bytes",
                         "must be a finite number > 0 or None, got %g", v);
        return -1;
    }
    return 0;
}

static PyObject *py_track(PyObject *module, PyObject *const *args,
                          size_t nargsf, PyObject *kwnames)
{
    mfu_module_state *state = mfu_module_get_state(module);
    PyObject *values[ARG_COUNT] = {
        NULL, Py_None, Py_None, Py_None, Py_None, NULL, Py_None,
        Py_None, Py_None, state->str_auto, Py_None, Py_None,
    };
    double ideal_s = NAN;

    if (mfu_py_bind("track", state->track_kwnames, ARG_COUNT, 2, 1, args,
                    PyVectorcall_NARGS(nargsf), kwnames, values) < 0
        || check_positive_work(values) < 0)
        return NULL;

    PyObject *key[5] = {values[ARG_DTYPE], values[ARG_DEVICE], values[ARG_SPEC],
                        values[ARG_PEAK_TFLOPS], values[ARG_CLOCK]};
    PyObject *resolved = track_resolution(module, state, key);
    if (resolved == NULL)
        return NULL;

    PyObject *timer = PyTuple_GET_ITEM(resolved, RESOLVED_TIMER);
    PyObject *stream_obj = values[ARG_STREAM];
    uintptr_t stream = 0;
    PyObject *result = NULL;
    if (timer == Py_None) {
        timer = NULL;
        /* A bad stream is an error on every clock. */
        if (stream_obj != Py_None && stream_handle(stream_obj, &stream) < 0)
            goto done;
        stream = 0;
    } else if (!mfu_py_timer_check(state, timer)) {
        PyErr_SetString(PyExc_TypeError, "track(): the resolver gave no MarkTimer");
        goto done;
    } else if (stream_obj != Py_None) {
        if (stream_handle(stream_obj, &stream) < 0)
            goto done;
    } else if (PyTuple_GET_ITEM(resolved, RESOLVED_CURRENT_STREAM) != Py_None) {
        /* torch's current stream of the device */
        PyObject *current = PyObject_CallOneArg(
            PyTuple_GET_ITEM(resolved, RESOLVED_CURRENT_STREAM),
            PyTuple_GET_ITEM(resolved, RESOLVED_INDEX));
        if (current == NULL)
            goto done;
        int rc = stream_handle(current, &stream);
        Py_DECREF(current);
        if (rc < 0)
            goto done;
    }

    if (values[ARG_FLOPS_BY_DTYPE] != Py_None
        && mixed_ideal_s(state, values[ARG_FLOPS_BY_DTYPE],
                         PyTuple_GET_ITEM(resolved, RESOLVED_DTYPE_PEAKS),
                         &ideal_s) < 0)
        goto done;
    PyObject *num_gpus = values[ARG_NUM_GPUS];
    PyObject *one = NULL;
    if (num_gpus == NULL) {
        one = PyLong_FromLong(1);
        if (one == NULL)
            goto done;
        num_gpus = one;
    }
    PyObject *block_values[9] = {
        values[ARG_FLOP_COUNT], values[ARG_PARAM_BYTES],
        values[ARG_HFU_FLOP_COUNT], values[ARG_NUM_TOKENS],
        PyTuple_GET_ITEM(resolved, RESOLVED_PEAK_FLOPS),
        PyTuple_GET_ITEM(resolved, RESOLVED_PEAK_BYTES), num_gpus,
        PyTuple_GET_ITEM(resolved, RESOLVED_DTYPE), PyTuple_GET_ITEM(resolved, RESOLVED_SPEC),
    };
    result = mfu_py_result_new(state, block_values, timer, stream);
    if (result != NULL)
        mfu_py_result_set_ideal_s(result, ideal_s);
    Py_XDECREF(one);
done:
    Py_DECREF(resolved);
    return result;
}

/* _C.set_track_resolver(resolver): the Python function track() asks when
 * its arguments differ from the previous call's; forgets the cache. */
static PyObject *py_set_track_resolver(PyObject *module, PyObject *resolver)
{
    mfu_module_state *state = mfu_module_get_state(module);
    if (resolver != Py_None && !PyCallable_Check(resolver)) {
        PyErr_SetString(PyExc_TypeError, "resolver must be callable or None");
        return NULL;
    }
    PyObject *old[7];
    Py_BEGIN_CRITICAL_SECTION(module);
    old[0] = state->track_resolver;
    state->track_resolver = resolver == Py_None ? NULL : Py_NewRef(resolver);
    for (int i = 0; i < 5; i++) {
        old[1 + i] = state->track_last_key[i];
        state->track_last_key[i] = NULL;
    }
    old[6] = state->track_last_resolved;
    state->track_last_resolved = NULL;
    Py_END_CRITICAL_SECTION();
    for (int i = 0; i < 7; i++)
        Py_XDECREF(old[i]);
    Py_RETURN_NONE;
}

#define TRACK_DOC \
    "track(flop_count, param_bytes=None, *, hfu_flop_count=None, " \
    "num_tokens=None, dtype=None, num_gpus=1, device=None, spec=None, " \
    "peak_tflops=None, clock='auto', stream=None, flops_by_dtype=None)\n--\n\n" \
    "Time a block of work and report its utilization::\n\n" \
    "    with track(flops, param_bytes(model), dtype='bf16', num_tokens=b * s) as r:\n" \
    "        loss = model(**batch).loss\n" \
    "        loss.backward()\n" \
    "    print(r.mfu, r.elapsed_sec, r.achieved_tflops)\n\n" \
    "Args:\n" \
    "    flop_count: model FLOPs of the block (the MFU numerator, FLOPs), > 0.\n" \
    "    param_bytes: bytes of weights read once per block (the MBU numerator),\n" \
    "        > 0, or None (no MBU).\n" \
    "    hfu_flop_count: executed FLOPs (recompute included) for HFU, or None.\n" \
    "    num_tokens: tokens processed in the block, for tokens_per_sec.\n" \
    "    dtype: compute dtype selecting the peak ('bf16', torch.bfloat16, ...);\n" \
"        None: the device's 16-bit tensor peak, bf16, or fp16 on a device\n" \
"        without bf16 (docs/conventions.md, 'The default dtype').\n" \
    "    num_gpus: devices the FLOPs ran on; the peak is multiplied by it.\n" \
    "    device: device whose peak to use (default: current CUDA device, else CPU).\n" \
    "    spec: a GPUSpec to use instead of looking the device up.\n" \
    "    peak_tflops: per-device peak in TFLOP/s, overriding the table.\n" \
    "    clock: 'auto' (GPU events when the block runs on a CUDA / ROCm device,\n" \
    "        else the CPU clock), 'cuda', 'hip' (pin the GPU clock) or 'cpu'.\n" \
    "    stream: the stream the GPU events go on: a torch.cuda.Stream, a raw\n" \
    "        handle (int) or None (torch's current stream of the device).\n" \
    "    flops_by_dtype: the block's model FLOPs split by compute dtype,\n" \
    "        {'fp8': F1, 'bf16': F2, ...}, for r.mfu_mixed (each dtype's FLOPs\n" \
    "        at its own peak; None when a dtype has no peak: one warning).\n\n" \
    "Returns a UtilizationResult (a context manager). Its figures are None\n" \
    "until the block exits; mfu stays None when no peak is known for the\n" \
    "device. An exception raised in the block propagates unchanged.\n\n" \
    "elapsed_sec is the block's own time (its compute window), not a step\n" \
    "period (see Tracker). On the GPU clock it is the GPU time between the\n" \
    "block's two events and resolves lazily: r.ready asks without blocking;\n" \
    "reading a figure before the GPU finished the block waits for it once.\n" \
    "If the GPU driver is missing or fails: one warning, then the CPU clock.\n\n" \
    "The peak and clock are resolved from (dtype, device, spec, peak_tflops,\n" \
    "clock) on first use and reused while a loop passes the same objects;\n" \
    "MFU_TRACKER_PEAK_TFLOPS is read when they are resolved."

static PyMethodDef track_module_methods[] = {
    {"track", (PyCFunction)(void (*)(void))py_track, METH_FASTCALL | METH_KEYWORDS,
     TRACK_DOC},
    {"set_track_resolver", py_set_track_resolver, METH_O,
     "set_track_resolver(resolver, /)\n--\n\n"
     "Register the function resolving track()'s peak and clock; clears the "
     "cache."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_track_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    state->track_type = (PyTypeObject *)PyType_FromModuleAndSpec(
        module, &mfu_py_result_spec, NULL);
    if (state->track_type == NULL || PyModule_AddType(module, state->track_type) < 0)
        return -1;
    for (int i = 0; i < ARG_COUNT; i++) {
        state->track_kwnames[i] = PyUnicode_InternFromString(track_parameter_names[i]);
        if (state->track_kwnames[i] == NULL)
            return -1;
    }
    state->str_auto = PyUnicode_InternFromString("auto");
    if (state->str_auto == NULL)
        return -1;
    return PyModule_AddFunctions(module, track_module_methods);
}
