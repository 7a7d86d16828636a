/* pairs.c -- the attention pairs rule (see pairs.h). */
#include "pairs.h"

/* ------------------------------------------------------------------------
 * 128-bit counts. Every count below is at most 2 * s_q * s_k < 2^127 and
 * every partial sum at most the count, so nothing here wraps.
 * ------------------------------------------------------------------------ */

static mfu_pair_count wide(uint64_t v)
{
    const mfu_pair_count c = {0, v};
    return c;
}

/* a * b, exact: four 32 x 32-bit products. */
static mfu_pair_count mul_wide(uint64_t a, uint64_t b)
{
    const uint64_t mask = 0xffffffffu;
    const uint64_t ll = (a & mask) * (b & mask), lh = (a & mask) * (b >> 32);
    const uint64_t hl = (a >> 32) * (b & mask), hh = (a >> 32) * (b >> 32);
    const uint64_t mid = (ll >> 32) + (lh & mask) + (hl & mask);
    const mfu_pair_count c = {hh + (lh >> 32) + (hl >> 32) + (mid >> 32),
                              (mid << 32) | (ll & mask)};
    return c;
}

static void add_wide(mfu_pair_count *acc, mfu_pair_count b)
{
    const uint64_t lo = acc->lo + b.lo;
    acc->hi += b.hi + (lo < b.lo);
    acc->lo = lo;
}

/* a * k, for a product below 2^128 (then a.hi * k < 2^64). */
static mfu_pair_count scale_wide(mfu_pair_count a, uint64_t k)
{
    mfu_pair_count c = mul_wide(a.lo, k);
    c.hi += a.hi * k;
    return c;
}

