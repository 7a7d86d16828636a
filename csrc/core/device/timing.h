/*
 * timing.h -- clocks: the monotonic CPU clock and the mark timer, which
 * times a GPU stream with driver events (CUDA or HIP) or the host with the
 * CPU clock behind one interface, so callers need no branches.
 *
 * The CPU clock is CLOCK_MONOTONIC: never steps backwards, unaffected by NTP
 * slews of the wall clock, nanosecond resolution on Linux. Durations are
 * differences of two readings, reported in seconds (double).
 *
 * ## The mark timer
 *
 * A *mark* is one point on the timer's clock, with an id counting up from 0
 * in the order marks are taken. A GPU mark records one driver event on a
 * stream; it is *resolved* once the GPU has reached it and its time is
 * known. A CPU mark reads the monotonic clock and is resolved at once.
 *
 * Time of a mark: seconds since mark 0 (mark 0 is at 0.0). GPU marks are
 * resolved strictly in id order, mark m as time(m-1) + elapsed(event m-1,
 * event m): each driver reading spans one short interval (its float
 * milliseconds stay at full resolution however long the run) and the sum
 * is kept in double. Any two resolved marks then give an interval, by
 * subtraction, long after their events were reused.
 *
 * Never stalls the GPU in steady state:
 *   - mfu_timer_mark records an event (cuEventRecord); it does not block.
 *   - mfu_timer_poll and every read with MFU_WAIT_NEVER resolve with
 *     non-blocking queries (cuEventQuery; 600 "not ready" just stops).
 *   - A blocking wait (cuEventSynchronize, the only one used) happens only
 *     (a) when a read passes MFU_WAIT_IF_NEEDED for a mark the GPU has not
 *         reached: exactly one wait, on that mark's event (marks taken on
 *         other streams before it and still pending are waited for too,
 *         one wait each: events on one stream complete in order, on
 *         different streams they need not);
 *     (b) on mfu_timer_flush;
 *     (c) when the pool is exhausted, see below (counted in
 *         pool_full_waits, so a test or a benchmark can tell).
 *
 * Event pool: `events_initial` events are created with the timer and
 * reused. Events in use are the pending (unresolved) marks plus one
 * *anchor*, the newest resolved mark, needed to resolve the next. When a
 * new mark finds every event in use, the timer first polls; if still full
 * it doubles the pool, up to `events_max` (an allocation, only while the
 * host runs further ahead of the GPU than ever before); at `events_max` it
 * waits for the oldest pending mark. Steady state allocates nothing.
 *
 * History: the times of the newest `history` resolved marks are kept (a
 * ring of doubles). Reading an older mark gives MFU_ERR_NOT_FOUND.
 *
 * Failures are sticky: after a driver call fails, every function of that
 * timer returns the same status (MFU_ERR_DRIVER) and mfu_timer_error says
 * which call failed with which code. The caller's move is to warn once and
 * continue on a CPU timer.
 *
 * A timer is used by one thread at a time. A CUDA timer needs a CUDA
 * context current on the calling thread (at create and at every call), and
 * the streams it records on must belong to that context; torch makes its
 * device's primary context current on a thread once CUDA is initialised
 * there. Stream handles are the raw CUstream / hipStream_t values as
 * integers: torch.cuda.current_stream().cuda_stream; 0 is the null
 * (legacy default) stream. A CPU timer ignores the stream.
 */
#ifndef MFU_TIMING_H
#define MFU_TIMING_H

#include <stdint.h>

#include "gpu_driver.h"
#include "mfu_status.h"

/* Current CLOCK_MONOTONIC reading in nanoseconds: every CPU time the core
 * takes goes through it (the CPU timer, track(), the communication marks,
 * the NVML and GPM sample times), and so through the clock source below.
 * MFU_ERR_UNAVAILABLE if the clock cannot be read (never on Linux). */
mfu_status mfu_clock_monotonic_ns(uint64_t *now_ns);

/* Where mfu_clock_monotonic_ns reads the time: NULL (the default) for
 * CLOCK_MONOTONIC, or a function that stores nanoseconds in *now_ns and
 * returns 0 (non-zero: unavailable). A test installs one to drive time
 * itself -- the fake NVML's virtual clock (tests/c/fake_nvml) -- instead of
 * sleeping, so nothing it checks depends on how the machine schedules it.
 * Process-wide; install it while no timer reads the clock. */
typedef int (*mfu_clock_source)(uint64_t *now_ns);
void mfu_clock_set_source(mfu_clock_source source);

/* Seconds from `start_ns` to `end_ns`; negative if end precedes start. */
double mfu_clock_elapsed_s(uint64_t start_ns, uint64_t end_ns);

/* Which clock a timer reads. The GPU values equal the mfu_gpu_api ones. */
typedef enum mfu_clock_kind {
    MFU_CLOCK_CPU = 0,
    MFU_CLOCK_CUDA = 1, /* == MFU_GPU_CUDA */
    MFU_CLOCK_HIP = 2   /* == MFU_GPU_HIP */
} mfu_clock_kind;

/* What a read may do when its mark is not resolved yet. */
typedef enum mfu_wait {
    MFU_WAIT_NEVER = 0,    /* return MFU_ERR_NOT_READY instead of blocking */
    MFU_WAIT_IF_NEEDED = 1 /* block until the GPU reaches the mark */
} mfu_wait;

