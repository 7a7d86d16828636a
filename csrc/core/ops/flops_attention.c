/* flops_attention.c -- attention FLOP formulas: SDPA, varlen, masked
 * (windows, chunks) and block-sparse (see flops.h). */
#include "checked.h"
#include "flops.h"
#include "pairs.h"

static mfu_status attention_shape_ok(const mfu_attention_shape *s,
                                     mfu_causal causal)
{
    if (s == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (causal != MFU_CAUSAL_FULL && causal != MFU_CAUSAL_HALF)
        return MFU_ERR_INVALID_ARGUMENT;
    if (s->batch < 0 || s->seq_q < 0 || s->seq_kv < 0 || s->head_dim_qk < 0 ||
        s->head_dim_v < 0)
        return MFU_ERR_INVALID_ARGUMENT;
    /* GQA: h_kv >= 1 divides h (FlopCounterMode asserts the same). */
    if (s->heads_q < 1 || s->heads_kv < 1 || s->heads_q % s->heads_kv != 0)
        return MFU_ERR_INVALID_ARGUMENT;
    return MFU_OK;
}

/* 2 * b * h * s_q * s_kv * (qk_weight * d_qk + v_weight * d_v), halved for
 * HALF. Every term carries the factor 2, so HALF drops it: exact, and a
 * HALF count that fits is never refused because FULL would not. Each of
 * the two terms is at most the total, so overflow of either is overflow of
 * the count. */
static mfu_status attention_count(const mfu_attention_shape *s,
                                  mfu_causal causal, int64_t qk_weight,
                                  int64_t v_weight, int64_t *flops)
{
    const int64_t two = causal == MFU_CAUSAL_HALF ? 1 : 2;
    const int64_t qk_factors[7] = {two, s->batch, s->heads_q, s->seq_q,
                                   s->seq_kv, qk_weight, s->head_dim_qk};
    const int64_t v_factors[7] = {two, s->batch, s->heads_q, s->seq_q,
                                  s->seq_kv, v_weight, s->head_dim_v};
    int64_t qk, v;
    mfu_status st;

    if ((st = mfu_product_i64(qk_factors, 7, &qk)) != MFU_OK)
        return st;
    if ((st = mfu_product_i64(v_factors, 7, &v)) != MFU_OK)
        return st;
    return mfu_add_i64(qk, v, flops);
}

mfu_status mfu_sdpa_flop(const mfu_attention_shape *shape, mfu_causal causal,
                         int64_t *flops)
{
    mfu_status st = attention_shape_ok(shape, causal);
    if (st != MFU_OK)
        return st;
    /* QK^T (d_qk) + AV (d_v) */
    return attention_count(shape, causal, 1, 1, flops);
}

mfu_status mfu_sdpa_backward_flop(const mfu_attention_shape *shape,
                                  mfu_causal causal, int64_t *flops)
{
    mfu_status st = attention_shape_ok(shape, causal);
    if (st != MFU_OK)
        return st;
    /* recompute QK^T, dQ, dK: 3 * d_qk; dScores, dV: 2 * d_v */
    return attention_count(shape, causal, 3, 2, flops);
}

static mfu_status varlen_count(const int64_t *cu_q, const int64_t *cu_k,
                               size_t num_offsets, int64_t heads_q,
                               int64_t heads_kv, int64_t head_dim_qk,
                               int64_t head_dim_v, mfu_causal causal,
                               int backward, int64_t *flops)
{
    mfu_attention_shape shape = {
        .batch = 1,
        .heads_q = heads_q,
        .heads_kv = heads_kv,
        .seq_q = 0,
        .seq_kv = 0,
        .head_dim_qk = head_dim_qk,
        .head_dim_v = head_dim_v,
    };
    int64_t total = 0, part;
    mfu_status st;

    if (num_offsets > 0 && cu_q == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (cu_k == NULL)
        cu_k = cu_q;
    /* Validate the shape even when there is no sequence. */
    if ((st = attention_shape_ok(&shape, causal)) != MFU_OK)
        return st;
    for (size_t i = 0; i < num_offsets; i++)
        if (cu_q[i] < 0 || cu_k[i] < 0)
            return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i + 1 < num_offsets; i++) {
        if (cu_q[i + 1] < cu_q[i] || cu_k[i + 1] < cu_k[i])
            return MFU_ERR_INVALID_ARGUMENT;
        shape.seq_q = cu_q[i + 1] - cu_q[i];
        shape.seq_kv = cu_k[i + 1] - cu_k[i];
        st = backward ? mfu_sdpa_backward_flop(&shape, causal, &part)
                      : mfu_sdpa_flop(&shape, causal, &part);
        if (st != MFU_OK)
            return st;
        if ((st = mfu_add_i64(total, part, &total)) != MFU_OK)
            return st;
    }
    *flops = total;
    return MFU_OK;
}

mfu_status mfu_varlen_attention_flop(const int64_t *cu_seqlens_q,
                                     const int64_t *cu_seqlens_k,
                                     size_t num_offsets, int64_t heads_q,
                                     int64_t heads_kv, int64_t head_dim_qk,
                                     int64_t head_dim_v, mfu_causal causal,
                                     int64_t *flops)
{
    return varlen_count(cu_seqlens_q, cu_seqlens_k, num_offsets, heads_q,
                        heads_kv, head_dim_qk, head_dim_v, causal, 0, flops);
}

mfu_status mfu_varlen_attention_backward_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, mfu_causal causal, int64_t *flops)
{
    return varlen_count(cu_seqlens_q, cu_seqlens_k, num_offsets, heads_q,
                        heads_kv, head_dim_qk, head_dim_v, causal, 1, flops);
}

