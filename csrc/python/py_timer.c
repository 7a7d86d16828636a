/*
 * py_timer.c -- the GPU clock for Python: _C.MarkTimer (a shared mark timer
 * behind GPU-timed track() blocks) and _C.StepTracker (the hot path of
 * mfu_tracker.Tracker: one mark per step boundary, windowed statistics).
 *
 * Both wrap core/timing.h's mark timer. Neither ever stalls the GPU in
 * steady state: marks are recorded, resolved by non-blocking queries, and a
 * blocking wait happens only when a value is read before the GPU got there
 * (one wait), on flush()/close(), or when the host runs events_max marks
 * ahead of the GPU (the core's pool-full wait). The GIL is released around
 * every blocking wait; a per-object lock keeps the (single-threaded) core
 * timer safe meanwhile.
 *
 * Failures: a driver call that fails makes the core timer's status sticky.
 * These types then warn once (RuntimeWarning naming the call and its code)
 * and continue on the CPU clock; nothing raises into the training loop.
 *
 * Step accounting (StepTracker). The first step() takes mark 0 and starts
 * the clock; call n takes mark n and closes step n, whose period is
 * time(n) - time(n-1): everything between two boundaries. The work the call
 * describes waits in a bounded ring until mark n is resolved, then the
 * (period, work) record goes to the core's mfu_window (warm-up skip, last
 * `window` steps). The ring holds at most events_max + 1 entries: the core
 * timer never has more marks pending than it has events.
 */
#include <math.h>
#include <string.h>

#include "mfu_module.h"

/* ---- shared helpers ------------------------------------------------------ */

const char *mfu_py_clock_name(mfu_clock_kind clock)
{
    switch (clock) {
    case MFU_CLOCK_CUDA: return "cuda";
    case MFU_CLOCK_HIP: return "hip";
    default: return "cpu";
    }
}

/* "cpu" / "cuda" / "hip" -> the clock; -1 with ValueError otherwise. */
static int clock_arg(PyObject *obj, mfu_clock_kind *out)
{
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "clock must be a str, not %.80s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyUnicode_CompareWithASCIIString(obj, "cpu") == 0)
        *out = MFU_CLOCK_CPU;
    else if (PyUnicode_CompareWithASCIIString(obj, "cuda") == 0)
        *out = MFU_CLOCK_CUDA;
    else if (PyUnicode_CompareWithASCIIString(obj, "hip") == 0)
        *out = MFU_CLOCK_HIP;
    else {
        PyErr_Format(PyExc_ValueError,
                     "clock must be 'cpu', 'cuda' or 'hip', got %R", obj);
        return -1;
    }
    return 0;
}

/* Take `lock`; if another thread holds it (waiting on the GPU with the GIL
 * released), wait for it without holding the GIL. */
static void lock_acquire(PyThread_type_lock lock)
{
    if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

/* Emit a RuntimeWarning without disturbing a pending exception (an
 * __exit__ runs with the block's exception set). Warnings turned into
 * errors are swallowed: they must not end a training run. */
static void warn_keep_exception(const char *message)
{
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    if (PyErr_WarnEx(PyExc_RuntimeWarning, message, 1) < 0)
        PyErr_Clear();
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* "cuEventRecord failed with 1 (CUDA_ERROR_INVALID_VALUE)" or
 * "dlopen: <detail>", for a warning or an exception. */
static void describe_gpu_error(mfu_clock_kind clock, const mfu_gpu_error *error,
                               char *buffer, size_t size)
{
    const char *call = error->call != NULL ? error->call : "a driver call";
    if (error->code != 0) {
        const mfu_gpu_driver *driver = NULL;
        const char *name = NULL;
        if (mfu_gpu_driver_get((mfu_gpu_api)clock, &driver) == MFU_OK)
            name = mfu_gpu_driver_code_name(driver, error->code);
        PyOS_snprintf(buffer, size, "%s failed with %d%s%s%s", call, error->code,
                      name ? " (" : "", name ? name : "", name ? ")" : "");
    } else if (error->detail[0] != '\0') {
        PyOS_snprintf(buffer, size, "%s: %s", call, error->detail);
    } else {
        PyOS_snprintf(buffer, size, "%s failed", call);
    }
}

static void fallback_message(mfu_clock_kind clock, const char *what,
                             const mfu_gpu_error *error, char *buffer,
                             size_t size)
{
    char cause[256];
    describe_gpu_error(clock, error, cause, sizeof cause);
    PyOS_snprintf(buffer, size,
                  "mfu_tracker: %s: the %s clock failed (%s); timing falls back "
                  "to the CPU clock",
                  what, mfu_py_clock_name(clock), cause);
}

/* Status of a timer call that means the timer is no longer usable (a
 * sticky driver failure); NOT_READY / NOT_FOUND / INVALID_ARGUMENT are
 * answers, not failures. */
static int timer_broken(mfu_status status)
{
    return status != MFU_OK && status != MFU_ERR_NOT_READY
           && status != MFU_ERR_NOT_FOUND && status != MFU_ERR_INVALID_ARGUMENT;
}

static PyObject *counters_dict(const mfu_timer_counters *c)
{
    return Py_BuildValue("{sKsKsKsKsIsI}", "marks", (unsigned long long)c->marks,
                         "resolved", (unsigned long long)c->resolved, "waits",
                         (unsigned long long)c->waits, "pool_full_waits",
                         (unsigned long long)c->pool_full_waits, "events",
                         (unsigned int)c->events, "pool_grows",
                         (unsigned int)c->pool_grows);
}

/* ==== MarkTimer ============================================================ */

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
        fallback_message(t->clock, "track()", &error, t->message,
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
        warn_keep_exception(t->message);
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
    lock_acquire(t->lock);
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
    lock_acquire(t->lock);
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
    lock_acquire(t->lock);
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
    lock_acquire(t->lock);
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
                     "need 2 <= events_initial <= events_max <= history <= 2**24 "
                     "(0 = default), got %u, %u, %u",
                     initial, maximum, history);
    } else if (status == MFU_ERR_NO_MEMORY) {
        PyErr_NoMemory();
    } else {
        char cause[256];
        describe_gpu_error(clock, &error, cause, sizeof cause);
        PyErr_Format(PyExc_RuntimeError, "the %s clock is unavailable: %s",
                     mfu_py_clock_name(clock), cause);
    }
    return NULL;
}