/* Zero in a size field means its default (mfu_limits.h: MFU_TIMER_*_DEFAULT;
 * a defaulted events_max / history stretches to the size below it). Sizes
 * must satisfy 2 <= events_initial <= events_max <= history <=
 * MFU_TIMER_SIZE_MAX. */
typedef struct mfu_timer_config {
    mfu_clock_kind clock;
    const mfu_gpu_driver *driver; /* GPU clocks: NULL = the process-wide
                                     mfu_gpu_driver_get(clock); else a driver
                                     that outlives the timer */
    uint32_t events_initial; /* events created up front; default 16 */
    uint32_t events_max;     /* pool growth cap; default 1024 */
    uint32_t history;        /* resolved times kept; default 1024 */
} mfu_timer_config;

/* Counters for tests and benchmarks. */
typedef struct mfu_timer_counters {
    uint64_t marks;           /* marks taken (the next id) */
    uint64_t resolved;        /* marks resolved: ids below this are known */
    uint64_t waits;           /* blocking synchronize calls made */
    uint64_t pool_full_waits; /* of those, forced by a full pool at events_max */
    uint32_t events;          /* events in the pool */
    uint32_t pool_grows;      /* times the pool doubled */
} mfu_timer_counters;

typedef struct mfu_timer mfu_timer;

/* Create a timer. GPU clocks load the driver (see gpu_driver.h), check the
 * context (CUDA) and create the initial events. `error` may be NULL; when
 * given it says what failed. Status:
 *   MFU_ERR_INVALID_ARGUMENT  unknown clock, sizes out of order
 *   MFU_ERR_UNAVAILABLE       no driver library / symbol (also a given
 *                             driver whose open failed), no CUDA context
 *   MFU_ERR_DRIVER            a driver call failed (cuInit, cuEventCreate)
 *   MFU_ERR_NO_MEMORY */
mfu_status mfu_timer_create(const mfu_timer_config *config, mfu_timer **timer,
                            mfu_gpu_error *error);

/* Destroy the timer and its events, without waiting for pending marks
 * (the driver releases an event once the GPU has passed it). NULL is a
 * no-op. */
void mfu_timer_destroy(mfu_timer *timer);

mfu_clock_kind mfu_timer_clock(const mfu_timer *timer);

/* The pool's cap, defaults applied: the timer never has more than this many
 * marks pending (unresolved), so a caller keeping one record per pending
 * mark sizes its buffer from it (see steps.h). The CPU clock resolves every
 * mark at once but reports its configured cap all the same. */
uint32_t mfu_timer_events_max(const mfu_timer *timer);

/* Take a mark on `stream` (a raw stream handle, 0 = null stream; ignored
 * by the CPU clock) and return its id. Non-blocking, except when the pool
 * is full at events_max (see above). */
mfu_status mfu_timer_mark(mfu_timer *timer, uintptr_t stream, uint64_t *id);

/* A CPU timer's mark at `monotonic_ns` (a CLOCK_MONOTONIC reading taken
 * earlier, by another thread: a backend's completion), not now; its id
 * follows the marks taken before it, its time may precede theirs.
 * MFU_ERR_UNAVAILABLE on a GPU timer. */
mfu_status mfu_timer_mark_at(mfu_timer *timer, uint64_t monotonic_ns, uint64_t *id);

/* Resolve, without blocking, every pending mark the GPU has passed. */
mfu_status mfu_timer_poll(mfu_timer *timer);

/* Marks resolved so far: ids below the result have known times. Does not
 * poll; call mfu_timer_poll first to catch up. */
uint64_t mfu_timer_resolved(const mfu_timer *timer);

/* Poll, then *ready = 1 if reading mark `id` would not block.
 * MFU_ERR_INVALID_ARGUMENT if `id` was never issued. */
mfu_status mfu_timer_ready(mfu_timer *timer, uint64_t id, int *ready);

/* *seconds = time of mark `id` (seconds since mark 0). Status:
 *   MFU_ERR_INVALID_ARGUMENT  id never issued
 *   MFU_ERR_NOT_READY         MFU_WAIT_NEVER and the GPU has not reached it
 *   MFU_ERR_NOT_FOUND         resolved but older than `history` marks */
mfu_status mfu_timer_time_s(mfu_timer *timer, uint64_t id, mfu_wait wait,
                            double *seconds);

/* *seconds = time(end) - time(start): the GPU time between the two marks
 * (negative if end precedes start, possible across streams). Statuses as
 * for mfu_timer_time_s; a wait resolves up to the later mark, so reading
 * the interval of a just-closed block waits once. */
mfu_status mfu_timer_elapsed_s(mfu_timer *timer, uint64_t start, uint64_t end,
                               mfu_wait wait, double *seconds);

/* Wait for every mark taken so far and resolve it (one wait on the newest
 * mark when all are on one stream). */
mfu_status mfu_timer_flush(mfu_timer *timer);

void mfu_timer_get_counters(const mfu_timer *timer, mfu_timer_counters *out);

/* The failure that made the timer's status sticky; error->call == NULL if
 * none. */
void mfu_timer_error(const mfu_timer *timer, mfu_gpu_error *error);

#endif /* MFU_TIMING_H */
