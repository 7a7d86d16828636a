/* timing.c -- the monotonic CPU clock and the mark timer (see timing.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mfu_limits.h"
#include "timing.h"

static _Atomic(mfu_clock_source) clock_source; /* NULL: CLOCK_MONOTONIC */

void mfu_clock_set_source(mfu_clock_source source)
{
    atomic_store_explicit(&clock_source, source, memory_order_release);
}

mfu_status mfu_clock_monotonic_ns(uint64_t *now_ns)
{
    struct timespec ts;
    mfu_clock_source source = atomic_load_explicit(&clock_source, memory_order_acquire);
    if (source != NULL)
        return source(now_ns) == 0 ? MFU_OK : MFU_ERR_UNAVAILABLE;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return MFU_ERR_UNAVAILABLE;
    *now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return MFU_OK;
}

double mfu_clock_elapsed_s(uint64_t start_ns, uint64_t end_ns)
{
    /* Subtract in unsigned then sign the result, so a reversed pair does not
     * wrap to ~584 years. */
    if (end_ns >= start_ns)
        return (double)(end_ns - start_ns) * 1e-9;
    return -(double)(start_ns - end_ns) * 1e-9;
}

/*
 * The event ring: events[head] is the oldest event in use -- the anchor
 * (newest resolved mark) when has_anchor, else the event of the oldest
 * pending mark. The pending marks [first_pending, next_id) follow it in
 * order; the rest of the ring is free.
 */
struct mfu_timer {
    mfu_clock_kind clock;
    const mfu_gpu_driver *driver; /* NULL for the CPU clock */
    mfu_status failed;            /* sticky; MFU_OK while healthy */
    mfu_gpu_error error;

    mfu_gpu_event *events;
    uint32_t capacity;   /* events created */
    uint32_t events_max;
    uint32_t head;
    int has_anchor;
    double anchor_s;     /* time of the anchor mark */

    uint64_t next_id;       /* id the next mark gets */
    uint64_t first_pending; /* lowest unresolved id; == next_id when none */
    double *times;          /* times[id % history] for resolved ids */
    uint32_t history;
    uint64_t origin_ns; /* CPU clock: reading of mark 0 */

    uint64_t waits;
    uint64_t pool_full_waits;
    uint32_t pool_grows;
};

static mfu_status timer_fail(mfu_timer *timer, mfu_status status,
                             const char *call, int code)
{
    timer->failed = status;
    timer->error.call = call;
    timer->error.code = code;
    timer->error.detail[0] = '\0';
    return status;
}

static uint32_t events_in_use(const mfu_timer *timer)
{
    return (uint32_t)(timer->has_anchor ? 1 : 0)
           + (uint32_t)(timer->next_id - timer->first_pending);
}

/* The event of pending mark `id` (first_pending <= id < next_id). */
static mfu_gpu_event pending_event(const mfu_timer *timer, uint64_t id)
{
    uint64_t offset = (uint64_t)(timer->has_anchor ? 1 : 0) + (id - timer->first_pending);
    return timer->events[(timer->head + offset) % timer->capacity];
}

static void store_time(mfu_timer *timer, uint64_t id, double seconds)
{
    timer->times[id % timer->history] = seconds;
}

/* Destroy events[from, to) of `events`, ignoring errors: nothing useful can
 * be done about a failed destroy. */
static void destroy_events(const mfu_gpu_driver *driver, mfu_gpu_event *events,
                           uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        driver->event_destroy(events[i]);
}

/* Create events[from, to); on failure destroy those this call created. */
static mfu_status create_events(mfu_timer *timer, mfu_gpu_event *events,
                                uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        int code = timer->driver->event_create(&events[i], 0 /* default: timing on */);
        if (code != MFU_GPU_SUCCESS) {
            destroy_events(timer->driver, events, from, i);
            return timer_fail(timer, MFU_ERR_DRIVER, timer->driver->name_create, code);
        }
    }
    return MFU_OK;
}

/* Resolve the oldest pending mark, whose event the driver reported done.
 * MFU_ERR_NOT_READY if the elapsed-time call says an event is not done. */
static mfu_status resolve_oldest(mfu_timer *timer)
{
    uint64_t id = timer->first_pending;
    double seconds = 0.0;
    if (timer->has_anchor) {
        float ms = 0.0f;
        int code = timer->driver->event_elapsed(&ms, timer->events[timer->head],
                                                pending_event(timer, id));
        if (code == MFU_GPU_NOT_READY)
            return MFU_ERR_NOT_READY;
        if (code != MFU_GPU_SUCCESS)
            return timer_fail(timer, MFU_ERR_DRIVER, timer->driver->name_elapsed, code);
        seconds = timer->anchor_s + (double)ms * 1e-3;
        timer->head = (timer->head + 1) % timer->capacity; /* frees the old anchor */
    }
    /* Without an anchor this is mark 0, the origin: its event is at head. */
    timer->has_anchor = 1;
    timer->anchor_s = seconds;
    store_time(timer, id, seconds);
    timer->first_pending = id + 1;
    return MFU_OK;
}

