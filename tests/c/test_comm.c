/*
 * test_comm.c -- communication in the core (comm.h) and in the step engine
 * (steps.h, "Communication"): kinds, nccl-tests' bus factors, the c10d
 * operator table, the per-step record and its window, the ratios, and the
 * engine's collectives on the CPU clock and on the fake GPU timeline.
 *
 * The GPU cases lay out two streams on the fake driver (fake_cuda.c's
 * header: streams waiting on each other): a compute stream the tracker marks
 * on and a communication stream whose collective starts when the compute
 * stream reaches its launch; the compute stream then waits for it. Every
 * second -- exposed communication, the collective's duration, the overlap
 * -- is checked exactly against the timeline written beside it, with zero
 * synchronizing calls.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "comm.h"
#include "fake_driver/fake_knobs.h"
#include "mfu_limits.h"
#include "steps.h"
#include "steps_fixture.h"

enum { MS = 1000000 }; /* nanoseconds in a millisecond */

static void test_kinds(void)
{
    mfu_comm_kind kind = MFU_COMM_OTHER;
    double f = 0.0;
    for (int k = 0; k < MFU_COMM_KIND_COUNT; k++) {
        CHECK(mfu_comm_kind_from_name(mfu_comm_kind_name((mfu_comm_kind)k), &kind) == MFU_OK);
        CHECK(kind == (mfu_comm_kind)k);
        /* each kind has its own phase, and the phase names the kind back */
        CHECK(mfu_comm_phase_kind(mfu_comm_kind_phase((mfu_comm_kind)k), &kind) == MFU_OK);
        CHECK(kind == (mfu_comm_kind)k);
    }
    CHECK(mfu_comm_kind_name(MFU_COMM_KIND_COUNT) == NULL);
    CHECK(mfu_comm_kind_from_name("allreduce", &kind) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_comm_kind_phase(MFU_COMM_OTHER) == MFU_PHASE_COMMUNICATION);
    CHECK(mfu_comm_phase_kind(MFU_PHASE_BACKWARD, &kind) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_comm_phase_kind(MFU_PHASE_PIPELINE_BUBBLE, &kind) == MFU_ERR_NOT_FOUND);

    /* nccl-tests doc/PERFORMANCE.md, n = 8 ranks */
    CHECK(mfu_comm_busbw_factor(MFU_COMM_ALL_REDUCE, 8, &f) == MFU_OK && f == 14.0 / 8.0);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_ALL_GATHER, 8, &f) == MFU_OK && f == 7.0 / 8.0);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_REDUCE_SCATTER, 8, &f) == MFU_OK && f == 7.0 / 8.0);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_ALL_TO_ALL, 8, &f) == MFU_OK && f == 7.0 / 8.0);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_BROADCAST, 8, &f) == MFU_OK && f == 1.0);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_P2P, 2, &f) == MFU_OK && f == 1.0);
    /* one rank moves nothing over a link */
    CHECK(mfu_comm_busbw_factor(MFU_COMM_ALL_REDUCE, 1, &f) == MFU_OK && f == 0.0);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_OTHER, 8, &f) == MFU_ERR_NOT_FOUND);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_ALL_REDUCE, 0, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_comm_busbw_factor(MFU_COMM_KIND_COUNT, 8, &f) == MFU_ERR_INVALID_ARGUMENT);
}

static void test_op_table(void)
{
    size_t n = mfu_comm_op_count();
    CHECK(n >= 18);
    for (size_t i = 0; i < n; i++) {
        const mfu_comm_op *op = mfu_comm_op_get(i);
        CHECK(op != NULL && strncmp(op->name, "c10d::", 6) == 0);
        CHECK((unsigned)op->kind < MFU_COMM_KIND_COUNT);
        CHECK(op->payload_arg >= -1 && op->payload_arg <= 1);
        CHECK(op->group_arg == 1 || op->group_arg == 2);
        CHECK(mfu_comm_op_find(op->name) == op); /* names are unique */
    }
    CHECK(mfu_comm_op_get(n) == NULL);
    CHECK(mfu_comm_op_find("aten::mm") == NULL);
    CHECK(mfu_comm_op_find(NULL) == NULL);
    /* the conventions: all-gather counts its output (argument 0),
     * reduce-scatter and all-to-all their input (argument 1) */
    CHECK(mfu_comm_op_find("c10d::_allgather_base_")->payload_arg == 0);
    CHECK(mfu_comm_op_find("c10d::_reduce_scatter_base_")->payload_arg == 1);
    CHECK(mfu_comm_op_find("c10d::alltoall_base_")->payload_arg == 1);
    CHECK(mfu_comm_op_find("c10d::send")->kind == MFU_COMM_P2P);
    CHECK(mfu_comm_op_find("c10d::barrier")->payload_arg == -1);
    /* Work op types: what a wait waits for */
    {
        mfu_comm_kind kind = MFU_COMM_KIND_COUNT;
        CHECK(mfu_comm_op_type_kind("_ALLGATHER_BASE", &kind) == MFU_OK
              && kind == MFU_COMM_ALL_GATHER);
        CHECK(mfu_comm_op_type_kind("RECVANYSOURCE", &kind) == MFU_OK && kind == MFU_COMM_P2P);
        CHECK(mfu_comm_op_type_kind("COALESCED", &kind) == MFU_OK && kind == MFU_COMM_OTHER);
        CHECK(mfu_comm_op_type_kind("UNKNOWN", &kind) == MFU_ERR_NOT_FOUND);
        CHECK(mfu_comm_op_type_kind("allreduce", &kind) == MFU_ERR_NOT_FOUND);
        CHECK(mfu_comm_op_type_kind(NULL, &kind) == MFU_ERR_INVALID_ARGUMENT);
    }
}

