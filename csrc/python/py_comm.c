/*
 * py_comm.c -- the communication sinks of mfu_tracker._C (py_comm.h): the
 * registry of subscribed StepTrackers, the capsule the C++ observer calls
 * through, StepTracker's communication methods, and comm_wait_begin() /
 * comm_wait_end() for the observer's Python side (the Work.wait wrapper).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "mfu_module.h"
#include "py_step_comm.h"

typedef struct {
    step_object *sink;   /* borrowed: the sink leaves before it is freed */
    uint32_t generation; /* 0: free */
    unsigned long thread; /* the thread that subscribed it */
} sink_slot;

/* A completion queued by done_at: its slot is ready once `seq` = the
 * position it was claimed at + 1. */
typedef struct {
    _Atomic uint64_t seq;
    mfu_comm_ticket ticket;
    uint64_t monotonic_ns;
} completion;

enum { COMPLETIONS = 1024 };

typedef struct {
    mfu_comm_api api; /* first: the capsule's pointer is the registry's */
    PyThread_type_lock lock;
    sink_slot slots[MFU_COMM_SINKS_MAX];
    uint32_t next_generation;
    volatile int active; /* sinks subscribed: read without the lock (a hint) */
    /* done_at's queue: many producers (claim with `head`), one consumer at a
     * time (the holder of `lock`, from `tail`). */
    _Atomic uint64_t head, tail;
    _Atomic uint64_t dropped;
    completion queue[COMPLETIONS];
} registry;

static void drain_completions(registry *reg);

/* A lock, waited for with the GIL released when this thread holds it
 * (py_comm.h, "Threads"). */
static void lock(PyThread_type_lock l)
{
    if (PyGILState_Check())
        mfu_py_lock_acquire(l);
    else
        PyThread_acquire_lock(l, WAIT_LOCK);
}

static int sink_active(void *reg)
{
    return ((registry *)reg)->active;
}

/* The sink in slot `i` with its lock held, or NULL (free, not initialized,
 * or another generation than `generation` when that is not 0). The
 * registry's lock is held. */
static step_object *lock_sink(registry *reg, int i, uint32_t generation)
{
    step_object *s = reg->slots[i].sink;
    if (s == NULL || (generation != 0 && reg->slots[i].generation != generation))
        return NULL;
    lock(s->lock);
    if (s->steps == NULL) {
        PyThread_release_lock(s->lock);
        return NULL;
    }
    return s;
}

/* Whether the wait's flags select slot `i`'s sink (its lock held). */
static int selected(const registry *reg, int i, const step_object *s, unsigned flags)
{
    if (!(flags & MFU_COMM_WAIT_ANY_THREAD) && reg->slots[i].thread != PyThread_get_thread_ident())
        return 0;
    if ((flags & MFU_COMM_WAIT_CPU_CLOCK_ONLY) && mfu_steps_clock(s->steps) != MFU_CLOCK_CPU)
        return 0;
    return 1;
}

/* Open `phase` in slot i's sink (its lock held) for a wait; inside a badput
 * phase none: the wait is that phase's time (steps.h, "Communication"). */
static void open_phase(registry *reg, int i, step_object *s, mfu_phase phase,
                       mfu_comm_wait *wait)
{
    mfu_status status;
    if (mfu_phase_leaves_step(mfu_steps_phase_innermost(s->steps)))
        return;
    status = mfu_steps_phase_begin(s->steps, phase);
    if (status == MFU_OK)
        wait->generation[i] = reg->slots[i].generation;
    else if (status == MFU_ERR_INVALID_ARGUMENT)
        mfu_py_step_queue_warning(
            s, &s->warned_phase_misuse,
            "mfu_tracker: Tracker: a wait for a collective found too many nested "
            "phases (more than _C.LIMIT_PHASE_DEPTH_MAX); its exposed time is not "
            "separated");
}

/* Under the registry's lock, after draining the completions: apply(reg, s,
 * i, arg) to each sink recorded in `generation` (0: not recorded in that
 * slot) that still holds it -- or, with generation NULL, to every live
 * sink --, with the sink's lock held; its fallback warnings are queued. */
