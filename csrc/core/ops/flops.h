/*
 * flops.h -- FLOP formulas per op (matmul, convolution, attention) and the
 * attention model convention.
 *
 * Units: FLOPs (one multiply-add = 2 FLOPs). Nothing here knows about time.
 *
 * 1. Op formulas, `mfu_<op>_flop`. They take tensor dimensions as int64 and
 *    write an exact int64 count; a count that does not fit returns
 *    MFU_ERR_OVERFLOW (never wraps) and a negative dimension returns
 *    MFU_ERR_INVALID_ARGUMENT. The output is written only on MFU_OK. They are
 *    what mfu_op_count (ops.h) counts every aten op with, and they match
 *    torch.utils.flop_counter.FlopCounterMode except where a NB says otherwise.
 *
 * 2. The attention model convention (below): forward + 2x forward.
 *
 * The analytic count of a whole model from its dimensions is transformer.h.
 *
 * Conventions (docs/conventions.md):
 *  - Causal attention counts the full s_q x s_kv rectangle by default
 *    (MFU_CAUSAL_FULL: PaLM, torchtitan, FlopCounterMode). MFU_CAUSAL_HALF
 *    halves it (Megatron-LM, verl): exactly one half of the FULL count, for
 *    any s_q and s_kv. NB: this is a convention, not the number of unmasked
 *    query-key pairs: for s_q == s_kv == s those are s(s+1)/2, not s^2/2, and
 *    for s_q != s_kv they depend on how the mask is aligned (top-left in
 *    torch SDPA, bottom-right in FlashAttention). HALF ignores alignment and
 *    is always exactly FULL / 2 (an integer: every FULL count is even).
 *  - Model backward of attention = 2x its forward (the PaLM convention);
 *    mfu_sdpa_backward_flop() gives the executed backward instead.
 */
#ifndef MFU_FLOPS_H
#define MFU_FLOPS_H

#include <stddef.h>
#include <stdint.h>

#include "mfu_status.h"

