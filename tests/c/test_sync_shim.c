/*
 * test_sync_shim.c -- the doctor's counting CUDA shim
 * (mfu_tracker/cli/doctor/cuda_sync_counter.c), compiled into this test and
 * forwarding to the fake driver (MFU_TRACKER_SHIM_TARGET = the fake that
 * `make ctest` names in MFU_TRACKER_CUDA_LIBRARY). Every call through the
 * shim must reach the fake once (the fake's own counts are the reference),
 * be counted once by the shim, and return the fake's result; the _v2 / old
 * names the fake lacks are forwarded to the names it has.
 */
#include "../../mfu_tracker/cli/doctor/cuda_sync_counter.c"

#include "check.h"
#include "fake_driver/fake_knobs.h"

static void test_forwarding_and_counts(void)
{
    void *begin = NULL, *end = NULL;
    float ms = 0.0f;
    const char *name = NULL;

    fake.reset();
    mfu_shim_reset();
    CHECK(strcmp(mfu_shim_target(), fake.path) == 0);
    CHECK(mfu_shim_error()[0] == '\0');
    CHECK(cuInit(0) == 0);
    CHECK(cuInit(1) == 1); /* the fake's answer, passed through */
    CHECK(cuEventCreate(&begin, 0) == 0 && begin != NULL);
    CHECK(cuEventCreate(&end, 0) == 0 && end != NULL);
    CHECK(cuEventRecord(begin, NULL) == 0);
    fake.set_work_ns(3000000);
    CHECK(cuEventRecord(end, NULL) == 0);
    CHECK(cuEventQuery(end) == 600); /* 3 ms of work, host at 0: not ready */
    CHECK(cuEventElapsedTime_v2(&ms, begin, end) == 600);
    CHECK(cuEventSynchronize(end) == 0);
    CHECK(cuEventQuery(end) == 0);
    CHECK(cuEventElapsedTime(&ms, begin, end) == 0);
    CHECK_NEAR(ms, 3.0, 1e-6);
    CHECK(cuStreamSynchronize(NULL) == 0);
    CHECK(cuCtxSynchronize() == 0);
    CHECK(cuGetErrorName(600, &name) == 0 && name != NULL
          && strcmp(name, "CUDA_ERROR_NOT_READY") == 0);
    CHECK(cuEventDestroy(begin) == 0);   /* the fake has only cuEventDestroy_v2 */
    CHECK(cuEventDestroy_v2(end) == 0);

    CHECK(mfu_shim_calls("cuInit") == 2 && fake.call_count("cuInit") == 2);
    CHECK(mfu_shim_calls("cuEventCreate") == fake.call_count("cuEventCreate"));
    CHECK(mfu_shim_calls("cuEventRecord") == 2 && fake.call_count("cuEventRecord") == 2);
    CHECK(mfu_shim_calls("cuEventQuery") == 2 && fake.call_count("cuEventQuery") == 2);
    CHECK(mfu_shim_calls("cuEventElapsedTime") + mfu_shim_calls("cuEventElapsedTime_v2")
          == fake.call_count("cuEventElapsedTime"));
    CHECK(mfu_shim_calls("cuEventDestroy") + mfu_shim_calls("cuEventDestroy_v2")
          == fake.call_count("cuEventDestroy_v2"));
    CHECK(mfu_shim_sync_calls() == 3 && fake.sync_calls() == 3);
    CHECK(mfu_shim_calls("cuGetErrorName") == 1);
    CHECK(mfu_shim_calls("cuNotACall") == -1 && mfu_shim_calls(NULL) == -1);
    CHECK(fake.live_events() == 0);

    mfu_shim_reset();
    CHECK(mfu_shim_calls("cuEventRecord") == 0 && mfu_shim_sync_calls() == 0);
}

int main(void)
{
    if (!fake_load("test_sync_shim"))
        return 1;
    setenv(SHIM_TARGET_ENV, fake.path, 1);
    test_forwarding_and_counts();
    fake_unload();
    if (shim.library != NULL)
        dlclose(shim.library);
    return check_summary("test_sync_shim");
}
