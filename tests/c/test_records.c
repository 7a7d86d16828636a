/*
 * test_records.c -- the step records, their ring and its views
 * (records.h), and a view's window figures (stats.h), with the hand
 * arithmetic next to each expected value.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "records.h"

static const mfu_peak peak = {.flops_per_sec = 100e12, .bytes_per_sec = 1e12,
                              .num_devices = 1};

/* Append step `id`, pushed with `period_s` and the work given. */
static mfu_step_record *push(mfu_step_ring *ring, uint64_t id, double period_s, double model,
                             double executed, double bytes, double tokens)
{
    mfu_step_record *r;
    if (mfu_step_ring_count(ring) == mfu_step_ring_capacity(ring))
        mfu_step_ring_pop_oldest(ring);
    r = mfu_step_ring_append(ring, id);
    CHECK(r != NULL);
    if (r == NULL)
        return NULL;
    r->state = MFU_STEP_PUSHED;
    r->period_s = period_s;
    r->work.model_flops = model;
    r->work.executed_flops = executed;
    r->work.param_bytes = bytes;
    r->work.num_tokens = tokens;
    return r;
}

/* The figures of the newest `steps` records. */
static void window_of(const mfu_step_ring *ring, uint32_t steps, const mfu_peak *p,
                      mfu_window_summary *out, mfu_step_sums *sums)
{
    const uint32_t count = mfu_step_ring_count(ring);
    mfu_step_view view = {ring, count > steps ? count - steps : 0, steps};
    mfu_step_view_sum(&view, MFU_SUM_ALL, sums);
    mfu_step_sums_window(sums, p, out);
}

static void test_empty_view_is_nan(void)
{
    mfu_step_ring *ring = NULL;
    mfu_window_summary s;
    mfu_step_sums sums;
    CHECK(mfu_step_ring_create(4, &ring) == MFU_OK);
    window_of(ring, 4, &peak, &s, &sums);
    CHECK(s.steps == 0 && sums.steps == 0);
    CHECK(isnan(s.step_s_mean) && isnan(s.step_s_min) && isnan(s.step_s_max));
    CHECK(isnan(s.window_s) && isnan(s.totals.model_flops));
    CHECK(isnan(s.metrics.mfu) && isnan(s.metrics.tokens_per_sec));
    CHECK(isnan(s.metrics.achieved_flops_per_sec));
    CHECK(isnan(sums.work.ideal_s) && isnan(sums.work.language_flops) && isnan(sums.work.overcompute_flops));
    CHECK(sums.phases.steps == 0 && sums.phases.excluded_s == 0.0 && sums.comm.calls[0] == 0.0);
    mfu_step_ring_destroy(ring);
}

