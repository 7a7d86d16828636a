/*
 * py_result.c -- _C.UtilizationResult, the result of one timed block (what
 * track() and MFUOptimizerWrapper.track_step() give), and the one-shot
 * utilization arithmetic behind compute_mfu() / compute_mbu().
 *
 * The result is both the context manager and its figures: entering reads
 * the clock, exiting reads it again and computes every figure in C
 * (core/steps/stats.c). One object per block, no Python frames on the hot path.
 * Figures are None until the block has exited, and None when they cannot be
 * computed (no peak known for the device/dtype, no token count given).
 *
 * GPU clock: given a MarkTimer (py_mark_timer.c), entering and exiting each take
 * a mark on the block's stream, without waiting. The figures then resolve
 * lazily: `ready` asks the GPU without blocking; reading a figure before the
 * GPU reached the block's end waits once (GIL released). The timer caches
 * the block's GPU time as soon as any later operation sees it resolved, so
 * a result read late keeps its value. The CPU clock is read too (tens of
 * ns): a block whose GPU timing failed reports its CPU time instead.
 *
 * set_work(): a block whose work is known only when it ends (the
 * integrations count its FLOPs while it runs) is created without it and
 * given it at, or after, its exit; the figures follow the work given last.
 *
 * Free threading: a result's own state is read and changed inside a
 * critical section on the result (py_result.h).
 */
#include <math.h>
#include <string.h>

#include "py_result.h"

typedef enum track_phase {
    TRACK_CREATED = 0,
    TRACK_RUNNING = 1,
    TRACK_DONE = 2
} track_phase;

typedef struct {
    PyObject_HEAD
    mfu_module_state *state; /* the module this block belongs to */
    mfu_work work;
    mfu_peak peak;
    mfu_metrics metrics; /* every ratio of the work (mfu_mixed of its ideal_s) */
    uint64_t start_ns;
    uint64_t end_ns;
    track_phase phase;
    int resolved;       /* metrics hold the figures (TRACK_DONE only) */
    PyObject *dtype;    /* canonical dtype name (str) */
    PyObject *gpu_spec; /* the GPUSpec the peak came from, or None */
    PyObject *timer;    /* the MarkTimer of a GPU-timed block, or NULL */
    uintptr_t stream;
    mfu_py_block block;
} track_object;

static int track_traverse(PyObject *self, visitproc visit, void *arg)
{
    track_object *t = (track_object *)self;
    Py_VISIT(t->dtype);
    Py_VISIT(t->gpu_spec);
    Py_VISIT(t->timer);
    Py_VISIT(Py_TYPE(self)); /* heap types own a reference from instances */
    return 0;
}

static int track_clear(PyObject *self)
{
    track_object *t = (track_object *)self;
    Py_CLEAR(t->dtype);
    Py_CLEAR(t->gpu_spec);
    if (t->timer != NULL)
        mfu_py_block_forget(t->timer, &t->block);
    Py_CLEAR(t->timer);
    return 0;
}

static void track_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    (void)track_clear(self);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *track_enter(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    track_object *t = (track_object *)self;
    PyObject *result = NULL;
    Py_BEGIN_CRITICAL_SECTION(self);
    if (t->phase != TRACK_CREATED) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a track() block can be entered once; call track() "
                        "again for the next block");
    } else {
        t->phase = TRACK_RUNNING;
        /* Read the clocks last, so setting up the block is not timed. */
        if (mfu_clock_monotonic_ns(&t->start_ns) != MFU_OK) {
            mfu_py_raise(MFU_ERR_UNAVAILABLE, "clock_gettime",
                         "CLOCK_MONOTONIC cannot be read");
        } else {
            if (t->timer != NULL)
                mfu_py_block_start(t->timer, t->stream, &t->block);
            result = Py_NewRef(self);
        }
    }
    Py_END_CRITICAL_SECTION();
    return result;
}

/* MFU above 1 is reported as is, never clamped, and flagged once per
 * module: 1 if this block is the one to flag it. */
static int claim_mfu_warning(track_object *t)
{
    int first = 0;
    PyObject *module = PyType_GetModule(Py_TYPE(t)); /* borrowed */
    if (module == NULL) {
        PyErr_Clear(); /* cannot happen for our heap type; never flag twice */
        return 0;
    }
    Py_BEGIN_CRITICAL_SECTION(module);
    if (!t->state->warned_mfu_above_one) {
        t->state->warned_mfu_above_one = 1;
        first = 1;
    }
    Py_END_CRITICAL_SECTION();
    return first;
}

