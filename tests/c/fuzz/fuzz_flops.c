/*
 * fuzz_flops.c -- the op FLOP formulas (mm, addmm, bmm, baddbmm,
 * grouped_mm, convolution forward / backward, SDPA forward / backward,
 * varlen attention forward / backward, masked attention (windows, chunks)
 * and block-mask attention forward / backward) and the attention pairs
 * rule they count windows with (pairs.h, mfu_attention_pairs, also what
 * the analytic spans call) on extreme and negative shapes. Masked and
 * block attention have brute-force oracles (query by query, block by
 * block) for sequences up to 40 tokens; longer ones an exact oracle that
 * walks the shorter side (queries, or keys) for one side up to 64 tokens,
 * and the closed forms of spans.h for equal lengths under a causal window
 * or chunk (the analytic path's masks) at any length; beyond, masked
 * attention is checked for OK / OVERFLOW, HALF <= FULL <= the rectangle.
 *
 * Input: op u8, flags u8, then the op's values (fuzz_input.h's fi_i64, so
 * mutations reach 0, -1, INT64_MAX, 2^62 and the like). Shape arrays are
 * heap blocks of exactly their length: reading past a shape is an ASan
 * report. Flag bit 0 makes shapes consistent (equal K, a dividing group
 * count, non-decreasing offsets) so the counting path is reached often.
 * Bit 1 is unused (it chose a function table the core no longer has).
 *
 * The oracle recomputes every count from flops.h's formulas in __int128,
 * saturating at 2^100 (a product with a zero factor is 0 however large
 * the others). Properties:
 *  - INVALID_ARGUMENT exactly for the documented invalid inputs (negative
 *    dimension, bad ndim / causal / groups / GQA heads, decreasing or
 *    negative offsets);
 *  - otherwise OVERFLOW exactly when the exact count exceeds INT64_MAX,
 *    and OK with the exact count when it does not: nothing wraps, and a
 *    count that fits is never refused;
 *  - the output is written only on OK.
 * NB: varlen checks monotonicity while it sums, so offsets that both
 * decrease and overflow before the decrease may report OVERFLOW; the
 * oracle accepts either status there.
 */
#include <math.h>

#include "flops.h"
#include "fuzz_input.h"
#include "pairs.h"

typedef __int128 big;
#define SAT ((big)1 << 100)
#define SENTINEL ((int64_t)0x5a5a5a5a5a5a5a5aLL)

static big rmul(big a, big b)
{
    if (a == 0 || b == 0)
        return 0;
    if (a >= SAT || b >= SAT || a > SAT / b)
        return SAT;
    return a * b;
}

static big radd(big a, big b)
{
    big s = a + b;
    return s > SAT ? SAT : s;
}

static big rprod(const int64_t *v, size_t n)
{
    big acc = 1;
    for (size_t i = 0; i < n; i++)
        acc = rmul(acc, v[i]);
    return acc;
}

enum { EXPECT_INVALID = -1 };

/* Check status / output against the oracle: `ref` is the exact count, or
 * EXPECT_INVALID; `maybe_invalid` also accepts INVALID_ARGUMENT. */
static void expect(mfu_status st, int64_t got, big ref, int maybe_invalid)
{
    if (ref == EXPECT_INVALID) {
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT ||
                   (maybe_invalid && st == MFU_ERR_OVERFLOW));
    } else if (ref > INT64_MAX) {
        FUZZ_CHECK(st == MFU_ERR_OVERFLOW);
    } else {
        FUZZ_CHECK(st == MFU_OK);
        FUZZ_CHECK((big)got == ref);
    }
    if (st != MFU_OK)
        FUZZ_CHECK(got == SENTINEL);
}

static int64_t *shape_alloc(size_t n)
{
    int64_t *s = malloc((n > 0 ? n : 1) * sizeof *s);
    if (s == NULL)
        abort();
    return s;
}

static int any_negative(const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] < 0)
            return 1;
    return 0;
}