/* ------------------------------------------------------------------------
 * Masked attention: windows, chunks, block masks (flops.h)
 * ------------------------------------------------------------------------ */

static int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Twice the pairs one sequence counts under `mask` (the one rule, pairs.h),
 * as an exact int64: MFU_ERR_OVERFLOW when it does not fit. */
static mfu_status pairs_i64(int64_t s_q, int64_t s_k, const mfu_attention_mask *mask,
                            mfu_causal causal, int64_t *twice)
{
    mfu_pair_count count;
    mfu_status st = mfu_attention_pairs(s_q, s_k, mask, causal, &count);
    return st != MFU_OK ? st : mfu_pair_count_i64(count, twice);
}

/* 2 * b * h * pairs * (qk_weight * d_qk + v_weight * d_v), given
 * `twice_pairs` = 2 * pairs (half of an odd product stays exact). Each term
 * is at most the total: overflow of a term is overflow of the count. */
static mfu_status pair_flops(int64_t twice_pairs, const mfu_attention_shape *s,
                             int64_t qk_weight, int64_t v_weight,
                             int64_t *flops)
{
    const int64_t qk_factors[5] = {twice_pairs, s->batch, s->heads_q,
                                   qk_weight, s->head_dim_qk};
    const int64_t v_factors[5] = {twice_pairs, s->batch, s->heads_q, v_weight,
                                  s->head_dim_v};
    int64_t qk, v;
    mfu_status st;
    if ((st = mfu_product_i64(qk_factors, 5, &qk)) != MFU_OK ||
        (st = mfu_product_i64(v_factors, 5, &v)) != MFU_OK)
        return st;
    return mfu_add_i64(qk, v, flops);
}

/* No work whatever the pairs (a zero batch or head dims): the pairs are
 * then not counted, so a count of 0 is never refused. */
static int no_work(const mfu_attention_shape *s)
{
    return s->batch == 0 || (s->head_dim_qk == 0 && s->head_dim_v == 0);
}

