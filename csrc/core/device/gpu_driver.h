/*
 * gpu_driver.h -- the GPU driver, loaded at run time with dlopen.
 *
 * The core never links against CUDA or HIP: one build serves CPU-only and
 * GPU machines. On first GPU use the driver library is opened and the few
 * event calls the timer needs are resolved into a table of function
 * pointers (mfu_gpu_driver) with one shape for both vendors:
 *
 *   CUDA (driver API)     libcuda.so.1       env MFU_TRACKER_CUDA_LIBRARY
 *     cuInit, cuCtxGetCurrent, cuEventCreate, cuEventRecord, cuEventQuery,
 *     cuEventElapsedTime_v2 (else cuEventElapsedTime),
 *     cuEventSynchronize, cuEventDestroy_v2 (else cuEventDestroy),
 *     cuGetErrorName (optional)
 *   HIP (runtime API)     libamdhip64.so     env MFU_TRACKER_HIP_LIBRARY
 *     hipEventCreateWithFlags, hipEventRecord, hipEventQuery,
 *     hipEventElapsedTime, hipEventSynchronize, hipEventDestroy,
 *     hipGetErrorName (optional)
 *
 * The environment variable, when set and non-empty, names the library to
 * load instead of the default (the tests load a fake driver this way).
 *
 * NB: the _v2 names. Since CUDA 4.0 cuda.h maps cuEventDestroy to
 * cuEventDestroy_v2; CUDA 12.8 added cuEventElapsedTime_v2 (same signature;
 * it does not report errors of pending work, which an elapsed-time reading
 * does not want anyway). Drivers keep exporting the old names for old
 * binaries, and some (JetPack 6) export only the old elapsed-time name, so
 * each is resolved _v2 first, then the old name.
 *
 * Both vendors return 0 for success and 600 for "not ready" (CUDA_ERROR_NOT_READY,
 * hipErrorNotReady); every other code is a failure, kept for the message.
 *
 * Status codes: MFU_ERR_UNAVAILABLE when the library cannot be opened, a
 * required symbol is missing, or (CUDA) no context is current; MFU_ERR_DRIVER
 * when a driver call returns an error. Either way an mfu_gpu_error says what
 * failed, so the caller can fall back to the CPU clock with one warning that
 * names the cause.
 */
#ifndef MFU_GPU_DRIVER_H
#define MFU_GPU_DRIVER_H

#include "mfu_status.h"

/* Which vendor interface a driver speaks. */
typedef enum mfu_gpu_api {
    MFU_GPU_CUDA = 1, /* CUDA driver API (cu*) */
    MFU_GPU_HIP = 2   /* HIP runtime API (hip*) */
} mfu_gpu_api;

/* The driver's return codes both vendors share. */
enum {
    MFU_GPU_SUCCESS = 0,
    MFU_GPU_NOT_READY = 600 /* CUDA_ERROR_NOT_READY == hipErrorNotReady */
};

/* Default library names, opened when the environment names none. */
#define MFU_CUDA_LIBRARY_DEFAULT "libcuda.so.1"
#define MFU_HIP_LIBRARY_DEFAULT "libamdhip64.so"
#define MFU_CUDA_LIBRARY_ENV "MFU_TRACKER_CUDA_LIBRARY"
#define MFU_HIP_LIBRARY_ENV "MFU_TRACKER_HIP_LIBRARY"

/* What went wrong, for the warning the caller prints. */
typedef struct mfu_gpu_error {
    const char *call; /* static name of the failing call or missing symbol
                         ("dlopen", "cuEventRecord", ...); NULL when none */
    int code;         /* the driver's return code; 0 when no driver call
                         failed (missing library or symbol, no context) */
    char detail[192]; /* dlerror() text or the library path; "" when none */
} mfu_gpu_error;

/* Driver handles are opaque pointers: CUevent / hipEvent_t, CUstream /
 * hipStream_t (0 = the null stream), CUcontext. */
typedef void *mfu_gpu_event;
typedef void *mfu_gpu_stream;

/* One shape for both vendors; int is the CUresult / hipError_t. */
typedef int (*mfu_gpu_event_create_fn)(mfu_gpu_event *event, unsigned int flags);
typedef int (*mfu_gpu_event_record_fn)(mfu_gpu_event event, mfu_gpu_stream stream);
typedef int (*mfu_gpu_event_query_fn)(mfu_gpu_event event);
typedef int (*mfu_gpu_event_elapsed_fn)(float *milliseconds, mfu_gpu_event start,
                                        mfu_gpu_event end);
