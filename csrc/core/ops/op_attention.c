/*
 * op_attention.c -- counting attention from an op call (see op_internal.h):
 * the mask (causal, window, chunk), dense / packed (varlen) / block-mask
 * shapes by the row's layout, flops.h's formulas under the call's
 * convention, and the model FLOPs and over-compute of a kernel that
 * computes more than the convention counts.
 */
#include "op_internal.h"

/* The call's mask: causal (is_causal, or custom_mask_type != 0 for the
 * efficient kernels), a window and a chunk (flops.h mfu_attention_mask). */
static mfu_attention_mask attention_mask(const mfu_op_spec *spec,
                                         const mfu_op_call *call)
{
    mfu_attention_mask mask = {
        .window_left = mfu_op_int_of(spec, call, MFU_ROLE_WINDOW_LEFT, -1),
        .window_right = mfu_op_int_of(spec, call, MFU_ROLE_WINDOW_RIGHT, -1),
        .chunk = mfu_op_int_of(spec, call, MFU_ROLE_ATTENTION_CHUNK, 0),
    };
    if (mfu_op_int_of(spec, call, MFU_ROLE_IS_CAUSAL, 0) != 0 ||
        mfu_op_int_of(spec, call, MFU_ROLE_CUSTOM_MASK_TYPE, 0) != 0)
        mask.window_right = 0; /* causal: flash-attn sets right = 0 too */
    return mask;
}

/* A cumulative-lengths argument: a 1-D tensor; NULL when absent. */
static mfu_status offsets_of(const mfu_op_spec *spec, const mfu_op_call *call,
                             mfu_op_role role, const mfu_op_arg **out,
                             mfu_op_error *error)
{
    const mfu_op_arg *arg = mfu_op_arg_of(spec, call, role);
    *out = NULL;
    if (arg == NULL || arg->type != MFU_ARG_TENSOR)
        return MFU_OK;
    if (arg->count != 1 || arg->ints == NULL || arg->ints[0] < 0)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, mfu_op_role_name(role),
                           "is not a 1-D tensor");
    *out = arg;
    return MFU_OK;
}

static mfu_status masked_flops(const mfu_attention_shape *shape,
                               const mfu_attention_mask *mask, mfu_causal causal,
                               int backward, int64_t *flops)
{
    return backward ? mfu_masked_attention_backward_flop(shape, mask, causal, flops)
                    : mfu_masked_attention_flop(shape, mask, causal, flops);
}

/* Packed attention: one attention of batch 1 per sequence of the
 * cumulative lengths; q: [total, h, d] (or [1, total, h, d]). */
static mfu_status count_varlen(const mfu_op_spec *spec, const mfu_op_call *call,
                               const mfu_op_arg *const qkv[3],
                               const mfu_op_arg *cu_q,
                               const mfu_attention_mask *mask, mfu_causal causal,
                               int backward, int64_t *flops, int *approximate,
                               mfu_op_error *error)
{
    const mfu_op_arg *q = qkv[0], *k = qkv[1], *v = qkv[2], *cu_k;
    const size_t rank = q->count;
    mfu_status st;

    if (rank != 3 && rank != 4)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "query",
                           "is not [total, h, d] or [1, total, h, d]");
    if (k->count != rank || v->count != rank)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "key",
                           "has a rank unlike query's");
    if ((st = offsets_of(spec, call, MFU_ROLE_CU_SEQLENS_K, &cu_k, error)) != MFU_OK)
        return st;
    const size_t hd = rank - 2; /* the heads dim; the head dim follows */
    const int64_t hq = q->ints[hd], hkv = k->ints[hd];
    const int64_t dqk = q->ints[hd + 1], dv = v->ints[hd + 1];
    const size_t n = (size_t)cu_q->ints[0];

    if (cu_q->values == NULL || (cu_k != NULL && cu_k->values == NULL)) {
        /* Lengths unknown (meta): each of the n - 1 sequences counts
         * max_seqlen, i.e. one attention of batch n - 1. */
        const int64_t max_q = mfu_op_int_of(spec, call, MFU_ROLE_MAX_SEQLEN_Q, 0);
        const mfu_attention_shape shape = {
            .batch = n > 0 ? (int64_t)n - 1 : 0,
            .heads_q = hq,
            .heads_kv = hkv,
            .seq_q = max_q,
            .seq_kv = mfu_op_int_of(spec, call, MFU_ROLE_MAX_SEQLEN_K, max_q),
            .head_dim_qk = dqk,
            .head_dim_v = dv,
        };
        *approximate = 1;
        st = masked_flops(&shape, mask, causal, backward, flops);
    } else {
        if (cu_k != NULL && (size_t)cu_k->ints[0] != n)
            return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "cu_seqlens_k",
                               "has a length unlike cu_seqlens_q's");
        const int64_t *ck = cu_k != NULL ? cu_k->values : NULL;
        st = backward ? mfu_varlen_masked_attention_backward_flop(
                            cu_q->values, ck, n, hq, hkv, dqk, dv, mask, causal, flops)
                      : mfu_varlen_masked_attention_flop(
                            cu_q->values, ck, n, hq, hkv, dqk, dv, mask, causal, flops);
    }
    return mfu_op_formula_status(st, error);
}