static mfu_status masked_count(const mfu_attention_shape *shape,
                               const mfu_attention_mask *mask, mfu_causal causal,
                               int backward, int64_t *flops)
{
    int64_t twice;
    mfu_status st = attention_shape_ok(shape, causal);
    if (st != MFU_OK)
        return st;
    if (mask == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (no_work(shape)) {
        *flops = 0;
        return MFU_OK;
    }
    if ((st = pairs_i64(shape->seq_q, shape->seq_kv, mask, causal, &twice)) != MFU_OK)
        return st;
    /* QK^T (d_qk) + AV (d_v); backward: recompute QK^T, dQ, dK (3 d_qk),
     * dScores, dV (2 d_v), as mfu_sdpa_backward_flop */
    return backward ? pair_flops(twice, shape, 3, 2, flops)
                    : pair_flops(twice, shape, 1, 1, flops);
}

mfu_status mfu_masked_attention_flop(const mfu_attention_shape *shape,
                                     const mfu_attention_mask *mask,
                                     mfu_causal causal, int64_t *flops)
{
    return masked_count(shape, mask, causal, 0, flops);
}

mfu_status mfu_masked_attention_backward_flop(const mfu_attention_shape *shape,
                                              const mfu_attention_mask *mask,
                                              mfu_causal causal, int64_t *flops)
{
    return masked_count(shape, mask, causal, 1, flops);
}

static mfu_status varlen_masked(const int64_t *cu_q, const int64_t *cu_k,
                                size_t num_offsets, const mfu_attention_shape *heads,
                                const mfu_attention_mask *mask, mfu_causal causal,
                                int backward, int64_t *flops)
{
    int64_t total = 0, twice;
    mfu_status st;

    if ((num_offsets > 0 && cu_q == NULL) || mask == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    if (cu_k == NULL)
        cu_k = cu_q;
    if ((st = attention_shape_ok(heads, causal)) != MFU_OK)
        return st;
    for (size_t i = 0; i < num_offsets; i++)
        if (cu_q[i] < 0 || cu_k[i] < 0 || (i > 0 && (cu_q[i] < cu_q[i - 1] ||
                                                     cu_k[i] < cu_k[i - 1])))
            return MFU_ERR_INVALID_ARGUMENT;
    if (no_work(heads)) {
        *flops = 0;
        return MFU_OK;
    }
    for (size_t i = 0; i + 1 < num_offsets; i++) {
        st = pairs_i64(cu_q[i + 1] - cu_q[i], cu_k[i + 1] - cu_k[i], mask, causal, &twice);
        if (st != MFU_OK || (st = mfu_add_i64(total, twice, &total)) != MFU_OK)
            return st;
    }
    return backward ? pair_flops(total, heads, 3, 2, flops)
                    : pair_flops(total, heads, 1, 1, flops);
}

/* The shape varlen_masked checks: batch 1, the sequences come later. */
static mfu_attention_shape varlen_heads(int64_t heads_q, int64_t heads_kv,
                                        int64_t head_dim_qk, int64_t head_dim_v)
{
    const mfu_attention_shape s = {.batch = 1, .heads_q = heads_q, .heads_kv = heads_kv,
                                   .head_dim_qk = head_dim_qk, .head_dim_v = head_dim_v};
    return s;
}

mfu_status mfu_varlen_masked_attention_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, const mfu_attention_mask *mask, mfu_causal causal,
    int64_t *flops)
{
    const mfu_attention_shape heads = varlen_heads(heads_q, heads_kv, head_dim_qk, head_dim_v);
    return varlen_masked(cu_seqlens_q, cu_seqlens_k, num_offsets, &heads, mask, causal, 0,
                         flops);
}

mfu_status mfu_varlen_masked_attention_backward_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, const mfu_attention_mask *mask, mfu_causal causal,
    int64_t *flops)
{
    const mfu_attention_shape heads = varlen_heads(heads_q, heads_kv, head_dim_qk, head_dim_v);
    return varlen_masked(cu_seqlens_q, cu_seqlens_k, num_offsets, &heads, mask, causal, 1,
                         flops);
}

/* Whether every row lists 0..width blocks with indices >= 0. */
static int rows_ok(const int64_t *num, const int64_t *indices, int64_t rows, int64_t width)
{
    for (int64_t r = 0; r < rows; r++) {
        if (num[r] < 0 || num[r] > width)
            return 0;
        for (int64_t i = 0; i < num[r]; i++)
            if (indices[r * width + i] < 0)
                return 0;
    }
    return 1;
}

/* The key tokens of the listed blocks of one row (the first `num` of
 * `indices`), each clipped to s_kv; an index past the keys adds none. */
static mfu_status row_columns(const int64_t *indices, int64_t num, int64_t s_kv,
                              int64_t block, int64_t *out)
{
    int64_t cols = 0;
    mfu_status st;
    for (int64_t i = 0; i < num; i++) {
        const int64_t kb = indices[i];
        if (kb > (s_kv - 1) / block)
            continue;
        if ((st = mfu_add_i64(cols, min_i64(block, s_kv - kb * block), &cols)) != MFU_OK)
            return st;
    }
    *out = cols;
    return MFU_OK;
}

