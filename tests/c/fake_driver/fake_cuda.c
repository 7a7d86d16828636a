/*
 * fake_cuda.c -- a fake GPU driver for the timer's tests, built as a
 * shared library and loaded through MFU_TRACKER_CUDA_LIBRARY /
 * MFU_TRACKER_HIP_LIBRARY. It exports the CUDA driver names and the HIP
 * runtime names the core resolves (plus the synchronizing calls the core
 * must never make), one shared simulated GPU behind both.
 *
 * The simulated timeline. The host clock is virtual: it stands still
 * until the test moves it (fake_advance) or a synchronizing call makes the
 * host wait. Recording an event on a stream places it on the GPU at
 *
 *     complete = max(stream's previous complete + work_ns, now + lag_ns)
 *
 * i.e. the GPU does `work_ns` of work between two records on a stream and
 * cannot finish before the host enqueued the record plus a launch lag.
 * An event is done once the host clock reaches `complete`. Elapsed time is
 * the difference of two `complete`s, in float milliseconds, like the real
 * driver.
 *
 * Exports for tests: fake_reset, fake_call_count, fake_sync_calls,
 * fake_fail_next, fake_advance, fake_now_ns, fake_set_gpu_lag_ns,
 * fake_set_work_ns, fake_set_no_context, fake_live_events; and for
 * `mfu-tracker doctor` (the section at the end): fake_enqueue_ns,
 * fake_set_elapsed_scale, the device queries and environment knobs.
 *
 * Streams waiting on each other (communication: a collective on its own stream,
 * the compute stream waiting for it). cuStreamWaitEvent /
 * hipStreamWaitEvent(stream, event) make the stream's next work start no
 * earlier than the event completes:
 *
 *     stream complete = max(stream complete, event complete)
 *
 * (non-blocking for the host, as on a real GPU; not a synchronizing call).
 * fake_stream_wait_stream(waiter, waited) does the same with the waited
 * stream's work so far -- an event recorded on `waited` now -- without an
 * event of the test's own. Together with fake_enqueue_ns they let a test
 * lay out a collective on a communication stream that starts when the
 * compute stream reaches its launch, and a wait of the compute stream for
 * it: the stall the compute stream sees is the exposed communication.
 *
 * Events are heap objects, so use after destroy shows up under
 * AddressSanitizer and valgrind. Not thread-safe (the tests drive it from
 * one thread).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    FAKE_SUCCESS = 0,
    FAKE_ERROR_INVALID_VALUE = 1,
    FAKE_ERROR_INVALID_HANDLE = 400,
    FAKE_ERROR_NOT_READY = 600,
    FAKE_MAX_STREAMS = 16,
    FAKE_EVENT_MAGIC = 0x45564e54 /* "EVNT" */
};

/* Every exported driver call, counted by name. */
enum fake_call {
    CALL_CU_INIT,
    CALL_CU_CTX_GET_CURRENT,
    CALL_CU_EVENT_CREATE,
    CALL_CU_EVENT_RECORD,
    CALL_CU_EVENT_QUERY,
    CALL_CU_EVENT_ELAPSED_TIME,
    CALL_CU_EVENT_SYNCHRONIZE,
    CALL_CU_EVENT_DESTROY_V2,
    CALL_CU_STREAM_SYNCHRONIZE,
    CALL_CU_CTX_SYNCHRONIZE,
    CALL_CU_GET_ERROR_NAME,
    CALL_CU_STREAM_WAIT_EVENT,
    CALL_HIP_EVENT_CREATE_WITH_FLAGS,
    CALL_HIP_EVENT_RECORD,
    CALL_HIP_EVENT_QUERY,
    CALL_HIP_EVENT_ELAPSED_TIME,
    CALL_HIP_EVENT_SYNCHRONIZE,
    CALL_HIP_EVENT_DESTROY,
    CALL_HIP_STREAM_SYNCHRONIZE,
    CALL_HIP_DEVICE_SYNCHRONIZE,
    CALL_HIP_GET_ERROR_NAME,
    CALL_HIP_STREAM_WAIT_EVENT,
    CALL_COUNT
};

