/*
 * py_mark_timer.c -- _C.MarkTimer: a mark timer (core/device/timing.h) for Python,
 * and the GPU-timed blocks of track() (mfu_module.h, "GPU-timed blocks"),
 * which take their marks on a shared MarkTimer.
 *
 * Never stalls the GPU in steady state: marks are recorded, resolved by
 * non-blocking queries; a blocking wait happens only when a value is read
 * before the GPU got there (one wait), on flush(), or when the host runs
 * events_max marks ahead of the GPU (the core's pool-full wait). The GIL is
 * released around every blocking wait; a per-object lock keeps the
 * (single-threaded) core timer safe meanwhile.
 *
 * Failures: a driver call that fails makes the core timer's status sticky.
 * The blocks pending on it then warn once (RuntimeWarning naming the call
 * and its code) and fall back to their own CPU clock readings; nothing
 * raises into the training loop. MarkTimer's own methods raise RuntimeError
 * naming the cause.
 */
#include <math.h>
#include <stddef.h>

#include "mfu_module.h"

/* Status of a timer call that means the timer is no longer usable (a
 * sticky driver failure); NOT_READY / NOT_FOUND / INVALID_ARGUMENT are
 * answers, not failures. */
static int timer_broken(mfu_status status)
{
    return status != MFU_OK && status != MFU_ERR_NOT_READY
           && status != MFU_ERR_NOT_FOUND && status != MFU_ERR_INVALID_ARGUMENT;
}

typedef struct {
    PyObject_HEAD
    mfu_timer *timer;
    mfu_clock_kind clock;
    PyThread_type_lock lock;
    mfu_py_block *head, *tail; /* pending blocks, in start-mark order */
    int failed;                /* driver failure seen: blocks use the CPU */
    int warn_pending;          /* a warning to emit once the lock is released */
    int warned;
    char message[400];
} timer_object;

static void block_link(timer_object *t, mfu_py_block *b)
{
    b->prev = t->tail;
    b->next = NULL;
    if (t->tail != NULL)
        t->tail->next = b;
    else
        t->head = b;
    t->tail = b;
    b->linked = 1;
}

static void block_unlink(timer_object *t, mfu_py_block *b)
{
    if (b->prev != NULL)
        b->prev->next = b->next;
    else
        t->head = b->next;
    if (b->next != NULL)
        b->next->prev = b->prev;
    else
        t->tail = b->prev;
    b->prev = b->next = NULL;
    b->linked = 0;
}

/* The timer failed: every pending block falls back to its CPU readings,
 * and one warning is queued. Called with the lock held. */
static void timer_fail_all(timer_object *t)
{
    mfu_gpu_error error;
    t->failed = 1;
    while (t->head != NULL) {
        mfu_py_block *b = t->head;
        b->state = MFU_BLOCK_CPU;
        block_unlink(t, b);
    }
    if (!t->warned) {
        mfu_timer_error(t->timer, &error);
        mfu_py_fallback_message(t->clock, "track()", &error, t->message,
                         sizeof t->message);
        t->warn_pending = 1;
    }
}

/* Cache the GPU times of pending blocks whose marks are resolved (see
 * mfu_module.h). Makes no driver call. Called with the lock held. */
static void timer_sweep(timer_object *t)
{
    uint64_t resolved = mfu_timer_resolved(t->timer);
    mfu_py_block *b = t->head;
    while (b != NULL && b->start_id < resolved) {
        mfu_py_block *next = b->next;
        if (isnan(b->start_s)
            && mfu_timer_time_s(t->timer, b->start_id, MFU_WAIT_NEVER,
                                &b->start_s) != MFU_OK) {
            b->state = MFU_BLOCK_CPU; /* evicted unseen: cannot happen */
            block_unlink(t, b);
        } else if (b->ended && b->end_id < resolved) {
            double end_s;
            if (mfu_timer_time_s(t->timer, b->end_id, MFU_WAIT_NEVER, &end_s)
                == MFU_OK) {
                b->elapsed_s = end_s - b->start_s;
                b->state = MFU_BLOCK_RESOLVED;
            } else {
                b->state = MFU_BLOCK_CPU;
            }
            block_unlink(t, b);
        }
        b = next;
    }
}