static void each_sink(registry *reg, const uint32_t *generation,
                      void (*apply)(registry *reg, step_object *s, int i, void *arg), void *arg)
{
    lock(reg->lock);
    drain_completions(reg);
    for (int i = 0; i < MFU_COMM_SINKS_MAX; i++) {
        step_object *s;
        if (generation != NULL && generation[i] == 0)
            continue;
        s = lock_sink(reg, i, generation != NULL ? generation[i] : 0);
        if (s == NULL)
            continue;
        apply(reg, s, i, arg);
        mfu_py_step_check_fallback(s); /* queued: emitted by its next Python call */
        PyThread_release_lock(s->lock);
    }
    PyThread_release_lock(reg->lock);
}

/* A launch: recorded in every sink (its ticket), and the host's wait inside
 * it opened where selected. */
struct launch_arg {
    const mfu_comm_launch *launch;
    mfu_phase phase;
    unsigned flags;
    mfu_comm_ticket *ticket;
    mfu_comm_wait *wait;
};

static void begin_collective(registry *reg, step_object *s, int i, void *arg)
{
    struct launch_arg *a = arg;
    uint64_t token = 0;
    if (mfu_steps_comm_begin(s->steps, a->launch, &token) == MFU_OK && token != 0) {
        a->ticket->generation[i] = reg->slots[i].generation;
        a->ticket->token[i] = token;
    }
    if (selected(reg, i, s, a->flags))
        open_phase(reg, i, s, a->phase, a->wait);
}

static void sink_launch(void *r, const mfu_comm_launch *launch, mfu_phase phase,
                        unsigned flags, mfu_comm_ticket *ticket, mfu_comm_wait *wait)
{
    registry *reg = r;
    struct launch_arg a = {.launch = launch, .phase = phase, .flags = flags,
                           .ticket = ticket, .wait = wait};
    memset(ticket, 0, sizeof *ticket);
    memset(wait, 0, sizeof *wait);
    if (reg->active)
        each_sink(reg, NULL, begin_collective, &a);
}

static void done_at(void *r, const mfu_comm_ticket *ticket, uint64_t monotonic_ns)
{
    registry *reg = r;
    uint64_t at = atomic_load(&reg->head);
    do {
        if (at - atomic_load(&reg->tail) >= COMPLETIONS) {
            atomic_fetch_add(&reg->dropped, 1);
            return;
        }
    } while (!atomic_compare_exchange_weak(&reg->head, &at, at + 1));
    reg->queue[at % COMPLETIONS].ticket = *ticket;
    reg->queue[at % COMPLETIONS].monotonic_ns = monotonic_ns;
    atomic_store_explicit(&reg->queue[at % COMPLETIONS].seq, at + 1, memory_order_release);
}

/* Record the queued completions, in order, in their sinks (the registry's
 * lock held). */
static void drain_completions(registry *reg)
{
    uint64_t tail = atomic_load(&reg->tail);
    for (;; tail++) {
        completion *c = &reg->queue[tail % COMPLETIONS];
        if (atomic_load_explicit(&c->seq, memory_order_acquire) != tail + 1)
            break;
        for (int i = 0; i < MFU_COMM_SINKS_MAX; i++) {
            step_object *s;
            if (c->ticket.generation[i] == 0
                || (s = lock_sink(reg, i, c->ticket.generation[i])) == NULL)
                continue;
            (void)mfu_steps_comm_end_at(s->steps, c->ticket.token[i], c->monotonic_ns);
            PyThread_release_lock(s->lock);
        }
        atomic_store(&reg->tail, tail + 1);
    }
}

/* A completion: the ticket's token ends in its sink (arg: the ticket and its
 * stream). */
struct done_arg {
    const mfu_comm_ticket *ticket;
    uintptr_t stream;
};

static void end_collective(registry *reg, step_object *s, int i, void *arg)
{
    const struct done_arg *done = arg;
    (void)reg;
    (void)mfu_steps_comm_end(s->steps, done->ticket->token[i], done->stream);
}

static void sink_done(void *r, const mfu_comm_ticket *ticket, uintptr_t stream)
{
    struct done_arg done = {.ticket = ticket, .stream = stream};
    each_sink(r, ticket->generation, end_collective, &done);
}

/* A wait: the exposed-communication phase opened where selected. */
struct wait_arg {
    mfu_phase phase;
    unsigned flags;
    mfu_comm_wait *wait;
};

