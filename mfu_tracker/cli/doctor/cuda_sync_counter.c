/*
 * cuda_sync_counter.c -- a pass-through CUDA driver that counts.
 *
 * `mfu-tracker doctor` builds this file at first use (mfu_tracker/cli/doctor/_shim.py,
 * into a per-user cache) and runs its zero-synchronization check in a child
 * process with MFU_TRACKER_CUDA_LIBRARY naming the built library. The core
 * then loads this library as its driver; every call it makes is counted
 * here and forwarded to the real driver, named by MFU_TRACKER_SHIM_TARGET
 * (default libcuda.so.1; the tests name the fake driver). The library
 * torch itself uses is untouched: only the core's calls pass through here.
 *
 * Exported driver calls: every one the core resolves (csrc/core/device/gpu_driver.h)
 * -- cuInit, cuCtxGetCurrent, cuEventCreate, cuEventRecord, cuEventQuery,
 * cuEventElapsedTime(_v2), cuEventSynchronize, cuEventDestroy(_v2),
 * cuGetErrorName -- and the ones that must never be called in steady state,
 * cuStreamSynchronize and cuCtxSynchronize. A _v2 name the target lacks is
 * forwarded to the old name and vice versa; a call the target lacks entirely
 * returns CUDA_ERROR_NOT_FOUND (500), as does every call when the target
 * cannot be opened.
 *
 * Counting: mfu_shim_calls(name) (-1 for a name not exported),
 * mfu_shim_sync_calls() (event, stream and context synchronize: the calls
 * that block the host), mfu_shim_reset(), mfu_shim_target() (the library
 * forwarded to) and mfu_shim_error() (why it could not be opened, "" if it
 * could). Counters are atomic; the target is opened once (pthread_once).
 *
 * Plain C11 + POSIX (dlopen, pthread); no CUDA headers: handles are void *,
 * results int, as in gpu_driver.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_TARGET_ENV "MFU_TRACKER_SHIM_TARGET"
#define SHIM_TARGET_DEFAULT "libcuda.so.1"
#define SHIM_NOT_FOUND 500 /* CUDA_ERROR_NOT_FOUND */

enum shim_call {
    S_INIT,
    S_CTX_GET_CURRENT,
    S_EVENT_CREATE,
    S_EVENT_RECORD,
    S_EVENT_QUERY,
    S_EVENT_ELAPSED,
    S_EVENT_ELAPSED_V2,
    S_EVENT_SYNCHRONIZE,
    S_EVENT_DESTROY,
    S_EVENT_DESTROY_V2,
    S_GET_ERROR_NAME,
    S_STREAM_SYNCHRONIZE,
    S_CTX_SYNCHRONIZE,
    S_COUNT
};

/* Each call's name and, for a _v2 name, the old one (and back): the name
 * forwarded to when the target lacks the first; -1 when there is none. */
static const struct {
    const char *name;
    int alias;
} shim_calls[S_COUNT] = {
    [S_INIT] = {"cuInit", -1},
    [S_CTX_GET_CURRENT] = {"cuCtxGetCurrent", -1},
    [S_EVENT_CREATE] = {"cuEventCreate", -1},
    [S_EVENT_RECORD] = {"cuEventRecord", -1},
    [S_EVENT_QUERY] = {"cuEventQuery", -1},
    [S_EVENT_ELAPSED] = {"cuEventElapsedTime", S_EVENT_ELAPSED_V2},
    [S_EVENT_ELAPSED_V2] = {"cuEventElapsedTime_v2", S_EVENT_ELAPSED},
    [S_EVENT_SYNCHRONIZE] = {"cuEventSynchronize", -1},
    [S_EVENT_DESTROY] = {"cuEventDestroy", S_EVENT_DESTROY_V2},
    [S_EVENT_DESTROY_V2] = {"cuEventDestroy_v2", S_EVENT_DESTROY},
    [S_GET_ERROR_NAME] = {"cuGetErrorName", -1},
    [S_STREAM_SYNCHRONIZE] = {"cuStreamSynchronize", -1},
    [S_CTX_SYNCHRONIZE] = {"cuCtxSynchronize", -1},
};

static struct {
    pthread_once_t once;
    void *library;
    void *fn[S_COUNT];
    char target[512];
    char error[256];
    atomic_long calls[S_COUNT];
} shim = {PTHREAD_ONCE_INIT};