static const char *const call_names[CALL_COUNT] = {
    [CALL_CU_INIT] = "cuInit",
    [CALL_CU_CTX_GET_CURRENT] = "cuCtxGetCurrent",
    [CALL_CU_EVENT_CREATE] = "cuEventCreate",
    [CALL_CU_EVENT_RECORD] = "cuEventRecord",
    [CALL_CU_EVENT_QUERY] = "cuEventQuery",
    [CALL_CU_EVENT_ELAPSED_TIME] = "cuEventElapsedTime",
    [CALL_CU_EVENT_SYNCHRONIZE] = "cuEventSynchronize",
    [CALL_CU_EVENT_DESTROY_V2] = "cuEventDestroy_v2",
    [CALL_CU_STREAM_SYNCHRONIZE] = "cuStreamSynchronize",
    [CALL_CU_CTX_SYNCHRONIZE] = "cuCtxSynchronize",
    [CALL_CU_GET_ERROR_NAME] = "cuGetErrorName",
    [CALL_CU_STREAM_WAIT_EVENT] = "cuStreamWaitEvent",
    [CALL_HIP_EVENT_CREATE_WITH_FLAGS] = "hipEventCreateWithFlags",
    [CALL_HIP_EVENT_RECORD] = "hipEventRecord",
    [CALL_HIP_EVENT_QUERY] = "hipEventQuery",
    [CALL_HIP_EVENT_ELAPSED_TIME] = "hipEventElapsedTime",
    [CALL_HIP_EVENT_SYNCHRONIZE] = "hipEventSynchronize",
    [CALL_HIP_EVENT_DESTROY] = "hipEventDestroy",
    [CALL_HIP_STREAM_SYNCHRONIZE] = "hipStreamSynchronize",
    [CALL_HIP_DEVICE_SYNCHRONIZE] = "hipDeviceSynchronize",
    [CALL_HIP_GET_ERROR_NAME] = "hipGetErrorName",
    [CALL_HIP_STREAM_WAIT_EVENT] = "hipStreamWaitEvent",
};

struct fake_event {
    uint32_t magic;
    int recorded;
    uint64_t complete_ns;
};

struct fake_stream {
    uintptr_t handle;
    uint64_t last_complete_ns;
};

static struct {
    long calls[CALL_COUNT];
    int fail_code[CALL_COUNT]; /* nonzero: the next call returns it */
    uint64_t now_ns;
    uint64_t lag_ns;
    uint64_t work_ns;
    int no_context;
    long live_events;
    int num_streams;
    struct fake_stream streams[FAKE_MAX_STREAMS];
} fake;

static int fake_context_object; /* what cuCtxGetCurrent hands out */

static double doctor_elapsed_scale(void); /* the doctor section, at the end */
static void doctor_apply_env(void);

/* Count a call; return the failure injected for it, or 0. */
static int enter(enum fake_call call)
{
    int code = fake.fail_code[call];
    fake.calls[call]++;
    fake.fail_code[call] = 0;
    return code;
}

static int find_call(const char *name)
{
    for (int i = 0; i < CALL_COUNT; i++)
        if (strcmp(call_names[i], name) == 0)
            return i;
    return -1;
}

static struct fake_stream *find_stream(uintptr_t handle)
{
    for (int i = 0; i < fake.num_streams; i++)
        if (fake.streams[i].handle == handle)
            return &fake.streams[i];
    if (fake.num_streams == FAKE_MAX_STREAMS)
        return NULL;
    fake.streams[fake.num_streams].handle = handle;
    fake.streams[fake.num_streams].last_complete_ns = 0;
    return &fake.streams[fake.num_streams++];
}

static int valid(const struct fake_event *event)
{
    return event != NULL && event->magic == FAKE_EVENT_MAGIC;
}

static int done(const struct fake_event *event)
{
    return !event->recorded || event->complete_ns <= fake.now_ns;
}

static void wait_until(uint64_t t_ns)
{
    if (t_ns > fake.now_ns)
        fake.now_ns = t_ns;
}

/* ---- test knobs ------------------------------------------------------- */

/* Zero every counter and injected failure, the clock and the streams, and
 * restore defaults (no lag, no work, a current context). Live events stay. */
void fake_reset(void)
{
    long live = fake.live_events;
    memset(&fake, 0, sizeof fake);
    fake.live_events = live;
}

/* Calls made to `name` since the last reset; -1 for a name not exported. */
long fake_call_count(const char *name)
{
    int call = find_call(name);
    return call < 0 ? -1 : fake.calls[call];
}