static mfu_causal pick_causal(fuzz_input *in)
{
    uint8_t c = fi_u8(in);
    if (c < 120)
        return MFU_CAUSAL_FULL;
    if (c < 240)
        return MFU_CAUSAL_HALF;
    return (mfu_causal)(c - 240 + 2); /* out of range: 2..17 */
}

static void fuzz_matmul(fuzz_input *in, int op)
{
    int64_t b = fi_i64(in), m = fi_i64(in), k = fi_i64(in), n = fi_i64(in);
    int64_t got = SENTINEL;
    mfu_status st;
    big ref;
    if (op <= 1) {
        ref = (m < 0 || k < 0 || n < 0)
                  ? EXPECT_INVALID
                  : rmul(rmul(rmul(2, m), n), k);
        st = op == 0 ? mfu_mm_flop(m, k, n, &got) : mfu_addmm_flop(m, k, n, &got);
    } else {
        ref = (b < 0 || m < 0 || k < 0 || n < 0)
                  ? EXPECT_INVALID
                  : rmul(rmul(rmul(rmul(2, b), m), n), k);
        st = op == 2 ? mfu_bmm_flop(b, m, k, n, &got)
                     : mfu_baddbmm_flop(b, m, k, n, &got);
    }
    expect(st, got, ref, 0);
}

static void fuzz_grouped(fuzz_input *in, int consistent)
{
    size_t an = fi_u8(in) % 5, bn = fi_u8(in) % 5;
    int64_t *a = shape_alloc(an), *b = shape_alloc(bn);
    int64_t got = SENTINEL;
    big ref = EXPECT_INVALID;
    mfu_status st;
    for (size_t i = 0; i < an; i++)
        a[i] = fi_i64(in);
    for (size_t i = 0; i < bn; i++)
        b[i] = fi_i64(in);
    if (consistent) {
        if (an == 2 && bn == 3) b[1] = a[1];
        if (an == 3 && bn == 3) b[0] = a[0], b[1] = a[2];
        if (an == 3 && bn == 2) b[0] = a[2];
        if (an == 2 && bn == 2) b[0] = a[1];
    }
    if (!any_negative(a, an) && !any_negative(b, bn)) {
        if (an == 2 && bn == 3 && b[1] == a[1])
            ref = rmul(rmul(rmul(2, a[0]), a[1]), b[2]);
        else if (an == 3 && bn == 3 && b[0] == a[0] && b[1] == a[2])
            ref = rmul(rmul(rmul(rmul(2, a[0]), a[1]), a[2]), b[2]);
        else if (an == 3 && bn == 2 && b[0] == a[2])
            ref = rmul(rmul(rmul(2, a[1]), a[2]), b[1]);
        else if (an == 2 && bn == 2 && b[0] == a[1])
            ref = rmul(rmul(rmul(2, a[0]), a[1]), b[1]);
    }
    st = mfu_grouped_mm_flop(a, an, b, bn, &got);
    expect(st, got, ref, 0);
    FUZZ_CHECK(mfu_grouped_mm_flop(NULL, an, b, bn, &got) ==
               MFU_ERR_INVALID_ARGUMENT);
    free(a);
    free(b);
}