/* Poll and sweep; on a failure, fail every pending block. Lock held. */
static mfu_status timer_poll_sweep(timer_object *t)
{
    mfu_status status = mfu_timer_poll(t->timer);
    if (timer_broken(status))
        timer_fail_all(t);
    else
        timer_sweep(t);
    return status;
}

static void timer_unlock(timer_object *t)
{
    int warn = t->warn_pending;
    t->warn_pending = 0;
    if (warn)
        t->warned = 1;
    PyThread_release_lock(t->lock);
    if (warn)
        mfu_py_warn_keep_exception(t->message);
}

int mfu_py_timer_check(mfu_module_state *state, PyObject *obj)
{
    return PyObject_TypeCheck(obj, state->timer_type);
}

mfu_clock_kind mfu_py_timer_clock(PyObject *timer)
{
    return ((timer_object *)timer)->clock;
}

void mfu_py_block_start(PyObject *timer, uintptr_t stream, mfu_py_block *b)
{
    timer_object *t = (timer_object *)timer;
    b->prev = b->next = NULL;
    b->linked = 0;
    b->ended = 0;
    b->state = MFU_BLOCK_CPU;
    b->start_s = NAN;
    b->elapsed_s = NAN;
    if (t->failed)
        return;
    mfu_py_lock_acquire(t->lock);
    if (!t->failed) {
        /* Resolve what the GPU finished, so earlier results keep their
         * value however many marks follow. */
        mfu_status status = timer_poll_sweep(t);
        if (!timer_broken(status)) {
            status = mfu_timer_mark(t->timer, stream, &b->start_id);
            if (status == MFU_OK) {
                b->state = MFU_BLOCK_PENDING;
                block_link(t, b);
                timer_sweep(t); /* the mark may have polled (full pool) */
            } else {
                timer_fail_all(t);
            }
        }
    }
    timer_unlock(t);
}

void mfu_py_block_end(PyObject *timer, uintptr_t stream, mfu_py_block *b)
{
    timer_object *t = (timer_object *)timer;
    if (b->state != MFU_BLOCK_PENDING)
        return;
    mfu_py_lock_acquire(t->lock);
    if (b->state == MFU_BLOCK_PENDING) {
        mfu_status status = mfu_timer_mark(t->timer, stream, &b->end_id);
        if (status == MFU_OK) {
            b->ended = 1;
            timer_sweep(t);
        } else {
            timer_fail_all(t);
        }
    }
    timer_unlock(t);
}

void mfu_py_block_resolve(PyObject *timer, mfu_py_block *b, int wait)
{
    timer_object *t = (timer_object *)timer;
    if (b->state != MFU_BLOCK_PENDING || !b->ended)
        return;
    mfu_py_lock_acquire(t->lock);
    if (b->state == MFU_BLOCK_PENDING) {
        mfu_status status = timer_poll_sweep(t);
        if (!timer_broken(status) && b->state == MFU_BLOCK_PENDING && wait) {
            double seconds;
            Py_BEGIN_ALLOW_THREADS
            status = mfu_timer_time_s(t->timer, b->end_id, MFU_WAIT_IF_NEEDED,
                                      &seconds);
            Py_END_ALLOW_THREADS
            if (timer_broken(status))
                timer_fail_all(t);
            else
                timer_sweep(t);
            if (b->state == MFU_BLOCK_PENDING) { /* defensive: never stays */
                b->state = MFU_BLOCK_CPU;
                block_unlink(t, b);
            }
        }
    }
    timer_unlock(t);
}

void mfu_py_block_forget(PyObject *timer, mfu_py_block *b)
{
    timer_object *t = (timer_object *)timer;
    if (!b->linked)
        return;
    mfu_py_lock_acquire(t->lock);
    if (b->linked)
        block_unlink(t, b);
    PyThread_release_lock(t->lock);
}

/* ---- MarkTimer: the Python type -------------------------------------------- */