static PyObject *timer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"clock", "events_initial", "events_max", "history",
                               NULL};
    PyObject *clock_obj;
    /* "n", not "I": "I" wraps silently (2**32 + 16 -> 16, -1 -> 4294967295). */
    Py_ssize_t sizes[3] = {0, 0, 0};
    mfu_clock_kind clock;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$nnn:MarkTimer", keywords,
                                     &clock_obj, &sizes[0], &sizes[1], &sizes[2])
        || clock_arg(clock_obj, &clock) < 0)
        return NULL;
    for (int i = 0; i < 3; i++) {
        if (sizes[i] < 0 || sizes[i] > (1 << 24)) {
            mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, keywords[i + 1],
                         "must be between 0 (default) and 2**24, got %zd",
                         sizes[i]);
            return NULL;
        }
    }
    uint32_t initial = (uint32_t)sizes[0], maximum = (uint32_t)sizes[1],
             history = (uint32_t)sizes[2];
    timer_object *t = (timer_object *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->clock = clock;
    t->lock = PyThread_allocate_lock();
    if (t->lock == NULL) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    t->timer = create_core_timer(clock, initial, maximum, history);
    if (t->timer == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static int timer_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static void timer_dealloc(PyObject *self)
{
    timer_object *t = (timer_object *)self;
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    /* Blocks hold a reference to their timer: none is linked any more. */
    mfu_timer_destroy(t->timer);
    if (t->lock != NULL)
        PyThread_free_lock(t->lock);
    type->tp_free(self);
    Py_DECREF(type);
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
    describe_gpu_error(t->clock, &error, cause, sizeof cause);
    timer_unlock(t);
    PyErr_Format(PyExc_RuntimeError, "%s: %s", what, cause);
    return NULL;
}

static int id_arg(PyObject *obj, const char *argument, uint64_t *out)
{
    if (PyBool_Check(obj) || !PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int mark id, not %.80s",
                     argument, Py_TYPE(obj)->tp_name);
        return -1;
    }
    unsigned long long value = PyLong_AsUnsignedLongLong(obj);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = (uint64_t)value;
    return 0;
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
    lock_acquire(t->lock);
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
    lock_acquire(t->lock);
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
    uint64_t id;
    int ready = 0;
    if (id_arg(arg, "id", &id) < 0)
        return NULL;
    lock_acquire(t->lock);
    mfu_status status = mfu_timer_ready(t->timer, id, &ready);
    if (status != MFU_OK)
        return timer_raise(t, status, "MarkTimer.ready");
    timer_sweep(t);
    timer_unlock(t);
    return PyBool_FromLong(ready);
}

/* time_s(id, *, wait=True) and elapsed_s(start, end, *, wait=True). */
static PyObject *timer_read(timer_object *t, PyObject *args, PyObject *kwargs,
                            int interval)
{
    static char *one[] = {"id", "wait", NULL};
    static char *two[] = {"start", "end", "wait", NULL};
    PyObject *a = NULL, *b = NULL;
    int wait = 1;
    uint64_t start = 0, end = 0;
    double seconds = NAN;
    mfu_status status;

    if (interval) {
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$p:elapsed_s", two, &a,
                                         &b, &wait)
            || id_arg(a, "start", &start) < 0 || id_arg(b, "end", &end) < 0)
            return NULL;
    } else if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:time_s", one, &a,
                                            &wait)
               || id_arg(a, "id", &end) < 0) {
        return NULL;
    }
    mfu_wait mode = wait ? MFU_WAIT_IF_NEEDED : MFU_WAIT_NEVER;
    lock_acquire(t->lock);
    if (wait) {
        Py_BEGIN_ALLOW_THREADS
        status = interval ? mfu_timer_elapsed_s(t->timer, start, end, mode, &seconds)
                          : mfu_timer_time_s(t->timer, end, mode, &seconds);
        Py_END_ALLOW_THREADS
    } else {
        status = interval ? mfu_timer_elapsed_s(t->timer, start, end, mode, &seconds)
                          : mfu_timer_time_s(t->timer, end, mode, &seconds);
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
    lock_acquire(t->lock);
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
    lock_acquire(t->lock);
    mfu_timer_get_counters(t->timer, &c);
    PyThread_release_lock(t->lock);
    return counters_dict(&c);
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
    describe_gpu_error(t->clock, &error, cause, sizeof cause);
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

static PyType_Slot timer_slots[] = {
    {Py_tp_doc, "MarkTimer(clock, *, events_initial=0, events_max=0, history=0)\n"
                "--\n\n"
                "A mark timer on the 'cpu', 'cuda' or 'hip' clock (core/timing.h): "
                "marks recorded without blocking, resolved by non-blocking "
                "queries. track() shares one per (clock, device). Creating a GPU "
                "timer raises RuntimeError naming the cause when the driver or a "
                "CUDA context is missing."},
    {Py_tp_new, timer_new},
    {Py_tp_dealloc, timer_dealloc},
    {Py_tp_traverse, timer_traverse},
    {Py_tp_methods, timer_methods},
    {Py_tp_getset, timer_getset},
    {0, NULL},
};

static PyType_Spec timer_spec = {
    .name = "mfu_tracker._C.MarkTimer",
    .basicsize = sizeof(timer_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = timer_slots,
};

/* ==== StepTracker ========================================================== */

typedef struct {
    uint64_t end_id;  /* the mark closing the step */
    mfu_work work;
    int flops_known;
} step_entry;

enum { METRIC_KEYS = 9 };

typedef struct {
    PyObject_HEAD
    mfu_module_state *state;
    PyThread_type_lock lock;
    int configured;
    int closed;

    mfu_timer *timer;         /* NULL after close() */
    mfu_clock_kind clock;     /* the clock in use (CPU after a fallback) */
    mfu_clock_kind requested; /* the clock asked for */
    uintptr_t stream;

    mfu_window *window;
    uint32_t window_size;
    uint64_t warmup;
    mfu_work per_step;        /* defaults; NaN = unknown */
    mfu_peak peak;

    step_entry *ring;         /* steps waiting for their closing mark */
    uint32_t ring_capacity, ring_head, ring_count;

    uint64_t boundaries;      /* step() calls */
    uint64_t pushed;          /* records pushed to the window (== its seen) */
    uint64_t last_unknown_flops; /* push number of the last step without
                                    model FLOPs; 0 = none */
    uint64_t dropped;         /* steps lost to a failure */

    int warn_pending;
    int warned_failure, warned_args, warned_closed, warned_mfu;
    char message[400];

    PyObject *default_prefix; /* "throughput" */
    PyObject *prefix;         /* metrics() key cache */
    PyObject *keys[METRIC_KEYS];
} step_object;

static const char *const metric_names[METRIC_KEYS] = {
    "mfu", "hfu", "mbu", "tokens_per_sec", "achieved_tflops", "step_time_s",
    "step_time_min_s", "step_time_max_s", "peak_tflops"};

static void step_queue_warning(step_object *s, int *flag, const char *message)
{
    if (*flag || s->warn_pending)
        return;
    *flag = 1;
    s->warn_pending = 1;
    PyOS_snprintf(s->message, sizeof s->message, "%s", message);
}

static void step_unlock(step_object *s)
{
    int warn = s->warn_pending;
    s->warn_pending = 0;
    PyThread_release_lock(s->lock);
    if (warn)
        warn_keep_exception(s->message);
}

/* The GPU timer failed: warn once, drop the steps in flight, continue on a
 * fresh CPU timer (the next step() restarts the clock). Lock held. */
static void step_fallback(step_object *s)
{
    mfu_gpu_error error;
    char message[400];
    mfu_timer_error(s->timer, &error);
    fallback_message(s->clock, "Tracker", &error, message, sizeof message);
    step_queue_warning(s, &s->warned_failure, message);
    s->dropped += s->ring_count;
    s->ring_count = 0;
    mfu_timer_destroy(s->timer);
    s->timer = NULL;
    s->clock = MFU_CLOCK_CPU;
    mfu_timer_config config = {.clock = MFU_CLOCK_CPU};
    if (mfu_timer_create(&config, &s->timer, NULL) != MFU_OK)
        s->timer = NULL; /* out of memory: step() becomes a no-op */
}

/* Move every step whose closing mark is resolved into the window. */
static void step_drain(step_object *s)
{
    uint64_t resolved = mfu_timer_resolved(s->timer);
    while (s->ring_count > 0) {
        step_entry *e = &s->ring[s->ring_head];
        double period;
        if (e->end_id >= resolved)
            break;
        if (mfu_timer_elapsed_s(s->timer, e->end_id - 1, e->end_id, MFU_WAIT_NEVER,
                                &period) == MFU_OK
            && mfu_window_push(s->window, period, &e->work, NULL) == MFU_OK) {
            s->pushed++;
            if (!e->flops_known)
                s->last_unknown_flops = s->pushed;
        } else {
            s->dropped++;
        }
        s->ring_head = (s->ring_head + 1) % s->ring_capacity;
        s->ring_count--;
    }
}

/* Poll (GPU) and drain; a failure switches to the CPU clock. Lock held. */
static void step_catch_up(step_object *s)
{
    if (s->timer == NULL)
        return;
    if (s->clock != MFU_CLOCK_CPU && timer_broken(mfu_timer_poll(s->timer)))
        step_fallback(s);
    else
        step_drain(s);
}

/* A per-step number: a finite int/float >= 0 -> 1; None -> 0 (absent);
 * anything else -> -1 (bad, recorded as unknown with one warning). */
static int step_number(PyObject *obj, double *out)
{
    double v;
    if (obj == Py_None)
        return 0;
    if (PyFloat_CheckExact(obj))
        v = PyFloat_AS_DOUBLE(obj);
    else if (PyLong_CheckExact(obj) || (PyLong_Check(obj) && !PyBool_Check(obj))) {
        v = PyLong_AsDouble(obj);
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
    } else if (PyFloat_Check(obj))
        v = PyFloat_AsDouble(obj);
    else
        return -1;
    if (!(isfinite(v) && v >= 0.0))
        return -1;
    *out = v;
    return 1;
}

static int kw_is(PyObject *name, PyObject *interned, const char *ascii)
{
    return name == interned || PyUnicode_CompareWithASCIIString(name, ascii) == 0;
}

/* step(num_tokens=None, *, model_flops=None, executed_flops=None) */
static PyObject *step_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    mfu_module_state *state = s->state;
    PyObject *tokens_obj = Py_None, *model_obj = Py_None, *executed_obj = Py_None;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    const char *bad = NULL;

    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError,
                     "step() takes at most 1 positional argument (%zd given)", nargs);
        return NULL;
    }
    if (nargs == 1)
        tokens_obj = args[0];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        PyObject *value = args[nargs + i];
        if (kw_is(name, state->kw_num_tokens, "num_tokens") && nargs == 0)
            tokens_obj = value;
        else if (kw_is(name, state->kw_model_flops, "model_flops"))
            model_obj = value;
        else if (kw_is(name, state->kw_executed_flops, "executed_flops"))
            executed_obj = value;
        else {
            PyErr_Format(PyExc_TypeError,
                         "step() got an unexpected or repeated keyword argument %R",
                         name);
            return NULL;
        }
    }

    /* The work of the step this call closes. */
    step_entry entry;
    entry.work = s->per_step;
    entry.work.num_tokens = NAN;
    int r = step_number(tokens_obj, &entry.work.num_tokens);
    if (r < 0)
        bad = "num_tokens";
    r = step_number(model_obj, &entry.work.model_flops);
    if (r < 0) {
        bad = "model_flops";
        entry.work.model_flops = NAN;
    }
    if (r != 0) /* a per-step model count: the fixed executed count no longer pairs */
        entry.work.executed_flops = NAN;
    r = step_number(executed_obj, &entry.work.executed_flops);
    if (r < 0) {
        bad = "executed_flops";
        entry.work.executed_flops = NAN;
    }
    entry.flops_known = !isnan(entry.work.model_flops);
    if (!entry.flops_known)
        entry.work.model_flops = 0.0; /* the window needs a number; masked */

    lock_acquire(s->lock);
    if (bad != NULL) {
        char message[300];
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker.step(): %s must be a finite int or "
                      "float >= 0 (a Python number, not a tensor); that step's "
                      "%s is recorded as unknown and the figures using it are "
                      "left out", bad, bad);
        step_queue_warning(s, &s->warned_args, message);
    }
    if (s->timer == NULL) {
        if (s->closed)
            step_queue_warning(s, &s->warned_closed,
                               "mfu_tracker: Tracker.step() after close() is "
                               "ignored");
        step_unlock(s);
        Py_RETURN_NONE;
    }
    uint64_t id;
    mfu_status status = mfu_timer_mark(s->timer, s->stream, &id);
    if (status != MFU_OK) {
        step_fallback(s);
        if (s->timer == NULL
            || mfu_timer_mark(s->timer, s->stream, &id) != MFU_OK) {
            step_unlock(s);
            Py_RETURN_NONE;
        }
    }
    if (id > 0) {
        if (s->ring_count == s->ring_capacity) { /* cannot happen: see top */
            s->ring_head = (s->ring_head + 1) % s->ring_capacity;
            s->ring_count--;
            s->dropped++;
        }
        entry.end_id = id;
        s->ring[(s->ring_head + s->ring_count) % s->ring_capacity] = entry;
        s->ring_count++;
    } else if (s->boundaries > 0) {
        s->dropped++; /* the clock restarted after a fallback */
    }
    s->boundaries++;
    step_catch_up(s);
    step_unlock(s);
    Py_RETURN_NONE;
}

