/*
 * fuzz_stats.c -- the numbers users hand the tracker (FLOPs, bytes, tokens,
 * peaks, device counts) and the step periods the clocks produce, through
 * mfu_work_validate / mfu_peak_validate / mfu_metrics_compute and a ring of
 * step records (records.h: create, append, find, views summed into window
 * figures, truncate) driven by a fuzzed op sequence.
 *
 * Input: capacity selector u8, skip u8, then ops until the input ends:
 * op u8 % 4: 0, 1 push (step_s, work; a valid one is appended as a pushed
 * record), 2 summarize (peak) the view of the newest min(pushed - skip,
 * capacity) records, 3 clear (truncate to none).
 * Doubles come from fd_double: tag % 8 picks raw bits (NaN payloads,
 * infinities, denormals, -0.0 included), a small integer, NaN, +-inf, a
 * negative, DBL_MAX, the smallest denormal or a u16 / 1000.
 *
 * Properties:
 *  - validation accepts exactly the documented domains and names the
 *    field it refuses; a refused push records nothing;
 *  - the ring's count follows a model (min(pushed, capacity); clear resets
 *    it), the newest record is found by its id and the oldest evicted one
 *    is not; a view counts exactly the records asked for;
 *  - on a summary: min <= max, window_s >= 0 (or NaN when empty), and every
 *    figure is NaN or >= 0 (never negative); metrics from valid inputs are
 *    NaN or >= 0 too.
 */
#include "fuzz_input.h"
#include "records.h"

/* A picked double (fuzz_input.h); ratios: the least denormal, u16 / 1000. */
static double fd_double(fuzz_input *in)
{
    return fi_double(in, 4.9406564584124654e-324, 1e-3);
}

static int nonneg_or_nan(double v)
{
    return isnan(v) || v >= 0.0;
}

static void check_metrics(const mfu_metrics *m)
{
    FUZZ_CHECK(nonneg_or_nan(m->achieved_flops_per_sec));
    FUZZ_CHECK(nonneg_or_nan(m->achieved_bytes_per_sec));
    FUZZ_CHECK(nonneg_or_nan(m->mfu));
    FUZZ_CHECK(nonneg_or_nan(m->hfu));
    FUZZ_CHECK(nonneg_or_nan(m->mbu));
    FUZZ_CHECK(nonneg_or_nan(m->tokens_per_sec));
}

/* One field per statement: initializer lists evaluate in no fixed order. */
static mfu_peak read_peak(fuzz_input *in)
{
    mfu_peak p;
    p.flops_per_sec = fd_double(in);
    p.bytes_per_sec = fd_double(in);
    p.num_devices = fi_i32(in);
    return p;
}

static mfu_work read_work(fuzz_input *in)
{
    mfu_work w;
    for (int f = 0; f < MFU_FIELD_COUNT; f++)
        w.v[f] = NAN; /* every field the input does not give: unknown */
    w.model_flops = fd_double(in);
    w.executed_flops = fd_double(in);
    w.param_bytes = fd_double(in);
    w.num_tokens = fd_double(in);
    return w;
}

static int work_ok(const mfu_work *w)
{
    return isfinite(w->model_flops) && w->model_flops >= 0.0 &&
           (isnan(w->executed_flops) ||
            (isfinite(w->executed_flops) && w->executed_flops >= 0.0)) &&
           (isnan(w->param_bytes) ||
            (isfinite(w->param_bytes) && w->param_bytes >= 0.0)) &&
           (isnan(w->num_tokens) ||
            (isfinite(w->num_tokens) && w->num_tokens >= 0.0));
}

static int peak_ok(const mfu_peak *p)
{
    return (isnan(p->flops_per_sec) ||
            (isfinite(p->flops_per_sec) && p->flops_per_sec > 0.0)) &&
           (isnan(p->bytes_per_sec) ||
            (isfinite(p->bytes_per_sec) && p->bytes_per_sec > 0.0)) &&
           p->num_devices >= 1;
}

/* Append a pushed record of `step_s` and `w` as step `id` (evicting the
 * oldest when full). */
static void append(mfu_step_ring *ring, uint64_t id, double step_s, const mfu_work *w)
{
    mfu_step_record *r;
    if (mfu_step_ring_count(ring) == mfu_step_ring_capacity(ring))
        mfu_step_ring_pop_oldest(ring);
    r = mfu_step_ring_append(ring, id);
    FUZZ_CHECK(r != NULL && r->id == id);
    r->state = MFU_STEP_PUSHED;
    r->period_s = step_s;
    r->work = *w;
    FUZZ_CHECK(mfu_step_ring_find(ring, id) == r);
}

