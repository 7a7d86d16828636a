/*
 * fuzz_driver.c -- the driver-library overrides MFU_TRACKER_CUDA_LIBRARY /
 * MFU_TRACKER_HIP_LIBRARY (and an explicit path) set to arbitrary bytes.
 * Opening must fail cleanly -- a status, an mfu_gpu_error naming the call,
 * a NUL-terminated detail, no library left open -- and never crash.
 *
 * mfu_gpu_driver_get() caches its first load per process, so the target
 * calls mfu_gpu_driver_open(), which reads the environment on every call
 * when the path is NULL.
 *
 * Input: mode u8, api u8, code i32, then the path bytes (the rest).
 *   mode % 4 == 0  the env variable of `api` = the bytes; open(api, NULL)
 *   mode % 4 == 1  open(api, bytes)
 *   mode % 4 == 2  open(api, <fake driver path> + bytes)
 *   mode % 4 == 3  the fake driver itself through the env variable (a real
 *                  load); with mode bit 2 its cuInit fails with `code`.
 *                  On success: code names for `code`, the context check,
 *                  close. Needs MFU_TRACKER_CUDA_LIBRARY set to the fake at
 *                  start-up (make fuzz-smoke does); skipped otherwise.
 * api: 1 CUDA, 2 HIP, anything else from the byte (invalid values too).
 *
 * Safety: the target never lets dlopen load a real library (its
 * constructors would run) or read a device (/dev/stdin would block): a
 * path, or a bare name found in a library directory, that is an ELF file,
 * a device, a FIFO or under /proc, /sys or /dev is skipped (directories and
 * plain non-ELF files are kept: dlopen must refuse them cleanly). '$' is replaced by '_' (dlopen expands
 * $ORIGIN / $LIB / $PLATFORM, which the existence check cannot follow).
 */
#define _XOPEN_SOURCE 700
#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>

#include "fuzz_input.h"
#include "gpu_driver.h"
#include "timing.h"

#define PATH_BUF 8192
#define PATH_MAX_LEN 4096

static char g_fake[PATH_BUF];
static int g_fake_known = -1;
static char g_env[2][PATH_BUF + 64]; /* "NAME=value", owned by environ */
static int (*g_fake_fail_next)(const char *, int);

static void init(void)
{
    const char *fake;
    if (g_fake_known >= 0)
        return;
    fake = getenv(MFU_CUDA_LIBRARY_ENV);
    g_fake_known = fake != NULL && fake[0] == '/' && strlen(fake) < PATH_BUF;
    if (g_fake_known) {
        void *lib;
        strcpy(g_fake, fake);
        /* The fake's knob, to make cuInit fail (the loader hands the core
         * the same instance). Kept open for the process. */
        lib = dlopen(g_fake, RTLD_NOW | RTLD_LOCAL);
        if (lib != NULL)
            *(void **)&g_fake_fail_next = dlsym(lib, "fake_fail_next");
    }
    /* environ points into g_env from now on: no allocation per exec */
    snprintf(g_env[0], sizeof g_env[0], "%s=%s", MFU_CUDA_LIBRARY_ENV,
             g_fake_known ? g_fake : "");
    snprintf(g_env[1], sizeof g_env[1], "%s=%s", MFU_HIP_LIBRARY_ENV,
             g_fake_known ? g_fake : "");
    putenv(g_env[0]);
    putenv(g_env[1]);
}

static void set_env(mfu_gpu_api api, const char *value)
{
    int i = api == MFU_GPU_HIP ? 1 : 0;
    snprintf(g_env[i], sizeof g_env[i], "%s=%s",
             i ? MFU_HIP_LIBRARY_ENV : MFU_CUDA_LIBRARY_ENV, value);
}

/* Does `path` name something dlopen must not be pointed at? Missing files,
 * directories and readable regular files without the ELF magic are fine
 * (dlopen refuses them after reading a header); anything else that exists
 * (libraries, devices, FIFOs, /proc and /sys files) is not. */
static int unsafe_file(const char *path)
{
    struct stat st;
    char real[PATH_MAX_LEN];
    unsigned char magic[4] = {0};
    FILE *f;
    size_t got;
    if (path[0] == '\0' || stat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return 0;
    if (!S_ISREG(st.st_mode) || realpath(path, real) == NULL ||
        strncmp(real, "/proc/", 6) == 0 || strncmp(real, "/sys/", 5) == 0 ||
        strncmp(real, "/dev/", 5) == 0)
        return 1;
    f = fopen(real, "rb");
    if (f == NULL)
        return 1;
    got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got == 4 && memcmp(magic, "\177ELF", 4) == 0;
}

/* Would dlopen(path) find an existing file? */
static int might_load(const char *path)
{
    static const char *const dirs[] = {
        "/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu", "/usr/local/lib", "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/lib/i386-linux-gnu",
        "/usr/lib/i386-linux-gnu",
    };
    char full[PATH_BUF + 512];
    const char *ld;
    if (strchr(path, '/') != NULL)
        return unsafe_file(path);
    if (path[0] == '\0')
        return 1; /* dlopen("") is the main program */
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(full, sizeof full, "%s/%s", dirs[i], path);
        if (unsafe_file(full))
            return 1;
    }
    ld = getenv("LD_LIBRARY_PATH");
    while (ld != NULL && *ld != '\0') {
        size_t n = strcspn(ld, ":;");
        snprintf(full, sizeof full, "%.*s/%s", (int)(n < 4096 ? n : 4096), ld, path);
        if (unsafe_file(full))
            return 1;
        ld += n;
        if (*ld != '\0')
            ld++;
    }
    return 0;
}