/* Create a core timer; on failure set an exception naming the cause. */
static mfu_timer *create_core_timer(mfu_clock_kind clock, uint32_t initial,
                                    uint32_t maximum, uint32_t history)
{
    mfu_timer_config config = {.clock = clock, .driver = NULL,
                               .events_initial = initial, .events_max = maximum,
                               .history = history};
    mfu_gpu_error error;
    mfu_timer *timer = NULL;
    mfu_status status = mfu_timer_create(&config, &timer, &error);
    if (status == MFU_OK)
        return timer;
    if (status == MFU_ERR_INVALID_ARGUMENT && error.call == NULL) {
        mfu_py_raise(status, "events_initial/events_max/history",
                     "need 2 <= events_initial <= events_max <= history <= %u "
                     "(0 = default), got %u, %u, %u",
                     (unsigned)MFU_TIMER_SIZE_MAX, initial, maximum, history);
    } else if (status == MFU_ERR_NO_MEMORY) {
        PyErr_NoMemory();
    } else {
        char cause[256];
        mfu_py_describe_gpu_error(clock, &error, cause, sizeof cause);
        PyErr_Format(PyExc_RuntimeError, "the %s clock is unavailable: %s",
                     mfu_py_clock_name(clock), cause);
    }
    return NULL;
}

/* A pool or history size: 0 (default) .. MFU_TIMER_SIZE_MAX. An int past
 * int64 is an OverflowError (it fits no C integer), one in range of int64
 * but not of the sizes a ValueError naming it. */
static int size_arg(PyObject *obj, const char *argument, uint32_t *out)
{
    int64_t wide;
    long long value;
    if (obj == NULL)
        return 0;
    if (mfu_py_int64_arg(obj, argument, &wide) < 0
        || mfu_py_int_arg(obj, argument, 0, MFU_TIMER_SIZE_MAX, &value) < 0)
        return -1;
    *out = (uint32_t)value;
    return 0;
}

/* MarkTimer(clock, *, events_initial=0, events_max=0, history=0) */
static PyObject *timer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"clock", "events_initial", "events_max", "history",
                               NULL};
    PyObject *clock_obj, *size_obj[3] = {NULL, NULL, NULL};
    uint32_t sizes[3] = {0, 0, 0};
    mfu_clock_kind clock;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:MarkTimer", keywords,
                                     &clock_obj, &size_obj[0], &size_obj[1],
                                     &size_obj[2])
        || mfu_py_clock_arg(clock_obj, &clock) < 0)
        return NULL;
    for (int i = 0; i < 3; i++) {
        if (size_arg(size_obj[i], keywords[i + 1], &sizes[i]) < 0)
            return NULL;
    }
    timer_object *t =
        (timer_object *)mfu_py_alloc_locked(type, offsetof(timer_object, lock));
    if (t == NULL)
        return NULL;
    t->clock = clock;
    t->timer = create_core_timer(clock, sizes[0], sizes[1], sizes[2]);
    if (t->timer == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void timer_dealloc(PyObject *self)
{
    timer_object *t = (timer_object *)self;
    /* Blocks hold a reference to their timer: none is linked any more. */
    mfu_timer_destroy(t->timer);
    mfu_py_dealloc_locked(self, t->lock);
}

/* After a failed call from Python: fail the blocks, raise. Lock held on
 * entry, released here. */
static PyObject *timer_raise(timer_object *t, mfu_status status, const char *what)
{
    if (status == MFU_ERR_INVALID_ARGUMENT) {
        timer_unlock(t);
        return mfu_py_raise(status, what, "mark id never issued");
    }
    if (status == MFU_ERR_NOT_FOUND) {
        timer_unlock(t);
        return mfu_py_raise(status, what, "mark older than the timer's history");
    }
    mfu_gpu_error error;
    char cause[256];
    timer_fail_all(t);
    mfu_timer_error(t->timer, &error);
    mfu_py_describe_gpu_error(t->clock, &error, cause, sizeof cause);
    timer_unlock(t);
    PyErr_Format(PyExc_RuntimeError, "%s: %s", what, cause);
    return NULL;
}

static PyObject *timer_mark(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    timer_object *t = (timer_object *)self;
    uintptr_t stream = 0;
    uint64_t id;
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "mark() takes at most 1 argument (%zd given)",
                     nargs);
        return NULL;
    }
    if (nargs == 1 && mfu_py_stream_arg(args[0], "stream", &stream) < 0)
        return NULL;
    mfu_py_lock_acquire(t->lock);
    mfu_status status = mfu_timer_mark(t->timer, stream, &id);
    if (status != MFU_OK)
        return timer_raise(t, status, "MarkTimer.mark");
    timer_sweep(t);
    timer_unlock(t);
    return PyLong_FromUnsignedLongLong(id);
}