/* q, k, v of a dense call as an attention shape, by the row's layout. */
static mfu_status dense_shape(const mfu_op_spec *spec, const mfu_op_arg *const qkv[3],
                              mfu_attention_shape *shape, mfu_op_error *error)
{
    const int64_t *q = qkv[0]->ints, *k = qkv[1]->ints, *v = qkv[2]->ints;
    if (spec->layout == MFU_LAYOUT_THD)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "cu_seqlens_q",
                           "is required by varlen attention");
    if (qkv[0]->count != 4 || qkv[1]->count != 4 || qkv[2]->count != 4)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, NULL,
                           "query, key and value are not all 4-D");
    if (k[0] != q[0] || v[0] != q[0] || k[3] != q[3])
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT, "key",
                           "has a batch or head dim unlike query's");
    if (spec->layout == MFU_LAYOUT_BHSD)
        /* q: [b, h, s_q, d_qk], k: [b, h_kv, s_kv, d_qk], v: [b, h_kv, s_kv, d_v] */
        *shape = (mfu_attention_shape){q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
    else
        /* q: [b, s_q, h, d_qk], k: [b, s_kv, h_kv, d_qk], v: [b, s_kv, h_kv, d_v] */
        *shape = (mfu_attention_shape){q[0], q[2], k[2], q[1], k[1], q[3], v[3]};
    return MFU_OK;
}

/* A block mask's counts ([b, h, q_blocks]) and indices ([b, h, q_blocks,
 * kv_blocks]) of one kind (partial or full); both NULL when absent. */
static mfu_status blocks_of(const mfu_op_spec *spec, const mfu_op_call *call,
                            mfu_op_role counts_role, int optional,
                            const mfu_op_arg **counts, const mfu_op_arg **indices,
                            mfu_op_error *error)
{
    mfu_status st;
    *counts = *indices = NULL;
    if (optional && mfu_op_arg_of(spec, call, counts_role) == NULL &&
        mfu_op_arg_of(spec, call, (mfu_op_role)(counts_role + 1)) == NULL)
        return MFU_OK;
    if ((st = mfu_op_tensor_of(spec, call, counts_role, 3, counts, error)) != MFU_OK ||
        (st = mfu_op_tensor_of(spec, call, (mfu_op_role)(counts_role + 1), 4, indices,
                               error)) != MFU_OK)
        return st;
    for (size_t i = 0; i < 3; i++)
        if ((*indices)->ints[i] != (*counts)->ints[i])
            return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT,
                               mfu_op_role_name((mfu_op_role)(counts_role + 1)),
                               "has leading dims unlike its block counts'");
    return MFU_OK;
}

/* flex_attention's BlockMask: the computed blocks; unreadable (meta):
 * every block of the grid, the whole rectangle (exact for one block). */
static mfu_status count_blocks(const mfu_op_spec *spec, const mfu_op_call *call,
                               const mfu_attention_shape *shape, int backward,
                               int64_t *flops, int *approximate, mfu_op_error *error)
{
    const mfu_op_arg *num, *idx, *full_num, *full_idx;
    const int64_t q_size = mfu_op_int_of(spec, call, MFU_ROLE_Q_BLOCK_SIZE, 0);
    const int64_t kv_size = mfu_op_int_of(spec, call, MFU_ROLE_KV_BLOCK_SIZE, 0);
    mfu_status st;

    if ((st = blocks_of(spec, call, MFU_ROLE_KV_NUM_BLOCKS, 0, &num, &idx, error)) != MFU_OK ||
        (st = blocks_of(spec, call, MFU_ROLE_FULL_KV_NUM_BLOCKS, 1, &full_num, &full_idx,
                        error)) != MFU_OK)
        return st;
    if (q_size < 1 || kv_size < 1)
        return mfu_op_fail(error, MFU_ERR_INVALID_ARGUMENT,
                           q_size < 1 ? "q_block_size" : "kv_block_size", "must be >= 1");
    if (num->values == NULL || idx->values == NULL ||
        (full_num != NULL && (full_num->values == NULL || full_idx->values == NULL))) {
        const mfu_attention_mask none = {-1, -1, 0};
        *approximate = q_size < shape->seq_q || kv_size < shape->seq_kv;
        return mfu_op_formula_status(masked_flops(shape, &none, MFU_CAUSAL_FULL, backward, flops),
                                     error);
    }
    const mfu_block_mask mask = {
        .batch = num->ints[0], .heads = num->ints[1], .q_blocks = num->ints[2],
        .q_block_size = q_size, .kv_block_size = kv_size,
        .num_blocks = num->values, .indices = idx->values, .kv_blocks = idx->ints[3],
        .full_num_blocks = full_num != NULL ? full_num->values : NULL,
        .full_indices = full_idx != NULL ? full_idx->values : NULL,
        .full_kv_blocks = full_idx != NULL ? full_idx->ints[3] : 0,
    };
    st = backward ? mfu_block_attention_backward_flop(shape, &mask, flops)
                  : mfu_block_attention_flop(shape, &mask, flops);
    if (st == MFU_ERR_INVALID_ARGUMENT)
        return mfu_op_fail(error, st, "kv_num_blocks",
                           "has counts, indices or dims that do not fit the query and key");
    return mfu_op_formula_status(st, error);
}