typedef int (*mfu_gpu_event_synchronize_fn)(mfu_gpu_event event);
typedef int (*mfu_gpu_event_destroy_fn)(mfu_gpu_event event);
/* CUDA only. */
typedef int (*mfu_cu_init_fn)(unsigned int flags);
typedef int (*mfu_cu_ctx_get_current_fn)(void **context);
typedef int (*mfu_cu_get_error_name_fn)(int code, const char **name);
/* HIP only. */
typedef const char *(*mfu_hip_get_error_name_fn)(int code);

/* A loaded driver: the library handle and its resolved calls. */
typedef struct mfu_gpu_driver {
    mfu_gpu_api api;
    void *library; /* dlopen handle; NULL when not loaded */
    mfu_gpu_event_create_fn event_create;   /* cuEventCreate / hipEventCreateWithFlags */
    mfu_gpu_event_record_fn event_record;   /* cuEventRecord / hipEventRecord */
    mfu_gpu_event_query_fn event_query;     /* cuEventQuery / hipEventQuery: 0, 600 or error */
    mfu_gpu_event_elapsed_fn event_elapsed; /* cuEventElapsedTime[_v2] / hipEventElapsedTime */
    mfu_gpu_event_synchronize_fn event_synchronize; /* the only blocking call */
    mfu_gpu_event_destroy_fn event_destroy; /* cuEventDestroy[_v2] / hipEventDestroy */
    mfu_cu_ctx_get_current_fn ctx_get_current; /* CUDA only; NULL for HIP */
    mfu_cu_get_error_name_fn cu_error_name;    /* optional; NULL if absent */
    mfu_hip_get_error_name_fn hip_error_name;  /* optional; NULL if absent */
    /* Static names of the calls resolved, for messages. */
    const char *name_create, *name_record, *name_query, *name_elapsed,
        *name_synchronize, *name_destroy;
    mfu_gpu_error error; /* why loading failed; call == NULL after success */
} mfu_gpu_driver;

/* The library mfu_gpu_driver_open(api, NULL, ...) opens: the environment
 * override when set and non-empty, else the default name. Never NULL. */
const char *mfu_gpu_driver_library(mfu_gpu_api api);

/* Open the driver of `api` from `path` (NULL: mfu_gpu_driver_library(api))
 * and resolve its calls into *driver; for CUDA also call cuInit(0). Not
 * cached: each call dlopens again (the loader counts references), and a
 * successful open needs one mfu_gpu_driver_close. On failure *driver holds
 * the mfu_gpu_error and no library:
 *   MFU_ERR_INVALID_ARGUMENT  api is not a known mfu_gpu_api
 *   MFU_ERR_UNAVAILABLE       the library cannot be opened, or a required
 *                             symbol is missing (error.call names it)
 *   MFU_ERR_DRIVER            cuInit failed (error.code is its CUresult) */
mfu_status mfu_gpu_driver_open(mfu_gpu_api api, const char *path,
                               mfu_gpu_driver *driver);

/* Release a driver from mfu_gpu_driver_open; a zeroed or failed driver is a
 * no-op. Events created through it must be destroyed first. */
void mfu_gpu_driver_close(mfu_gpu_driver *driver);

/* The process-wide driver of `api`, opened once (path NULL) on the first
 * call from any thread; concurrent first callers wait for that one load.
 * Every later call returns the same status and pointer without touching
 * the library: a failed load is not retried. *driver is set on failure too,
 * so the caller can read (*driver)->error. Never closed. */
mfu_status mfu_gpu_driver_get(mfu_gpu_api api, const mfu_gpu_driver **driver);

/* The driver's name for a return code ("CUDA_ERROR_INVALID_VALUE", ...),
 * static in the loaded library, or NULL when the driver cannot name it. */
const char *mfu_gpu_driver_code_name(const mfu_gpu_driver *driver, int code);

/* For CUDA: MFU_OK if a context is current on the calling thread (the
 * driver API needs one; torch makes its device's primary context current
 * once CUDA is initialised on the thread), MFU_ERR_UNAVAILABLE if none,
 * MFU_ERR_DRIVER if the call fails; *error says which. For HIP: MFU_OK. */
mfu_status mfu_gpu_driver_check_context(const mfu_gpu_driver *driver,
                                        mfu_gpu_error *error);

#endif /* MFU_GPU_DRIVER_H */