static void test_hand_computed_window(void)
{
    mfu_step_ring *ring = NULL;
    mfu_window_summary s;
    mfu_step_sums sums;
    CHECK(mfu_step_ring_create(8, &ring) == MFU_OK);
    push(ring, 1, 1.0, 100e12, 130e12, 2e12, 1000);
    push(ring, 2, 2.0, 100e12, 130e12, 2e12, 3000);
    push(ring, 3, 5.0, 200e12, 260e12, 2e12, 2000);
    window_of(ring, 8, &peak, &s, &sums);
    CHECK(s.steps == 3);
    CHECK_NEAR(s.window_s, 8.0, 1e-15);           /* 1 + 2 + 5 */
    CHECK_NEAR(s.step_s_mean, 8.0 / 3.0, 1e-15);  /* 8 / 3 */
    CHECK(s.step_s_min == 1.0 && s.step_s_max == 5.0);
    CHECK_NEAR(s.totals.model_flops, 400e12, 1e-15);
    /* Rates are sums over the window / time over the window:
     * tokens/s = (1000 + 3000 + 2000) / 8 = 750, not the mean of the
     * per-step rates (1000 + 1500 + 400) / 3 = 966.7. */
    CHECK_NEAR(s.metrics.tokens_per_sec, 750.0, 1e-12);
    CHECK_NEAR(s.metrics.achieved_flops_per_sec, 50e12, 1e-12); /* 400e12 / 8 */
    CHECK_NEAR(s.metrics.mfu, 0.5, 1e-12);    /* 50e12 / 100e12 */
    CHECK_NEAR(s.metrics.hfu, 0.65, 1e-12);   /* 520e12 / 8 / 100e12 */
    CHECK_NEAR(s.metrics.mbu, 0.75, 1e-12);   /* 6e12 / 8 / 1e12 */
    CHECK_NEAR(s.metrics.achieved_bytes_per_sec, 0.75e12, 1e-12);

    /* A view of the newest two: 2 + 5 s, 300e12 FLOPs. */
    window_of(ring, 2, &peak, &s, &sums);
    CHECK(s.steps == 2 && s.window_s == 7.0 && s.totals.model_flops == 300e12);

    /* Two devices halve every utilization, not the rates. */
    {
        mfu_peak two = peak;
        two.num_devices = 2;
        window_of(ring, 8, &two, &s, &sums);
        CHECK_NEAR(s.metrics.mfu, 0.25, 1e-12);
        CHECK_NEAR(s.metrics.tokens_per_sec, 750.0, 1e-12);
    }
    /* No peak known: utilizations NaN, rates still there. */
    {
        mfu_peak unknown = {.flops_per_sec = NAN, .bytes_per_sec = NAN, .num_devices = 1};
        window_of(ring, 8, &unknown, &s, &sums);
        CHECK(isnan(s.metrics.mfu) && isnan(s.metrics.hfu) && isnan(s.metrics.mbu));
        CHECK_NEAR(s.metrics.achieved_flops_per_sec, 50e12, 1e-12);
    }
    mfu_step_ring_destroy(ring);
}

/* Every part of a record is summed over the view: the mixed-precision,
 * over-compute and language FLOPs, the phases and the communication. */
static void test_every_fact_is_summed(void)
{
    mfu_step_ring *ring = NULL;
    mfu_step_sums sums;
    mfu_window_summary s;
    CHECK(mfu_step_ring_create(4, &ring) == MFU_OK);
    for (int i = 1; i <= 3; i++) {
        mfu_step_record *r = push(ring, (uint64_t)i, 1.0, 1e12, NAN, NAN, NAN);
        r->work.ideal_s = 0.5 * i;
        r->work.overcompute_flops = 10.0 * i;
        r->work.language_flops = 100.0 * i;
        r->phases.seconds[MFU_PHASE_DATA] = 0.25;
        r->phases.marked = 1u << (i == 3 ? MFU_PHASE_FORWARD : MFU_PHASE_DATA);
        r->phases.excluded_s = 0.125;
        r->comm.bytes[MFU_COMM_ALL_REDUCE] = 1000.0 * i;
        r->comm.link_capacity_bytes = 7.0;
    }
    window_of(ring, 2, &peak, &s, &sums); /* steps 2 and 3 */
    CHECK(sums.steps == 2 && sums.phases.steps == 2);
    CHECK(sums.work.ideal_s == 1.0 + 1.5);
    CHECK(sums.work.overcompute_flops == 20.0 + 30.0);
    CHECK(sums.work.language_flops == 200.0 + 300.0);
    CHECK(sums.phases.seconds[MFU_PHASE_DATA] == 0.5 && sums.phases.excluded_s == 0.25);
    CHECK(sums.phases.marked == ((1u << MFU_PHASE_DATA) | (1u << MFU_PHASE_FORWARD)));
    CHECK(sums.comm.bytes[MFU_COMM_ALL_REDUCE] == 5000.0 && sums.comm.link_capacity_bytes == 14.0);
    /* An unknown value in one record: its sum is unknown while it is viewed. */
    mfu_step_ring_at(ring, 1)->work.ideal_s = NAN;
    window_of(ring, 2, &peak, &s, &sums);
    CHECK(isnan(sums.work.ideal_s) && sums.work.language_flops == 500.0);
    window_of(ring, 1, &peak, &s, &sums);
    CHECK(sums.work.ideal_s == 1.5);
    /* Only the parts asked for are read; the others read as an empty view's. */
    {
        mfu_step_view view = {ring, 1, 2};
        mfu_step_view_sum(&view, MFU_SUM_PHASES, &sums);
        CHECK(sums.steps == 2 && sums.phases.excluded_s == 0.25 && isnan(sums.period_s));
        CHECK(sums.comm.bytes[MFU_COMM_ALL_REDUCE] == 0.0);
        mfu_step_view_sum(&view, MFU_SUM_COMM, &sums);
        CHECK(sums.comm.bytes[MFU_COMM_ALL_REDUCE] == 5000.0 && sums.phases.marked == 0);
        mfu_step_view_sum(&view, MFU_SUM_WORK, &sums);
        CHECK(sums.period_s == 2.0 && sums.phases.seconds[MFU_PHASE_DATA] == 0.0);
    }
    mfu_step_ring_destroy(ring);
}

