/* gpu_driver.c -- dlopen of the CUDA / HIP driver (see gpu_driver.h). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_driver.h"

/* Copy `text` into error->detail, truncating. */
static void set_detail(mfu_gpu_error *error, const char *text)
{
    snprintf(error->detail, sizeof error->detail, "%s", text ? text : "");
}

static void set_error(mfu_gpu_error *error, const char *call, int code,
                      const char *detail)
{
    error->call = call;
    error->code = code;
    set_detail(error, detail);
}

/* dlsym of the first of `names` (NULL-terminated) the library exports;
 * *found gets the static name resolved. POSIX guarantees the object-to-
 * function pointer conversion the callers make. */
static void *resolve_first(void *library, const char *const *names,
                           const char **found)
{
    for (; *names != NULL; names++) {
        void *symbol = dlsym(library, *names);
        if (symbol != NULL) {
            *found = *names;
            return symbol;
        }
    }
    *found = NULL;
    return NULL;
}

/* The calls the loader resolves, in the order it looks for them (the first
 * missing required one is the one the error names). */
enum call {
    CALL_INIT,       /* CUDA only */
    CALL_CTX,        /* CUDA only */
    CALL_CREATE,
    CALL_RECORD,
    CALL_QUERY,
    CALL_ELAPSED,
    CALL_SYNCHRONIZE,
    CALL_DESTROY,
    CALL_ERROR_NAME, /* optional */
    CALL_COUNT
};

/* One call's names, tried in order (the _v2 name first; see gpu_driver.h),
 * NULL-terminated; no names: the vendor has no such call. */
struct call_names {
    const char *names[3];
    int required;
};