#ifdef __cplusplus
extern "C" { /* ops.h, which the C++ op observer reads, includes this */
#endif

/* ------------------------------------------------------------------------
 * Op formulas
 * ------------------------------------------------------------------------ */

typedef enum mfu_causal {
    MFU_CAUSAL_FULL = 0, /* the whole s_q x s_kv rectangle (default) */
    MFU_CAUSAL_HALF = 1  /* exactly half of FULL (Megatron / verl) */
} mfu_causal;

/* a: [m, k] @ b: [k, n] -> [m, n]; 2*m*n*k.
 * NB: 2k FLOPs per output element, not 2k - 1 (FlopCounterMode does the
 * same). */
mfu_status mfu_mm_flop(int64_t m, int64_t k, int64_t n, int64_t *flops);

/* bias: [m, n] + a: [m, k] @ b: [k, n]; = mm (the bias add is not counted). */
mfu_status mfu_addmm_flop(int64_t m, int64_t k, int64_t n, int64_t *flops);

/* a: [b, m, k] @ b: [b, k, n] -> [b, m, n]; b*2*m*n*k. */
mfu_status mfu_bmm_flop(int64_t batch, int64_t m, int64_t k, int64_t n,
                        int64_t *flops);

/* self: [b, m, n] + a: [b, m, k] @ b: [b, k, n]; = bmm. */
mfu_status mfu_baddbmm_flop(int64_t batch, int64_t m, int64_t k, int64_t n,
                            int64_t *flops);

/*
 * Grouped matmul (aten._grouped_mm, _scaled_grouped_mm; MoE experts), by the
 * ranks of a (`a_ndim`) and b (`b_ndim`); G groups, offs partitions one dim:
 *   2D x 3D  a: [M, K],    b: [G, K, N]  offs splits M     -> 2*M*K*N
 *   3D x 3D  a: [G, M, K], b: [G, K, N]  (no offs)         -> 2*G*M*K*N
 *   3D x 2D  a: [G, M, K], b: [K, N]     offs splits N     -> 2*M*K*N
 *   2D x 2D  a: [M, K],    b: [K, N]     offs splits K     -> 2*M*K*N
 *                                        (out: [G, M, N])
 * i.e. every row (column / contraction slice) meets exactly one group.
 * NB: counted from the shapes, so rows past offs[-1] (which the kernel
 * skips) are counted; in MoE dispatch offs[-1] equals M. FlopCounterMode
 * has no formula for _grouped_mm (it counts 0).
 */
mfu_status mfu_grouped_mm_flop(const int64_t *a_shape, size_t a_ndim,
                               const int64_t *b_shape, size_t b_ndim,
                               int64_t *flops);

/* The largest tensor rank a convolution formula accepts (N, C + 3 spatial
 * dims is 5; a little room above that). */
#define MFU_CONV_MAX_NDIM 8

/*
 * Convolution forward (aten.convolution and friends), shapes of rank
 * `ndim` (3 for conv1d, 4 for conv2d, 5 for conv3d):
 *   x: [n, c_in, *in_spatial], out: [n, c_out, *out_spatial]
 *   w: [c_out, c_in / groups, *kernel]            (transposed == 0)
 *   w: [c_in, c_out / groups, *kernel]            (transposed != 0)
 * Regular:    2 * n * prod(out_spatial) * c_out * (c_in / groups) * prod(kernel)
 *             = 2 * out elements * (c_in / groups) * prod(kernel)
 * Transposed: 2 * n * prod(in_spatial) * c_in * (c_out / groups) * prod(kernel)
 *             (each *input* point scatters through the kernel).
 * This is FlopCounterMode's conv_flop_count exactly; `groups` is implied by
 * the weight shape. NB: padding is not subtracted (zero taps are counted),
 * and the bias add is not counted.
 */
mfu_status mfu_convolution_flop(const int64_t *x_shape, const int64_t *w_shape,
                                const int64_t *out_shape, size_t ndim,
                                int transposed, int64_t *flops);

/*
 * Convolution backward (aten.convolution_backward), shapes as above with
 * grad_out shaped like the forward output:
 *   input grad  (want_input_grad):  = the forward count (it is a transposed
 *                                     convolution of grad_out with w);
 *   weight grad (want_weight_grad): 2 * n * prod(out_spatial) * c_in * c_out
 *                                     * prod(kernel) / groups (regular), and
 *                                     with in_spatial for transposed;
 *                                     = the forward count.
 * NB: FlopCounterMode's conv_backward_flop computes the weight gradient as a
 * convolution over the full channel counts and so ignores `groups`: it counts
 * the weight gradient `groups` times too high (depthwise convolutions: c_in
 * times). Pass groups = 1 to reproduce FlopCounterMode exactly; pass the real
 * groups for the true count. `groups` must divide both channel counts.
 */
mfu_status mfu_convolution_backward_flop(const int64_t *grad_out_shape,
                                         const int64_t *x_shape,
                                         const int64_t *w_shape, size_t ndim,
                                         int transposed, int64_t groups,
                                         int want_input_grad,
                                         int want_weight_grad, int64_t *flops);

/* Attention problem shape; GQA when heads_kv < heads_q. */
typedef struct mfu_attention_shape {
    int64_t batch;       /* b */
    int64_t heads_q;     /* h: query heads (the count that does the work) */
    int64_t heads_kv;    /* h_kv: key/value heads; must divide heads_q */
    int64_t seq_q;       /* s_q */
    int64_t seq_kv;      /* s_kv */
    int64_t head_dim_qk; /* d_qk: q and k head dim */
    int64_t head_dim_v;  /* d_v: v (and output) head dim */
} mfu_attention_shape;

/*
 * Scaled-dot-product attention forward.
 *   q: [b, h, s_q, d_qk] @ k^T: [b, h, d_qk, s_kv] -> scores [b, h, s_q, s_kv]
 *   scores @ v: [b, h, s_kv, d_v]                 -> out    [b, h, s_q, d_v]
 * FULL: 2*b*h*s_q*s_kv*d_qk + 2*b*h*s_q*s_kv*d_v  (= FlopCounterMode's
 *       sdpa_flop_count; softmax and scaling are not counted)
 * HALF: exactly half of FULL.
 * GQA broadcasts the kv heads: the work is done for all h query heads.
 */
mfu_status mfu_sdpa_flop(const mfu_attention_shape *shape, mfu_causal causal,
                         int64_t *flops);

/*
 * Scaled-dot-product attention backward as the kernels execute it
 * (FlopCounterMode's sdpa_backward_flop_count, five batched matmuls):
 *   recompute scores  q @ k^T         2*b*h*s_q*s_kv*d_qk
 *   grad scores       dO @ v^T        2*b*h*s_q*s_kv*d_v
 *   grad v            P^T @ dO        2*b*h*s_q*s_kv*d_v
 *   grad q            dS @ k          2*b*h*s_q*s_kv*d_qk
 *   grad k            dS^T @ q        2*b*h*s_q*s_kv*d_qk
 *   total             2*b*h*s_q*s_kv*(3*d_qk + 2*d_v)
 * (= 2.5x the forward when d_qk == d_v). HALF halves it as above.
 * NB: this is the *executed* count (HFU). The *model* convention is 2x the
 * forward (mfu_sdpa_flop * 2): the score recompute is not model work.
 */
mfu_status mfu_sdpa_backward_flop(const mfu_attention_shape *shape,
                                  mfu_causal causal, int64_t *flops);

/*
 * Variable-length (packed / nested) attention from cumulative sequence
 * lengths: cu_seqlens_q[0..num_offsets-1], non-decreasing and non-negative,
 * sequence i has s_q = cu_seqlens_q[i+1] - cu_seqlens_q[i] (likewise for k;
 * cu_seqlens_k == NULL means the same as q). Each sequence counts as an
 * attention of batch 1:
 *   forward:  sum_i mfu_sdpa_flop({1, h, h_kv, s_q_i, s_kv_i, d_qk, d_v})
 *   backward: sum_i mfu_sdpa_backward_flop(...) (executed convention)
 * num_offsets == 0 or 1 means no sequences (0 FLOPs).
 */
mfu_status mfu_varlen_attention_flop(const int64_t *cu_seqlens_q,
                                     const int64_t *cu_seqlens_k,
                                     size_t num_offsets, int64_t heads_q,
                                     int64_t heads_kv, int64_t head_dim_qk,
                                     int64_t head_dim_v, mfu_causal causal,
                                     int64_t *flops);

mfu_status mfu_varlen_attention_backward_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, mfu_causal causal, int64_t *flops);