/* Calls that block the host: event, stream and context/device synchronize. */
long fake_sync_calls(void)
{
    return fake.calls[CALL_CU_EVENT_SYNCHRONIZE] + fake.calls[CALL_CU_STREAM_SYNCHRONIZE]
           + fake.calls[CALL_CU_CTX_SYNCHRONIZE] + fake.calls[CALL_HIP_EVENT_SYNCHRONIZE]
           + fake.calls[CALL_HIP_STREAM_SYNCHRONIZE]
           + fake.calls[CALL_HIP_DEVICE_SYNCHRONIZE];
}

/* The next call of `name` returns `code` and does nothing. 0 if armed,
 * -1 for an unknown name. */
int fake_fail_next(const char *name, int code)
{
    int call = find_call(name);
    if (call < 0)
        return -1;
    fake.fail_code[call] = code;
    return 0;
}

void fake_advance(uint64_t ns) { fake.now_ns += ns; }
uint64_t fake_now_ns(void) { return fake.now_ns; }
void fake_set_gpu_lag_ns(uint64_t ns) { fake.lag_ns = ns; }
void fake_set_work_ns(uint64_t ns) { fake.work_ns = ns; }
void fake_set_no_context(int no_context) { fake.no_context = no_context; }
long fake_live_events(void) { return fake.live_events; }

/* ---- the shared implementation --------------------------------------- */

