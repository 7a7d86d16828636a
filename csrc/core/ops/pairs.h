/*
 * pairs.h -- the attention pairs rule: how many (query, key) pairs one head
 * counts for one sequence under a mask (a window, a chunk, causal) and a
 * causal convention. It lives here once; the op formulas (flops.h: masked
 * and varlen attention, exact int64) and the analytic spans (spans.h:
 * doubles) both call mfu_attention_pairs.
 *
 * The rule (the mask as flops.h's mfu_attention_mask describes it: query i
 * of s_q sits at key position p = i + s_k - s_q and sees the keys j,
 * 0 <= j < s_k, with p - left <= j <= p + right, inside p's chunk):
 *   no mask   (left < 0, right < 0, no chunk)  s_q * s_k, either convention
 *   causal    (left < 0, right == 0, no chunk) s_q * s_k; HALF: exactly half
 *   a window or a chunk (anything else):
 *     FULL    each query its whole span, min(left + 1 + right, its region),
 *             an unbounded side adding no limit, the region being its
 *             chunk's keys (all s_k keys without a chunk);
 *     HALF    the pairs the mask keeps.
 * A call that carries a window or a chunk counts by the window rule even
 * when it keeps every key (w >= s: FULL s^2, HALF s(s + 1)/2), as the
 * analytic count does for a windowed layer (spans.h): only a plain causal
 * call (or one whose framework dropped the window, as transformers does at
 * s <= w) takes the HALF convention of plain causal, half the square
 * (Megatron's), not the kept pairs. FULL >= HALF always.
 *
 * The count is exact for every s_q, s_k, window and chunk an int64 holds:
 * it is at most 2 * s_q * s_k < 2^127 and is returned as a 128-bit integer
 * (two words), so nothing overflows here; each caller converts it: the op
 * formulas to int64 (MFU_ERR_OVERFLOW when it does not fit), the analytic
 * count to a double (exact below 2^53).
 */
#ifndef MFU_PAIRS_H
#define MFU_PAIRS_H

#include <stdint.h>

#include "flops.h"
#include "mfu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A non-negative integer below 2^128: hi * 2^64 + lo. */
typedef struct mfu_pair_count {
    uint64_t hi;
    uint64_t lo;
} mfu_pair_count;

/* Twice the pairs of one sequence of s_q queries and s_k keys under `mask`
 * and `causal` (the rule above; twice, so HALF of plain causal stays an
 * integer for odd s_q * s_k). INVALID for a negative length, a NULL mask or
 * output, or a causal convention that is neither FULL nor HALF; the output
 * is written only on MFU_OK. */
mfu_status mfu_attention_pairs(int64_t s_q, int64_t s_k, const mfu_attention_mask *mask,
                               mfu_causal causal, mfu_pair_count *twice);

/* `count` as an int64: MFU_ERR_OVERFLOW (output untouched) above INT64_MAX. */
mfu_status mfu_pair_count_i64(mfu_pair_count count, int64_t *out);

/* `count` as a double: exact below 2^53, within a few ulps above. */
double mfu_pair_count_double(mfu_pair_count count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MFU_PAIRS_H */