static void begin_wait_phase(registry *reg, step_object *s, int i, void *arg)
{
    struct wait_arg *a = arg;
    if (selected(reg, i, s, a->flags))
        open_phase(reg, i, s, a->phase, a->wait);
}

static void sink_wait_begin(void *r, mfu_phase phase, unsigned flags, mfu_comm_wait *wait)
{
    registry *reg = r;
    struct wait_arg a = {.phase = phase, .flags = flags, .wait = wait};
    memset(wait, 0, sizeof *wait);
    if (reg->active)
        each_sink(reg, NULL, begin_wait_phase, &a);
}

static void end_wait_phase(registry *reg, step_object *s, int i, void *arg)
{
    (void)reg;
    (void)i;
    (void)arg;
    (void)mfu_steps_phase_end(s->steps);
}

static void sink_wait_end(void *r, const mfu_comm_wait *wait)
{
    int any = 0;
    for (int i = 0; i < MFU_COMM_SINKS_MAX; i++)
        any |= wait->generation[i] != 0;
    if (any)
        each_sink(r, wait->generation, end_wait_phase, NULL);
}

/* ---- StepTracker's methods ---------------------------------------------- */

static registry *registry_of(const step_object *s)
{
    return (registry *)s->comm_registry;
}

/* _comm_subscribe(): start recording communication (the engine's window)
 * and become a sink. True; False when every slot is taken. */
PyObject *mfu_py_step_comm_subscribe(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    registry *reg = registry_of(s);
    mfu_status status;
    int free_slot = -1;
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    mfu_py_lock_acquire(s->lock);
    status = mfu_steps_comm_enable(s->steps);
    PyThread_release_lock(s->lock);
    if (status != MFU_OK)
        return mfu_py_raise(status, "StepTracker._comm_subscribe", NULL);
    mfu_py_lock_acquire(reg->lock);
    for (int i = 0; i < MFU_COMM_SINKS_MAX; i++) {
        if (reg->slots[i].sink == s) {
            PyThread_release_lock(reg->lock);
            Py_RETURN_TRUE;
        }
        if (reg->slots[i].sink == NULL && free_slot < 0)
            free_slot = i;
    }
    if (free_slot >= 0) {
        reg->slots[free_slot].sink = s;
        if (++reg->next_generation == 0) /* 0 means free: skip it on wrap */
            ++reg->next_generation;
        reg->slots[free_slot].generation = reg->next_generation;
        reg->slots[free_slot].thread = PyThread_get_thread_ident();
        reg->active++;
    }
    PyThread_release_lock(reg->lock);
    return PyBool_FromLong(free_slot >= 0);
}

void mfu_py_comm_forget(step_object *s)
{
    registry *reg;
    if ((reg = registry_of(s)) == NULL)
        return;
    mfu_py_lock_acquire(reg->lock);
    for (int i = 0; i < MFU_COMM_SINKS_MAX; i++) {
        if (reg->slots[i].sink == s) {
            reg->slots[i].sink = NULL;
            reg->slots[i].generation = 0;
            reg->active--;
        }
    }
    PyThread_release_lock(reg->lock);
}

PyObject *mfu_py_step_comm_unsubscribe(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    mfu_py_comm_forget((step_object *)self);
    Py_RETURN_NONE;
}

/* _comm_begin(kind, bytes, bus_bytes, link_bytes_per_sec, host): one
 * collective in this tracker alone (tests; the observer goes through the
 * capsule). The token (0: not timed). */
PyObject *mfu_py_step_comm_begin(PyObject *self, PyObject *args)
{
    step_object *s = (step_object *)self;
    mfu_comm_launch launch;
    const char *kind_name;
    int host = 0;
    uint64_t token = 0;
    mfu_status status;
    memset(&launch, 0, sizeof launch);
    if (!PyArg_ParseTuple(args, "sddd|p:_comm_begin", &kind_name, &launch.bytes,
                          &launch.bus_bytes, &launch.link_bytes_per_sec, &host))
        return NULL;
    if (mfu_comm_kind_from_name(kind_name, &launch.kind) != MFU_OK)
        return mfu_py_raise(MFU_ERR_INVALID_ARGUMENT, "kind", "unknown kind '%.40s'", kind_name);
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    launch.host = host;
    mfu_py_lock_acquire(s->lock);
    status = mfu_steps_comm_begin(s->steps, &launch, &token);
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
    if (status == MFU_ERR_INVALID_ARGUMENT)
        return mfu_py_raise(status, "bytes", "must be a finite number >= 0");
    return PyLong_FromUnsignedLongLong(token);
}