static PyObject *timer_poll(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    timer_object *t = (timer_object *)self;
    mfu_py_lock_acquire(t->lock);
    mfu_status status = mfu_timer_poll(t->timer);
    if (status != MFU_OK)
        return timer_raise(t, status, "MarkTimer.poll");
    timer_sweep(t);
    timer_unlock(t);
    Py_RETURN_NONE;
}

static PyObject *timer_ready(PyObject *self, PyObject *arg)
{
    timer_object *t = (timer_object *)self;
    long long id; /* a mark id; one never issued is the core's answer */
    int ready = 0;
    if (mfu_py_int_arg(arg, "id", 0, INT64_MAX, &id) < 0)
        return NULL;
    mfu_py_lock_acquire(t->lock);
    mfu_status status = mfu_timer_ready(t->timer, (uint64_t)id, &ready);
    if (status != MFU_OK)
        return timer_raise(t, status, "MarkTimer.ready");
    timer_sweep(t);
    timer_unlock(t);
    return PyBool_FromLong(ready);
}

/* The time of mark `end` (interval 0) or from `start` to `end`. */
static mfu_status read_core(const timer_object *t, int interval, uint64_t start,
                            uint64_t end, mfu_wait mode, double *seconds)
{
    return interval ? mfu_timer_elapsed_s(t->timer, start, end, mode, seconds)
                    : mfu_timer_time_s(t->timer, end, mode, seconds);
}

/* time_s(id, *, wait=True) and elapsed_s(start, end, *, wait=True). */
static PyObject *timer_read(timer_object *t, PyObject *args, PyObject *kwargs,
                            int interval)
{
    static char *one[] = {"id", "wait", NULL};
    static char *two[] = {"start", "end", "wait", NULL};
    PyObject *a = NULL, *b = NULL, *wait_obj = Py_True;
    int wait = 1;
    long long start = 0, end = 0; /* mark ids */
    double seconds = NAN;
    mfu_status status;

    if (interval) {
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:elapsed_s", two, &a,
                                         &b, &wait_obj)
            || mfu_py_int_arg(a, "start", 0, INT64_MAX, &start) < 0
            || mfu_py_int_arg(b, "end", 0, INT64_MAX, &end) < 0)
            return NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:time_s", one, &a,
                                            &wait_obj)
               || mfu_py_int_arg(a, "id", 0, INT64_MAX, &end) < 0) {
        return NULL;
    }
    if (mfu_py_flag_arg(wait_obj, "wait", &wait) < 0)
        return NULL;
    mfu_wait mode = wait ? MFU_WAIT_IF_NEEDED : MFU_WAIT_NEVER;
    mfu_py_lock_acquire(t->lock);
    if (wait) {
        Py_BEGIN_ALLOW_THREADS
        status = read_core(t, interval, (uint64_t)start, (uint64_t)end, mode, &seconds);
        Py_END_ALLOW_THREADS
    } else {
        status = read_core(t, interval, (uint64_t)start, (uint64_t)end, mode, &seconds);
    }
    if (status == MFU_ERR_NOT_READY) {
        timer_sweep(t);
        timer_unlock(t);
        Py_RETURN_NONE;
    }
    if (status != MFU_OK)
        return timer_raise(t, status, interval ? "MarkTimer.elapsed_s"
                                               : "MarkTimer.time_s");
    timer_sweep(t);
    timer_unlock(t);
    return PyFloat_FromDouble(seconds);
}

static PyObject *timer_time_s(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return timer_read((timer_object *)self, args, kwargs, 0);
}

static PyObject *timer_elapsed_s(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return timer_read((timer_object *)self, args, kwargs, 1);
}

static PyObject *timer_flush(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    timer_object *t = (timer_object *)self;
    mfu_status status;
    mfu_py_lock_acquire(t->lock);
    Py_BEGIN_ALLOW_THREADS
    status = mfu_timer_flush(t->timer);
    Py_END_ALLOW_THREADS
    if (status != MFU_OK)
        return timer_raise(t, status, "MarkTimer.flush");
    timer_sweep(t);
    timer_unlock(t);
    Py_RETURN_NONE;
}