static int event_create(enum fake_call call, void **out)
{
    int code = enter(call);
    struct fake_event *event;
    if (code)
        return code;
    if (out == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    event = calloc(1, sizeof *event);
    if (event == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    event->magic = FAKE_EVENT_MAGIC;
    fake.live_events++;
    *out = event;
    return FAKE_SUCCESS;
}

static int event_record(enum fake_call call, void *handle, void *stream_handle)
{
    int code = enter(call);
    struct fake_event *event = handle;
    struct fake_stream *stream;
    uint64_t gpu_ns, host_ns;
    if (code)
        return code;
    if (!valid(event))
        return FAKE_ERROR_INVALID_HANDLE;
    stream = find_stream((uintptr_t)stream_handle);
    if (stream == NULL)
        return FAKE_ERROR_INVALID_HANDLE;
    gpu_ns = stream->last_complete_ns + fake.work_ns;
    host_ns = fake.now_ns + fake.lag_ns;
    stream->last_complete_ns = gpu_ns > host_ns ? gpu_ns : host_ns;
    event->recorded = 1;
    event->complete_ns = stream->last_complete_ns;
    return FAKE_SUCCESS;
}

static int event_query(enum fake_call call, void *handle)
{
    int code = enter(call);
    if (code)
        return code;
    if (!valid(handle))
        return FAKE_ERROR_INVALID_HANDLE;
    return done(handle) ? FAKE_SUCCESS : FAKE_ERROR_NOT_READY;
}

static int event_elapsed(enum fake_call call, float *ms, void *start_handle,
                         void *end_handle)
{
    int code = enter(call);
    struct fake_event *start = start_handle, *end = end_handle;
    if (code)
        return code;
    if (ms == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    if (!valid(start) || !valid(end) || !start->recorded || !end->recorded)
        return FAKE_ERROR_INVALID_HANDLE;
    if (!done(start) || !done(end))
        return FAKE_ERROR_NOT_READY;
    *ms = (float)(((double)end->complete_ns - (double)start->complete_ns) * 1e-6
                  * doctor_elapsed_scale());
    return FAKE_SUCCESS;
}

static int event_synchronize(enum fake_call call, void *handle)
{
    int code = enter(call);
    struct fake_event *event = handle;
    if (code)
        return code;
    if (!valid(event))
        return FAKE_ERROR_INVALID_HANDLE;
    if (event->recorded)
        wait_until(event->complete_ns);
    return FAKE_SUCCESS;
}

static int event_destroy(enum fake_call call, void *handle)
{
    int code = enter(call);
    struct fake_event *event = handle;
    if (code)
        return code;
    if (!valid(event))
        return FAKE_ERROR_INVALID_HANDLE;
    event->magic = 0;
    free(event);
    fake.live_events--;
    return FAKE_SUCCESS;
}

static int stream_synchronize(enum fake_call call, void *stream_handle)
{
    int code = enter(call);
    struct fake_stream *stream;
    if (code)
        return code;
    stream = find_stream((uintptr_t)stream_handle);
    if (stream == NULL)
        return FAKE_ERROR_INVALID_HANDLE;
    wait_until(stream->last_complete_ns);
    return FAKE_SUCCESS;
}

/* The stream's next work waits for the event (non-blocking). */
static int stream_wait_event(enum fake_call call, void *stream_handle, void *handle,
                             unsigned int flags)
{
    int code = enter(call);
    struct fake_event *event = handle;
    struct fake_stream *stream;
    if (code)
        return code;
    if (flags != 0 || !valid(event))
        return flags != 0 ? FAKE_ERROR_INVALID_VALUE : FAKE_ERROR_INVALID_HANDLE;
    stream = find_stream((uintptr_t)stream_handle);
    if (stream == NULL)
        return FAKE_ERROR_INVALID_HANDLE;
    if (event->recorded && event->complete_ns > stream->last_complete_ns)
        stream->last_complete_ns = event->complete_ns;
    return FAKE_SUCCESS;
}

/* `waiter`'s next work waits for `waited`'s work so far (see the header). */
void fake_stream_wait_stream(uintptr_t waiter_handle, uintptr_t waited_handle)
{
    struct fake_stream *waiter = find_stream(waiter_handle);
    struct fake_stream *waited = find_stream(waited_handle);
    if (waiter == NULL || waited == NULL)
        return;
    if (waited->last_complete_ns > waiter->last_complete_ns)
        waiter->last_complete_ns = waited->last_complete_ns;
}

static int device_synchronize(enum fake_call call)
{
    int code = enter(call);
    if (code)
        return code;
    for (int i = 0; i < fake.num_streams; i++)
        wait_until(fake.streams[i].last_complete_ns);
    return FAKE_SUCCESS;
}

static const char *error_name(int code, int hip)
{
    switch (code) {
    case FAKE_SUCCESS: return hip ? "hipSuccess" : "CUDA_SUCCESS";
    case FAKE_ERROR_INVALID_VALUE: return hip ? "hipErrorInvalidValue" : "CUDA_ERROR_INVALID_VALUE";
    case 3: return hip ? "hipErrorNotInitialized" : "CUDA_ERROR_NOT_INITIALIZED";
    case 100: return hip ? "hipErrorNoDevice" : "CUDA_ERROR_NO_DEVICE";
    case FAKE_ERROR_INVALID_HANDLE: return hip ? "hipErrorInvalidHandle" : "CUDA_ERROR_INVALID_HANDLE";
    case FAKE_ERROR_NOT_READY: return hip ? "hipErrorNotReady" : "CUDA_ERROR_NOT_READY";
    case 700: return hip ? "hipErrorIllegalAddress" : "CUDA_ERROR_ILLEGAL_ADDRESS";
    }
    return NULL;
}

/* ---- CUDA driver API names ------------------------------------------- */
/* NB: the elapsed-time call is exported under its pre-12.8 name only and
 * destroy under its _v2 name only, so the core's "_v2 first, then the old
 * name" lookup is exercised both ways. */

int cuInit(unsigned int flags)
{
    int code = enter(CALL_CU_INIT);
    if (code)
        return code;
    doctor_apply_env();
    return flags == 0 ? FAKE_SUCCESS : FAKE_ERROR_INVALID_VALUE;
}

int cuCtxGetCurrent(void **context)
{
    int code = enter(CALL_CU_CTX_GET_CURRENT);
    if (code)
        return code;
    if (context == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    *context = fake.no_context ? NULL : &fake_context_object;
    return FAKE_SUCCESS;
}

int cuEventCreate(void **event, unsigned int flags)
{
    if (flags != 0) /* the core wants timing events: CU_EVENT_DEFAULT */
        return FAKE_ERROR_INVALID_VALUE;
    return event_create(CALL_CU_EVENT_CREATE, event);
}

int cuEventRecord(void *event, void *stream)
{
    return event_record(CALL_CU_EVENT_RECORD, event, stream);
}

int cuEventQuery(void *event) { return event_query(CALL_CU_EVENT_QUERY, event); }

int cuEventElapsedTime(float *ms, void *start, void *end)
{
    return event_elapsed(CALL_CU_EVENT_ELAPSED_TIME, ms, start, end);
}

int cuEventSynchronize(void *event)
{
    return event_synchronize(CALL_CU_EVENT_SYNCHRONIZE, event);
}

int cuEventDestroy_v2(void *event) { return event_destroy(CALL_CU_EVENT_DESTROY_V2, event); }

int cuStreamSynchronize(void *stream)
{
    return stream_synchronize(CALL_CU_STREAM_SYNCHRONIZE, stream);
}

int cuCtxSynchronize(void) { return device_synchronize(CALL_CU_CTX_SYNCHRONIZE); }

int cuStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
    return stream_wait_event(CALL_CU_STREAM_WAIT_EVENT, stream, event, flags);
}

int cuGetErrorName(int code, const char **name)
{
    int injected = enter(CALL_CU_GET_ERROR_NAME);
    if (injected)
        return injected;
    if (name == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    *name = error_name(code, 0);
    return *name ? FAKE_SUCCESS : FAKE_ERROR_INVALID_VALUE;
}

/* ---- HIP runtime API names ------------------------------------------- */

int hipEventCreateWithFlags(void **event, unsigned int flags)
{
    if (flags != 0) /* hipEventDefault */
        return FAKE_ERROR_INVALID_VALUE;
    return event_create(CALL_HIP_EVENT_CREATE_WITH_FLAGS, event);
}

int hipEventRecord(void *event, void *stream)
{
    return event_record(CALL_HIP_EVENT_RECORD, event, stream);
}

int hipEventQuery(void *event) { return event_query(CALL_HIP_EVENT_QUERY, event); }

int hipEventElapsedTime(float *ms, void *start, void *end)
{
    return event_elapsed(CALL_HIP_EVENT_ELAPSED_TIME, ms, start, end);
}

int hipEventSynchronize(void *event)
{
    return event_synchronize(CALL_HIP_EVENT_SYNCHRONIZE, event);
}

int hipEventDestroy(void *event) { return event_destroy(CALL_HIP_EVENT_DESTROY, event); }

int hipStreamSynchronize(void *stream)
{
    return stream_synchronize(CALL_HIP_STREAM_SYNCHRONIZE, stream);
}

int hipDeviceSynchronize(void) { return device_synchronize(CALL_HIP_DEVICE_SYNCHRONIZE); }

int hipStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
    return stream_wait_event(CALL_HIP_STREAM_WAIT_EVENT, stream, event, flags);
}

const char *hipGetErrorName(int code)
{
    enter(CALL_HIP_GET_ERROR_NAME);
    return error_name(code, 1);
}

/* ---- doctor section (mfu_tracker/_doctor*.py, tests/cli/doctor/test_doctor.py) -----
 *
 * What `mfu-tracker doctor` needs of a GPU besides events, so that its GPU
 * code paths run against this fake:
 *
 *   - the driver API's device queries (cuDriverGetVersion, cuDeviceGetCount,
 *     cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute for the SM count and
 *     compute capability, cuDeviceTotalMem_v2): one device, by default an
 *     H100 SXM (132 SMs, 80 GiB, cc 9.0);
 *   - fake_enqueue_ns(stream, ns): a kernel of `ns` GPU nanoseconds enqueued
 *     on `stream` now. It starts when the stream's previous work is done and
 *     not before the host enqueued it plus the launch lag:
 *         stream complete = max(stream complete, now + lag_ns) + ns
 *     so the programmed kernel times are the reference the doctor's timing
 *     check compares the event timer with;
 *   - fake_set_elapsed_scale(x): cuEventElapsedTime reports x times the true
 *     interval (a timer that disagrees with the programmed work; 1 = exact).
 *
 * Environment knobs, read by cuInit (the doctor runs its zero-sync check in
 * a child process, where no test can call a knob):
 *   MFU_FAKE_CUDA_ELAPSED_SCALE   as fake_set_elapsed_scale
 *   MFU_FAKE_CUDA_LAG_NS          as fake_set_gpu_lag_ns (a GPU that falls
 *                                 behind: the event pool fills and the
 *                                 timer has to synchronize)
 *   MFU_FAKE_CUDA_DEVICE          "name;SMs;memory bytes;cc major;cc minor"
 * fake_reset does not touch this section's state.
 */
#include <stdio.h>

enum {
    FAKE_ATTR_MULTIPROCESSOR_COUNT = 16,     /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
    FAKE_ATTR_CC_MAJOR = 75,                 /* ..._COMPUTE_CAPABILITY_MAJOR */
    FAKE_ATTR_CC_MINOR = 76,                 /* ..._COMPUTE_CAPABILITY_MINOR */
    FAKE_ERROR_INVALID_DEVICE = 101
};

static struct {
    double elapsed_scale; /* 0 means 1 (the zero-initialized default) */
    char name[96];
    int num_sms, cc_major, cc_minor;
    unsigned long long memory_bytes;
} doctor = {0.0, "NVIDIA H100 80GB HBM3", 132, 9, 0, 85520809984ull};

static double doctor_elapsed_scale(void)
{
    return doctor.elapsed_scale > 0 ? doctor.elapsed_scale : 1.0;
}

static void doctor_apply_env(void)
{
    const char *scale = getenv("MFU_FAKE_CUDA_ELAPSED_SCALE");
    const char *lag = getenv("MFU_FAKE_CUDA_LAG_NS");
    const char *device = getenv("MFU_FAKE_CUDA_DEVICE");
    if (scale != NULL && scale[0] != '\0')
        doctor.elapsed_scale = strtod(scale, NULL);
    if (lag != NULL && lag[0] != '\0')
        fake.lag_ns = strtoull(lag, NULL, 10);
    if (device != NULL && device[0] != '\0') {
        char name[96];
        int sms, major, minor;
        unsigned long long memory;
        if (sscanf(device, "%95[^;];%d;%llu;%d;%d", name, &sms, &memory, &major, &minor) == 5) {
            memcpy(doctor.name, name, sizeof name);
            doctor.num_sms = sms;
            doctor.memory_bytes = memory;
            doctor.cc_major = major;
            doctor.cc_minor = minor;
        }
    }
}

void fake_set_elapsed_scale(double scale) { doctor.elapsed_scale = scale; }

void fake_enqueue_ns(uintptr_t stream_handle, uint64_t ns)
{
    struct fake_stream *stream = find_stream(stream_handle);
    uint64_t start;
    if (stream == NULL)
        return;
    start = fake.now_ns + fake.lag_ns;
    if (stream->last_complete_ns > start)
        start = stream->last_complete_ns;
    stream->last_complete_ns = start + ns;
}

int cuDriverGetVersion(int *version)
{
    if (version == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    *version = 12040; /* reads as 12.4 */
    return FAKE_SUCCESS;
}

int cuDeviceGetCount(int *count)
{
    if (count == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    *count = 1;
    return FAKE_SUCCESS;
}

/* The argument checks every device query shares: an output pointer and
 * the one device (ordinal 0). */
static int device_query(const void *out, int device)
{
    if (out == NULL)
        return FAKE_ERROR_INVALID_VALUE;
    return device != 0 ? FAKE_ERROR_INVALID_DEVICE : FAKE_SUCCESS;
}

int cuDeviceGet(int *device, int ordinal)
{
    int code = device_query(device, ordinal);
    if (code == FAKE_SUCCESS)
        *device = 0;
    return code;
}

int cuDeviceGetName(char *name, int length, int device)
{
    int code = device_query(length > 0 ? name : NULL, device);
    if (code == FAKE_SUCCESS)
        snprintf(name, (size_t)length, "%s", doctor.name);
    return code;
}

int cuDeviceGetAttribute(int *value, int attribute, int device)
{
    int code = device_query(value, device);
    if (code != FAKE_SUCCESS)
        return code;
    switch (attribute) {
    case FAKE_ATTR_MULTIPROCESSOR_COUNT: *value = doctor.num_sms; return FAKE_SUCCESS;
    case FAKE_ATTR_CC_MAJOR: *value = doctor.cc_major; return FAKE_SUCCESS;
    case FAKE_ATTR_CC_MINOR: *value = doctor.cc_minor; return FAKE_SUCCESS;
    }
    return FAKE_ERROR_INVALID_VALUE;
}

int cuDeviceTotalMem_v2(size_t *bytes, int device)
{
    int code = device_query(bytes, device);
    if (code == FAKE_SUCCESS)
        *bytes = (size_t)doctor.memory_bytes;
    return code;
}