/* The attribute `name` of `spec` as UTF-8, or NULL (no error left set).
 * Borrowed from `*holder`, which the caller releases. */
static const char *spec_text(PyObject *spec, const char *name, PyObject **holder)
{
    *holder = PyObject_GetAttrString(spec, name);
    const char *text = *holder != NULL && PyUnicode_Check(*holder)
                           ? PyUnicode_AsUTF8(*holder) : NULL;
    if (text == NULL)
        PyErr_Clear();
    return text;
}

/* It means the peak is too low for this device or the FLOP count is too
 * high. The warning names the peak; a measured one (measured_gpu_spec) reads
 * low when other work held the device while it was measured, and says so. */
static void warn_mfu_above_one(track_object *t)
{
    PyObject *exc_type, *exc_value, *exc_tb;
    /* __exit__ may run with the block's exception set: keep it intact. */
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *name_obj = NULL, *source_obj = NULL;
    const char *name = NULL, *source = NULL;
    if (t->gpu_spec != NULL && t->gpu_spec != Py_None) {
        name = spec_text(t->gpu_spec, "name", &name_obj);
        source = spec_text(t->gpu_spec, "source", &source_obj);
    }
    const int measured = source != NULL && strcmp(source, "measured") == 0;
    char message[640];
    PyOS_snprintf(message, sizeof message,
                  "MFU %.3f > 1 (model FLOPs %.4g in %.4g s against a peak of "
                  "%.4g FLOP/s%s%s): %s; the value is reported unclamped",
                  t->metrics.mfu, t->work.model_flops, t->metrics.elapsed_s,
                  t->peak.flops_per_sec * t->peak.num_devices,
                  name != NULL ? ", " : "", name != NULL ? name : "",
                  measured ? "the measured peak read low (other work held the device "
                             "while it was measured) or the FLOP count is wrong: measure "
                             "again on an idle machine, or give the peak (peak_tflops=)"
                           : "the peak or the FLOP count is wrong");
    Py_XDECREF(name_obj);
    Py_XDECREF(source_obj);
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message, 1) < 0)
        PyErr_Clear(); /* warnings-as-errors must not end a training run */
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* Compute the figures from the block's GPU time, or its CPU time when it
 * has none (CPU clock, or a GPU failure). Again after set_work(). */
static void track_finalize(track_object *t)
{
    double elapsed_s = t->block.state == MFU_BLOCK_RESOLVED
                           ? t->block.elapsed_s
                           : (t->end_ns != 0 ? mfu_clock_elapsed_s(t->start_ns, t->end_ns)
                                             : NAN);
    mfu_metrics_compute(&t->work, &t->peak, elapsed_s, &t->metrics);
    t->resolved = 1;
    if (t->metrics.mfu > 1.0 && claim_mfu_warning(t))
        warn_mfu_above_one(t);
}

/* Resolve a finished block: without blocking, or (wait) waiting once.
 * 1 if the figures are known, then copied to *out (when not NULL). */
static int track_resolve(track_object *t, int wait, mfu_metrics *out)
{
    int known = 0;
    Py_BEGIN_CRITICAL_SECTION((PyObject *)t);
    if (t->phase == TRACK_DONE) {
        if (!t->resolved && t->timer != NULL)
            mfu_py_block_resolve(t->timer, &t->block, wait);
        if (!t->resolved && t->block.state != MFU_BLOCK_PENDING)
            track_finalize(t);
        known = t->resolved;
        if (known && out != NULL)
            *out = t->metrics;
    }
    Py_END_CRITICAL_SECTION();
    return known;
}

/* The block's work as last set (a copy taken in the critical section). */
static mfu_work track_work(track_object *t)
{
    mfu_work work;
    Py_BEGIN_CRITICAL_SECTION((PyObject *)t);
    work = t->work;
    Py_END_CRITICAL_SECTION();
    return work;
}