static void test_ratios(void)
{
    /* 1e9 bus bytes in 0.5 s: 2 GB/s */
    CHECK(mfu_comm_busbw_gbs(1e9, 0.5) == 2.0);
    CHECK(isnan(mfu_comm_busbw_gbs(1e9, 0.0)) && isnan(mfu_comm_busbw_gbs(NAN, 1.0)));
    CHECK(isnan(mfu_comm_busbw_gbs(-1.0, 1.0)) && isnan(mfu_comm_busbw_gbs(1.0, INFINITY)));
    /* 9e9 bytes over links that could carry 4.5e10 in the same time: 0.2 */
    CHECK(mfu_comm_net_utilization(9e9, 4.5e10) == 0.2);
    CHECK(isnan(mfu_comm_net_utilization(1.0, 0.0)) && isnan(mfu_comm_net_utilization(NAN, 1.0)));
    /* 2 ms exposed of 5 ms of collectives: 60% hidden */
    CHECK_NEAR(mfu_comm_overlap(2e-3, 5e-3), 0.6, 1e-12);
    CHECK(mfu_comm_overlap(0.0, 5e-3) == 1.0);
    CHECK(mfu_comm_overlap(6e-3, 5e-3) < 0.0); /* never clamped */
    CHECK(isnan(mfu_comm_overlap(1.0, 0.0)) && isnan(mfu_comm_overlap(-1.0, 1.0)));
}

static mfu_comm_launch launch_of(mfu_comm_kind kind, double bytes, double factor, double link)
{
    mfu_comm_launch l;
    memset(&l, 0, sizeof l);
    l.kind = kind;
    l.bytes = bytes;
    l.bus_bytes = bytes * factor;
    l.link_bytes_per_sec = link;
    return l;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The CPU clock: bytes exactly, durations at least the time slept;
 * nothing before enabling, before the first boundary or while excluded. */
static void test_cpu_clock(void)
{
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, 0);
    mfu_comm_launch ag = launch_of(MFU_COMM_ALL_GATHER, 4096.0, 0.5, 1e9);
    mfu_comm_launch bad = ag;
    mfu_comm_times sum;
    uint32_t steps = 99;
    uint64_t token = 7, t2 = 0;
    CHECK(mfu_steps_comm_begin(s, &ag, &token) == MFU_OK && token == 0); /* not enabled */
    CHECK(mfu_steps_comm_enabled(s) == 0);
    CHECK(mfu_steps_comm_enable(s) == MFU_OK && mfu_steps_comm_enable(s) == MFU_OK);
    CHECK(mfu_steps_comm_begin(s, &ag, &token) == MFU_OK && token == 0); /* no step open */
    boundary(s);
    bad.bytes = -1.0;
    CHECK(mfu_steps_comm_begin(s, &bad, &token) == MFU_ERR_INVALID_ARGUMENT && token == 0);
    bad = ag;
    bad.kind = MFU_COMM_KIND_COUNT;
    CHECK(mfu_steps_comm_begin(s, &bad, &token) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_steps_comm_begin(s, &ag, &token) == MFU_OK && token != 0);
    sleep_ms(3);
    CHECK(mfu_steps_comm_end(s, token, 0) == MFU_OK);
    CHECK(mfu_steps_comm_end(s, token, 0) == MFU_OK); /* twice: the second is unpaired */
    CHECK(mfu_steps_comm_unpaired(s) == 1);
    /* the tracker's own aggregation: left out */
    CHECK(mfu_steps_exclude_begin(s) == MFU_OK);
    CHECK(mfu_steps_comm_begin(s, &ag, &t2) == MFU_OK && t2 != 0);
    CHECK(mfu_steps_comm_end(s, t2, 0) == MFU_OK);
    CHECK(mfu_steps_exclude_end(s) == MFU_OK);
    CHECK(mfu_steps_comm_unpaired(s) == 2);
    boundary(s);
    mfu_steps_comm(s, &steps, &sum);
    CHECK(steps == 1);
    CHECK(sum.bytes[MFU_COMM_ALL_GATHER] == 4096.0 && sum.calls[MFU_COMM_ALL_GATHER] == 1.0);
    CHECK(sum.duration_s[MFU_COMM_ALL_GATHER] >= 3e-3);
    CHECK(sum.bus_bytes[MFU_COMM_ALL_GATHER] == 2048.0); /* 4096 x 0.5 */
    CHECK(sum.link_bus_bytes == 2048.0);
    CHECK_NEAR(sum.link_capacity_bytes, sum.duration_s[MFU_COMM_ALL_GATHER] * 1e9, 1e-12);
    CHECK(sum.bytes[MFU_COMM_ALL_REDUCE] == 0.0);
    mfu_steps_close(s);
    CHECK(mfu_steps_comm_enabled(s) == 0);
    mfu_steps_destroy(s);
}