mfu_status mfu_timer_poll(mfu_timer *timer)
{
    if (timer->failed != MFU_OK)
        return timer->failed;
    while (timer->first_pending < timer->next_id) {
        int code = timer->driver->event_query(pending_event(timer, timer->first_pending));
        if (code == MFU_GPU_NOT_READY)
            return MFU_OK;
        if (code != MFU_GPU_SUCCESS)
            return timer_fail(timer, MFU_ERR_DRIVER, timer->driver->name_query, code);
        mfu_status status = resolve_oldest(timer);
        if (status == MFU_ERR_NOT_READY)
            return MFU_OK;
        if (status != MFU_OK)
            return status;
    }
    return MFU_OK;
}

static mfu_status synchronize(mfu_timer *timer, mfu_gpu_event event)
{
    int code = timer->driver->event_synchronize(event);
    timer->waits++;
    if (code != MFU_GPU_SUCCESS)
        return timer_fail(timer, MFU_ERR_DRIVER, timer->driver->name_synchronize, code);
    return MFU_OK;
}

/* Block until mark `id` (pending) is resolved: one wait on its event, then
 * one per older mark still pending (other streams). */
static mfu_status wait_for(mfu_timer *timer, uint64_t id)
{
    mfu_status status = synchronize(timer, pending_event(timer, id));
    if (status == MFU_OK)
        status = mfu_timer_poll(timer);
    while (status == MFU_OK && timer->first_pending <= id) {
        uint64_t before = timer->first_pending;
        status = synchronize(timer, pending_event(timer, before));
        if (status == MFU_OK)
            status = mfu_timer_poll(timer);
        if (status == MFU_OK && timer->first_pending == before)
            /* Done by its own synchronize, yet not resolvable: the driver
             * contradicts itself. Stop rather than spin. */
            return timer_fail(timer, MFU_ERR_DRIVER, timer->driver->name_elapsed,
                              MFU_GPU_NOT_READY);
    }
    return status;
}

/* Double the ring (up to events_max), keeping the events in use in order
 * at the front. MFU_ERR_NO_MEMORY leaves the timer as it was. */
static mfu_status grow_pool(mfu_timer *timer)
{
    uint32_t old_capacity = timer->capacity;
    uint32_t new_capacity = old_capacity * 2 < timer->events_max
                                ? old_capacity * 2 : timer->events_max;
    mfu_gpu_event *events = malloc(sizeof *events * new_capacity);
    mfu_status status;
    if (events == NULL)
        return MFU_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < old_capacity; i++)
        events[i] = timer->events[(timer->head + i) % old_capacity];
    status = create_events(timer, events, old_capacity, new_capacity);
    if (status != MFU_OK) {
        free(events);
        return status;
    }
    free(timer->events);
    timer->events = events;
    timer->capacity = new_capacity;
    timer->head = 0;
    timer->pool_grows++;
    return MFU_OK;
}

/* Make one event free for a new mark (see "Event pool" in timing.h). */
static mfu_status make_room(mfu_timer *timer)
{
    mfu_status status = mfu_timer_poll(timer);
    if (status != MFU_OK || events_in_use(timer) < timer->capacity)
        return status;
    if (timer->capacity < timer->events_max) {
        status = grow_pool(timer);
        if (status != MFU_ERR_NO_MEMORY)
            return status; /* grown, or a driver failure */
    }
    status = MFU_OK; /* at events_max (or out of memory): wait instead */
    /* Resolving the oldest pending mark frees the anchor's event -- except
     * when there is no anchor yet (mark 0 still pending): then it only
     * becomes the anchor, and a second wait is needed. Loop until an event is
     * free; each pass resolves one more mark, so it ends. */
    while (status == MFU_OK && events_in_use(timer) >= timer->capacity) {
        timer->pool_full_waits++;
        status = wait_for(timer, timer->first_pending);
    }
    return status;
}

/* A CPU mark at `now_ns`. */
static mfu_status mark_cpu_at(mfu_timer *timer, uint64_t now_ns, uint64_t *id)
{
    if (timer->next_id == 0)
        timer->origin_ns = now_ns;
    store_time(timer, timer->next_id, mfu_clock_elapsed_s(timer->origin_ns, now_ns));
    *id = timer->next_id++;
    timer->first_pending = timer->next_id;
    return MFU_OK;
}