/* Per vendor: [0] CUDA, [1] HIP. */
static const struct call_names vendor_calls[2][CALL_COUNT] = {
    {
        [CALL_INIT] = {{"cuInit"}, 1},
        [CALL_CTX] = {{"cuCtxGetCurrent"}, 1},
        [CALL_CREATE] = {{"cuEventCreate"}, 1},
        [CALL_RECORD] = {{"cuEventRecord"}, 1},
        [CALL_QUERY] = {{"cuEventQuery"}, 1},
        [CALL_ELAPSED] = {{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, 1},
        [CALL_SYNCHRONIZE] = {{"cuEventSynchronize"}, 1},
        [CALL_DESTROY] = {{"cuEventDestroy_v2", "cuEventDestroy"}, 1},
        [CALL_ERROR_NAME] = {{"cuGetErrorName"}, 0},
    },
    {
        [CALL_CREATE] = {{"hipEventCreateWithFlags"}, 1},
        [CALL_RECORD] = {{"hipEventRecord"}, 1},
        [CALL_QUERY] = {{"hipEventQuery"}, 1},
        [CALL_ELAPSED] = {{"hipEventElapsedTime"}, 1},
        [CALL_SYNCHRONIZE] = {{"hipEventSynchronize"}, 1},
        [CALL_DESTROY] = {{"hipEventDestroy"}, 1},
        [CALL_ERROR_NAME] = {{"hipGetErrorName"}, 0},
    },
};

/* Resolve every call of the driver's vendor into symbols[] / found[]; 0
 * with driver->error naming the first required call that is missing. */
static int resolve_calls(mfu_gpu_driver *driver, void *symbols[CALL_COUNT],
                         const char *found[CALL_COUNT])
{
    const struct call_names *calls = vendor_calls[driver->api == MFU_GPU_HIP ? 1 : 0];
    for (int call = 0; call < CALL_COUNT; call++) {
        symbols[call] = NULL;
        found[call] = NULL;
        if (calls[call].names[0] == NULL)
            continue;
        symbols[call] = resolve_first(driver->library, calls[call].names, &found[call]);
        if (symbols[call] == NULL && calls[call].required) {
            set_error(&driver->error, calls[call].names[0], 0,
                      "symbol not found in the driver library");
            return 0;
        }
    }
    return 1;
}

const char *mfu_gpu_driver_library(mfu_gpu_api api)
{
    const char *env = getenv(api == MFU_GPU_HIP ? MFU_HIP_LIBRARY_ENV
                                                : MFU_CUDA_LIBRARY_ENV);
    if (env != NULL && env[0] != '\0')
        return env;
    return api == MFU_GPU_HIP ? MFU_HIP_LIBRARY_DEFAULT : MFU_CUDA_LIBRARY_DEFAULT;
}

mfu_status mfu_gpu_driver_open(mfu_gpu_api api, const char *path,
                               mfu_gpu_driver *driver)
{
    mfu_status status = MFU_ERR_UNAVAILABLE;
    void *symbols[CALL_COUNT];
    const char *found[CALL_COUNT];
    memset(driver, 0, sizeof *driver);
    driver->api = api;
    if (api != MFU_GPU_CUDA && api != MFU_GPU_HIP) {
        set_error(&driver->error, "mfu_gpu_driver_open", 0, "unknown GPU API");
        return MFU_ERR_INVALID_ARGUMENT;
    }
    if (path == NULL)
        path = mfu_gpu_driver_library(api);

    /* RTLD_LOCAL keeps the driver's symbols out of the global namespace. */
    driver->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (driver->library == NULL) {
        const char *why = dlerror();
        set_error(&driver->error, "dlopen", 0, why ? why : path);
        return MFU_ERR_UNAVAILABLE;
    }

    if (!resolve_calls(driver, symbols, found))
        goto error;
    driver->event_create = (mfu_gpu_event_create_fn)symbols[CALL_CREATE];
    driver->event_record = (mfu_gpu_event_record_fn)symbols[CALL_RECORD];
    driver->event_query = (mfu_gpu_event_query_fn)symbols[CALL_QUERY];
    driver->event_elapsed = (mfu_gpu_event_elapsed_fn)symbols[CALL_ELAPSED];
    driver->event_synchronize = (mfu_gpu_event_synchronize_fn)symbols[CALL_SYNCHRONIZE];
    driver->event_destroy = (mfu_gpu_event_destroy_fn)symbols[CALL_DESTROY];
    driver->name_create = found[CALL_CREATE];
    driver->name_record = found[CALL_RECORD];
    driver->name_query = found[CALL_QUERY];
    driver->name_elapsed = found[CALL_ELAPSED];
    driver->name_synchronize = found[CALL_SYNCHRONIZE];
    driver->name_destroy = found[CALL_DESTROY];
    if (api == MFU_GPU_CUDA) {
        int code;
        driver->ctx_get_current = (mfu_cu_ctx_get_current_fn)symbols[CALL_CTX];
        driver->cu_error_name = (mfu_cu_get_error_name_fn)symbols[CALL_ERROR_NAME];
        code = ((mfu_cu_init_fn)symbols[CALL_INIT])(0);
        if (code != MFU_GPU_SUCCESS) {
            set_error(&driver->error, "cuInit", code, path);
            status = MFU_ERR_DRIVER;
            goto error;
        }
    } else {
        driver->hip_error_name = (mfu_hip_get_error_name_fn)symbols[CALL_ERROR_NAME];
    }
    driver->error.call = NULL;
    return MFU_OK;

error:
    dlclose(driver->library);
    {
        /* No pointer into the unloaded library may survive: a failed
         * driver is a zeroed one plus its api and error. */
        mfu_gpu_error saved = driver->error;
        memset(driver, 0, sizeof *driver);
        driver->api = api;
        driver->error = saved;
    }
    return status;
}

void mfu_gpu_driver_close(mfu_gpu_driver *driver)
{
    if (driver->library != NULL)
        dlclose(driver->library);
    driver->library = NULL;
}

const char *mfu_gpu_driver_code_name(const mfu_gpu_driver *driver, int code)
{
    const char *name = NULL;
    if (driver->library == NULL)
        return NULL;
    if (driver->cu_error_name != NULL) {
        if (driver->cu_error_name(code, &name) != MFU_GPU_SUCCESS)
            return NULL;
        return name;
    }
    if (driver->hip_error_name != NULL)
        return driver->hip_error_name(code);
    return NULL;
}

mfu_status mfu_gpu_driver_check_context(const mfu_gpu_driver *driver,
                                        mfu_gpu_error *error)
{
    void *context = NULL;
    int code;
    if (driver->api != MFU_GPU_CUDA)
        return MFU_OK;
    if (driver->ctx_get_current == NULL) {
        set_error(error, "cuCtxGetCurrent", 0, "driver not loaded");
        return MFU_ERR_UNAVAILABLE;
    }
    code = driver->ctx_get_current(&context);
    if (code != MFU_GPU_SUCCESS) {
        set_error(error, "cuCtxGetCurrent", code, "");
        return MFU_ERR_DRIVER;
    }
    if (context == NULL) {
        set_error(error, "cuCtxGetCurrent", 0,
                  "no CUDA context is current on this thread");
        return MFU_ERR_UNAVAILABLE;
    }
    return MFU_OK;
}

/* The process-wide drivers: index 0 CUDA, 1 HIP. `state` goes 0 (not
 * loaded) -> 1 (a thread is loading) -> 2 (done, status and driver final);
 * the release store of 2 publishes the driver to acquiring readers. No
 * pthread dependency: a loser of the race yields until the winner is done. */
enum { LOAD_NOT_STARTED = 0, LOAD_RUNNING = 1, LOAD_DONE = 2 };

static atomic_int global_state[2];
static mfu_status global_status[2];
static mfu_gpu_driver global_driver[2];

mfu_status mfu_gpu_driver_get(mfu_gpu_api api, const mfu_gpu_driver **driver)
{
    int index;
    int expected = LOAD_NOT_STARTED;
    if (api != MFU_GPU_CUDA && api != MFU_GPU_HIP) {
        *driver = NULL;
        return MFU_ERR_INVALID_ARGUMENT;
    }
    index = api == MFU_GPU_CUDA ? 0 : 1;
    if (atomic_load_explicit(&global_state[index], memory_order_acquire) != LOAD_DONE) {
        if (atomic_compare_exchange_strong_explicit(
                &global_state[index], &expected, LOAD_RUNNING,
                memory_order_acq_rel, memory_order_acquire)) {
            global_status[index] = mfu_gpu_driver_open(api, NULL, &global_driver[index]);
            atomic_store_explicit(&global_state[index], LOAD_DONE, memory_order_release);
        } else {
            while (atomic_load_explicit(&global_state[index], memory_order_acquire)
                   != LOAD_DONE)
                sched_yield();
        }
    }
    *driver = &global_driver[index];
    return global_status[index];
}