static PyObject *track_exit(PyObject *self, PyObject *const *Py_UNUSED(args),
                            Py_ssize_t Py_UNUSED(nargs))
{
    track_object *t = (track_object *)self;

    Py_BEGIN_CRITICAL_SECTION(self);
    if (t->phase == TRACK_RUNNING) {
        /* Mark the GPU first, so computing the figures is not timed. */
        if (t->timer != NULL)
            mfu_py_block_end(t->timer, t->stream, &t->block);
        if (mfu_clock_monotonic_ns(&t->end_ns) != MFU_OK)
            t->end_ns = 0;
        t->phase = TRACK_DONE;
        if (t->block.state != MFU_BLOCK_PENDING)
            track_finalize(t); /* CPU clock: known now */
    }
    Py_END_CRITICAL_SECTION();
    /* Never swallow the block's exception: returning False re-raises it. */
    Py_RETURN_FALSE;
}

/* set_work(flop_count=None, hfu_flop_count=None, num_tokens=None): the
 * block's work, for a block whose work is known only when it ends. None =
 * unknown (the figures that need it are None). Any time: figures already
 * computed are computed again from the same elapsed time. */
static PyObject *track_set_work(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"flop_count", "hfu_flop_count", "num_tokens", NULL};
    track_object *t = (track_object *)self;
    PyObject *objs[3] = {Py_None, Py_None, Py_None};
    double values[3];

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO:set_work", keywords,
                                     &objs[0], &objs[1], &objs[2]))
        return NULL;
    for (int i = 0; i < 3; i++) {
        if (mfu_py_real_arg(objs[i], keywords[i], MFU_ARG_NONE_OK, 0.0, &values[i]) < 0)
            return NULL;
    }
    Py_BEGIN_CRITICAL_SECTION(self);
    t->work.model_flops = values[0];
    t->work.executed_flops = values[1];
    t->work.num_tokens = values[2];
    if (t->resolved)
        track_finalize(t);
    Py_END_CRITICAL_SECTION();
    Py_RETURN_NONE;
}

/* ---- read-only figures ------------------------------------------------ */

/* Getters of the figures: None before the block has finished; reading one
 * waits once if the GPU has not reached the block's end. */
#define TRACK_FIGURE_GETTER(name, expr)                                        \
    static PyObject *name(PyObject *self, void *Py_UNUSED(c))                  \
    {                                                                          \
        mfu_metrics m;                                                         \
        if (!track_resolve((track_object *)self, 1, &m))                       \
            Py_RETURN_NONE;                                                    \
        return mfu_py_float_or_none(expr);                                     \
    }

TRACK_FIGURE_GETTER(get_mfu, m.mfu)
TRACK_FIGURE_GETTER(get_hfu, m.hfu)
TRACK_FIGURE_GETTER(get_mbu, m.mbu)
TRACK_FIGURE_GETTER(get_elapsed_sec, m.elapsed_s)
TRACK_FIGURE_GETTER(get_achieved_flops_per_sec, m.achieved_flops_per_sec)
TRACK_FIGURE_GETTER(get_achieved_tflops, m.achieved_flops_per_sec * 1e-12)
TRACK_FIGURE_GETTER(get_achieved_tbs, m.achieved_bytes_per_sec * 1e-12)
TRACK_FIGURE_GETTER(get_tokens_per_sec, m.tokens_per_sec)
TRACK_FIGURE_GETTER(get_mfu_mixed, m.mfu_mixed)

void mfu_py_result_set_ideal_s(PyObject *result, double ideal_s)
{
    ((track_object *)result)->work.ideal_s = ideal_s;
}

static PyObject *get_peak_flops_per_sec(PyObject *self, void *Py_UNUSED(c))
{
    track_object *t = (track_object *)self;
    return mfu_py_float_or_none(t->peak.flops_per_sec * t->peak.num_devices);
}

static PyObject *get_model_flops(PyObject *self, void *Py_UNUSED(c))
{
    return mfu_py_float_or_none(track_work((track_object *)self).model_flops);
}

static PyObject *get_executed_flops(PyObject *self, void *Py_UNUSED(c))
{
    return mfu_py_float_or_none(track_work((track_object *)self).executed_flops);
}

static PyObject *get_num_tokens(PyObject *self, void *Py_UNUSED(c))
{
    return mfu_py_float_or_none(track_work((track_object *)self).num_tokens);
}

static PyObject *get_num_gpus(PyObject *self, void *Py_UNUSED(c))
{
    track_object *t = (track_object *)self;
    return PyLong_FromLong(t->peak.num_devices);
}