static PyObject *timer_counters(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    timer_object *t = (timer_object *)self;
    mfu_timer_counters c;
    mfu_py_lock_acquire(t->lock);
    mfu_timer_get_counters(t->timer, &c);
    PyThread_release_lock(t->lock);
    return mfu_py_timer_counters_dict(&c);
}

static PyObject *timer_get_clock(PyObject *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(mfu_py_clock_name(((timer_object *)self)->clock));
}

static PyObject *timer_get_failed(PyObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(((timer_object *)self)->failed);
}

static PyObject *timer_get_error(PyObject *self, void *Py_UNUSED(c))
{
    timer_object *t = (timer_object *)self;
    mfu_gpu_error error;
    char cause[256];
    mfu_timer_error(t->timer, &error);
    if (error.call == NULL)
        Py_RETURN_NONE;
    mfu_py_describe_gpu_error(t->clock, &error, cause, sizeof cause);
    return PyUnicode_FromString(cause);
}

static PyMethodDef timer_methods[] = {
    {"mark", (PyCFunction)(void (*)(void))timer_mark, METH_FASTCALL,
     "mark($self, stream=0, /)\n--\n\nTake a mark on `stream` (raw handle; "
     "ignored by the CPU clock) and return its id. Never blocks in steady state."},
    {"poll", timer_poll, METH_NOARGS,
     "poll($self, /)\n--\n\nResolve, without blocking, every mark the GPU passed."},
    {"ready", timer_ready, METH_O,
     "ready($self, id, /)\n--\n\nTrue if reading mark `id` would not block."},
    {"time_s", (PyCFunction)(void (*)(void))timer_time_s,
     METH_VARARGS | METH_KEYWORDS,
     "time_s($self, id, *, wait=True)\n--\n\nSeconds from mark 0 to mark `id`; "
     "with wait=False, None if the GPU has not reached it."},
    {"elapsed_s", (PyCFunction)(void (*)(void))timer_elapsed_s,
     METH_VARARGS | METH_KEYWORDS,
     "elapsed_s($self, start, end, *, wait=True)\n--\n\nSeconds from mark "
     "`start` to mark `end`; with wait=False, None if not resolved yet."},
    {"flush", timer_flush, METH_NOARGS,
     "flush($self, /)\n--\n\nWait for every mark taken so far (GIL released)."},
    {"counters", timer_counters, METH_NOARGS,
     "counters($self, /)\n--\n\nmarks, resolved, waits, pool_full_waits, events, "
     "pool_grows."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef timer_getset[] = {
    {"clock", timer_get_clock, NULL, "'cpu', 'cuda' or 'hip'.", NULL},
    {"failed", timer_get_failed, NULL,
     "True after a driver failure (blocks then use the CPU clock).", NULL},
    {"error", timer_get_error, NULL,
     "The driver failure that stopped the timer, or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(timer_doc,
             "MarkTimer(clock, *, events_initial=0, events_max=0, history=0)\n"
             "--\n\n"
             "A mark timer on the 'cpu', 'cuda' or 'hip' clock (core/device/timing.h): "
             "marks recorded without blocking, resolved by non-blocking "
             "queries. track() shares one per (clock, device). Creating a GPU "
             "timer raises RuntimeError naming the cause when the driver or a "
             "CUDA context is missing.");

static PyType_Slot timer_slots[] = {
    {Py_tp_doc, (void *)timer_doc},
    {Py_tp_new, timer_new},
    {Py_tp_dealloc, timer_dealloc},
    {Py_tp_traverse, mfu_py_traverse_type},
    {Py_tp_methods, timer_methods},
    {Py_tp_getset, timer_getset},
    {0, NULL},
};

static PyType_Spec timer_spec = MFU_PY_TYPE_SPEC(
    "MarkTimer", timer_object,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE, timer_slots);

int mfu_py_mark_timer_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    state->timer_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &timer_spec, NULL);
    if (state->timer_type == NULL || PyModule_AddType(module, state->timer_type) < 0)
        return -1;
    return 0;
}
