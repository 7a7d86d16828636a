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

static const char *const cu_create_names[] = {"cuEventCreate", NULL};
static const char *const cu_record_names[] = {"cuEventRecord", NULL};
static const char *const cu_query_names[] = {"cuEventQuery", NULL};
static const char *const cu_elapsed_names[] = {"cuEventElapsedTime_v2",
                                               "cuEventElapsedTime", NULL};
static const char *const cu_sync_names[] = {"cuEventSynchronize", NULL};
static const char *const cu_destroy_names[] = {"cuEventDestroy_v2",
                                               "cuEventDestroy", NULL};
static const char *const hip_create_names[] = {"hipEventCreateWithFlags", NULL};
static const char *const hip_record_names[] = {"hipEventRecord", NULL};
static const char *const hip_query_names[] = {"hipEventQuery", NULL};
static const char *const hip_elapsed_names[] = {"hipEventElapsedTime", NULL};
static const char *const hip_sync_names[] = {"hipEventSynchronize", NULL};
static const char *const hip_destroy_names[] = {"hipEventDestroy", NULL};

/* The six event calls, resolved from one table of names per vendor. */
struct event_names {
    const char *const *create, *const *record, *const *query, *const *elapsed,
        *const *synchronize, *const *destroy;
};

static const struct event_names cuda_names = {
    .create = cu_create_names,
    .record = cu_record_names,
    .query = cu_query_names,
    .elapsed = cu_elapsed_names,
    .synchronize = cu_sync_names,
    .destroy = cu_destroy_names,
};

static const struct event_names hip_names = {
    .create = hip_create_names,
    .record = hip_record_names,
    .query = hip_query_names,
    .elapsed = hip_elapsed_names,
    .synchronize = hip_sync_names,
    .destroy = hip_destroy_names,
};

const char *mfu_gpu_driver_library(mfu_gpu_api api)
{
    const char *env = getenv(api == MFU_GPU_HIP ? MFU_HIP_LIBRARY_ENV
                                                : MFU_CUDA_LIBRARY_ENV);
    if (env != NULL && env[0] != '\0')
        return env;
    return api == MFU_GPU_HIP ? MFU_HIP_LIBRARY_DEFAULT : MFU_CUDA_LIBRARY_DEFAULT;
}

/* Resolve one required call; on a miss record the first name tried. */
static void *require(mfu_gpu_driver *driver, const char *const *names,
                     const char **found, int *missing)
{
    void *symbol;
    if (*missing)
        return NULL;
    symbol = resolve_first(driver->library, names, found);
    if (symbol == NULL) {
        *missing = 1;
        set_error(&driver->error, names[0], 0, "symbol not found in the driver library");
    }
    return symbol;
}

static int resolve_events(mfu_gpu_driver *driver, const struct event_names *names)
{
    int missing = 0;
    driver->event_create = (mfu_gpu_event_create_fn)require(
        driver, names->create, &driver->name_create, &missing);
    driver->event_record = (mfu_gpu_event_record_fn)require(
        driver, names->record, &driver->name_record, &missing);
    driver->event_query = (mfu_gpu_event_query_fn)require(
        driver, names->query, &driver->name_query, &missing);
    driver->event_elapsed = (mfu_gpu_event_elapsed_fn)require(
        driver, names->elapsed, &driver->name_elapsed, &missing);
    driver->event_synchronize = (mfu_gpu_event_synchronize_fn)require(
        driver, names->synchronize, &driver->name_synchronize, &missing);
    driver->event_destroy = (mfu_gpu_event_destroy_fn)require(
        driver, names->destroy, &driver->name_destroy, &missing);
    return !missing;
}

mfu_status mfu_gpu_driver_open(mfu_gpu_api api, const char *path,
                               mfu_gpu_driver *driver)
{
    mfu_status status = MFU_ERR_UNAVAILABLE;
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

    if (api == MFU_GPU_CUDA) {
        const char *found = NULL;
        static const char *const init_names[] = {"cuInit", NULL};
        static const char *const ctx_names[] = {"cuCtxGetCurrent", NULL};
        static const char *const err_names[] = {"cuGetErrorName", NULL};
        int missing = 0;
        mfu_cu_init_fn cu_init;
        int code;

        cu_init = (mfu_cu_init_fn)require(driver, init_names, &found, &missing);
        driver->ctx_get_current =
            (mfu_cu_ctx_get_current_fn)require(driver, ctx_names, &found, &missing);
        if (missing || !resolve_events(driver, &cuda_names))
            goto error;
        driver->cu_error_name =
            (mfu_cu_get_error_name_fn)resolve_first(driver->library, err_names, &found);
        code = cu_init(0);
        if (code != MFU_GPU_SUCCESS) {
            set_error(&driver->error, "cuInit", code, path);
            status = MFU_ERR_DRIVER;
            goto error;
        }
    } else {
        const char *found = NULL;
        static const char *const err_names[] = {"hipGetErrorName", NULL};
        if (!resolve_events(driver, &hip_names))
            goto error;
        driver->hip_error_name =
            (mfu_hip_get_error_name_fn)resolve_first(driver->library, err_names, &found);
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