static void shim_open(void)
{
    const char *target = getenv(SHIM_TARGET_ENV);
    if (target == NULL || target[0] == '\0')
        target = SHIM_TARGET_DEFAULT;
    snprintf(shim.target, sizeof shim.target, "%s", target);
    shim.library = dlopen(target, RTLD_NOW | RTLD_LOCAL);
    if (shim.library == NULL) {
        const char *why = dlerror();
        snprintf(shim.error, sizeof shim.error, "%s", why ? why : target);
        return;
    }
    for (int i = 0; i < S_COUNT; i++)
        shim.fn[i] = dlsym(shim.library, shim_calls[i].name);
    for (int i = 0; i < S_COUNT; i++)
        if (shim.fn[i] == NULL && shim_calls[i].alias >= 0)
            shim.fn[i] = dlsym(shim.library, shim_calls[shim_calls[i].alias].name);
}

/* Count a call and return the target's function, or NULL. */
static void *shim_enter(enum shim_call call)
{
    atomic_fetch_add(&shim.calls[call], 1);
    pthread_once(&shim.once, shim_open);
    return shim.fn[call];
}

#define SHIM_FORWARD(call, type, ...)                           \
    do {                                                        \
        type fn_ = (type)shim_enter(call);                      \
        return fn_ != NULL ? fn_(__VA_ARGS__) : SHIM_NOT_FOUND; \
    } while (0)

typedef int (*fn_u)(unsigned int);
typedef int (*fn_pp)(void **);
typedef int (*fn_ppu)(void **, unsigned int);
typedef int (*fn_p)(void *);
typedef int (*fn_pp2)(void *, void *);
typedef int (*fn_fpp)(float *, void *, void *);
typedef int (*fn_v)(void);
typedef int (*fn_ics)(int, const char **);

int cuInit(unsigned int flags) { SHIM_FORWARD(S_INIT, fn_u, flags); }
int cuCtxGetCurrent(void **context) { SHIM_FORWARD(S_CTX_GET_CURRENT, fn_pp, context); }
int cuEventCreate(void **event, unsigned int flags)
{
    SHIM_FORWARD(S_EVENT_CREATE, fn_ppu, event, flags);
}
int cuEventRecord(void *event, void *stream) { SHIM_FORWARD(S_EVENT_RECORD, fn_pp2, event, stream); }
int cuEventQuery(void *event) { SHIM_FORWARD(S_EVENT_QUERY, fn_p, event); }
int cuEventElapsedTime(float *ms, void *start, void *end)
{
    SHIM_FORWARD(S_EVENT_ELAPSED, fn_fpp, ms, start, end);
}
int cuEventElapsedTime_v2(float *ms, void *start, void *end)
{
    SHIM_FORWARD(S_EVENT_ELAPSED_V2, fn_fpp, ms, start, end);
}
int cuEventSynchronize(void *event) { SHIM_FORWARD(S_EVENT_SYNCHRONIZE, fn_p, event); }
int cuEventDestroy(void *event) { SHIM_FORWARD(S_EVENT_DESTROY, fn_p, event); }
int cuEventDestroy_v2(void *event) { SHIM_FORWARD(S_EVENT_DESTROY_V2, fn_p, event); }
int cuGetErrorName(int code, const char **name) { SHIM_FORWARD(S_GET_ERROR_NAME, fn_ics, code, name); }
int cuStreamSynchronize(void *stream) { SHIM_FORWARD(S_STREAM_SYNCHRONIZE, fn_p, stream); }
int cuCtxSynchronize(void) { SHIM_FORWARD(S_CTX_SYNCHRONIZE, fn_v); }

/* ---- counters ----------------------------------------------------------- */

long mfu_shim_calls(const char *name)
{
    if (name == NULL)
        return -1;
    for (int i = 0; i < S_COUNT; i++)
        if (strcmp(shim_calls[i].name, name) == 0)
            return atomic_load(&shim.calls[i]);
    return -1;
}

long mfu_shim_sync_calls(void)
{
    return atomic_load(&shim.calls[S_EVENT_SYNCHRONIZE])
           + atomic_load(&shim.calls[S_STREAM_SYNCHRONIZE])
           + atomic_load(&shim.calls[S_CTX_SYNCHRONIZE]);
}

void mfu_shim_reset(void)
{
    for (int i = 0; i < S_COUNT; i++)
        atomic_store(&shim.calls[i], 0);
}

const char *mfu_shim_target(void)
{
    pthread_once(&shim.once, shim_open);
    return shim.target;
}

const char *mfu_shim_error(void)
{
    pthread_once(&shim.once, shim_open);
    return shim.error;
}