/* The pairs of every computed block, over the mask's rows. */
static mfu_status block_pairs(const mfu_attention_shape *s, const mfu_block_mask *m,
                              int64_t *out)
{
    int64_t rows_total, pairs = 0, cols, full_cols, part;
    mfu_status st;
    if ((st = mfu_mul_i64(m->batch * m->heads, m->q_blocks, &rows_total)) != MFU_OK)
        return st == MFU_ERR_OVERFLOW ? MFU_ERR_INVALID_ARGUMENT : st;
    if (rows_total > 0 && (m->num_blocks == NULL || (m->kv_blocks > 0 && m->indices == NULL) ||
                           (m->full_num_blocks != NULL && m->full_kv_blocks > 0 &&
                            m->full_indices == NULL)))
        return MFU_ERR_INVALID_ARGUMENT;
    /* every row checked before any sum: bad input is refused as such */
    if (!rows_ok(m->num_blocks, m->indices, rows_total, m->kv_blocks) ||
        (m->full_num_blocks != NULL &&
         !rows_ok(m->full_num_blocks, m->full_indices, rows_total, m->full_kv_blocks)))
        return MFU_ERR_INVALID_ARGUMENT;
    for (int64_t r = 0; r < rows_total; r++) {
        const int64_t qb = r % m->q_blocks;
        /* the query tokens of block qb, clipped to s_q */
        const int64_t rows = qb > (s->seq_q - 1) / m->q_block_size || s->seq_q == 0
                                 ? 0 : min_i64(m->q_block_size, s->seq_q - qb * m->q_block_size);
        st = row_columns(m->indices + r * m->kv_blocks, m->num_blocks[r], s->seq_kv,
                         m->kv_block_size, &cols);
        full_cols = 0;
        if (st == MFU_OK && m->full_num_blocks != NULL)
            st = row_columns(m->full_indices + r * m->full_kv_blocks, m->full_num_blocks[r],
                             s->seq_kv, m->kv_block_size, &full_cols);
        if (st != MFU_OK || (st = mfu_add_i64(cols, full_cols, &cols)) != MFU_OK ||
            (st = mfu_mul_i64(rows, cols, &part)) != MFU_OK ||
            (st = mfu_add_i64(pairs, part, &pairs)) != MFU_OK)
            return st;
    }
    *out = pairs;
    return MFU_OK;
}

static mfu_status block_count(const mfu_attention_shape *shape, const mfu_block_mask *m,
                              int backward, int64_t *flops)
{
    mfu_attention_shape per_row;
    int64_t pairs, twice;
    mfu_status st = attention_shape_ok(shape, MFU_CAUSAL_FULL);
    if (st != MFU_OK)
        return st;
    if (m == NULL || m->batch < 1 || m->heads < 1 || m->q_blocks < 0 || m->kv_blocks < 0 ||
        m->full_kv_blocks < 0 || m->q_block_size < 1 || m->kv_block_size < 1 ||
        shape->batch % m->batch != 0 || shape->heads_q % m->heads != 0 ||
        m->batch > INT64_MAX / m->heads)
        return MFU_ERR_INVALID_ARGUMENT;
    if (no_work(shape)) {
        *flops = 0;
        return MFU_OK;
    }
    if ((st = block_pairs(shape, m, &pairs)) != MFU_OK ||
        (st = mfu_mul_i64(2, pairs, &twice)) != MFU_OK)
        return st;
    /* each of the mask's rows stands for (batch / mask batch) x (heads /
     * mask heads) of the query's */
    per_row = *shape;
    per_row.batch = shape->batch / m->batch;
    per_row.heads_q = shape->heads_q / m->heads;
    return backward ? pair_flops(twice, &per_row, 3, 2, flops)
                    : pair_flops(twice, &per_row, 1, 1, flops);
}

mfu_status mfu_block_attention_flop(const mfu_attention_shape *shape,
                                    const mfu_block_mask *mask, int64_t *flops)
{
    return block_count(shape, mask, 0, flops);
}

mfu_status mfu_block_attention_backward_flop(const mfu_attention_shape *shape,
                                             const mfu_block_mask *mask,
                                             int64_t *flops)
{
    return block_count(shape, mask, 1, flops);
}

mfu_status mfu_sdpa_model_flop(const mfu_attention_shape *shape,
                               mfu_causal causal, int with_backward,
                               int64_t *flops)
{
    int64_t forward = 0, total;
    mfu_status st;
    if (with_backward != 0 && with_backward != 1)
        return MFU_ERR_INVALID_ARGUMENT;
    st = mfu_sdpa_flop(shape, causal, &forward);
    if (st != MFU_OK)
        return st;
    st = mfu_mul_i64(forward, with_backward ? 1 + MFU_ATTENTION_MODEL_BACKWARD : 1,
                     &total);
    if (st == MFU_OK)
        *flops = total;
    return st;
}
