/* test_flops.c -- the FLOP formulas against hand arithmetic. */
#include <stdint.h>

#include "check.h"
#include "flops.h"
#include "pairs.h"

static void test_matmul_family(void)
{
    int64_t f = -1;
    CHECK(mfu_mm_flop(4, 5, 6, &f) == MFU_OK);
    CHECK(f == 240); /* 2 * 4 * 6 * 5 = 240 */
    CHECK(mfu_addmm_flop(4, 5, 6, &f) == MFU_OK);
    CHECK(f == 240); /* bias ignored: = mm */
    CHECK(mfu_bmm_flop(3, 4, 5, 6, &f) == MFU_OK);
    CHECK(f == 720); /* 3 * 2 * 4 * 6 * 5 = 720 */
    CHECK(mfu_baddbmm_flop(3, 4, 5, 6, &f) == MFU_OK);
    CHECK(f == 720);
    CHECK(mfu_mm_flop(0, 5, 6, &f) == MFU_OK);
    CHECK(f == 0); /* an empty matrix does no work */

    /* 4096 x 4096 x 4096: 2 * 2^36 = 137,438,953,472 */
    CHECK(mfu_mm_flop(4096, 4096, 4096, &f) == MFU_OK);
    CHECK(f == INT64_C(137438953472));
}