static void fuzz_conv(fuzz_input *in, int backward, int consistent)
{
    size_t ndim = fi_u8(in) % 11; /* 0..10: valid is 3..MFU_CONV_MAX_NDIM */
    uint8_t bits = fi_u8(in);
    int transposed = bits & 1;
    int want_in = (bits >> 1) & 1, want_w = (bits >> 2) & 1;
    int64_t groups = fi_i64(in);
    int64_t *x = shape_alloc(ndim), *w = shape_alloc(ndim), *o = shape_alloc(ndim);
    int64_t got = SENTINEL;
    big ref = EXPECT_INVALID;
    mfu_status st;
    for (size_t i = 0; i < ndim; i++) {
        x[i] = fi_i64(in);
        w[i] = fi_i64(in);
        o[i] = fi_i64(in);
    }
    if (consistent && ndim >= 2 && groups >= 1) {
        /* channels that `groups` divides */
        x[1] = rmul(groups, x[1] & 0xff) > INT64_MAX ? x[1] : groups * (x[1] & 0xff);
        o[1] = rmul(groups, o[1] & 0xff) > INT64_MAX ? o[1] : groups * (o[1] & 0xff);
    }
    if (ndim >= 3 && ndim <= MFU_CONV_MAX_NDIM && !any_negative(x, ndim) &&
        !any_negative(w, ndim) && !any_negative(o, ndim)) {
        if (!backward) {
            const int64_t *points = transposed ? x : o;
            ref = rmul(rmul(rmul(rmul(2, x[0]), w[0]), w[1]),
                       rmul(rprod(points + 2, ndim - 2), rprod(w + 2, ndim - 2)));
        } else if (groups >= 1 && x[1] % groups == 0 && o[1] % groups == 0) {
            /* o is grad_out; points the filter visits */
            const int64_t *points = transposed ? x : o;
            big spatial = rmul(rprod(points + 2, ndim - 2), rprod(w + 2, ndim - 2));
            ref = 0;
            if (want_in)
                ref = radd(ref, rmul(rmul(rmul(rmul(2, o[0]), w[0]), w[1]), spatial));
            if (want_w)
                ref = radd(ref, rmul(rmul(rmul(rmul(2, x[0]), x[1] / groups), o[1]),
                                     spatial));
        }
    }
    if (!backward)
        st = mfu_convolution_flop(x, w, o, ndim, transposed, &got);
    else
        st = mfu_convolution_backward_flop(o, x, w, ndim, transposed, groups,
                                           want_in, want_w, &got);
    expect(st, got, ref, 0);
    free(x);
    free(w);
    free(o);
}

/* Exact attention count: 2*b*h*s_q*s_kv*(qk_w*d_qk + v_w*d_v), halved. */
static big attention_ref(const mfu_attention_shape *s, mfu_causal causal,
                         int backward)
{
    big dims, full;
    if (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF)
        return EXPECT_INVALID;
    if (s->batch < 0 || s->seq_q < 0 || s->seq_kv < 0 || s->head_dim_qk < 0 ||
        s->head_dim_v < 0 || s->heads_q < 1 || s->heads_kv < 1 ||
        s->heads_q % s->heads_kv != 0)
        return EXPECT_INVALID;
    dims = radd(rmul(backward ? 3 : 1, s->head_dim_qk),
                rmul(backward ? 2 : 1, s->head_dim_v));
    full = rmul(rmul(rmul(rmul(rmul(2, s->batch), s->heads_q), s->seq_q),
                     s->seq_kv), dims);
    if (full >= SAT)
        return SAT;
    return causal == MFU_CAUSAL_HALF ? full / 2 : full;
}

static void fuzz_sdpa(fuzz_input *in, int backward, int consistent)
{
    mfu_attention_shape s;
    mfu_causal causal = pick_causal(in);
    int64_t got = SENTINEL;
    mfu_status st;
    s.batch = fi_i64(in);
    s.heads_q = fi_i64(in);
    s.heads_kv = fi_i64(in);
    s.seq_q = fi_i64(in);
    s.seq_kv = fi_i64(in);
    s.head_dim_qk = fi_i64(in);
    s.head_dim_v = fi_i64(in);
    if (consistent && s.heads_kv >= 1 && s.heads_q >= 1)
        s.heads_q = rmul(s.heads_kv, s.heads_q & 0xf) > INT64_MAX || (s.heads_q & 0xf) == 0
                        ? s.heads_kv
                        : s.heads_kv * (s.heads_q & 0xf);
    if (!backward)
        st = mfu_sdpa_flop(&s, causal, &got);
    else
        st = mfu_sdpa_backward_flop(&s, causal, &got);
    expect(st, got, attention_ref(&s, causal, backward), 0);
    got = SENTINEL;
    FUZZ_CHECK(mfu_sdpa_flop(NULL, causal, &got) == MFU_ERR_INVALID_ARGUMENT);
}