/* Summarize under the lock. 0 = no timer was ever configured. */
static int step_summarize(step_object *s, mfu_window_summary *out)
{
    step_catch_up(s);
    if (mfu_window_summarize(s->window, &s->peak, out, NULL) != MFU_OK)
        return 0;
    uint64_t floor = s->pushed > s->window_size ? s->pushed - s->window_size : 0;
    if (floor < s->warmup)
        floor = s->warmup;
    if (s->last_unknown_flops > floor) { /* a step without model FLOPs in the window */
        out->metrics.mfu = NAN;
        out->metrics.achieved_flops_per_sec = NAN;
        out->totals.model_flops = NAN;
    }
    if (out->metrics.mfu > 1.0 && !s->warned_mfu) {
        char message[300];
        PyOS_snprintf(message, sizeof message,
                      "mfu_tracker: Tracker MFU %.3f > 1 against a peak of %.4g "
                      "FLOP/s: the peak or the FLOP count is wrong; the value is "
                      "reported unclamped",
                      out->metrics.mfu, s->peak.flops_per_sec * s->peak.num_devices);
        step_queue_warning(s, &s->warned_mfu, message);
    }
    return 1;
}

static PyObject *step_summary(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_window_summary sum;
    if (!s->configured) {
        PyErr_SetString(PyExc_RuntimeError, "StepTracker.__init__ was not called");
        return NULL;
    }
    lock_acquire(s->lock);
    step_summarize(s, &sum);
    uint32_t pending = s->ring_count;
    uint64_t dropped = s->dropped, boundaries = s->boundaries;
    mfu_clock_kind clock = s->clock;
    step_unlock(s);

    const mfu_metrics *m = &sum.metrics;
    double peak = s->peak.flops_per_sec * s->peak.num_devices;
    PyObject *values[] = {
        mfu_py_float_or_none(sum.window_s),
        mfu_py_float_or_none(sum.step_s_mean),
        mfu_py_float_or_none(sum.step_s_min),
        mfu_py_float_or_none(sum.step_s_max),
        mfu_py_float_or_none(m->tokens_per_sec),
        mfu_py_float_or_none(m->achieved_flops_per_sec),
        mfu_py_float_or_none(m->achieved_flops_per_sec * 1e-12),
        mfu_py_float_or_none(m->mfu),
        mfu_py_float_or_none(m->hfu),
        mfu_py_float_or_none(m->mbu),
        mfu_py_float_or_none(peak),
        mfu_py_float_or_none(peak * 1e-12),
    };
    enum { NVALUES = sizeof values / sizeof values[0] };
    static const char *const names[NVALUES] = {
        "window_s", "step_time_s", "step_time_min_s", "step_time_max_s",
        "tokens_per_sec", "achieved_flops_per_sec", "achieved_tflops", "mfu",
        "hfu", "mbu", "peak_flops_per_sec", "peak_tflops"};
    PyObject *result = Py_BuildValue(
        "{sIsKsKsIsKsKss}", "steps", (unsigned int)sum.steps, "steps_seen",
        (unsigned long long)sum.steps_seen, "steps_skipped",
        (unsigned long long)sum.steps_skipped, "steps_pending", (unsigned int)pending,
        "steps_dropped", (unsigned long long)dropped, "boundaries",
        (unsigned long long)boundaries, "clock", mfu_py_clock_name(clock));
    for (int i = 0; i < NVALUES; i++) {
        if (values[i] == NULL
            || (result != NULL && PyDict_SetItemString(result, names[i], values[i]) < 0))
            Py_CLEAR(result);
    }
    for (int i = 0; i < NVALUES; i++)
        Py_XDECREF(values[i]);
    return result;
}