static void test_grouped_mm(void)
{
    int64_t f = -1;
    /* 2D x 3D: a [6, 4] (offs split 6 rows over 3 experts), b [3, 4, 5]:
     * every row meets one expert: 2 * 6 * 4 * 5 = 240 */
    const int64_t a2[2] = {6, 4}, b3[3] = {3, 4, 5};
    CHECK(mfu_grouped_mm_flop(a2, 2, b3, 3, &f) == MFU_OK);
    CHECK(f == 240);
    /* 3D x 3D: a [3, 2, 4], b [3, 4, 5]: 3 * 2 * 2 * 4 * 5 = 240 */
    const int64_t a3[3] = {3, 2, 4};
    CHECK(mfu_grouped_mm_flop(a3, 3, b3, 3, &f) == MFU_OK);
    CHECK(f == 240);
    /* 3D x 2D: a [3, 2, 4], b [4, 15] (offs split 15 columns):
     * 2 * 2 * 4 * 15 = 240 */
    const int64_t b2[2] = {4, 15};
    CHECK(mfu_grouped_mm_flop(a3, 3, b2, 2, &f) == MFU_OK);
    CHECK(f == 240);
    /* 2D x 2D: a [6, 4], b [4, 5] (offs split the contraction):
     * 2 * 6 * 4 * 5 = 240 */
    const int64_t b22[2] = {4, 5};
    CHECK(mfu_grouped_mm_flop(a2, 2, b22, 2, &f) == MFU_OK);
    CHECK(f == 240);

    f = 12345;
    const int64_t bad_k[3] = {3, 7, 5};
    CHECK(mfu_grouped_mm_flop(a2, 2, bad_k, 3, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_grouped_mm_flop(a2, 2, b3, 4, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_grouped_mm_flop(NULL, 2, b3, 3, &f) == MFU_ERR_INVALID_ARGUMENT);
    const int64_t neg[2] = {-6, 4};
    CHECK(mfu_grouped_mm_flop(neg, 2, b3, 3, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(f == 12345);
}

static void test_overflow_and_invalid(void)
{
    int64_t f = 12345;
    const int64_t big = INT64_C(1) << 31;
    /* 2 * 2^31 * 2^31 * 2^31 = 2^94: overflow, detected, output untouched */
    CHECK(mfu_mm_flop(big, big, big, &f) == MFU_ERR_OVERFLOW);
    CHECK(f == 12345);
    /* 2 * 2^31 * 2^31 = 2^63 > INT64_MAX by one: still an overflow */
    CHECK(mfu_mm_flop(big, big, 1, &f) == MFU_ERR_OVERFLOW);
    /* 2 * 2^31 * 2^30 = 2^62 fits */
    CHECK(mfu_mm_flop(big, big / 2, 1, &f) == MFU_OK);
    CHECK(f == (INT64_C(1) << 62));
    CHECK(mfu_bmm_flop(big, big, big, 2, &f) == MFU_ERR_OVERFLOW);
    CHECK(mfu_mm_flop(INT64_MAX, 1, 1, &f) == MFU_ERR_OVERFLOW);

    f = 12345;
    CHECK(mfu_mm_flop(-1, 5, 6, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_mm_flop(4, -5, 6, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_bmm_flop(-3, 4, 5, 6, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_baddbmm_flop(3, 4, 5, -6, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(f == 12345);
}

static void test_convolution(void)
{
    int64_t f = -1;
    /* conv2d: x [2, 3, 8, 8], w [4, 3, 3, 3], out [2, 4, 6, 6]
     * 2 * 2 * 36 * 4 * 3 * 9 = 15,552 */
    const int64_t x[4] = {2, 3, 8, 8}, w[4] = {4, 3, 3, 3}, y[4] = {2, 4, 6, 6};
    CHECK(mfu_convolution_flop(x, w, y, 4, 0, &f) == MFU_OK);
    CHECK(f == 15552);

    /* grouped: x [1, 4, 5], w [6, 2, 3] (groups 2), out [1, 6, 3]
     * 2 * 1 * 3 * 6 * (4 / 2 = 2) * 3 = 216 */
    const int64_t gx[3] = {1, 4, 5}, gw[3] = {6, 2, 3}, gy[3] = {1, 6, 3};
    CHECK(mfu_convolution_flop(gx, gw, gy, 3, 0, &f) == MFU_OK);
    CHECK(f == 216);

    /* transposed 1-d: x [1, 2, 3], w [2, 5, 2] (c_in 2, c_out 5), out
     * [1, 5, 4]; every input point scatters: 2 * 1 * 3 * 2 * 5 * 2 = 120 */
    const int64_t tx[3] = {1, 2, 3}, tw[3] = {2, 5, 2}, ty[3] = {1, 5, 4};
    CHECK(mfu_convolution_flop(tx, tw, ty, 3, 1, &f) == MFU_OK);
    CHECK(f == 120);

    /* backward, groups 1: input grad 15,552 + weight grad 15,552 */
    CHECK(mfu_convolution_backward_flop(y, x, w, 4, 0, 1, 1, 1, &f) == MFU_OK);
    CHECK(f == 2 * 15552);
    CHECK(mfu_convolution_backward_flop(y, x, w, 4, 0, 1, 1, 0, &f) == MFU_OK);
    CHECK(f == 15552);
    CHECK(mfu_convolution_backward_flop(y, x, w, 4, 0, 1, 0, 1, &f) == MFU_OK);
    CHECK(f == 15552);
    CHECK(mfu_convolution_backward_flop(y, x, w, 4, 0, 1, 0, 0, &f) == MFU_OK);
    CHECK(f == 0);

    /* grouped backward: true count = 216 + 216 = 432; with groups = 1 it is
     * FlopCounterMode's (weight grad 2 * 1 * 4 * 6 * 3 * 3 = 432): 648 */
    CHECK(mfu_convolution_backward_flop(gy, gx, gw, 3, 0, 2, 1, 1, &f) == MFU_OK);
    CHECK(f == 432);
    CHECK(mfu_convolution_backward_flop(gy, gx, gw, 3, 0, 1, 1, 1, &f) == MFU_OK);
    CHECK(f == 648);

    /* transposed backward: each = forward 120 */
    CHECK(mfu_convolution_backward_flop(ty, tx, tw, 3, 1, 1, 1, 1, &f) == MFU_OK);
    CHECK(f == 240);

    /* invalid: rank 2, negative dims, groups not dividing channels */
    CHECK(mfu_convolution_flop(x, w, y, 2, 0, &f) == MFU_ERR_INVALID_ARGUMENT);
    const int64_t neg[4] = {2, -3, 8, 8};
    CHECK(mfu_convolution_flop(neg, w, y, 4, 0, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_convolution_backward_flop(gy, gx, gw, 3, 0, 3, 1, 1, &f) ==
          MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_convolution_backward_flop(gy, gx, gw, 3, 0, 0, 1, 1, &f) ==
          MFU_ERR_INVALID_ARGUMENT);
    /* overflow: 2 * 2^20 * 2^20 * 2^20 * ... */
    const int64_t bx[4] = {1 << 20, 1 << 20, 8, 8};
    const int64_t bw[4] = {1 << 20, 1 << 20, 3, 3};
    const int64_t by[4] = {1 << 20, 1 << 20, 6, 6};
    CHECK(mfu_convolution_flop(bx, bw, by, 4, 0, &f) == MFU_ERR_OVERFLOW);
}

static void test_attention(void)
{
    int64_t f = -1;
    /* q [2, 8, 16, 64], k/v [2, 2, 16, 64] (GQA 4:1) */
    mfu_attention_shape s = {.batch = 2, .heads_q = 8, .heads_kv = 2,
                             .seq_q = 16, .seq_kv = 16, .head_dim_qk = 64,
                             .head_dim_v = 64};
    /* 2*2*8*16*16*64 + same = 524,288 + 524,288 = 1,048,576 */
    CHECK(mfu_sdpa_flop(&s, MFU_CAUSAL_FULL, &f) == MFU_OK);
    CHECK(f == 1048576);
    CHECK(mfu_sdpa_flop(&s, MFU_CAUSAL_HALF, &f) == MFU_OK);
    CHECK(f == 524288); /* exactly half */
    /* backward executed: 2*2*8*16*16*(3*64 + 2*64) = 8,192 * 320 = 2,621,440
     * = 2.5x forward */
    CHECK(mfu_sdpa_backward_flop(&s, MFU_CAUSAL_FULL, &f) == MFU_OK);
    CHECK(f == 2621440);
    CHECK(mfu_sdpa_backward_flop(&s, MFU_CAUSAL_HALF, &f) == MFU_OK);
    CHECK(f == 1310720);

    /* s_q != s_kv, d_qk != d_v: q [1, 2, 3, 4], k [1, 1, 5, 4], v [1, 1, 5, 6]
     * FULL: 2*1*2*3*5*4 + 2*1*2*3*5*6 = 240 + 360 = 600; HALF: 300 */
    mfu_attention_shape r = {.batch = 1, .heads_q = 2, .heads_kv = 1,
                             .seq_q = 3, .seq_kv = 5, .head_dim_qk = 4,
                             .head_dim_v = 6};
    CHECK(mfu_sdpa_flop(&r, MFU_CAUSAL_FULL, &f) == MFU_OK);
    CHECK(f == 600);
    CHECK(mfu_sdpa_flop(&r, MFU_CAUSAL_HALF, &f) == MFU_OK);
    CHECK(f == 300);
    /* odd rectangle, HALF still exact: q [1,1,3,1], kv [1,1,3,1]:
     * FULL 2*9*1 + 2*9*1 = 36, HALF 18 */
    mfu_attention_shape o = {1, 1, 1, 3, 3, 1, 1};
    CHECK(mfu_sdpa_flop(&o, MFU_CAUSAL_HALF, &f) == MFU_OK);
    CHECK(f == 18);

    /* invalid: kv heads not dividing q heads, negative, bad enum */
    mfu_attention_shape bad = s;
    bad.heads_kv = 3;
    CHECK(mfu_sdpa_flop(&bad, MFU_CAUSAL_FULL, &f) == MFU_ERR_INVALID_ARGUMENT);
    bad = s;
    bad.seq_q = -1;
    CHECK(mfu_sdpa_flop(&bad, MFU_CAUSAL_FULL, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_sdpa_flop(&s, (mfu_causal)7, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_sdpa_flop(NULL, MFU_CAUSAL_FULL, &f) == MFU_ERR_INVALID_ARGUMENT);
    /* overflow: b = h = s = 2^20 */
    mfu_attention_shape huge = {1 << 20, 1 << 20, 1, 1 << 20, 1 << 20, 128, 128};
    CHECK(mfu_sdpa_flop(&huge, MFU_CAUSAL_FULL, &f) == MFU_ERR_OVERFLOW);
}

static void test_varlen(void)
{
    int64_t f = -1, g = -1;
    /* lengths 3, 5, 0, 2; h 4, h_kv 2, d 8:
     * sum s^2 = 9 + 25 + 0 + 4 = 38; forward = 2*4*38*8*2 = 4,864 */
    const int64_t cu[5] = {0, 3, 8, 8, 10};
    CHECK(mfu_varlen_attention_flop(cu, NULL, 5, 4, 2, 8, 8, MFU_CAUSAL_FULL,
                                    &f) == MFU_OK);
    CHECK(f == 4864);
    CHECK(mfu_varlen_attention_flop(cu, cu, 5, 4, 2, 8, 8, MFU_CAUSAL_HALF,
                                    &f) == MFU_OK);
    CHECK(f == 2432);
    /* backward: 2*4*38*(3*8 + 2*8) = 12,160 */
    CHECK(mfu_varlen_attention_backward_flop(cu, NULL, 5, 4, 2, 8, 8,
                                             MFU_CAUSAL_FULL, &f) == MFU_OK);
    CHECK(f == 12160);

    /* the sum over sequences equals per-sequence sdpa calls */
    mfu_attention_shape one = {1, 4, 2, 5, 5, 8, 8};
    CHECK(mfu_sdpa_flop(&one, MFU_CAUSAL_FULL, &g) == MFU_OK);
    CHECK(g == 2 * 4 * 25 * 8 * 2); /* 3,200 of the 4,864 */

    /* cross attention q lengths 1, 2 against k lengths 4, 4:
     * 2*1*(1*4 + 2*4)*(8+8) = 2*12*16 = 384 */
    const int64_t cq[3] = {0, 1, 3}, ck[3] = {0, 4, 8};
    CHECK(mfu_varlen_attention_flop(cq, ck, 3, 1, 1, 8, 8, MFU_CAUSAL_FULL,
                                    &f) == MFU_OK);
    CHECK(f == 384);

    /* no sequences: 0 */
    CHECK(mfu_varlen_attention_flop(cu, NULL, 1, 4, 2, 8, 8, MFU_CAUSAL_FULL,
                                    &f) == MFU_OK);
    CHECK(f == 0);
    /* decreasing offsets, negative offsets */
    const int64_t dec[3] = {0, 5, 3}, negc[2] = {-1, 3};
    CHECK(mfu_varlen_attention_flop(dec, NULL, 3, 4, 2, 8, 8, MFU_CAUSAL_FULL,
                                    &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_varlen_attention_flop(negc, NULL, 2, 4, 2, 8, 8, MFU_CAUSAL_FULL,
                                    &f) == MFU_ERR_INVALID_ARGUMENT);
}

/* ---- masked and block attention ------------------------------------------- */

/* Twice the pairs a (s_q, s_k) sequence counts, by brute force: the
 * normalisation and the two rules of flops.h, query by query. */
static int64_t brute_twice_pairs(int64_t sq, int64_t sk, mfu_attention_mask m, int half)
{
    const int64_t l = m.window_left, r = m.window_right, c = m.chunk > 0 ? m.chunk : 0;
    int64_t total = 0;
    if (sq == 0 || sk == 0)
        return 0;
    if (l < 0 && c == 0 && r <= 0) /* none, or plain causal */
        return r == 0 && half ? sq * sk : 2 * sq * sk;
    for (int64_t i = 0; i < sq; i++) {
        const int64_t p = i + sk - sq;
        int64_t lo = 0, hi = sk - 1, kept = 0;
        if (c > 0) {
            const int64_t c0 = (p >= 0 ? p / c : -((-p + c - 1) / c)) * c;
            lo = c0 > lo ? c0 : lo;
            hi = c0 + c - 1 < hi ? c0 + c - 1 : hi;
        }
        for (int64_t j = lo; j <= hi; j++)
            kept += (l < 0 || j >= p - l) && (r < 0 || j <= p + r);
        if (half) {
            total += kept;
        } else {
            const int64_t region = hi - lo + 1 > 0 ? hi - lo + 1 : 0;
            const int64_t span = l < 0 || r < 0 ? region : l + 1 + r;
            total += span < region ? span : region;
        }
    }
    return 2 * total;
}

static void test_masked_attention(void)
{
    /* d_qk 1, d_v 0, b 1, h 1: the flops are twice the pairs */
    const mfu_attention_shape unit = {1, 1, 1, 8, 8, 1, 0};
    mfu_attention_shape s = {2, 4, 2, 8, 8, 16, 16};
    const mfu_attention_mask none = {-1, -1, 0}, causal = {-1, 0, 0};
    const mfu_attention_mask window3 = {2, 0, 0}; /* causal, 3 keys */
    int64_t f = -1, g = -1;

    /* no mask and plain causal: the SDPA formula, half halving causal only */
    for (int half = 0; half < 2; half++) {
        const mfu_causal cv = half ? MFU_CAUSAL_HALF : MFU_CAUSAL_FULL;
        CHECK(mfu_masked_attention_flop(&s, &none, cv, &f) == MFU_OK &&
              mfu_sdpa_flop(&s, MFU_CAUSAL_FULL, &g) == MFU_OK && f == g);
        CHECK(mfu_masked_attention_flop(&s, &causal, cv, &f) == MFU_OK &&
              mfu_sdpa_flop(&s, cv, &g) == MFU_OK && f == g);
        CHECK(mfu_masked_attention_backward_flop(&s, &causal, cv, &f) == MFU_OK &&
              mfu_sdpa_backward_flop(&s, cv, &g) == MFU_OK && f == g);
    }
    /* causal window of 3 keys, s 8: full 8 * 3 = 24 pairs,
     * 2 * 2 * 4 * 24 * (16 + 16) = 12,288; half 1 + 2 + 3 * 6 = 21: 10,752 */
    CHECK(mfu_masked_attention_flop(&s, &window3, MFU_CAUSAL_FULL, &f) == MFU_OK && f == 12288);
    CHECK(mfu_masked_attention_flop(&s, &window3, MFU_CAUSAL_HALF, &f) == MFU_OK && f == 10752);
    /* backward: 2 * 2 * 4 * 24 * (3 * 16 + 2 * 16) = 30,720 */
    CHECK(mfu_masked_attention_backward_flop(&s, &window3, MFU_CAUSAL_FULL, &f) == MFU_OK &&
          f == 30720);
    /* a window as wide as the sequence keeps every earlier key: full the
     * square, half the kept pairs 8 * 9 / 2 = 36 (not plain causal's 32) */
    const mfu_attention_mask wide = {7, 0, 0};
    CHECK(mfu_masked_attention_flop(&s, &wide, MFU_CAUSAL_FULL, &f) == MFU_OK &&
          mfu_sdpa_flop(&s, MFU_CAUSAL_FULL, &g) == MFU_OK && f == g);
    CHECK(mfu_masked_attention_flop(&s, &wide, MFU_CAUSAL_HALF, &f) == MFU_OK &&
          f == 2 * 2 * 4 * 36 * 32);
    /* s 7: a two-sided window (2, 2): full 7 * 5 = 35, half 3+4+5+5+5+4+3 = 29;
     * chunks of 4, causal: full 4 * 4 + 3 * 3 = 25, half 10 + 6 = 16 */
    const mfu_attention_shape u7 = {1, 1, 1, 7, 7, 1, 0};
    const mfu_attention_mask sides = {2, 2, 0}, chunk4 = {-1, 0, 4};
    CHECK(mfu_masked_attention_flop(&u7, &sides, MFU_CAUSAL_FULL, &f) == MFU_OK && f == 70);
    CHECK(mfu_masked_attention_flop(&u7, &sides, MFU_CAUSAL_HALF, &f) == MFU_OK && f == 58);
    CHECK(mfu_masked_attention_flop(&u7, &chunk4, MFU_CAUSAL_FULL, &f) == MFU_OK && f == 50);
    CHECK(mfu_masked_attention_flop(&u7, &chunk4, MFU_CAUSAL_HALF, &f) == MFU_OK && f == 32);
    /* 2 queries at the end of 8 keys, causal window of 3: keys 4..6 and
     * 5..7, 3 each, under both conventions */
    const mfu_attention_shape q2 = {1, 1, 1, 2, 8, 1, 0};
    CHECK(mfu_masked_attention_flop(&q2, &window3, MFU_CAUSAL_HALF, &f) == MFU_OK && f == 12);
    CHECK(mfu_masked_attention_flop(&q2, &window3, MFU_CAUSAL_FULL, &f) == MFU_OK && f == 12);
    /* every small case against the brute force */
    for (int64_t sq = 0; sq <= 9; sq++)
        for (int64_t sk = 0; sk <= 9; sk++)
            for (int64_t l = -1; l <= 9; l++)
                for (int64_t r = -1; r <= 9; r++)
                    for (int64_t c = 0; c <= 5; c++)
                        for (int half = 0; half < 2; half++) {
                            const mfu_attention_mask m = {l, r, c};
                            mfu_attention_shape x = unit;
                            x.seq_q = sq;
                            x.seq_kv = sk;
                            CHECK(mfu_masked_attention_flop(
                                      &x, &m, half ? MFU_CAUSAL_HALF : MFU_CAUSAL_FULL, &f) ==
                                      MFU_OK &&
                                  f == brute_twice_pairs(sq, sk, m, half));
                        }
    /* varlen: the sum over sequences (3 and 7, causal window 3): full 9 + 21,
     * half 6 + 18 (twice: 48) */
    const int64_t cu[3] = {0, 3, 10};
    CHECK(mfu_varlen_masked_attention_flop(cu, NULL, 3, 1, 1, 1, 0, &window3,
                                           MFU_CAUSAL_FULL, &f) == MFU_OK && f == 60);
    CHECK(mfu_varlen_masked_attention_flop(cu, NULL, 3, 1, 1, 1, 0, &window3,
                                           MFU_CAUSAL_HALF, &f) == MFU_OK && f == 48);
    /* errors: no mask, a bad shape, decreasing offsets; a count past int64
     * (2^62 queries x 3 keys, twice: 6 x 2^62) */
    CHECK(mfu_masked_attention_flop(&s, NULL, MFU_CAUSAL_FULL, &f) == MFU_ERR_INVALID_ARGUMENT);
    const int64_t down[3] = {0, 5, 3};
    CHECK(mfu_varlen_masked_attention_flop(down, NULL, 3, 1, 1, 1, 0, &window3, MFU_CAUSAL_FULL,
                                           &f) == MFU_ERR_INVALID_ARGUMENT);
    mfu_attention_shape huge = unit;
    huge.seq_q = huge.seq_kv = (int64_t)1 << 62;
    CHECK(mfu_masked_attention_flop(&huge, &window3, MFU_CAUSAL_FULL, &f) == MFU_ERR_OVERFLOW);
    huge.batch = 0; /* no work: 0, never refused */
    CHECK(mfu_masked_attention_flop(&huge, &window3, MFU_CAUSAL_FULL, &f) == MFU_OK && f == 0);
}

/* The pairs rule itself (pairs.h), which masked / varlen attention and the
 * analytic spans call: exact at any length, by hand. */
static void test_attention_pairs(void)
{
    const mfu_attention_mask none = {-1, -1, 0}, causal = {-1, 0, 0}, window3 = {2, 0, 0};
    const mfu_attention_mask sides = {2, 2, 0}, w4096 = {4095, 0, 0};
    const mfu_pair_count untouched = {7, 7};
    mfu_pair_count p = untouched;
    int64_t f = -1;

    /* s 7, a two-sided window (2, 2): full 7 * 5 = 35 pairs, half
     * 3+4+5+5+5+4+3 = 29; twice: 70 and 58 */
    CHECK(mfu_attention_pairs(7, 7, &sides, MFU_CAUSAL_FULL, &p) == MFU_OK && p.hi == 0 &&
          p.lo == 70);
    CHECK(mfu_attention_pairs(7, 7, &sides, MFU_CAUSAL_HALF, &p) == MFU_OK && p.lo == 58);
    /* plain causal, 3 x 5: half of 15 pairs is 7.5, twice 15 (exact) */
    CHECK(mfu_attention_pairs(3, 5, &causal, MFU_CAUSAL_HALF, &p) == MFU_OK && p.lo == 15);
    CHECK(mfu_attention_pairs(3, 5, &none, MFU_CAUSAL_HALF, &p) == MFU_OK && p.lo == 30);
    /* one query at the end of 2^62 + 5 keys, a causal window of 3: keys
     * 2^62 + 2 .. 2^62 + 4, 3 pairs (twice 6) under both conventions; the
     * op formula counts it (d_qk 1, d_v 0, b 1, h 1: flops = twice) */
    const int64_t big_k = ((int64_t)1 << 62) + 5;
    CHECK(mfu_attention_pairs(1, big_k, &window3, MFU_CAUSAL_HALF, &p) == MFU_OK && p.lo == 6);
    CHECK(mfu_attention_pairs(1, big_k, &window3, MFU_CAUSAL_FULL, &p) == MFU_OK && p.lo == 6);
    const mfu_attention_shape decode = {1, 1, 1, 1, big_k, 1, 0};
    CHECK(mfu_masked_attention_flop(&decode, &window3, MFU_CAUSAL_HALF, &f) == MFU_OK && f == 6);
    /* s = 2^62, a causal window of 4,096: full 2^62 * 4,096 = 2^74 pairs,
     * twice 2^75 = 2,048 * 2^64; half 4,096 * 4,097 / 2 + (2^62 - 4,096) *
     * 4,096 = 2^74 - 8,386,560, twice 2^75 - 16,773,120 = 2,047 * 2^64 +
     * (2^64 - 16,773,120) */
    const int64_t s62 = (int64_t)1 << 62;
    CHECK(mfu_attention_pairs(s62, s62, &w4096, MFU_CAUSAL_FULL, &p) == MFU_OK && p.hi == 2048 &&
          p.lo == 0);
    CHECK(mfu_attention_pairs(s62, s62, &w4096, MFU_CAUSAL_HALF, &p) == MFU_OK && p.hi == 2047 &&
          p.lo == UINT64_MAX - 16773120u + 1u);
    CHECK(mfu_pair_count_double(p) == 37778931862957144936448.0); /* 2^75 - 16,773,120 */
    /* int64 conversion: INT64_MAX fits, 2^63 and 2^64 do not */
    const mfu_pair_count max = {0, (uint64_t)INT64_MAX}, over = {0, (uint64_t)1 << 63};
    const mfu_pair_count high = {1, 0};
    CHECK(mfu_pair_count_i64(max, &f) == MFU_OK && f == INT64_MAX);
    f = -1;
    CHECK(mfu_pair_count_i64(over, &f) == MFU_ERR_OVERFLOW && f == -1);
    CHECK(mfu_pair_count_i64(high, &f) == MFU_ERR_OVERFLOW && f == -1);
    CHECK(mfu_pair_count_double(high) == 18446744073709551616.0); /* 2^64 */
    /* bad input: the output untouched */
    p = untouched;
    CHECK(mfu_attention_pairs(-1, 4, &none, MFU_CAUSAL_FULL, &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_attention_pairs(4, -1, &none, MFU_CAUSAL_FULL, &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_attention_pairs(4, 4, NULL, MFU_CAUSAL_FULL, &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_attention_pairs(4, 4, &none, (mfu_causal)2, &p) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_attention_pairs(4, 4, &none, MFU_CAUSAL_FULL, NULL) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(p.hi == 7 && p.lo == 7);
}

/* Varlen masked attention (the op path's varlen count) reads the key
 * lengths from cu_seqlens_k, not cu_seqlens_q. */
static void test_varlen_masked_keys_from_cu_seqlens_k(void)
{
    /* queries 3 and 7 (cu_q 0, 3, 10) against keys 5 and 3 (cu_k 0, 5, 8);
     * h 1, d_qk 1, d_v 0: flops = twice the pairs */
    const int64_t cq[3] = {0, 3, 10}, ck[3] = {0, 5, 8};
    const mfu_attention_mask none = {-1, -1, 0}, window3 = {2, 0, 0};
    int64_t f = -1;
    /* no mask: 3 * 5 + 7 * 3 = 36 pairs, 72 (with the query lengths as
     * keys it would be 9 + 49 = 58, 116) */
    CHECK(mfu_varlen_masked_attention_flop(cq, ck, 3, 1, 1, 1, 0, &none, MFU_CAUSAL_FULL,
                                           &f) == MFU_OK && f == 72);
    /* a causal window of 3, half: sequence 1, queries at key positions 2, 3,
     * 4 keep 3 keys each: 9; sequence 2, queries at -4 .. 2 over 3 keys keep
     * 0, 0, 0, 0, 1, 2, 3: 6 -> 15 pairs, 30 (as 3x3 and 7x7 it would be
     * 6 + 18 = 24, 48) */
    CHECK(mfu_varlen_masked_attention_flop(cq, ck, 3, 1, 1, 1, 0, &window3, MFU_CAUSAL_HALF,
                                           &f) == MFU_OK && f == 30);
    /* backward, no mask: 36 pairs * 2 * 3 (3 d_qk) = 216 */
    CHECK(mfu_varlen_masked_attention_backward_flop(cq, ck, 3, 1, 1, 1, 0, &none,
                                                    MFU_CAUSAL_FULL, &f) == MFU_OK && f == 216);
}

static void test_block_attention(void)
{
    /* 10 queries, 8 keys, blocks of 4 queries x 4 keys: query blocks of 4,
     * 4 and 2 tokens; row 0 computes key block 0, row 1 blocks 0 and 1
     * (block 1 full), row 2 block 1: 4*4 + 4*8 + 2*4 = 56 pairs */
    const mfu_attention_shape s = {2, 4, 2, 10, 8, 16, 16};
    const int64_t num[3] = {1, 1, 1}, idx[6] = {0, 9, 0, 9, 1, 9};
    const int64_t full_num[3] = {0, 1, 0}, full_idx[6] = {9, 9, 1, 9, 9, 9};
    mfu_block_mask m = {.batch = 1, .heads = 1, .q_blocks = 3, .q_block_size = 4,
                        .kv_block_size = 4, .num_blocks = num, .indices = idx, .kv_blocks = 2,
                        .full_num_blocks = full_num, .full_indices = full_idx,
                        .full_kv_blocks = 2};
    int64_t f = -1;
    /* broadcast over b 2 and h 4: 2 * 2 * 4 * 56 * (16 + 16) = 28,672 */
    CHECK(mfu_block_attention_flop(&s, &m, &f) == MFU_OK && f == 28672);
    /* backward: 2 * 2 * 4 * 56 * (3 * 16 + 2 * 16) = 71,680 */
    CHECK(mfu_block_attention_backward_flop(&s, &m, &f) == MFU_OK && f == 71680);
    /* one block over everything: the SDPA formula */
    const int64_t one[1] = {1}, zero[1] = {0};
    const mfu_block_mask all = {.batch = 1, .heads = 1, .q_blocks = 1,
                                .q_block_size = (int64_t)1 << 30, .kv_block_size = (int64_t)1 << 30,
                                .num_blocks = one, .indices = zero, .kv_blocks = 1};
    int64_t g = -1;
    CHECK(mfu_block_attention_flop(&s, &all, &f) == MFU_OK &&
          mfu_sdpa_flop(&s, MFU_CAUSAL_FULL, &g) == MFU_OK && f == g);
    /* an index past the keys adds nothing; a negative one or a count past
     * the row is refused; so is a mask batch that does not divide */
    const int64_t past[6] = {5, 9, 0, 9, 1, 9};
    m.indices = past;
    CHECK(mfu_block_attention_flop(&s, &m, &f) == MFU_OK && f == 2 * 2 * 4 * 40 * 32);
    const int64_t negative[6] = {-1, 9, 0, 9, 1, 9}, too_many[3] = {3, 1, 1};
    m.indices = negative;
    CHECK(mfu_block_attention_flop(&s, &m, &f) == MFU_ERR_INVALID_ARGUMENT);
    m.indices = idx;
    m.num_blocks = too_many;
    CHECK(mfu_block_attention_flop(&s, &m, &f) == MFU_ERR_INVALID_ARGUMENT);
    m.num_blocks = num;
    m.batch = 3;
    CHECK(mfu_block_attention_flop(&s, &m, &f) == MFU_ERR_INVALID_ARGUMENT);
    CHECK(mfu_block_attention_flop(&s, NULL, &f) == MFU_ERR_INVALID_ARGUMENT);
}

/* Regressions found by tests/c/fuzz/fuzz_flops.c: overflow is judged on
 * the exact count, never on a partial product, and every dimension is
 * checked. Each case is a corpus entry of fuzz_flops too. */
static void test_fuzz_regressions(void)
{
    const int64_t two62 = INT64_C(1) << 62;
    int64_t f = -1;

    /* A zero dimension makes the count 0 however large the others
     * (2 * 2^62 alone would not fit). corpus: mm_zero_dim_huge_others */
    CHECK(mfu_mm_flop(two62, 0, 4, &f) == MFU_OK && f == 0);
    CHECK(mfu_bmm_flop(0, INT64_MAX, INT64_MAX, INT64_MAX, &f) == MFU_OK && f == 0);
    {
        /* zero kernel width, 2^40 x 2^40 output points:
         * corpus conv_zero_kernel_huge_out */
        const int64_t x[4] = {1, 3, 8, 8}, w[4] = {64, 3, 0, 7};
        const int64_t out[4] = {1, 64, INT64_C(1) << 40, INT64_C(1) << 40};
        f = -1;
        CHECK(mfu_convolution_flop(x, w, out, 4, 0, &f) == MFU_OK && f == 0);
        f = -1;
        CHECK(mfu_convolution_backward_flop(out, x, w, 4, 0, 1, 1, 1, &f) ==
                  MFU_OK && f == 0);
    }
    {
        /* zero head dims under an overflowing rectangle:
         * corpus sdpa_zero_dims_huge_rect */
        const mfu_attention_shape s = {INT64_MAX, 1, 1, INT64_MAX, INT64_MAX, 0, 0};
        f = -1;
        CHECK(mfu_sdpa_flop(&s, MFU_CAUSAL_FULL, &f) == MFU_OK && f == 0);
    }
    {
        /* FULL = 2 * 2^31 * 2^30 * (1 + 1) = 2^63 does not fit, HALF = 2^62
         * does: corpus sdpa_half_fits_full_not */
        const mfu_attention_shape s = {1, 1, 1, INT64_C(1) << 31,
                                       INT64_C(1) << 30, 1, 1};
        CHECK(mfu_sdpa_flop(&s, MFU_CAUSAL_FULL, &f) == MFU_ERR_OVERFLOW);
        f = -1;
        CHECK(mfu_sdpa_flop(&s, MFU_CAUSAL_HALF, &f) == MFU_OK && f == two62);
    }
    {
        /* grouped_mm: a negative G is invalid even where the count does not
         * use it. corpus: grouped_negative_groups, grouped_negative_g_3x2 */
        const int64_t a2[2] = {64, 32}, b3[3] = {-8, 32, 16};
        const int64_t a3[3] = {-1, 64, 32}, b2[2] = {32, 16};
        CHECK(mfu_grouped_mm_flop(a2, 2, b3, 3, &f) == MFU_ERR_INVALID_ARGUMENT);
        CHECK(mfu_grouped_mm_flop(a3, 3, b2, 2, &f) == MFU_ERR_INVALID_ARGUMENT);
    }
    /* the exact edge still overflows: 2 * 1 * 1 * 2^62 = 2^63 */
    CHECK(mfu_mm_flop(1, 1, two62, &f) == MFU_ERR_OVERFLOW);
    CHECK(mfu_mm_flop(1, 1, two62 - 1, &f) == MFU_OK && f == INT64_MAX - 1);
}

static void test_sdpa_model_flop(void)
{
    /* b 2, h 8, s 128, d 64: forward 4 * 2 * 128^2 * 8 * 64 = 67,108,864 */
    const mfu_attention_shape s = {2, 8, 8, 128, 128, 64, 64};
    int64_t f = -1;
    CHECK(mfu_sdpa_model_flop(&s, MFU_CAUSAL_FULL, 0, &f) == MFU_OK && f == 67108864);
    /* + MFU_ATTENTION_MODEL_BACKWARD (2) forwards = 3x */
    CHECK(mfu_sdpa_model_flop(&s, MFU_CAUSAL_FULL, 1, &f) == MFU_OK &&
          f == 3 * INT64_C(67108864));
    CHECK(mfu_sdpa_model_flop(&s, MFU_CAUSAL_HALF, 1, &f) == MFU_OK &&
          f == 3 * INT64_C(33554432));
    CHECK(mfu_sdpa_model_flop(&s, MFU_CAUSAL_FULL, 2, &f) == MFU_ERR_INVALID_ARGUMENT);
    {
        /* forward 2^62 fits, 3x does not */
        const mfu_attention_shape big = {1, 1, 1, INT64_C(1) << 30, INT64_C(1) << 30, 1, 1};
        CHECK(mfu_sdpa_model_flop(&big, MFU_CAUSAL_FULL, 0, &f) == MFU_OK &&
              f == INT64_C(1) << 62);
        CHECK(mfu_sdpa_model_flop(&big, MFU_CAUSAL_FULL, 1, &f) == MFU_ERR_OVERFLOW);
    }
}

int main(void)
{
    test_matmul_family();
    test_grouped_mm();
    test_overflow_and_invalid();
    test_convolution();
    test_attention();
    test_varlen();
    test_masked_attention();
    test_attention_pairs();
    test_varlen_masked_keys_from_cu_seqlens_k();
    test_block_attention();
    test_sdpa_model_flop();
    test_fuzz_regressions();
    return check_summary("test_flops");
}