static void fuzz_varlen(fuzz_input *in, int backward, int consistent)
{
    size_t n = fi_u8(in) % 17;
    uint8_t which = fi_u8(in);
    int separate_k = which & 1, null_q = (which & 6) == 6;
    mfu_causal causal = pick_causal(in);
    int64_t hq = fi_i64(in), hkv = fi_i64(in), dqk = fi_i64(in), dv = fi_i64(in);
    int64_t *q = shape_alloc(n), *k = shape_alloc(n);
    int64_t got = SENTINEL;
    big ref = 0;
    int invalid = 0, decreasing = 0;
    mfu_status st;

    for (size_t i = 0; i < n; i++) {
        q[i] = fi_i64(in);
        k[i] = separate_k ? fi_i64(in) : q[i];
        if (consistent) {
            /* cumulative: 0 or the previous offset + a non-negative step */
            q[i] = (q[i] < 0 ? -(q[i] + 1) : q[i]) / (i & 1 ? 1 : 4096);
            k[i] = (k[i] < 0 ? -(k[i] + 1) : k[i]) / (i & 1 ? 1 : 4096);
            if (i == 0) {
                q[0] = k[0] = 0;
            } else {
                q[i] = q[i] > INT64_MAX - q[i - 1] ? q[i - 1] : q[i - 1] + q[i];
                k[i] = k[i] > INT64_MAX - k[i - 1] ? k[i - 1] : k[i - 1] + k[i];
            }
        }
    }
    {
        mfu_attention_shape s = {1, hq, hkv, 0, 0, dqk, dv};
        if (attention_ref(&s, causal, backward) == EXPECT_INVALID)
            invalid = 1;
        if (n > 0 && null_q)
            invalid = 1;
        if (!null_q) {
            for (size_t i = 0; i < n; i++)
                if (q[i] < 0 || k[i] < 0)
                    invalid = 1;
            for (size_t i = 0; !invalid && i + 1 < n; i++) {
                if (q[i + 1] < q[i] || k[i + 1] < k[i]) {
                    invalid = decreasing = 1;
                    break;
                }
                s.seq_q = q[i + 1] - q[i];
                s.seq_kv = k[i + 1] - k[i];
                ref = radd(ref, attention_ref(&s, causal, backward));
            }
        }
    }
    {
        const int64_t *qa = null_q ? NULL : q;
        const int64_t *ka = separate_k ? k : NULL;
        if (!backward)
            st = mfu_varlen_attention_flop(qa, ka, n, hq, hkv, dqk, dv, causal,
                                           &got);
        else
            st = mfu_varlen_attention_backward_flop(qa, ka, n, hq, hkv, dqk, dv,
                                                    causal, &got);
    }
    expect(st, got, invalid ? EXPECT_INVALID : ref, decreasing);
    free(q);
    free(k);
}

/* Twice the pairs of one (s_q, s_k) sequence under `m`, by brute force
 * (flops.h's normalisation and rules, query by query); small sizes. */
static big brute_twice_pairs(int64_t sq, int64_t sk, mfu_attention_mask m, int half)
{
    const big l = m.window_left, r = m.window_right, c = m.chunk > 0 ? m.chunk : 0;
    big total = 0;
    if (sq == 0 || sk == 0)
        return 0;
    if (l < 0 && c == 0 && r <= 0) /* none, or plain causal */
        return r == 0 && half ? (big)sq * sk : (big)2 * sq * sk;
    for (int64_t i = 0; i < sq; i++) {
        const big p = (big)i + sk - sq;
        big lo = 0, hi = sk - 1, kept = 0;
        if (c > 0) {
            const big c0 = (p >= 0 ? p / c : -((-p + c - 1) / c)) * c;
            lo = c0 > lo ? c0 : lo;
            hi = c0 + c - 1 < hi ? c0 + c - 1 : hi;
        }
        for (big j = lo; j <= hi; j++)
            kept += (l < 0 || j >= p - l) && (r < 0 || j <= p + r);
        if (half) {
            total += kept;
        } else {
            const big region = hi - lo + 1 > 0 ? hi - lo + 1 : 0;
            const big span = l < 0 || r < 0 ? region : l + 1 + r;
            total += span < region ? span : region;
        }
    }
    return 2 * total;
}