/* Late enabling: the steps before it had no communication, and the window
 * still covers exactly the step window's steps. */
static void test_enable_late(void)
{
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, 0);
    mfu_comm_launch ar = launch_of(MFU_COMM_ALL_REDUCE, 100.0, 1.0, NAN);
    mfu_comm_times sum;
    uint32_t steps = 0;
    uint64_t token;
    for (int i = 0; i < 6; i++)
        boundary(s); /* 5 steps, no communication */
    CHECK(mfu_steps_comm_enable(s) == MFU_OK);
    for (int i = 0; i < 3; i++) {
        CHECK(mfu_steps_comm_begin(s, &ar, &token) == MFU_OK);
        CHECK(mfu_steps_comm_end(s, token, 0) == MFU_OK);
        boundary(s);
    }
    mfu_steps_comm(s, &steps, &sum);
    CHECK(steps == 8); /* the window: 5 + 3 steps */
    CHECK(sum.bytes[MFU_COMM_ALL_REDUCE] == 300.0 && sum.calls[MFU_COMM_ALL_REDUCE] == 3.0);
    CHECK(sum.link_capacity_bytes == 0.0 && sum.link_bus_bytes == 0.0); /* link unknown */
    CHECK(sum.bus_bytes[MFU_COMM_ALL_REDUCE] == 300.0);
    mfu_steps_destroy(s);
}

enum { COMPUTE = 1, COMM = 2 }; /* stream handles */

/* One step on the GPU timeline (ms), compute stream C, comm stream K:
 *   0      boundary; backward begins
 *   0..2   a compute kernel on C
 *   2      the all-reduce is launched (mark on C); K waits for C: it runs
 *          2..2+d on K; its end mark is on K (done at 2+d)
 *   2..2+w compute on C, then the wait: C waits for K, bracketed by the
 *          all_reduce phase: exposed = max(0, d - w)
 *   then 1 ms of compute, backward ends, boundary. */
static void gpu_step(mfu_steps *s, uint64_t d_ms, uint64_t w_ms)
{
    mfu_comm_launch ar = launch_of(MFU_COMM_ALL_REDUCE, 8e6, 1.0, 450e9); /* n = 2 */
    uint64_t token = 0;
    boundary(s);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_BACKWARD) == MFU_OK);
    fake.enqueue_ns(COMPUTE, 2 * MS);
    CHECK(mfu_steps_comm_begin(s, &ar, &token) == MFU_OK && token != 0);
    fake.stream_wait_stream(COMM, COMPUTE);
    fake.enqueue_ns(COMM, d_ms * MS);
    CHECK(mfu_steps_comm_end(s, token, COMM) == MFU_OK);
    fake.enqueue_ns(COMPUTE, w_ms * MS);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_ALL_REDUCE) == MFU_OK);
    fake.stream_wait_stream(COMPUTE, COMM);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);
    fake.enqueue_ns(COMPUTE, 1 * MS);
    CHECK(mfu_steps_phase_end(s) == MFU_OK);
}