/* The "{prefix}/name" keys, rebuilt only when the prefix changes. */
static int step_metric_keys(step_object *s, PyObject *prefix)
{
    if (s->prefix != NULL
        && (s->prefix == prefix || PyUnicode_Compare(s->prefix, prefix) == 0))
        return 0;
    PyObject *keys[METRIC_KEYS];
    for (int i = 0; i < METRIC_KEYS; i++) {
        keys[i] = PyUnicode_FromFormat("%U/%s", prefix, metric_names[i]);
        if (keys[i] == NULL) {
            while (i-- > 0)
                Py_DECREF(keys[i]);
            return -1;
        }
    }
    Py_XSETREF(s->prefix, Py_NewRef(prefix));
    for (int i = 0; i < METRIC_KEYS; i++)
        Py_XSETREF(s->keys[i], keys[i]);
    return 0;
}

/* metrics(prefix="throughput"): the DESIGN §3 keys, unavailable ones left out. */
static PyObject *step_metrics(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    step_object *s = (step_object *)self;
    PyObject *prefix = NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    mfu_window_summary sum;

    if (nargs + nkw > 1 || (nkw == 1 && PyUnicode_CompareWithASCIIString(
                                            PyTuple_GET_ITEM(kwnames, 0), "prefix") != 0)) {
        PyErr_SetString(PyExc_TypeError, "metrics() takes one argument, prefix");
        return NULL;
    }
    if (nargs + nkw == 1) {
        prefix = args[0];
        if (!PyUnicode_Check(prefix)) {
            PyErr_Format(PyExc_TypeError, "prefix must be a str, not %.80s",
                         Py_TYPE(prefix)->tp_name);
            return NULL;
        }
    }
    if (!s->configured) {
        PyErr_SetString(PyExc_RuntimeError, "StepTracker.__init__ was not called");
        return NULL;
    }
    lock_acquire(s->lock);
    step_summarize(s, &sum);
    step_unlock(s);

    /* Keys after the lock (taking it may release the GIL, and another
     * thread's metrics() may change the cached keys meanwhile), held by
     * local references while the dict is built. */
    if (step_metric_keys(s, prefix != NULL ? prefix : s->default_prefix) < 0)
        return NULL;
    PyObject *keys[METRIC_KEYS];
    for (int i = 0; i < METRIC_KEYS; i++)
        keys[i] = Py_NewRef(s->keys[i]);

    PyObject *result = PyDict_New();
    if (result == NULL || sum.steps == 0)
        goto done;
    double peak = s->peak.flops_per_sec * s->peak.num_devices;
    const double values[METRIC_KEYS] = {
        sum.metrics.mfu, sum.metrics.hfu, sum.metrics.mbu,
        sum.metrics.tokens_per_sec, sum.metrics.achieved_flops_per_sec * 1e-12,
        sum.step_s_mean, sum.step_s_min, sum.step_s_max, peak * 1e-12};
    for (int i = 0; i < METRIC_KEYS; i++) {
        if (isnan(values[i]))
            continue;
        PyObject *v = PyFloat_FromDouble(values[i]);
        if (v == NULL || PyDict_SetItem(result, keys[i], v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(v);
    }
done:
    for (int i = 0; i < METRIC_KEYS; i++)
        Py_DECREF(keys[i]);
    return result;
}

/* Wait for every step taken (one wait), GIL released. Lock held. */
static void step_flush_locked(step_object *s)
{
    if (s->timer == NULL)
        return;
    if (s->clock != MFU_CLOCK_CPU) {
        mfu_status status;
        Py_BEGIN_ALLOW_THREADS
        status = mfu_timer_flush(s->timer);
        Py_END_ALLOW_THREADS
        if (timer_broken(status)) {
            step_fallback(s);
            return;
        }
    }
    step_drain(s);
}

static PyObject *step_flush(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    lock_acquire(s->lock);
    step_flush_locked(s);
    step_unlock(s);
    Py_RETURN_NONE;
}

static PyObject *step_close(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    lock_acquire(s->lock);
    step_flush_locked(s);
    mfu_timer_destroy(s->timer);
    s->timer = NULL;
    if (s->configured)
        s->closed = 1;
    step_unlock(s);
    Py_RETURN_NONE;
}

static PyObject *step_counters(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_timer_counters c = {0};
    lock_acquire(s->lock);
    if (s->timer != NULL)
        mfu_timer_get_counters(s->timer, &c);
    uint64_t boundaries = s->boundaries, dropped = s->dropped;
    uint32_t pending = s->ring_count;
    PyThread_release_lock(s->lock);
    PyObject *d = counters_dict(&c);
    PyObject *extra = Py_BuildValue("{sKsIsK}", "boundaries",
                                    (unsigned long long)boundaries, "pending",
                                    (unsigned int)pending, "dropped",
                                    (unsigned long long)dropped);
    if (d == NULL || extra == NULL || PyDict_Update(d, extra) < 0)
        Py_CLEAR(d);
    Py_XDECREF(extra);
    return d;
}

/* ---- construction ---------------------------------------------------------- */

static PyObject *step_new(PyTypeObject *type, PyObject *Py_UNUSED(args),
                          PyObject *Py_UNUSED(kwargs))
{
    mfu_module_state *state = mfu_module_state_from_type(type);
    if (state == NULL)
        return NULL;
    step_object *s = (step_object *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->state = state;
    s->lock = PyThread_allocate_lock();
    if (s->lock == NULL) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    return (PyObject *)s;
}

static int nonneg_arg(PyObject *obj, const char *argument, double *out)
{
    if (mfu_py_number_arg(obj, argument, 1, out) < 0)
        return -1;
    if (obj != Py_None && !(isfinite(*out) && *out >= 0.0)) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "must be a finite number >= 0 or None, got %g", *out);
        return -1;
    }
    return 0;
}

static int positive_or_none_arg(PyObject *obj, const char *argument, double *out)
{
    if (mfu_py_number_arg(obj, argument, 1, out) < 0)
        return -1;
    if (obj != Py_None && !(isfinite(*out) && *out > 0.0)) {
        mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, argument,
                     "must be a finite number > 0 or None, got %g", *out);
        return -1;
    }
    return 0;
}