static mfu_status mark_cpu(mfu_timer *timer, uint64_t *id)
{
    uint64_t now_ns;
    if (mfu_clock_monotonic_ns(&now_ns) != MFU_OK)
        return timer_fail(timer, MFU_ERR_UNAVAILABLE, "clock_gettime", 0);
    return mark_cpu_at(timer, now_ns, id);
}

mfu_status mfu_timer_mark_at(mfu_timer *timer, uint64_t monotonic_ns, uint64_t *id)
{
    if (timer->failed != MFU_OK)
        return timer->failed;
    if (timer->clock != MFU_CLOCK_CPU)
        return MFU_ERR_UNAVAILABLE;
    return mark_cpu_at(timer, monotonic_ns, id);
}

mfu_status mfu_timer_mark(mfu_timer *timer, uintptr_t stream, uint64_t *id)
{
    mfu_status status;
    int code;
    if (timer->failed != MFU_OK)
        return timer->failed;
    if (timer->clock == MFU_CLOCK_CPU)
        return mark_cpu(timer, id);
    if (events_in_use(timer) >= timer->capacity) {
        status = make_room(timer);
        if (status != MFU_OK)
            return status;
    }
    /* The free event just after those in use. */
    code = timer->driver->event_record(
        timer->events[(timer->head + events_in_use(timer)) % timer->capacity],
        (mfu_gpu_stream)stream);
    if (code != MFU_GPU_SUCCESS)
        return timer_fail(timer, MFU_ERR_DRIVER, timer->driver->name_record, code);
    *id = timer->next_id++;
    return MFU_OK;
}

uint64_t mfu_timer_resolved(const mfu_timer *timer)
{
    return timer->first_pending;
}

mfu_status mfu_timer_ready(mfu_timer *timer, uint64_t id, int *ready)
{
    mfu_status status;
    if (timer->failed != MFU_OK)
        return timer->failed;
    if (id >= timer->next_id)
        return MFU_ERR_INVALID_ARGUMENT;
    status = id < timer->first_pending ? MFU_OK : mfu_timer_poll(timer);
    *ready = id < timer->first_pending;
    return status;
}

/* Bring mark `id` (issued) to resolved, as `wait` allows. */
static mfu_status resolve_up_to(mfu_timer *timer, uint64_t id, mfu_wait wait)
{
    mfu_status status;
    if (id < timer->first_pending)
        return MFU_OK;
    status = mfu_timer_poll(timer);
    if (status != MFU_OK || id < timer->first_pending)
        return status;
    if (wait == MFU_WAIT_NEVER)
        return MFU_ERR_NOT_READY;
    return wait_for(timer, id);
}

static mfu_status stored_time(const mfu_timer *timer, uint64_t id, double *seconds)
{
    if (id + timer->history < timer->first_pending)
        return MFU_ERR_NOT_FOUND;
    *seconds = timer->times[id % timer->history];
    return MFU_OK;
}

mfu_status mfu_timer_time_s(mfu_timer *timer, uint64_t id, mfu_wait wait,
                            double *seconds)
{
    mfu_status status;
    if (timer->failed != MFU_OK)
        return timer->failed;
    if (id >= timer->next_id || (wait != MFU_WAIT_NEVER && wait != MFU_WAIT_IF_NEEDED))
        return MFU_ERR_INVALID_ARGUMENT;
    status = resolve_up_to(timer, id, wait);
    if (status != MFU_OK)
        return status;
    return stored_time(timer, id, seconds);
}

mfu_status mfu_timer_elapsed_s(mfu_timer *timer, uint64_t start, uint64_t end,
                               mfu_wait wait, double *seconds)
{
    double start_s, end_s;
    mfu_status status;
    if (timer->failed != MFU_OK)
        return timer->failed;
    if (start >= timer->next_id || end >= timer->next_id
        || (wait != MFU_WAIT_NEVER && wait != MFU_WAIT_IF_NEEDED))
        return MFU_ERR_INVALID_ARGUMENT;
    /* Resolution is in id order: reaching the later mark resolves both. */
    status = resolve_up_to(timer, start > end ? start : end, wait);
    if (status != MFU_OK)
        return status;
    status = stored_time(timer, start, &start_s);
    if (status == MFU_OK)
        status = stored_time(timer, end, &end_s);
    if (status == MFU_OK)
        *seconds = end_s - start_s;
    return status;
}

mfu_status mfu_timer_flush(mfu_timer *timer)
{
    if (timer->failed != MFU_OK)
        return timer->failed;
    if (timer->next_id == 0)
        return MFU_OK;
    return resolve_up_to(timer, timer->next_id - 1, MFU_WAIT_IF_NEEDED);
}