static big bmin(big a, big b) { return a < b ? a : b; }
static big bmax(big a, big b) { return a > b ? a : b; }

/* The keys region of query position p: its chunk's keys (all s_k without
 * a chunk), as [*lo, *hi] (empty when hi < lo). */
static void key_region(big p, big sk, big c, big *lo, big *hi)
{
    *lo = 0;
    *hi = sk - 1;
    if (c > 0) {
        const big c0 = (p >= 0 ? p / c : -((-p + c - 1) / c)) * c;
        *lo = bmax(c0, 0);
        *hi = bmin(c0 + c - 1, sk - 1);
    }
}

/* One query's count (flops.h's window rule): HALF the kept keys, FULL
 * min(span, region). */
static big query_pairs(big p, big sk, mfu_attention_mask m, int half)
{
    const big l = m.window_left, r = m.window_right, c = m.chunk > 0 ? m.chunk : 0;
    big lo, hi;
    key_region(p, sk, c, &lo, &hi);
    const big region = bmax(hi - lo + 1, 0);
    if (!half)
        return bmin(l < 0 || r < 0 ? region : l + 1 + r, region);
    const big from = l < 0 ? lo : bmax(p - l, lo), to = r < 0 ? hi : bmin(p + r, hi);
    return bmax(to - from + 1, 0);
}

/* Twice the pairs, exact, walking the shorter side: the queries (s_q <=
 * 64, each query_pairs), or the keys (s_k <= 64): HALF counts, per key j,
 * the queries that keep it (p in [j - r, j + l] and in j's chunk); FULL
 * charges each query min(span, region): without a chunk every query's
 * region is all s_k keys; with one, a query at p < 0 sits in a chunk of
 * negative keys (region empty), and the queries at p >= 0 are at most s_k. */
static big line_twice_pairs(int64_t sq, int64_t sk, mfu_attention_mask m, int half)
{
    const big l = m.window_left, r = m.window_right, c = m.chunk > 0 ? m.chunk : 0;
    const big p0 = (big)sk - sq, p1 = (big)sk - 1;
    big total = 0;
    if (sq == 0 || sk == 0)
        return 0;
    if (l < 0 && c == 0 && r <= 0) /* none, or plain causal */
        return r == 0 && half ? (big)sq * sk : (big)2 * sq * sk;
    if (sq <= 64) {
        for (big p = p0; p <= p1; p++)
            total += query_pairs(p, sk, m, half);
    } else if (half) {
        for (big j = 0; j < sk; j++) {
            big from = r < 0 ? p0 : bmax(j - r, p0), to = l < 0 ? p1 : bmin(j + l, p1);
            if (c > 0) {
                const big c0 = j / c * c;
                from = bmax(from, c0);
                to = bmin(to, c0 + c - 1);
            }
            total += bmax(to - from + 1, 0);
        }
    } else if (c == 0) {
        total = (big)sq * query_pairs(p1, sk, m, 0);
    } else {
        for (big p = bmax(p0, 0); p <= p1; p++)
            total += query_pairs(p, sk, m, 0);
    }
    return 2 * total;
}

/* spans.h's closed forms (the analytic path's masks), exact: s queries
 * over s keys, causal, under a window of w = left + 1 keys (chunk 0) or a
 * chunk of w (left < 0): sliding FULL s * min(s, w), HALF sum min(p + 1,
 * w); chunked FULL sum_chunks len^2, HALF sum_chunks len (len + 1) / 2. */
static big span_twice_pairs(int64_t s, mfu_attention_mask m, int half)
{
    const big n = s;
    if (s == 0)
        return 0;
    if (m.chunk > 0) {
        const big w = m.chunk, whole = n / w, rest = n % w;
        return half ? whole * w * (w + 1) + rest * (rest + 1) : 2 * (whole * w * w + rest * rest);
    }
    const big w = (big)m.window_left + 1;
    if (!half)
        return 2 * n * bmin(n, w);
    return n <= w ? n * (n + 1) : w * (w + 1) + 2 * (n - w) * w;
}