/*
 * The mask of an attention call as the fused kernels that take a window
 * describe it: flash-attn's causal and window_size = (left, right),
 * FlashAttention-3's attention_chunk. Query i of s_q sits at key position
 * p = i + s_k - s_q (aligned to the end of the keys, as flash-attn aligns
 * its masks) and sees the keys j, 0 <= j < s_k, with
 *     p - left <= j <= p + right               (a side < 0: unbounded)
 * and, with chunk > 0, j in p's chunk [floor(p / chunk) * chunk, + chunk).
 * Causal is right = 0 (flash-attn sets it so for causal calls).
 */
typedef struct mfu_attention_mask {
    int64_t window_left;  /* keys before p; < 0: unbounded */
    int64_t window_right; /* keys after p; < 0: unbounded; 0: causal */
    int64_t chunk;        /* > 0: chunked attention (Llama 4); 0: none */
} mfu_attention_mask;

/*
 * Masked attention forward / backward: mfu_sdpa_flop's formula with
 * s_q * s_kv replaced by the query-key pairs the convention counts for the
 * sequence under `mask`, by the one rule for windows (pairs.h,
 * docs/attention-pairs.md): no mask and plain causal (left < 0,
 * right <= 0, no chunk) the rectangle (HALF of causal: exactly half, the
 * convention at the top); a
 * window or a chunk FULL each query's whole span, HALF the pairs the mask
 * keeps. E.g. a causal window of w = left + 1 keys, s_q == s_kv == s: FULL
 * s * min(s, w), HALF sum over queries i of min(i + 1, w). FULL >= HALF
 * always. MFU_ERR_OVERFLOW only when the count does not fit in int64.
 */