static int long_arg(PyObject *obj, const char *argument, long long low,
                    long long high, long long *out)
{
    if (PyBool_Check(obj) || !PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.80s", argument,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
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

/* StepTracker(*, clock="cpu", stream=0, model_flops=None, executed_flops=None,
 *             param_bytes=None, peak_flops_per_sec=None,
 *             peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1) */
static int step_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"clock", "stream", "model_flops", "executed_flops",
                               "param_bytes", "peak_flops_per_sec",
                               "peak_bytes_per_sec", "num_gpus", "window", "warmup",
                               NULL};
    step_object *s = (step_object *)self;
    PyObject *clock_obj = NULL, *stream_obj = NULL, *model_obj = Py_None;
    PyObject *executed_obj = Py_None, *bytes_obj = Py_None;
    PyObject *peak_flops_obj = Py_None, *peak_bytes_obj = Py_None;
    PyObject *gpus_obj = NULL, *window_obj = NULL, *warmup_obj = NULL;
    mfu_clock_kind clock = MFU_CLOCK_CPU;
    uintptr_t stream = 0;
    long long gpus = 1, window = 100, warmup = 1;
    mfu_work per_step;
    mfu_peak peak;

    if (s->configured || s->window != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a StepTracker is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOOOOOOOO:StepTracker",
                                     keywords, &clock_obj, &stream_obj, &model_obj,
                                     &executed_obj, &bytes_obj, &peak_flops_obj,
                                     &peak_bytes_obj, &gpus_obj, &window_obj,
                                     &warmup_obj))
        return -1;
    if ((clock_obj != NULL && clock_arg(clock_obj, &clock) < 0)
        || (stream_obj != NULL && mfu_py_stream_arg(stream_obj, "stream", &stream) < 0)
        || nonneg_arg(model_obj, "model_flops", &per_step.model_flops) < 0
        || nonneg_arg(executed_obj, "executed_flops", &per_step.executed_flops) < 0
        || nonneg_arg(bytes_obj, "param_bytes", &per_step.param_bytes) < 0
        || positive_or_none_arg(peak_flops_obj, "peak_flops_per_sec",
                                &peak.flops_per_sec) < 0
        || positive_or_none_arg(peak_bytes_obj, "peak_bytes_per_sec",
                                &peak.bytes_per_sec) < 0
        || (gpus_obj != NULL && long_arg(gpus_obj, "num_gpus", 1, 1000000000, &gpus) < 0)
        || (window_obj != NULL
            && long_arg(window_obj, "window", 1, 1 << 24, &window) < 0)
        || (warmup_obj != NULL
            && long_arg(warmup_obj, "warmup", 0, 1000000000000LL, &warmup) < 0))
        return -1;
    per_step.num_tokens = NAN;
    peak.num_devices = (int)gpus;

    if (mfu_window_create((uint32_t)window, (uint64_t)warmup, &s->window) != MFU_OK) {
        PyErr_NoMemory();
        return -1;
    }
    /* The GPU clock, else the CPU clock with one warning. */
    mfu_timer_config config = {.clock = clock};
    mfu_gpu_error error = {0};
    mfu_status status = mfu_timer_create(&config, &s->timer, &error);
    s->requested = clock;
    s->clock = clock;
    if (status == MFU_ERR_NO_MEMORY) {
        PyErr_NoMemory();
        return -1;
    }
    if (status != MFU_OK) {
        char message[400];
        fallback_message(clock, "Tracker", &error, message, sizeof message);
        s->warned_failure = 1;
        warn_keep_exception(message);
        s->clock = MFU_CLOCK_CPU;
        config.clock = MFU_CLOCK_CPU;
        if (mfu_timer_create(&config, &s->timer, NULL) != MFU_OK) {
            PyErr_NoMemory();
            return -1;
        }
    }
    /* Pending marks never exceed the events in use (events_max, default
     * 1024); one more slot for safety. */
    s->ring_capacity = 1024 + 1;
    s->ring = PyMem_Calloc(s->ring_capacity, sizeof *s->ring);
    if (s->ring == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->default_prefix = PyUnicode_InternFromString("throughput");
    if (s->default_prefix == NULL)
        return -1;
    s->stream = stream;
    s->window_size = (uint32_t)window;
    s->warmup = (uint64_t)warmup;
    s->per_step = per_step;
    s->peak = peak;
    s->configured = 1;
    return 0;
}