static void test_gpu_exposure_and_overlap(void)
{
    mfu_phase_summary ph;
    mfu_comm_times sum;
    mfu_steps_summary st;
    uint32_t steps = 0;
    mfu_steps *s;
    fake.reset();
    s = steps_on(MFU_CLOCK_CUDA, COMPUTE);
    if (s == NULL)
        return;
    CHECK(mfu_steps_comm_enable(s) == MFU_OK);
    /* step 1: d = 5, w = 3: C waits 2 ms of the 5 (overlap 3/5)
     *   backward 2 + 3 + 1 = 6 ms of compute, all_reduce 2 ms, period 8 */
    gpu_step(s, 5, 3);
    /* step 2: d = 4, w = 6: hidden entirely (exposed 0, overlap 1)
     *   backward 2 + 6 + 1 = 9, all_reduce 0, period 9 */
    gpu_step(s, 4, 6);
    boundary(s);
    CHECK(fake.sync_calls() == 0);
    fake.advance(1000 * (uint64_t)MS); /* the host moves past the GPU */
    mfu_steps_summarize(s, &st);
    mfu_steps_phases(s, &ph);
    mfu_steps_comm(s, &steps, &sum);
    CHECK(st.window.steps == 2 && ph.steps == 2 && steps == 2);
    CHECK_NEAR(st.window.window_s, 17e-3, 1e-9);                       /* 8 + 9 */
    CHECK_NEAR(ph.seconds[MFU_PHASE_BACKWARD], 15e-3, 1e-6);           /* 6 + 9 */
    CHECK_NEAR(ph.seconds[MFU_PHASE_ALL_REDUCE], 2e-3, 1e-6);          /* 2 + 0 */
    CHECK(ph.marked & (1u << MFU_PHASE_ALL_REDUCE));
    CHECK(sum.bytes[MFU_COMM_ALL_REDUCE] == 16e6 && sum.calls[MFU_COMM_ALL_REDUCE] == 2.0);
    CHECK_NEAR(sum.duration_s[MFU_COMM_ALL_REDUCE], 9e-3, 1e-6);       /* 5 + 4 */
    /* bus bandwidth: 16e6 bus bytes in 9 ms = 1.778 GB/s */
    CHECK_NEAR(mfu_comm_busbw_gbs(sum.bus_bytes[MFU_COMM_ALL_REDUCE],
                                  sum.duration_s[MFU_COMM_ALL_REDUCE]), 16e6 / 9e-3 / 1e9, 1e-6);
    /* the link could carry 9 ms x 450 GB/s = 4.05e9 bytes */
    CHECK_NEAR(mfu_comm_net_utilization(sum.link_bus_bytes, sum.link_capacity_bytes),
               16e6 / 4.05e9, 1e-6);
    /* overlap: 1 - 2 / 9 of the collectives' time was hidden */
    CHECK_NEAR(mfu_comm_overlap(ph.seconds[MFU_PHASE_ALL_REDUCE],
                                sum.duration_s[MFU_COMM_ALL_REDUCE]), 7.0 / 9.0, 1e-6);
    CHECK(fake.sync_calls() == 0);
    mfu_steps_destroy(s);
}

/* A host (CPU) collective under a GPU clock: bytes, no duration (the GPU
 * timeline cannot time it); no token to pair. */
static void test_gpu_host_collective(void)
{
    mfu_comm_launch host = launch_of(MFU_COMM_BROADCAST, 64.0, 1.0, NAN);
    mfu_comm_times sum;
    uint32_t steps = 0;
    uint64_t token = 9;
    mfu_steps *s;
    fake.reset();
    s = steps_on(MFU_CLOCK_CUDA, COMPUTE);
    if (s == NULL)
        return;
    host.host = 1;
    CHECK(mfu_steps_comm_enable(s) == MFU_OK);
    boundary(s);
    CHECK(mfu_steps_comm_begin(s, &host, &token) == MFU_OK && token == 0);
    fake.enqueue_ns(COMPUTE, 1 * MS);
    boundary(s);
    fake.advance(10 * (uint64_t)MS);
    mfu_steps_comm(s, &steps, &sum);
    CHECK(steps == 1 && sum.bytes[MFU_COMM_BROADCAST] == 64.0);
    CHECK(sum.duration_s[MFU_COMM_BROADCAST] == 0.0 && sum.bus_bytes[MFU_COMM_BROADCAST] == 0.0);
    CHECK(fake.sync_calls() == 0);
    mfu_steps_destroy(s);
}

/* The fake driver's own stream wait (cuStreamWaitEvent): not a
 * synchronizing call, and the waiting stream's next record moves. */