mfu_status mfu_pair_count_i64(mfu_pair_count count, int64_t *out)
{
    if (out == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (count.hi != 0 || count.lo > (uint64_t)INT64_MAX)
        return MFU_ERR_OVERFLOW;
    *out = (int64_t)count.lo;
    return MFU_OK;
}

double mfu_pair_count_double(mfu_pair_count count)
{
    return (double)count.hi * 18446744073709551616.0 /* 2^64 */ + (double)count.lo;
}

/* ------------------------------------------------------------------------
 * Positions: query positions p and key indices, int64. The lengths are
 * below 2^63 and windows are clamped to the lengths, so every bound below
 * fits; where a sum may pass INT64_MAX (a chunk's last position, a window's
 * reach) only comparisons with positions follow, and it saturates.
 * ------------------------------------------------------------------------ */

static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

/* a + b (b >= 0), INT64_MAX when it does not fit. */
static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* n >= 1 terms counting up by 1 from `smallest` (`ramp`) or all equal to
 * it: n * smallest (+ n (n - 1) / 2). */
static mfu_pair_count series(int64_t n, int64_t smallest, int ramp)
{
    mfu_pair_count sum = mul_wide((uint64_t)n, (uint64_t)smallest);
    if (ramp)
        add_wide(&sum, n % 2 == 0 ? mul_wide((uint64_t)(n / 2), (uint64_t)(n - 1))
                                  : mul_wide((uint64_t)n, (uint64_t)((n - 1) / 2)));
    return sum;
}

/* The kept keys of the queries a..b of one piece of kept_pairs, over which
 * the left edge is p - left (`low`) or lo and the right edge p + right
 * (`high`) or hi: the sum of max(0, right edge - left edge + 1). */
static mfu_pair_count kept_piece(int64_t a, int64_t b, int64_t left, int64_t right,
                                 int64_t lo, int64_t hi, int low, int high)
{
    if (low && high) /* the whole window, inside [lo, hi]: left + 1 + right <= hi - lo */
        return series(b - a + 1, left + 1 + right, 0);
    if (!low && !high) /* the whole region */
        return series(b - a + 1, hi - lo + 1, 0);
    if (high) {
        /* p + right - lo + 1, growing, from the first query reaching lo */
        a = max_i64(a, lo - right);
        return a > b ? wide(0) : series(b - a + 1, a + right - lo + 1, 1);
    }
    /* hi - (p - left) + 1, shrinking; at least 1 at b, since no query sits
     * past the last key (b <= hi) */
    return series(b - a + 1, hi - (b - left) + 1, 1);
}

/* sum over p = q0..q1 of the keys [max(p - left, lo), min(p + right, hi)]
 * (left / right < 0: unbounded; region_pairs' bounds). The count is linear
 * in p between x1 (after it the left edge is p - left) and x2 (up to it the
 * right edge is p + right): sum each piece. */
static mfu_pair_count kept_pairs(int64_t q0, int64_t q1, int64_t left, int64_t right,
                                 int64_t lo, int64_t hi)
{
    const int64_t x1 = left < 0 ? INT64_MAX : sat_add(lo, left);
    const int64_t x2 = right < 0 ? INT64_MIN : hi - right;
    const int64_t cut[3] = {min_i64(x1, x2), max_i64(x1, x2), q1};
    mfu_pair_count total = wide(0);
    int64_t start = q0;
    for (int k = 0; k < 3 && start <= q1; k++) {
        const int64_t end = min_i64(cut[k], q1);
        if (end < start)
            continue;
        add_wide(&total, kept_piece(start, end, left, right, lo, hi, start > x1, start <= x2));
        start = end + 1;
    }
    return total;
}

/* Pairs of the query positions q0..q1 whose keys lie in [lo, hi], by
 * convention: FULL min(span, region) each, HALF the kept ones. Every
 * caller has q0 <= q1 <= hi and lo <= hi: at least one query, no query
 * past the last key, at least one key. */
static mfu_pair_count region_pairs(int64_t q0, int64_t q1, int64_t left, int64_t right,
                                   int64_t lo, int64_t hi, mfu_causal causal)
{
    if (causal == MFU_CAUSAL_HALF)
        return kept_pairs(q0, q1, left, right, lo, hi);
    const int64_t region = hi - lo + 1;
    /* min(left + 1 + right, region), an unbounded side adding no limit */
    const int64_t span = left < 0 || right < 0 || left >= region || right >= region - left - 1
                             ? region
                             : left + 1 + right;
    return mul_wide((uint64_t)(q1 - q0 + 1), (uint64_t)span);
}

/* A chunked sequence: the chunks of the query positions p0..p1 (k0..k1),
 * 0 <= p0 <= p1 = s_k - 1; each chunk's queries and keys start at its
 * start, so region_pairs' bounds hold. The chunks strictly between k0 and
 * k1 all count the same: one of them times their number. */
static mfu_pair_count chunk_pairs(int64_t p0, int64_t p1, int64_t s_k, int64_t left,
                                  int64_t right, int64_t chunk, mfu_causal causal)
{
    const int64_t k0 = p0 / chunk, k1 = p1 / chunk;
    const int64_t edges[2] = {k0, k1};
    mfu_pair_count total = wide(0);
    for (int e = 0; e < (k0 == k1 ? 1 : 2); e++) {
        const int64_t start = edges[e] * chunk, last = sat_add(start, chunk - 1);
        add_wide(&total, region_pairs(max_i64(start, p0), min_i64(last, p1), left, right, start,
                                      min_i64(last, s_k - 1), causal));
    }
    if (k1 - k0 > 1)
        add_wide(&total, scale_wide(region_pairs(0, chunk - 1, left, right, 0, chunk - 1,
                                                 causal),
                                    (uint64_t)(k1 - k0 - 1)));
    return total;
}

mfu_status mfu_attention_pairs(int64_t s_q, int64_t s_k, const mfu_attention_mask *mask,
                               mfu_causal causal, mfu_pair_count *twice)
{
    mfu_pair_count pairs = wide(0);
    if (mask == NULL || twice == NULL || s_q < 0 || s_k < 0 ||
        (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF))
        return MFU_ERR_INVALID_ARGUMENT;
    if (s_q > 0 && s_k > 0 && mask->window_left < 0 && mask->chunk <= 0 &&
        mask->window_right <= 0) {
        /* no mask, or plain causal: the rectangle (HALF of causal: half of
         * it, so twice the pairs is the rectangle itself) */
        pairs = mul_wide((uint64_t)s_q, (uint64_t)s_k);
        if (mask->window_right == 0 && causal == MFU_CAUSAL_HALF) {
            *twice = pairs;
            return MFU_OK;
        }
    } else if (s_q > 0 && s_k > 0) {
        /* a side past every key keeps them all, as any longer one does:
         * clamped, the position arithmetic stays in int64 */
        const int64_t left = mask->window_left < 0 ? -1 : min_i64(mask->window_left, s_k);
        const int64_t right =
            mask->window_right < 0 ? -1 : min_i64(mask->window_right, max_i64(s_q, s_k));
        /* a query before key 0 (s_q > s_k) sits in a chunk of no keys: it
         * counts nothing under a chunk */
        pairs = mask->chunk > 0
                    ? chunk_pairs(max_i64(s_k - s_q, 0), s_k - 1, s_k, left, right, mask->chunk,
                                  causal)
                    : region_pairs(s_k - s_q, s_k - 1, left, right, 0, s_k - 1, causal);
    }
    twice->hi = pairs.hi << 1 | pairs.lo >> 63;
    twice->lo = pairs.lo << 1;
    return MFU_OK;
}
