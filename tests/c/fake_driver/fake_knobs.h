/*
 * fake_knobs.h -- the fake driver's test knobs (fake_cuda.c), for the C
 * tests that drive the core's GPU clock on a machine without a GPU.
 *
 * `make ctest` (and the asan / valgrind targets) build the fake and name it
 * in MFU_TRACKER_CUDA_LIBRARY / MFU_TRACKER_HIP_LIBRARY. fake_load() opens
 * that same library: the loader hands the core and the test one instance,
 * so the counts the test reads are the calls the core made. fake_unload()
 * closes the test's reference.
 */
#ifndef MFU_FAKE_KNOBS_H
#define MFU_FAKE_KNOBS_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_driver.h"

static struct {
    void *library;
    const char *path;
    void (*reset)(void);
    long (*call_count)(const char *name);
    long (*sync_calls)(void);
    int (*fail_next)(const char *name, int code);
    void (*advance)(uint64_t ns);
    uint64_t (*now_ns)(void);
    void (*set_gpu_lag_ns)(uint64_t ns);
    void (*set_work_ns)(uint64_t ns);
    void (*set_no_context)(int no_context);
    long (*live_events)(void);
    /* streams (fake_cuda.c's header): a kernel of `ns` on a stream, and one
     * stream waiting for another's work so far */
    void (*enqueue_ns)(uintptr_t stream, uint64_t ns);
    void (*stream_wait_stream)(uintptr_t waiter, uintptr_t waited);
} fake;

/* Resolve one knob; POSIX guarantees the object-to-function conversion. */
#define FAKE_KNOB(field, symbol) \
    ((fake.field = (__typeof__(fake.field))dlsym(fake.library, symbol)) != NULL)

/* 1 when the fake is loaded with every knob; 0 (and a line on stderr
 * naming `suite`) otherwise. */
static inline int fake_load(const char *suite)
{
    fake.path = getenv(MFU_CUDA_LIBRARY_ENV);
    if (fake.path == NULL || fake.path[0] == '\0') {
        fprintf(stderr, "%s: set %s to the fake driver (make ctest does)\n", suite,
                MFU_CUDA_LIBRARY_ENV);
        return 0;
    }
    fake.library = dlopen(fake.path, RTLD_NOW | RTLD_LOCAL);
    if (fake.library == NULL) {
        fprintf(stderr, "%s: %s\n", suite, dlerror());
        return 0;
    }
    return FAKE_KNOB(reset, "fake_reset") && FAKE_KNOB(call_count, "fake_call_count")
           && FAKE_KNOB(sync_calls, "fake_sync_calls")
           && FAKE_KNOB(fail_next, "fake_fail_next") && FAKE_KNOB(advance, "fake_advance")
           && FAKE_KNOB(now_ns, "fake_now_ns")
           && FAKE_KNOB(set_gpu_lag_ns, "fake_set_gpu_lag_ns")
           && FAKE_KNOB(set_work_ns, "fake_set_work_ns")
           && FAKE_KNOB(set_no_context, "fake_set_no_context")
           && FAKE_KNOB(live_events, "fake_live_events")
           && FAKE_KNOB(enqueue_ns, "fake_enqueue_ns")
           && FAKE_KNOB(stream_wait_stream, "fake_stream_wait_stream");
}

static inline void fake_unload(void)
{
    if (fake.library != NULL)
        dlclose(fake.library);
    fake.library = NULL;
}

#endif /* MFU_FAKE_KNOBS_H */