static void test_fake_stream_wait_event(void)
{
    int (*create)(void **, unsigned int);
    int (*record)(void *, void *);
    int (*wait)(void *, void *, unsigned int);
    int (*elapsed)(float *, void *, void *);
    int (*destroy)(void *);
    void *k_done = NULL, *c0 = NULL, *c1 = NULL;
    float ms = 0.0f;
    fake.reset();
    create = (int (*)(void **, unsigned int))dlsym(fake.library, "cuEventCreate");
    record = (int (*)(void *, void *))dlsym(fake.library, "cuEventRecord");
    wait = (int (*)(void *, void *, unsigned int))dlsym(fake.library, "cuStreamWaitEvent");
    elapsed = (int (*)(float *, void *, void *))dlsym(fake.library, "cuEventElapsedTime");
    destroy = (int (*)(void *))dlsym(fake.library, "cuEventDestroy_v2");
    CHECK(create && record && wait && elapsed && destroy);
    if (!(create && record && wait && elapsed && destroy))
        return;
    CHECK(create(&k_done, 0) == 0 && create(&c0, 0) == 0 && create(&c1, 0) == 0);
    CHECK(record(c0, (void *)(uintptr_t)COMPUTE) == 0);      /* C at 0 */
    fake.enqueue_ns(COMM, 7 * MS);
    CHECK(record(k_done, (void *)(uintptr_t)COMM) == 0);     /* K done at 7 */
    CHECK(wait((void *)(uintptr_t)COMPUTE, k_done, 0) == 0); /* C waits for it */
    CHECK(wait((void *)(uintptr_t)COMPUTE, k_done, 1) != 0); /* flags must be 0 */
    CHECK(record(c1, (void *)(uintptr_t)COMPUTE) == 0);      /* C at 7 */
    fake.advance(10 * (uint64_t)MS);
    CHECK(elapsed(&ms, c0, c1) == 0 && ms == 7.0f);
    CHECK(fake.call_count("cuStreamWaitEvent") == 2);
    CHECK(fake.sync_calls() == 0);
    destroy(k_done);
    destroy(c0);
    destroy(c1);
}

/* A collective inside a badput phase (a checkpoint's gathers) is that
 * phase's work: not recorded, and no token; the same collective after the
 * phase ends is the step's. The phase's time leaves the period. */
static void test_badput_phase(void)
{
    mfu_steps *s = steps_on(MFU_CLOCK_CPU, 0);
    mfu_comm_launch ag = launch_of(MFU_COMM_ALL_GATHER, 4096.0, 0.5, NAN);
    mfu_comm_times sum;
    mfu_phase_summary ph;
    uint32_t steps = 0;
    uint64_t token = 7;
    CHECK(mfu_steps_comm_enable(s) == MFU_OK);
    boundary(s);
    CHECK(mfu_steps_phase_innermost(s) == MFU_PHASE_NONE);
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_CHECKPOINT) == MFU_OK);
    CHECK(mfu_steps_phase_innermost(s) == MFU_PHASE_CHECKPOINT);
    CHECK(mfu_steps_comm_begin(s, &ag, &token) == MFU_OK && token == 0);
    CHECK(mfu_steps_comm_end(s, token, 0) == MFU_OK); /* token 0: a no-op */
    CHECK(mfu_steps_phase_begin(s, MFU_PHASE_FORWARD) == MFU_OK); /* a step phase inside */
    CHECK(mfu_steps_comm_begin(s, &ag, &token) == MFU_OK && token != 0);
    CHECK(mfu_steps_comm_end(s, token, 0) == MFU_OK);
    CHECK(mfu_steps_phase_end(s) == MFU_OK && mfu_steps_phase_end(s) == MFU_OK);
    CHECK(mfu_steps_comm_begin(s, &ag, &token) == MFU_OK && token != 0);
    CHECK(mfu_steps_comm_end(s, token, 0) == MFU_OK);
    boundary(s);
    mfu_steps_comm(s, &steps, &sum);
    mfu_steps_phases(s, &ph);
    CHECK(steps == 1 && mfu_steps_comm_unpaired(s) == 0);
    /* 2 of the 3: the one inside the checkpoint is not the step's */
    CHECK(sum.bytes[MFU_COMM_ALL_GATHER] == 2 * 4096.0 && sum.calls[MFU_COMM_ALL_GATHER] == 2.0);
    CHECK(ph.marked & (1u << MFU_PHASE_CHECKPOINT));
    mfu_steps_destroy(s);
}

int main(void)
{
    test_kinds();
    test_op_table();
    test_ratios();
    test_cpu_clock();
    test_enable_late();
    test_badput_phase();
    if (fake_load("test_comm")) {
        test_gpu_exposure_and_overlap();
        test_gpu_host_collective();
        test_fake_stream_wait_event();
        fake_unload();
    } else {
        CHECK(!"the fake driver could not be loaded");
    }
    return check_summary("test_comm");
}