/* The attention FLOPs of the call under `causal`: its forward formula, or
 * its backward kernel's (executed convention) with `backward`; a block
 * mask counts the blocks it computes, whatever the convention. */
static mfu_status attention_flops(const mfu_op_spec *spec, const mfu_op_call *call,
                                  const mfu_op_arg *const qkv[3], const mfu_op_arg *cu_q,
                                  const mfu_attention_mask *mask, mfu_causal causal,
                                  int backward, int64_t *flops, int *approximate,
                                  mfu_op_error *error)
{
    mfu_attention_shape shape;
    mfu_status st;
    if (cu_q != NULL)
        return count_varlen(spec, call, qkv, cu_q, mask, causal, backward, flops,
                            approximate, error);
    if ((st = dense_shape(spec, qkv, &shape, error)) != MFU_OK)
        return st;
    if (mfu_op_position(spec, MFU_ROLE_KV_NUM_BLOCKS) >= 0)
        return count_blocks(spec, call, &shape, backward, flops, approximate, error);
    return mfu_op_formula_status(masked_flops(&shape, mask, causal, backward, flops), error);
}

/* Executed: what the kernel computes (a full_square row the whole
 * rectangle, a window or block mask what it keeps); model_self: the
 * forward under the call's convention, or for a backward kernel
 * MFU_ATTENTION_MODEL_BACKWARD x it (PaLM: the score recompute is not
 * model work); model backward that multiple of model_self when q, k or v
 * requires grad. A full_square row's excess is overcompute, its backward
 * repeating it as often (*oc_backward). */
mfu_status mfu_op_count_attention(const mfu_op_spec *spec,
                                  const mfu_op_call *call, mfu_op_flops *out,
                                  uint64_t *oc_backward, mfu_op_error *error)
{
    const int backward = spec->kind == MFU_OP_ATTENTION_BACKWARD;
    const mfu_attention_mask mask = attention_mask(spec, call);
    const mfu_causal causal = call->causal;
    const mfu_causal computed = spec->full_square ? MFU_CAUSAL_FULL : causal;
    const unsigned model_bw = (unsigned)MFU_ATTENTION_MODEL_BACKWARD;
    const mfu_op_arg *qkv[3], *cu_q;
    int64_t executed = 0, forward = 0;
    int approximate = 0;
    mfu_status st;

    if ((st = mfu_op_tensor_of(spec, call, MFU_ROLE_QUERY, 0, &qkv[0], error)) != MFU_OK ||
        (st = mfu_op_tensor_of(spec, call, MFU_ROLE_KEY, 0, &qkv[1], error)) != MFU_OK ||
        (st = mfu_op_tensor_of(spec, call, MFU_ROLE_VALUE, 0, &qkv[2], error)) != MFU_OK ||
        (st = offsets_of(spec, call, MFU_ROLE_CU_SEQLENS_Q, &cu_q, error)) != MFU_OK ||
        (st = attention_flops(spec, call, qkv, cu_q, &mask, computed, backward,
                              &executed, &approximate, error)) != MFU_OK)
        return st;
    if (!backward && computed == causal)
        forward = executed;
    else if ((st = attention_flops(spec, call, qkv, cu_q, &mask, causal, 0, &forward,
                                   &approximate, error)) != MFU_OK)
        return st;
    if (backward && forward > INT64_MAX / model_bw)
        return mfu_op_formula_status(MFU_ERR_OVERFLOW, error);
    const int any_grad = qkv[0]->requires_grad || qkv[1]->requires_grad ||
                         qkv[2]->requires_grad;
    const unsigned times = !backward && any_grad ? model_bw : 0u;
    mfu_op_set_flops(out, executed, 0, approximate);
    if (!backward) {
        out->mask_read = mask.window_right >= 0 || mask.window_left >= 0 || mask.chunk > 0 ||
                         mfu_op_position(spec, MFU_ROLE_KV_NUM_BLOCKS) >= 0;
        const mfu_op_arg *tensor_mask = mfu_op_arg_of(spec, call, MFU_ROLE_ATTN_MASK);
        out->mask_tensor = !out->mask_read && tensor_mask != NULL &&
                           tensor_mask->type == MFU_ARG_TENSOR;
        if (spec->full_square)
            out->square_model = forward;
    }
    out->model_self = backward ? (uint64_t)forward * model_bw : (uint64_t)forward;
    out->model_backward = (uint64_t)forward * times;
    /* forward <= executed: a convention never counts more than the full
     * rectangle the full_square row computes */
    out->overcompute = backward ? 0u : (uint64_t)(executed - forward);
    *oc_backward = out->overcompute * times;
    return MFU_OK;
}