static void test_ring_eviction(void)
{
    mfu_step_ring *ring = NULL;
    mfu_window_summary s;
    mfu_step_sums sums;
    uint64_t id = 0;
    CHECK(mfu_step_ring_create(3, &ring) == MFU_OK);
    /* Steps of 1, 2, ..., 10 s with 1 token per second of step. */
    for (int i = 1; i <= 10; i++)
        push(ring, ++id, (double)i, 1e12 * i, NAN, NAN, (double)i);
    window_of(ring, 3, &peak, &s, &sums);
    /* Only 8, 9, 10 remain. */
    CHECK(s.steps == 3 && mfu_step_ring_count(ring) == 3);
    CHECK(mfu_step_ring_at(ring, 0)->id == 8 && mfu_step_ring_find(ring, 7) == NULL);
    CHECK_NEAR(s.window_s, 27.0, 1e-15);           /* 8 + 9 + 10 */
    CHECK_NEAR(s.step_s_mean, 9.0, 1e-15);
    CHECK(s.step_s_min == 8.0 && s.step_s_max == 10.0);
    CHECK_NEAR(s.totals.num_tokens, 27.0, 1e-15);
    CHECK_NEAR(s.metrics.achieved_flops_per_sec, 1e12, 1e-12); /* 27e12 / 27 */

    /* A step with unknown tokens poisons tokens/s only while it is in the
     * window: three more known steps push it out. */
    push(ring, ++id, 1.0, 1e12, NAN, NAN, NAN);
    window_of(ring, 3, &peak, &s, &sums);
    CHECK(isnan(s.metrics.tokens_per_sec));
    CHECK(!isnan(s.metrics.mfu));
    for (int i = 0; i < 3; i++)
        push(ring, ++id, 2.0, 1e12, NAN, NAN, 4);
    window_of(ring, 3, &peak, &s, &sums);
    CHECK_NEAR(s.metrics.tokens_per_sec, 2.0, 1e-15); /* 12 / 6 */

    /* Memory is bounded: a million steps through the same 3 slots. */
    for (int i = 0; i < 1000000; i++)
        push(ring, ++id, 0.25, 1.0, 1.0, 1.0, 1.0);
    window_of(ring, 3, &peak, &s, &sums);
    CHECK(s.steps == 3 && mfu_step_ring_at(ring, 2)->id == 1000014); /* 10 + 1 + 3 + 10^6 */
    CHECK_NEAR(s.step_s_mean, 0.25, 1e-15);
    mfu_step_ring_destroy(ring);
}

/* Ids are the key: found directly while consecutive, by search once a step
 * was removed; appends must go up; remove and truncate keep the order. */