/* A push op: validated like a step's work, appended when valid. */
static void op_push(fuzz_input *in, mfu_step_ring *ring, uint64_t *seen)
{
    double step_s = fd_double(in);
    mfu_work w = read_work(in);
    const char *bad = NULL;
    int ok = isfinite(step_s) && step_s >= 0.0 && work_ok(&w);
    mfu_status st = isfinite(step_s) && step_s >= 0.0 ? mfu_work_validate(&w, &bad)
                                                      : MFU_ERR_INVALID_ARGUMENT;
    FUZZ_CHECK(st == (ok ? MFU_OK : MFU_ERR_INVALID_ARGUMENT));
    if (!ok) {
        FUZZ_CHECK(bad == NULL || bad[0] != '\0');
        return;
    }
    append(ring, ++*seen, step_s, &w);
    if (*seen > mfu_step_ring_capacity(ring))
        FUZZ_CHECK(mfu_step_ring_find(ring, *seen - mfu_step_ring_capacity(ring)) == NULL);
    {
        /* one block's metrics from the same numbers */
        mfu_peak p = read_peak(in);
        mfu_metrics m;
        if (peak_ok(&p)) {
            mfu_metrics_compute(&w, &p, step_s, &m);
            check_metrics(&m);
            FUZZ_CHECK(m.elapsed_s == step_s);
        }
    }
}

/* A summarize op over the newest min(seen - skip, capacity) records. */
static void op_summarize(fuzz_input *in, const mfu_step_ring *ring, uint64_t seen, uint64_t skip)
{
    mfu_peak p = read_peak(in);
    const char *bad = NULL;
    mfu_step_sums sums;
    mfu_window_summary s;
    uint64_t steps = seen > skip ? seen - skip : 0;
    mfu_step_view view;
    mfu_status st = mfu_peak_validate(&p, &bad);
    FUZZ_CHECK(st == (peak_ok(&p) ? MFU_OK : MFU_ERR_INVALID_ARGUMENT));
    if (st != MFU_OK) {
        FUZZ_CHECK(bad != NULL && bad[0] != '\0');
        return;
    }
    if (steps > mfu_step_ring_capacity(ring))
        steps = mfu_step_ring_capacity(ring);
    FUZZ_CHECK(mfu_step_ring_count(ring) ==
               (seen < mfu_step_ring_capacity(ring) ? seen : mfu_step_ring_capacity(ring)));
    view.ring = ring;
    view.first = mfu_step_ring_count(ring) - (uint32_t)steps;
    view.steps = (uint32_t)steps;
    mfu_step_view_sum(&view, MFU_SUM_ALL, &sums);
    mfu_step_sums_window(&sums, &p, &s);
    FUZZ_CHECK(s.steps == steps && sums.phases.steps == steps);
    if (steps == 0) {
        FUZZ_CHECK(isnan(s.window_s) && isnan(s.metrics.mfu));
    } else {
        FUZZ_CHECK(s.window_s >= 0.0);
        FUZZ_CHECK(s.step_s_min <= s.step_s_max);
        FUZZ_CHECK(s.step_s_min >= 0.0 && nonneg_or_nan(s.step_s_mean));
        FUZZ_CHECK(s.totals.model_flops >= 0.0);
    }
    check_metrics(&s.metrics);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t capacities[] = {0, 1, 2, 3, 8, 100, 1u << 24,
                                          MFU_STEP_RING_MAX + 1u, UINT32_MAX};
    fuzz_input in = fi_make(data, size);
    uint8_t csel = fi_u8(&in);
    uint32_t capacity = csel < 200 ? (uint32_t)csel % 17
                                   : capacities[csel % FI_COUNT(capacities)];
    uint64_t skip = fi_u8(&in) % 8;
    uint64_t seen = 0;
    mfu_step_ring *ring = NULL;
    mfu_status st;
    int ops = 0;

    /* Large capacities only through create's range check (no 2^24 ring
     * per input): the allocation itself is not what is fuzzed. */
    if (capacity > 4096) {
        if (capacity > MFU_STEP_RING_MAX) {
            st = mfu_step_ring_create(capacity, &ring);
            FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT && ring == NULL);
        }
        return 0;
    }
    st = mfu_step_ring_create(capacity, &ring);
    if (capacity == 0) {
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT && ring == NULL);
        return 0;
    }
    FUZZ_CHECK(st == MFU_OK && ring != NULL);

    while (fi_left(&in) > 0 && ops++ < 256) {
        uint8_t op = fi_u8(&in) % 4;
        if (op <= 1) {
            op_push(&in, ring, &seen);
        } else if (op == 2) {
            op_summarize(&in, ring, seen, skip);
        } else {
            mfu_step_ring_truncate(ring, 0);
            seen = 0;
        }
    }
    mfu_step_ring_destroy(ring);
    return 0;
}