static int step_traverse(PyObject *self, visitproc visit, void *arg)
{
    step_object *s = (step_object *)self;
    Py_VISIT(s->default_prefix);
    Py_VISIT(s->prefix);
    for (int i = 0; i < METRIC_KEYS; i++)
        Py_VISIT(s->keys[i]);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int step_clear(PyObject *self)
{
    step_object *s = (step_object *)self;
    Py_CLEAR(s->default_prefix);
    Py_CLEAR(s->prefix);
    for (int i = 0; i < METRIC_KEYS; i++)
        Py_CLEAR(s->keys[i]);
    return 0;
}

static void step_dealloc(PyObject *self)
{
    step_object *s = (step_object *)self;
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    (void)step_clear(self);
    mfu_timer_destroy(s->timer);
    mfu_window_destroy(s->window);
    PyMem_Free(s->ring);
    if (s->lock != NULL)
        PyThread_free_lock(s->lock);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *step_get_clock(PyObject *self, void *Py_UNUSED(c))
{
    return PyUnicode_FromString(mfu_py_clock_name(((step_object *)self)->clock));
}

static PyObject *step_get_stream(PyObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(((step_object *)self)->stream);
}

static PyObject *step_get_window(PyObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLong(((step_object *)self)->window_size);
}

static PyObject *step_get_warmup(PyObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(((step_object *)self)->warmup);
}

static PyObject *step_get_closed(PyObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(((step_object *)self)->closed);
}

static PyMethodDef step_methods[] = {
    {"step", (PyCFunction)(void (*)(void))step_step, METH_FASTCALL | METH_KEYWORDS,
     "step($self, num_tokens=None, *, model_flops=None, executed_flops=None)\n--\n\n"
     "Mark a step boundary (the first call starts the clock). The arguments "
     "describe the step this call closes: tokens processed, and model / "
     "executed FLOPs overriding the per-step defaults. Never blocks in steady "
     "state, never raises on bad values (one warning; the value is unknown)."},
    {"summary", step_summary, METH_NOARGS,
     "summary($self, /)\n--\n\nWindowed figures over the last `window` resolved "
     "steps after warm-up (None = unavailable)."},
    {"metrics", (PyCFunction)(void (*)(void))step_metrics,
     METH_FASTCALL | METH_KEYWORDS,
     "metrics($self, prefix='throughput')\n--\n\n{prefix}/mfu, hfu, mbu, "
     "tokens_per_sec, achieved_tflops, step_time_s, step_time_min_s, "
     "step_time_max_s, peak_tflops; unavailable figures are left out."},
    {"flush", step_flush, METH_NOARGS,
     "flush($self, /)\n--\n\nWait for every step taken so far (one wait)."},
    {"close", step_close, METH_NOARGS,
     "close($self, /)\n--\n\nFlush and release the GPU events; the figures "
     "stay readable."},
    {"counters", step_counters, METH_NOARGS,
     "counters($self, /)\n--\n\nTimer counters plus boundaries, pending, dropped."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef step_getset[] = {
    {"clock", step_get_clock, NULL,
     "The clock timing the steps: 'cpu', 'cuda' or 'hip' ('cpu' after a "
     "fallback).", NULL},
    {"stream", step_get_stream, NULL, "The raw stream handle marks go to.", NULL},
    {"window", step_get_window, NULL, "Steps the figures cover.", NULL},
    {"warmup", step_get_warmup, NULL, "Timed steps ignored at the start.", NULL},
    {"closed", step_get_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot step_slots[] = {
    {Py_tp_doc, "StepTracker(*, clock='cpu', stream=0, model_flops=None, "
                "executed_flops=None, param_bytes=None, peak_flops_per_sec=None, "
                "peak_bytes_per_sec=None, num_gpus=1, window=100, warmup=1)\n--\n\n"
                "The hot path of mfu_tracker.Tracker: one mark per step boundary, "
                "windowed statistics in C."},
    {Py_tp_new, step_new},
    {Py_tp_init, step_init},
    {Py_tp_dealloc, step_dealloc},
    {Py_tp_traverse, step_traverse},
    {Py_tp_clear, step_clear},
    {Py_tp_methods, step_methods},
    {Py_tp_getset, step_getset},
    {0, NULL},
};

static PyType_Spec step_spec = {
    .name = "mfu_tracker._C.StepTracker",
    .basicsize = sizeof(step_object),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE
             | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = step_slots,
};

int mfu_py_timer_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    state->timer_type =
        (PyTypeObject *)PyType_FromModuleAndSpec(module, &timer_spec, NULL);
    if (state->timer_type == NULL || PyModule_AddType(module, state->timer_type) < 0)
        return -1;
    state->step_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &step_spec, NULL);
    if (state->step_type == NULL || PyModule_AddType(module, state->step_type) < 0)
        return -1;
    state->kw_num_tokens = PyUnicode_InternFromString("num_tokens");
    state->kw_model_flops = PyUnicode_InternFromString("model_flops");
    state->kw_executed_flops = PyUnicode_InternFromString("executed_flops");
    if (state->kw_num_tokens == NULL || state->kw_model_flops == NULL
        || state->kw_executed_flops == NULL)
        return -1;
    return 0;
}