/* flops from twice the pairs, as flops.h: b * h * twice * (w_qk d_qk +
 * w_v d_v) (saturating). */
static big pairs_ref(const mfu_attention_shape *s, big twice, int backward)
{
    const big dims = radd(rmul(backward ? 3 : 1, s->head_dim_qk),
                          rmul(backward ? 2 : 1, s->head_dim_v));
    return rmul(rmul(rmul(twice, s->batch), s->heads_q), dims);
}

/* Masked attention: any shape and mask; an exact brute-force oracle for
 * sequences up to 40, and for longer ones OK / OVERFLOW with FULL >= HALF,
 * both at most the whole rectangle. */
static void fuzz_masked(fuzz_input *in, int backward, int consistent)
{
    mfu_attention_shape s;
    mfu_attention_mask m;
    mfu_causal causal = pick_causal(in);
    int64_t got = SENTINEL, other = SENTINEL;
    mfu_status st, st2;
    s.batch = fi_i64(in);
    s.heads_q = fi_i64(in);
    s.heads_kv = fi_i64(in);
    s.seq_q = fi_i64(in);
    s.seq_kv = fi_i64(in);
    s.head_dim_qk = fi_i64(in);
    s.head_dim_v = fi_i64(in);
    m.window_left = fi_i64(in);
    m.window_right = fi_i64(in);
    m.chunk = fi_i64(in);
    if (consistent) {
        s.heads_kv = 1 + (s.heads_kv & 3);
        s.heads_q = s.heads_kv * (1 + (s.heads_q & 3));
        s.seq_q &= 31;
        s.seq_kv &= 31;
        s.batch &= 7;
    }
    st = backward ? mfu_masked_attention_backward_flop(&s, &m, causal, &got)
                  : mfu_masked_attention_flop(&s, &m, causal, &got);
    const big shape_ok = attention_ref(&s, causal, backward);
    if (shape_ok == EXPECT_INVALID) {
        expect(st, got, EXPECT_INVALID, 0);
    } else if (s.seq_q <= 40 && s.seq_kv <= 40) {
        expect(st, got, pairs_ref(&s, brute_twice_pairs(s.seq_q, s.seq_kv, m,
                                                        causal == MFU_CAUSAL_HALF), backward), 0);
    } else if (s.seq_q <= 64 || s.seq_kv <= 64) {
        expect(st, got, pairs_ref(&s, line_twice_pairs(s.seq_q, s.seq_kv, m,
                                                       causal == MFU_CAUSAL_HALF), backward), 0);
    } else {
        FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_OVERFLOW);
        if (st == MFU_OK)
            FUZZ_CHECK(got >= 0 && (big)got <= attention_ref(&s, MFU_CAUSAL_FULL, backward));
        if (causal == MFU_CAUSAL_HALF) {
            st2 = backward ? mfu_masked_attention_backward_flop(&s, &m, MFU_CAUSAL_FULL, &other)
                           : mfu_masked_attention_flop(&s, &m, MFU_CAUSAL_FULL, &other);
            if (st2 == MFU_OK)
                FUZZ_CHECK(st == MFU_OK && got <= other);
        }
    }
    got = SENTINEL;
    FUZZ_CHECK(mfu_masked_attention_flop(&s, NULL, causal, &got) == MFU_ERR_INVALID_ARGUMENT &&
               got == SENTINEL);
}

/* The pairs rule itself (pairs.h), as both the op formulas and the
 * analytic spans call it: any lengths, mask and convention. Shape byte:
 * 0 raw values; 1 both lengths < 41 (the brute force); 2 s_q < 65; 3
 * s_k < 65 (the line oracle); 4 equal lengths under a causal window or
 * chunk (spans.h's closed forms, any length). INVALID exactly for a
 * negative length or a bad convention; the output untouched on error;
 * HALF <= FULL <= twice the rectangle; the int64 conversion OVERFLOW
 * exactly above INT64_MAX. */