void mfu_timer_get_counters(const mfu_timer *timer, mfu_timer_counters *out)
{
    out->marks = timer->next_id;
    out->resolved = timer->first_pending;
    out->waits = timer->waits;
    out->pool_full_waits = timer->pool_full_waits;
    out->events = timer->capacity;
    out->pool_grows = timer->pool_grows;
}

void mfu_timer_error(const mfu_timer *timer, mfu_gpu_error *error)
{
    *error = timer->error;
}

mfu_clock_kind mfu_timer_clock(const mfu_timer *timer)
{
    return timer->clock;
}

uint32_t mfu_timer_events_max(const mfu_timer *timer)
{
    return timer->events_max;
}

/* Fill in defaults and check the sizes are in order. */
static mfu_status timer_sizes(const mfu_timer_config *config, uint32_t *initial,
                              uint32_t *maximum, uint32_t *history)
{
    *initial = config->events_initial ? config->events_initial
                                      : MFU_TIMER_EVENTS_INITIAL_DEFAULT;
    *maximum = config->events_max ? config->events_max : MFU_TIMER_EVENTS_MAX_DEFAULT;
    if (config->events_max == 0 && *maximum < *initial)
        *maximum = *initial;
    *history = config->history ? config->history : MFU_TIMER_HISTORY_DEFAULT;
    if (config->history == 0 && *history < *maximum)
        *history = *maximum;
    if (*initial < 2 || *maximum < *initial || *history < *maximum
        || *history > MFU_TIMER_SIZE_MAX)
        return MFU_ERR_INVALID_ARGUMENT;
    return MFU_OK;
}

static void copy_error(mfu_gpu_error *to, const mfu_gpu_error *from)
{
    if (to != NULL)
        *to = *from;
}

mfu_status mfu_timer_create(const mfu_timer_config *config, mfu_timer **timer_out,
                            mfu_gpu_error *error)
{
    mfu_gpu_error none = {.call = NULL, .code = 0, .detail = ""};
    uint32_t initial, maximum, history;
    mfu_timer *timer;
    mfu_status status;

    copy_error(error, &none);
    *timer_out = NULL;
    if (config->clock != MFU_CLOCK_CPU && config->clock != MFU_CLOCK_CUDA
        && config->clock != MFU_CLOCK_HIP)
        return MFU_ERR_INVALID_ARGUMENT;
    status = timer_sizes(config, &initial, &maximum, &history);
    if (status != MFU_OK)
        return status;

    timer = calloc(1, sizeof *timer);
    if (timer == NULL)
        return MFU_ERR_NO_MEMORY;
    timer->clock = config->clock;
    timer->history = history;
    timer->events_max = maximum;
    timer->times = calloc(history, sizeof *timer->times);
    if (timer->times == NULL) {
        status = MFU_ERR_NO_MEMORY;
        goto error;
    }
    if (config->clock == MFU_CLOCK_CPU) {
        *timer_out = timer;
        return MFU_OK;
    }

    timer->driver = config->driver;
    if (timer->driver == NULL) {
        status = mfu_gpu_driver_get((mfu_gpu_api)config->clock, &timer->driver);
        if (status != MFU_OK) {
            copy_error(error, &timer->driver->error);
            timer->driver = NULL;
            goto error;
        }
    }
    if (timer->driver->library == NULL) { /* a driver whose open failed */
        copy_error(error, &timer->driver->error);
        timer->driver = NULL;
        status = MFU_ERR_UNAVAILABLE;
        goto error;
    }
    if (timer->driver->api != (mfu_gpu_api)config->clock) {
        mfu_gpu_error wrong = {.call = "mfu_timer_create", .code = 0,
                               .detail = "the driver speaks another GPU API"};
        copy_error(error, &wrong);
        timer->driver = NULL;
        status = MFU_ERR_INVALID_ARGUMENT;
        goto error;
    }
    status = mfu_gpu_driver_check_context(timer->driver, &timer->error);
    if (status != MFU_OK) {
        copy_error(error, &timer->error);
        timer->driver = NULL;
        goto error;
    }
    timer->events = malloc(sizeof *timer->events * initial);
    if (timer->events == NULL) {
        status = MFU_ERR_NO_MEMORY;
        timer->driver = NULL;
        goto error;
    }
    status = create_events(timer, timer->events, 0, initial);
    if (status != MFU_OK) {
        copy_error(error, &timer->error);
        timer->driver = NULL; /* create_events destroyed its own events */
        goto error;
    }
    timer->capacity = initial;
    *timer_out = timer;
    return MFU_OK;

error:
    mfu_timer_destroy(timer);
    return status;
}

void mfu_timer_destroy(mfu_timer *timer)
{
    if (timer == NULL)
        return;
    if (timer->driver != NULL && timer->events != NULL)
        destroy_events(timer->driver, timer->events, 0, timer->capacity);
    free(timer->events);
    free(timer->times);
    free(timer);
}