static void test_keyed_by_id(void)
{
    mfu_step_ring *ring = (mfu_step_ring *)&ring;
    CHECK(mfu_step_ring_create(0, &ring) == MFU_ERR_INVALID_ARGUMENT && ring == NULL);
    CHECK(mfu_step_ring_create(MFU_STEP_RING_MAX + 1u, &ring) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_step_ring_create(6, &ring) == MFU_OK);
    CHECK(mfu_step_ring_find(ring, 1) == NULL && mfu_step_ring_at(ring, 0) == NULL);
    for (uint64_t id = 1; id <= 5; id++) {
        mfu_step_record *r = mfu_step_ring_append(ring, id);
        CHECK(r != NULL && r->id == id && r->state == MFU_STEP_OPEN);
        CHECK(r != NULL && isnan(r->work.model_flops) && isnan(r->period_s));
    }
    CHECK(mfu_step_ring_append(ring, 5) == NULL);   /* not above the newest */
    CHECK(mfu_step_ring_find(ring, 3)->id == 3);
    mfu_step_ring_remove(ring, 1);                  /* step 2 lost: 1 3 4 5 */
    CHECK(mfu_step_ring_count(ring) == 4 && mfu_step_ring_find(ring, 2) == NULL);
    for (uint64_t id = 1; id <= 5; id++)
        if (id != 2)
            CHECK(mfu_step_ring_find(ring, id) != NULL && mfu_step_ring_find(ring, id)->id == id);
    CHECK(mfu_step_ring_find(ring, 6) == NULL && mfu_step_ring_find(ring, 0) == NULL);
    CHECK(mfu_step_ring_append(ring, 9) != NULL);   /* 1 3 4 5 9 */
    CHECK(mfu_step_ring_find(ring, 9)->comm.calls[MFU_COMM_P2P] == 0.0);
    CHECK(mfu_step_ring_find(ring, 9) != NULL && mfu_step_ring_find(ring, 8) == NULL);
    mfu_step_ring_truncate(ring, 2);                /* 1 3 */
    CHECK(mfu_step_ring_count(ring) == 2 && mfu_step_ring_find(ring, 4) == NULL);
    mfu_step_ring_truncate(ring, 5);                /* no-op */
    CHECK(mfu_step_ring_count(ring) == 2);
    mfu_step_ring_remove(ring, 7);                  /* out of range: no-op */
    mfu_step_ring_pop_oldest(ring);                 /* 3 */
    CHECK(mfu_step_ring_at(ring, 0)->id == 3 && mfu_step_ring_count(ring) == 1);
    mfu_step_ring_destroy(ring);
    mfu_step_ring_destroy(NULL);
}

/* A new record's communication is cleared once the ring tracks it: a slot
 * reused after communication was written starts at zero. */
static void test_communication_cleared_once_tracked(void)
{
    mfu_step_ring *ring = NULL;
    CHECK(mfu_step_ring_create(1, &ring) == MFU_OK);
    CHECK(mfu_step_ring_append(ring, 1)->comm.bytes[0] == 0.0);
    mfu_step_ring_track_comm(ring);
    mfu_step_ring_at(ring, 0)->comm.bytes[0] = 5.0;
    mfu_step_ring_pop_oldest(ring);
    CHECK(mfu_step_ring_append(ring, 2)->comm.bytes[0] == 0.0); /* the same slot */
    mfu_step_ring_destroy(ring);
}

/* A zero-length step is possible (no GPU work between two marks): kept,
 * but a window of zero time has no rates. */
static void test_zero_time(void)
{
    mfu_step_ring *ring = NULL;
    mfu_window_summary s;
    mfu_step_sums sums;
    CHECK(mfu_step_ring_create(2, &ring) == MFU_OK);
    push(ring, 1, 0.0, 1e12, NAN, NAN, 1);
    window_of(ring, 2, &peak, &s, &sums);
    CHECK(s.steps == 1 && s.step_s_mean == 0.0 && isnan(s.metrics.tokens_per_sec));
    mfu_step_ring_destroy(ring);
}

int main(void)
{
    test_empty_view_is_nan();
    test_hand_computed_window();
    test_every_fact_is_summed();
    test_ring_eviction();
    test_keyed_by_id();
    test_communication_cleared_once_tracked();
    test_zero_time();
    return check_summary("test_records");
}