mfu_status mfu_masked_attention_flop(const mfu_attention_shape *shape,
                                     const mfu_attention_mask *mask,
                                     mfu_causal causal, int64_t *flops);
mfu_status mfu_masked_attention_backward_flop(const mfu_attention_shape *shape,
                                              const mfu_attention_mask *mask,
                                              mfu_causal causal,
                                              int64_t *flops);

/* Variable-length masked attention: each sequence of the cumulative
 * lengths (as mfu_varlen_attention_flop) under `mask`, counted as
 * mfu_masked_attention_flop / _backward_flop counts it. */
mfu_status mfu_varlen_masked_attention_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, const mfu_attention_mask *mask, mfu_causal causal,
    int64_t *flops);
mfu_status mfu_varlen_masked_attention_backward_flop(
    const int64_t *cu_seqlens_q, const int64_t *cu_seqlens_k,
    size_t num_offsets, int64_t heads_q, int64_t heads_kv, int64_t head_dim_qk,
    int64_t head_dim_v, const mfu_attention_mask *mask, mfu_causal causal,
    int64_t *flops);

/*
 * A block-sparse attention mask as flex_attention's BlockMask holds it:
 * per (batch, head, query block) row, the key blocks the kernel computes.
 * `partial` blocks are computed and then masked element by element, `full`
 * blocks are computed unmasked; the kernel does the same work for both.
 *   num_blocks:  [batch, heads, q_blocks]            (row-major values)
 *   indices:     [batch, heads, q_blocks, kv_blocks] (the first
 *                num_blocks[row] of each row are read)
 * batch and heads are 1 (broadcast over the query's) or divide the
 * query's batch and heads.
 */
typedef struct mfu_block_mask {
    int64_t batch, heads, q_blocks;
    int64_t q_block_size, kv_block_size;     /* tokens per block, >= 1 */
    const int64_t *num_blocks, *indices;     /* partial blocks */
    int64_t kv_blocks;                       /* indices' last dim */
    const int64_t *full_num_blocks, *full_indices; /* NULL: none */
    int64_t full_kv_blocks;                  /* full_indices' last dim */
} mfu_block_mask;

/*
 * Block-sparse attention (flex_attention with a BlockMask): the blocks the
 * kernel computes, each query block qb x key block kb counting
 * rows(qb) * cols(kb) pairs, the tiles clipped to s_q and s_kv, in place of
 * s_q * s_kv in mfu_sdpa_flop / mfu_sdpa_backward_flop; a broadcast mask
 * counts once per query batch and head. There is no causal convention
 * here: the mask says what is computed (docs/conventions.md).
 * flex_attention without a mask is one block over everything: the SDPA
 * formula.
 * MFU_ERR_INVALID_ARGUMENT for a count outside [0, kv_blocks], an index
 * outside the key blocks of s_kv, or dims that do not broadcast.
 */
mfu_status mfu_block_attention_flop(const mfu_attention_shape *shape,
                                    const mfu_block_mask *mask, int64_t *flops);
mfu_status mfu_block_attention_backward_flop(const mfu_attention_shape *shape,
                                             const mfu_block_mask *mask,
                                             int64_t *flops);

/*
 * Model FLOPs of an attention forward: its forward plus, `with_backward`,
 * the model-convention backward, MFU_ATTENTION_MODEL_BACKWARD x the forward
 * (PaLM: the score recompute a kernel may do is not model work). The one
 * place the multiplier is written; the analytic count (transformer.h) uses
 * it too. OVERFLOW when the total does not fit int64.
 */
#define MFU_ATTENTION_MODEL_BACKWARD 2

mfu_status mfu_sdpa_model_flop(const mfu_attention_shape *shape,
                               mfu_causal causal, int with_backward,
                               int64_t *flops);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MFU_FLOPS_H */