static PyObject *get_ready(PyObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(track_resolve((track_object *)self, 0, NULL));
}

static PyObject *get_clock(PyObject *self, void *Py_UNUSED(c))
{
    track_object *t = (track_object *)self;
    mfu_clock_kind clock = MFU_CLOCK_CPU;
    Py_BEGIN_CRITICAL_SECTION(self);
    if (t->timer != NULL && t->block.state != MFU_BLOCK_CPU)
        clock = mfu_py_timer_clock(t->timer);
    Py_END_CRITICAL_SECTION();
    return PyUnicode_FromString(mfu_py_clock_name(clock));
}

static PyObject *get_dtype(PyObject *self, void *Py_UNUSED(c))
{
    return Py_NewRef(((track_object *)self)->dtype);
}

static PyObject *get_gpu_spec(PyObject *self, void *Py_UNUSED(c))
{
    return Py_NewRef(((track_object *)self)->gpu_spec);
}

static PyGetSetDef track_getset[] = {
    {"mfu", get_mfu, NULL,
     "Model FLOPs Utilization: model FLOPs / elapsed_sec / peak FLOP/s "
     "(None until exit, or when no peak is known).", NULL},
    {"mfu_mixed", get_mfu_mixed, NULL,
     "Mixed-precision MFU: (sum over dtypes of FLOPs / that dtype's peak) / "
     "elapsed_sec / num_gpus (None unless track() got flops_by_dtype).", NULL},
    {"hfu", get_hfu, NULL,
     "Hardware FLOPs Utilization from hfu_flop_count (None if not given).", NULL},
    {"mbu", get_mbu, NULL,
     "Model Bandwidth Utilization proxy: param_bytes / elapsed_sec / peak "
     "bytes/s (None when no bandwidth is known).", NULL},
    {"elapsed_sec", get_elapsed_sec, NULL,
     "Seconds the block took (its compute window, on the GPU clock when it "
     "has one; not a step period).", NULL},
    {"achieved_tflops", get_achieved_tflops, NULL,
     "Model TFLOP/s achieved over all num_gpus devices.", NULL},
    {"achieved_flops_per_sec", get_achieved_flops_per_sec, NULL,
     "Model FLOP/s achieved over all num_gpus devices.", NULL},
    {"achieved_tbs", get_achieved_tbs, NULL,
     "param_bytes / elapsed_sec in TB/s.", NULL},
    {"tokens_per_sec", get_tokens_per_sec, NULL,
     "num_tokens / elapsed_sec (None if num_tokens was not given).", NULL},
    {"peak_flops_per_sec", get_peak_flops_per_sec, NULL,
     "The MFU denominator: peak FLOP/s of one device for dtype x num_gpus "
     "(None when unknown).", NULL},
    {"model_flops", get_model_flops, NULL,
     "The MFU numerator (FLOPs); None while unknown (set_work()).", NULL},
    {"executed_flops", get_executed_flops, NULL,
     "The HFU numerator (FLOPs), or None.", NULL},
    {"num_tokens", get_num_tokens, NULL,
     "Tokens processed in the block, or None.", NULL},
    {"num_gpus", get_num_gpus, NULL, "Devices the peak is multiplied by.", NULL},
    {"ready", get_ready, NULL,
     "True once the figures can be read without waiting (asks the GPU "
     "without blocking).", NULL},
    {"clock", get_clock, NULL,
     "The clock timing the block: 'cuda' or 'hip' (GPU events on its "
     "stream) or 'cpu'.", NULL},
    {"dtype", get_dtype, NULL, "Canonical dtype name of the peak used.", NULL},
    {"gpu_spec", get_gpu_spec, NULL, "The GPUSpec the peak came from.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *track_repr(PyObject *self)
{
    track_object *t = (track_object *)self;
    mfu_metrics m;
    if (!track_resolve(t, 0, &m))
        return PyUnicode_FromFormat("UtilizationResult(dtype=%R, pending)",
                                    t->dtype);
    PyObject *mfu = mfu_py_float_or_none(m.mfu);
    PyObject *elapsed = mfu_py_float_or_none(m.elapsed_s);
    PyObject *tflops = mfu_py_float_or_none(m.achieved_flops_per_sec * 1e-12);
    PyObject *repr = NULL;
    if (mfu != NULL && elapsed != NULL && tflops != NULL)
        repr = PyUnicode_FromFormat(
            "UtilizationResult(mfu=%R, elapsed_sec=%R, achieved_tflops=%R, "
            "dtype=%R)", mfu, elapsed, tflops, t->dtype);
    Py_XDECREF(mfu);
    Py_XDECREF(elapsed);
    Py_XDECREF(tflops);
    return repr;
}

static PyMethodDef track_methods[] = {
    {"__enter__", track_enter, METH_NOARGS, "Start timing; returns self."},
    {"__exit__", (PyCFunction)(void (*)(void))track_exit, METH_FASTCALL,
     "Stop timing and compute the figures; never suppresses an exception."},
    {"set_work", (PyCFunction)(void (*)(void))track_set_work,
     METH_VARARGS | METH_KEYWORDS,
     "set_work($self, /, flop_count=None, hfu_flop_count=None, num_tokens=None)\n"
     "--\n\nSet the block's work (model FLOPs, executed FLOPs, tokens; None = "
     "unknown) for a block whose work is known only when it ends "
     "(MFUOptimizerWrapper.track_step() counts it while the block runs). "
     "Figures already computed follow the new work."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot track_slots[] = {
    {Py_tp_doc, "Result of one track() block: a context manager whose "
                "figures (mfu, hfu, mbu, elapsed_sec, achieved_tflops, "
                "tokens_per_sec) are filled in when the block exits."},
    {Py_tp_dealloc, track_dealloc},
    {Py_tp_traverse, track_traverse},
    {Py_tp_clear, track_clear},
    {Py_tp_methods, track_methods},
    {Py_tp_getset, track_getset},
    {Py_tp_repr, track_repr},
    {0, NULL},
};

PyType_Spec mfu_py_result_spec = {
    .name = "mfu_tracker._C.UtilizationResult",
    .basicsize = sizeof(track_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE
             | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = track_slots,
};

/* A new block from its nine values (flop_count, param_bytes, hfu_flop_count,
 * num_tokens, peak_flops_per_sec, peak_bytes_per_sec, num_gpus, dtype name,
 * gpu_spec), timed on `timer` (NULL: the CPU clock) on `stream`. */
PyObject *mfu_py_result_new(mfu_module_state *state, PyObject *const *values,
                            PyObject *timer, uintptr_t stream)
{
    mfu_work work;
    mfu_peak peak = {.measured_flops_per_sec = NAN};

    mfu_work_unknown(&work);
    if (mfu_py_number_arg(values[0], "flop_count", 0, &work.model_flops) < 0
        || mfu_py_number_arg(values[1], "param_bytes", 1, &work.param_bytes) < 0
        || mfu_py_number_arg(values[2], "hfu_flop_count", 1,
                             &work.executed_flops) < 0
        || mfu_py_number_arg(values[3], "num_tokens", 1, &work.num_tokens) < 0
        || mfu_py_number_arg(values[4], "peak_flops_per_sec", 1,
                             &peak.flops_per_sec) < 0
        || mfu_py_number_arg(values[5], "peak_bytes_per_sec", 1,
                             &peak.bytes_per_sec) < 0
        || mfu_py_num_gpus_arg(values[6], &peak.num_devices) < 0)
        return NULL;
    if (!PyUnicode_Check(values[7])) {
        PyErr_SetString(PyExc_TypeError, "dtype must be a str");
        return NULL;
    }
    if (mfu_py_check_work_and_peak(&work, &peak, mfu_py_track_renames) < 0)
        return NULL;

    track_object *t = PyObject_GC_New(track_object, state->track_type);
    if (t == NULL)
        return NULL;
    t->state = state;
    t->work = work;
    t->peak = peak;
    t->start_ns = 0;
    t->end_ns = 0;
    t->phase = TRACK_CREATED;
    t->resolved = 0;
    t->dtype = Py_NewRef(values[7]);
    t->gpu_spec = Py_NewRef(values[8]);
    t->timer = Py_XNewRef(timer);
    t->stream = stream;
    memset(&t->block, 0, sizeof t->block);
    t->block.state = MFU_BLOCK_CPU;
    PyObject_GC_Track((PyObject *)t);
    return (PyObject *)t;
}