/* _comm_end(token, stream=0). */
PyObject *mfu_py_step_comm_end(PyObject *self, PyObject *args)
{
    step_object *s = (step_object *)self;
    unsigned long long token, stream = 0;
    if (!PyArg_ParseTuple(args, "K|K:_comm_end", &token, &stream))
        return NULL;
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    mfu_py_lock_acquire(s->lock);
    (void)mfu_steps_comm_end(s->steps, token, (uintptr_t)stream);
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
    Py_RETURN_NONE;
}

/* {kind: value / steps} for the kinds whose `present` entry is > 0. */
static PyObject *per_kind(const double values[MFU_COMM_KIND_COUNT],
                          const double present[MFU_COMM_KIND_COUNT], double steps)
{
    PyObject *dict = PyDict_New();
    for (int k = 0; dict != NULL && k < MFU_COMM_KIND_COUNT; k++) {
        PyObject *value;
        if (!(present[k] > 0.0))
            continue;
        value = PyFloat_FromDouble(values[k] / steps);
        if (value == NULL || PyDict_SetItemString(dict, mfu_comm_kind_name((mfu_comm_kind)k),
                                                  value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

/* {kind: bus bandwidth, GB/s} for the kinds with a timed duration and a
 * bus factor. */
static PyObject *busbw(const mfu_comm_times *t)
{
    PyObject *dict = PyDict_New();
    for (int k = 0; dict != NULL && k < MFU_COMM_KIND_COUNT; k++) {
        double gbs = mfu_comm_busbw_gbs(t->bus_bytes[k], t->duration_s[k]);
        PyObject *value;
        if (isnan(gbs) || k == MFU_COMM_OTHER)
            continue;
        value = PyFloat_FromDouble(gbs);
        if (value == NULL || PyDict_SetItemString(dict, mfu_comm_kind_name((mfu_comm_kind)k),
                                                  value) < 0)
            Py_CLEAR(dict);
        Py_XDECREF(value);
    }
    return dict;
}

/* The window's exposed communication: every communication phase's seconds. */
static double exposed_s(const mfu_phase_summary *ph)
{
    double sum = 0.0;
    for (int k = 0; k < MFU_COMM_KIND_COUNT; k++)
        sum += ph->seconds[mfu_comm_kind_phase((mfu_comm_kind)k)];
    return sum;
}

/* comm(): the window's communication (see the Tracker's figures). */
PyObject *mfu_py_step_comm(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    step_object *s = (step_object *)self;
    mfu_comm_times t;
    mfu_phase_summary ph;
    uint32_t steps = 0;
    double duration = 0.0, overlap = NAN;
    int enabled, gpu;
    uint64_t unpaired;
    if (mfu_py_step_require_init(s) < 0)
        return NULL;
    mfu_py_lock_acquire(registry_of(s)->lock); /* the completions queued so far */
    drain_completions(registry_of(s));
    PyThread_release_lock(registry_of(s)->lock);
    mfu_py_lock_acquire(s->lock);
    mfu_steps_comm(s->steps, &steps, &t);
    mfu_steps_phases(s->steps, &ph);
    enabled = mfu_steps_comm_enabled(s->steps);
    gpu = mfu_steps_clock(s->steps) != MFU_CLOCK_CPU;
    unpaired = mfu_steps_comm_unpaired(s->steps);
    mfu_py_step_check_fallback(s);
    mfu_py_step_unlock(s);
    for (int k = 0; k < MFU_COMM_KIND_COUNT; k++)
        duration += t.duration_s[k];
    if (gpu) /* GPU only: on the CPU clock a wait is host time, not a stream's */
        overlap = mfu_comm_overlap(exposed_s(&ph), duration);
    if (steps == 0)
        return Py_BuildValue("{sIsisK}", "steps", 0u, "enabled", enabled, "unpaired",
                             (unsigned long long)unpaired);
    return Py_BuildValue(
        "{sIsisKsNsNsNsNsNsN}", "steps", (unsigned int)steps, "enabled", enabled, "unpaired",
        (unsigned long long)unpaired, "comm_bytes", per_kind(t.bytes, t.calls, steps),
        "comm_calls", per_kind(t.calls, t.calls, steps), "comm_busbw_gbs", busbw(&t),
        "comm_duration_s", mfu_py_float_or_none(duration > 0.0 ? duration / steps : NAN),
        "net_utilization",
        mfu_py_float_or_none(mfu_comm_net_utilization(t.link_bus_bytes, t.link_capacity_bytes)),
        "comm_overlap", mfu_py_float_or_none(overlap));
}

/* ---- comm_wait_begin / comm_wait_end for Python ------------------------- *
 * Python's waits nest on a thread (try / finally): a small stack per thread
 * pairs each end with its begin. Deeper than the stack: not marked. */

enum { WAIT_STACK = 16 };
static _Thread_local mfu_comm_wait wait_stack[WAIT_STACK];
static _Thread_local int wait_depth;

static PyObject *py_comm_wait_begin(PyObject *module, PyObject *arg)
{
    registry *reg = mfu_module_get_state(module)->comm_registry;
    long long phase;
    if (mfu_py_int_arg(arg, "phase", 0, MFU_PHASE_COUNT - 1, &phase) < 0)
        return NULL;
    if (wait_depth < WAIT_STACK)
        sink_wait_begin(reg, (mfu_phase)phase, 0, &wait_stack[wait_depth]);
    wait_depth++;
    Py_RETURN_NONE;
}

static PyObject *py_comm_wait_end(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    registry *reg = mfu_module_get_state(module)->comm_registry;
    if (wait_depth == 0)
        Py_RETURN_NONE;
    wait_depth--;
    if (wait_depth < WAIT_STACK)
        sink_wait_end(reg, &wait_stack[wait_depth]);
    Py_RETURN_NONE;
}

static PyObject *py_comm_sinks(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    registry *reg = mfu_module_get_state(module)->comm_registry;
    return PyLong_FromLong(reg->active);
}

static PyMethodDef comm_methods[] = {
    {"comm_wait_begin", py_comm_wait_begin, METH_O,
     "comm_wait_begin(phase, /)\n--\n\nA wait for a collective begins on this thread: open phase\n"
     "`phase` (an index of phase_names()) in the sinks created on this thread."},
    {"comm_wait_end", py_comm_wait_end, METH_NOARGS,
     "comm_wait_end()\n--\n\nThe innermost wait of this thread ended: close its phase."},
    {"comm_sinks", py_comm_sinks, METH_NOARGS,
     "comm_sinks()\n--\n\nStepTrackers receiving the process's communication now."},
    {NULL, NULL, 0, NULL},
};

int mfu_py_comm_exec(PyObject *module)
{
    mfu_module_state *state = mfu_module_get_state(module);
    registry *reg;
    PyObject *capsule;
    int rc;
    if (PyModule_AddFunctions(module, comm_methods) < 0)
        return -1;
    /* Never freed (py_comm.h): an observer thread may call it at exit. */
    reg = PyMem_RawCalloc(1, sizeof *reg);
    if (reg == NULL || (reg->lock = PyThread_allocate_lock()) == NULL) {
        PyMem_RawFree(reg);
        PyErr_NoMemory();
        return -1;
    }
    reg->api = (mfu_comm_api){
        .abi_version = MFU_COMM_API_VERSION, .registry = reg, .active = sink_active,
        .launch = sink_launch, .done = sink_done, .done_at = done_at,
        .now_ns = mfu_clock_monotonic_ns, .wait_begin = sink_wait_begin,
        .wait_end = sink_wait_end, .op_count = mfu_comm_op_count, .op_get = mfu_comm_op_get,
        .busbw_factor = mfu_comm_busbw_factor, .kind_phase = mfu_comm_kind_phase,
    };
    atomic_init(&reg->head, 0);
    atomic_init(&reg->tail, 0);
    atomic_init(&reg->dropped, 0);
    for (int i = 0; i < COMPLETIONS; i++)
        atomic_init(&reg->queue[i].seq, 0);
    state->comm_registry = reg;
    capsule = PyCapsule_New(reg, MFU_COMM_API_CAPSULE, NULL);
    if (capsule == NULL)
        return -1;
    rc = PyModule_AddObjectRef(module, "_comm_api", capsule);
    Py_DECREF(capsule);
    return rc;
}