static void fuzz_pairs(fuzz_input *in)
{
    const mfu_pair_count sentinel = {(uint64_t)SENTINEL, (uint64_t)SENTINEL};
    const uint8_t how = fi_u8(in) % 5;
    int64_t sq = fi_i64(in), sk = fi_i64(in);
    mfu_attention_mask m = {fi_i64(in), fi_i64(in), fi_i64(in)};
    const mfu_causal causal = pick_causal(in);
    const int half = causal == MFU_CAUSAL_HALF;
    mfu_pair_count got = sentinel, other = sentinel;
    int64_t as_i64 = SENTINEL;
    big twice, ref = EXPECT_INVALID;

    if (how == 1 || how == 2)
        sq &= how == 1 ? 31 : 63;
    if (how == 1 || how == 3)
        sk &= how == 1 ? 31 : 63;
    if (how == 4) {
        sk = sq;
        m.window_right = 0;
        m.window_left = m.chunk > 0 ? -1 : m.window_left < 0 ? 0 : m.window_left;
    }
    const mfu_status st = mfu_attention_pairs(sq, sk, &m, causal, &got);
    if (sq < 0 || sk < 0 || (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF)) {
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT && got.hi == sentinel.hi &&
                   got.lo == sentinel.lo);
        return;
    }
    FUZZ_CHECK(st == MFU_OK);
    twice = (big)got.hi << 64 | (big)got.lo;
    if (sq <= 40 && sk <= 40)
        ref = brute_twice_pairs(sq, sk, m, half);
    else if (sq <= 64 || sk <= 64)
        ref = line_twice_pairs(sq, sk, m, half);
    else if (sq == sk && m.window_right == 0 && (m.chunk > 0) != (m.window_left >= 0))
        ref = span_twice_pairs(sq, m, half);
    if (ref != EXPECT_INVALID)
        FUZZ_CHECK(twice == ref);
    FUZZ_CHECK(twice >= 0 && twice <= (big)2 * sq * sk);
    if (half) {
        FUZZ_CHECK(mfu_attention_pairs(sq, sk, &m, MFU_CAUSAL_FULL, &other) == MFU_OK);
        FUZZ_CHECK(twice <= ((big)other.hi << 64 | (big)other.lo));
    }
    if (mfu_pair_count_i64(got, &as_i64) == MFU_OK)
        FUZZ_CHECK(twice <= INT64_MAX && as_i64 == (int64_t)twice);
    else
        FUZZ_CHECK(twice > INT64_MAX && as_i64 == SENTINEL);
    /* exact below 2^53, a few ulps above */
    FUZZ_CHECK(fabs(mfu_pair_count_double(got) - (double)twice) <= 1e-15 * (double)twice);
    FUZZ_CHECK(mfu_attention_pairs(sq, sk, NULL, causal, &got) == MFU_ERR_INVALID_ARGUMENT);
}

/* Block attention: up to 16 rows of up to 4 key blocks, values in
 * [-2, 5]; the oracle sums rows x clipped columns. */