static void check_error(const mfu_gpu_driver *drv, mfu_status st)
{
    mfu_gpu_error err;
    mfu_timer *timer = NULL;
    mfu_timer_config cfg;

    FUZZ_CHECK(st == MFU_ERR_UNAVAILABLE || st == MFU_ERR_DRIVER ||
               st == MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(drv->library == NULL);
    FUZZ_CHECK(drv->error.call != NULL && drv->error.call[0] != '\0');
    FUZZ_CHECK(memchr(drv->error.detail, '\0', sizeof drv->error.detail) != NULL);
    FUZZ_CHECK(mfu_gpu_driver_code_name(drv, 1) == NULL);

    /* A timer over the failed driver refuses cleanly. */
    if (drv->api == MFU_GPU_CUDA || drv->api == MFU_GPU_HIP) {
        memset(&cfg, 0, sizeof cfg);
        cfg.clock = (mfu_clock_kind)drv->api;
        cfg.driver = drv;
        memset(&err, 0, sizeof err);
        FUZZ_CHECK(mfu_timer_create(&cfg, &timer, &err) == MFU_ERR_UNAVAILABLE);
        FUZZ_CHECK(err.call != NULL);
        mfu_timer_destroy(timer);
        if (drv->api == MFU_GPU_CUDA)
            FUZZ_CHECK(mfu_gpu_driver_check_context(drv, &err) != MFU_OK);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    uint8_t mode = fi_u8(&in), api_byte = fi_u8(&in);
    int code = fi_i32(&in);
    mfu_gpu_api api = api_byte < 128 ? MFU_GPU_CUDA
                      : api_byte < 250 ? MFU_GPU_HIP
                                       : (mfu_gpu_api)((int)api_byte - 252); /* -2..3 */
    size_t len;
    char *bytes = fi_rest_cstr(&in, &len);
    static char path[PATH_BUF * 2];
    mfu_gpu_driver drv;
    mfu_status st;

    init();
    for (size_t i = 0; i < len; i++)
        if (bytes[i] == '$')
            bytes[i] = '_';
    if (len >= PATH_BUF)
        bytes[PATH_BUF - 1] = '\0';

    switch (mode % 4) {
    case 0: /* env override, path NULL */
        if (bytes[0] != '\0' && might_load(bytes))
            break;
        set_env(api, bytes);
        if (api == MFU_GPU_CUDA || api == MFU_GPU_HIP) {
            const char *lib = mfu_gpu_driver_library(api);
            FUZZ_CHECK(lib != NULL);
            FUZZ_CHECK(bytes[0] == '\0' ? strcmp(lib, api == MFU_GPU_HIP
                                                          ? MFU_HIP_LIBRARY_DEFAULT
                                                          : MFU_CUDA_LIBRARY_DEFAULT) == 0
                                        : strcmp(lib, bytes) == 0);
            if (bytes[0] == '\0' && might_load(lib))
                break; /* a machine with a real driver: not our business */
        }
        st = mfu_gpu_driver_open(api, NULL, &drv);
        if (st == MFU_OK) /* cannot happen: nothing that exists is opened */
            mfu_gpu_driver_close(&drv);
        FUZZ_CHECK(st != MFU_OK);
        check_error(&drv, st);
        break;
    case 1: /* explicit path */
        if (might_load(bytes))
            break;
        st = mfu_gpu_driver_open(api, bytes, &drv);
        FUZZ_CHECK(st != MFU_OK);
        check_error(&drv, st);
        break;
    case 2: /* the fake's path with a fuzzed tail */
        if (!g_fake_known)
            break;
        snprintf(path, sizeof path, "%s%s", g_fake, bytes);
        if (strcmp(path, g_fake) == 0 || might_load(path))
            break;
        st = mfu_gpu_driver_open(api, path, &drv);
        FUZZ_CHECK(st != MFU_OK);
        check_error(&drv, st);
        break;
    default: /* the fake itself: a real load */
        if (!g_fake_known)
            break;
        set_env(api, g_fake);
        if ((mode & 4) && g_fake_fail_next != NULL && code != 0)
            g_fake_fail_next("cuInit", code);
        st = mfu_gpu_driver_open(api, NULL, &drv);
        if ((mode & 4) && g_fake_fail_next != NULL && code != 0 && api == MFU_GPU_CUDA) {
            FUZZ_CHECK(st == MFU_ERR_DRIVER && drv.error.code == code);
        }
        if (g_fake_fail_next != NULL)
            g_fake_fail_next("cuInit", 0); /* disarm if not consumed (HIP) */
        if (st == MFU_OK) {
            const char *name = mfu_gpu_driver_code_name(&drv, code);
            mfu_gpu_error err;
            FUZZ_CHECK(api == MFU_GPU_CUDA || api == MFU_GPU_HIP);
            FUZZ_CHECK(drv.library != NULL && drv.error.call == NULL);
            FUZZ_CHECK(name == NULL || strlen(name) < 4096);
            memset(&err, 0, sizeof err);
            st = mfu_gpu_driver_check_context(&drv, &err);
            FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_UNAVAILABLE ||
                       st == MFU_ERR_DRIVER);
            mfu_gpu_driver_close(&drv);
            FUZZ_CHECK(drv.library == NULL);
            mfu_gpu_driver_close(&drv); /* twice: a no-op */
        } else {
            check_error(&drv, st);
        }
        break;
    }
    free(bytes);
    return 0;
}