static void fuzz_block(fuzz_input *in, int backward, int consistent)
{
    mfu_attention_shape s;
    int64_t got = SENTINEL;
    s.batch = fi_i64(in);
    s.heads_q = fi_i64(in);
    s.heads_kv = fi_i64(in);
    s.seq_q = fi_i64(in);
    s.seq_kv = fi_i64(in);
    s.head_dim_qk = fi_i64(in);
    s.head_dim_v = fi_i64(in);
    const int64_t mb = 1 + fi_u8(in) % 2, mh = 1 + fi_u8(in) % 2, qb = fi_u8(in) % 5;
    const int64_t kvb = fi_u8(in) % 5, has_full = fi_u8(in) & 1;
    const int64_t qsize = fi_i64(in), kvsize = fi_i64(in);
    const size_t rows = (size_t)(mb * mh * qb), cells = rows * (size_t)kvb;
    int64_t *num = shape_alloc(rows), *idx = shape_alloc(cells);
    int64_t *fnum = shape_alloc(rows), *fidx = shape_alloc(cells);
    for (size_t i = 0; i < rows; i++) {
        num[i] = (int64_t)(fi_u8(in) % 8) - 2;
        fnum[i] = (int64_t)(fi_u8(in) % 8) - 2;
    }
    for (size_t i = 0; i < cells; i++) {
        idx[i] = (int64_t)(fi_u8(in) % 8) - 2;
        fidx[i] = (int64_t)(fi_u8(in) % 8) - 2;
    }
    if (consistent) {
        s.heads_kv = 1 + (s.heads_kv & 3);
        s.heads_q = s.heads_kv * mh * (1 + (s.heads_q & 1));
        s.batch = mb * (s.batch & 3);
        s.seq_q &= 31;
        s.seq_kv &= 31;
    }
    const mfu_block_mask m = {.batch = mb, .heads = mh, .q_blocks = qb, .q_block_size = qsize,
                              .kv_block_size = kvsize, .num_blocks = num, .indices = idx,
                              .kv_blocks = kvb, .full_num_blocks = has_full ? fnum : NULL,
                              .full_indices = has_full ? fidx : NULL, .full_kv_blocks = kvb};
    const mfu_status st = backward ? mfu_block_attention_backward_flop(&s, &m, &got)
                                   : mfu_block_attention_flop(&s, &m, &got);
    big ref = attention_ref(&s, MFU_CAUSAL_FULL, backward), pairs = 0;
    int invalid = ref == EXPECT_INVALID || qsize < 1 || kvsize < 1 || s.batch % mb != 0 ||
                  s.heads_q % mh != 0;
    const int no_work = !invalid && (s.batch == 0 || (s.head_dim_qk == 0 && s.head_dim_v == 0));
    for (size_t r = 0; !invalid && !no_work && r < rows; r++) {
        const big start = (big)(int64_t)(r % (size_t)qb) * qsize;
        const big rws = start >= s.seq_q ? 0 : (s.seq_q - start < qsize ? s.seq_q - start : qsize);
        big cols = 0;
        for (int part = 0; part < 1 + has_full; part++) {
            const int64_t n = part ? fnum[r] : num[r];
            const int64_t *ix = (part ? fidx : idx) + r * (size_t)kvb;
            if (n < 0 || n > kvb)
                invalid = 1;
            for (int64_t i = 0; !invalid && i < n; i++) {
                const big kstart = (big)ix[i] * kvsize;
                if (ix[i] < 0)
                    invalid = 1;
                else if (kstart < s.seq_kv)
                    cols += s.seq_kv - kstart < kvsize ? s.seq_kv - kstart : kvsize;
            }
        }
        pairs = radd(pairs, rmul(rws, cols));
    }
    if (invalid) {
        expect(st, got, EXPECT_INVALID, 0);
    } else {
        mfu_attention_shape per_row = s;
        per_row.batch = s.batch / mb;
        per_row.heads_q = s.heads_q / mh;
        expect(st, got, no_work ? 0 : pairs_ref(&per_row, rmul(2, pairs), backward), 0);
    }
    free(num);
    free(idx);
    free(fnum);
    free(fidx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    int op = fi_u8(&in) % 16;
    uint8_t flags = fi_u8(&in);
    int consistent = flags & 1;
    switch (op) {
    case 0: case 1: case 2: case 3: fuzz_matmul(&in, op); break;
    case 4: fuzz_grouped(&in, consistent); break;
    case 5: fuzz_conv(&in, 0, consistent); break;
    case 6: fuzz_conv(&in, 1, consistent); break;
    case 7: fuzz_sdpa(&in, 0, consistent); break;
    case 8: fuzz_sdpa(&in, 1, consistent); break;
    case 9: fuzz_varlen(&in, 0, consistent); break;
    case 10: fuzz_varlen(&in, 1, consistent); break;
    case 11: fuzz_masked(&in, 0, consistent); break;
    case 12: fuzz_masked(&in, 1, consistent); break;
    case 13: fuzz_block(&in, 0, consistent); break;
    case 14: fuzz_block(&in, 1, consistent); break;
    default: fuzz_pairs(&in); break;
    }
    return 0;
}
