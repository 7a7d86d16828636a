/*
 * op_table.c -- the counted ops: one row per op (see ops.h): aten's,
 * flash-attn's custom ops and torch's higher-order attention ops.
 *
 * Each row names the schema position of every argument its count reads;
 * AT(i) stores position i (ops.h: stored + 1, so a role a row leaves out is
 * "not read"). The comment above a row is the op's schema (torch 2.13,
 * default overload), trimmed to the arguments up to the last one read.
 * tests/flops/counter/test_dispatch.py checks every position against torch.ops.
 */
#include <string.h>

#include "ops.h"

#define AT(i) ((uint8_t)((i) + 1))

/* The matmul family: 2*m*n*k each, the bias / self addend not counted. */
#define MATMUL(op, kind_, a, b)                                                \
    {.name = op, .kind = kind_, .at = {[MFU_ROLE_A] = AT(a), [MFU_ROLE_B] = AT(b)}}

static const mfu_op_spec op_table[] = {
    /* mm(Tensor self, Tensor mat2) */
    MATMUL("aten::mm", MFU_OP_MM, 0, 1),
    /* _scaled_mm(Tensor self, Tensor mat2, Tensor scale_a, Tensor scale_b, ...) */
    MATMUL("aten::_scaled_mm", MFU_OP_MM, 0, 1),
    /* addmm(Tensor self, Tensor mat1, Tensor mat2, Scalar beta, Scalar alpha) */
    MATMUL("aten::addmm", MFU_OP_MM, 1, 2),
    /* bmm(Tensor self, Tensor mat2) */
    MATMUL("aten::bmm", MFU_OP_BMM, 0, 1),
    /* baddbmm(Tensor self, Tensor batch1, Tensor batch2, Scalar beta, ...) */
    MATMUL("aten::baddbmm", MFU_OP_BMM, 1, 2),
    /* _grouped_mm(Tensor self, Tensor mat2, Tensor? offs, ...): MoE experts */
    MATMUL("aten::_grouped_mm", MFU_OP_GROUPED_MM, 0, 1),
    /* _scaled_grouped_mm(Tensor self, Tensor mat2, Tensor scale_a, ...) */
    MATMUL("aten::_scaled_grouped_mm", MFU_OP_GROUPED_MM, 0, 1),

    /* Convolutions. convolution(Tensor input, Tensor weight, Tensor? bias,
     * int[] stride, int[] padding, int[] dilation, bool transposed,
     * int[] output_padding, int groups); _convolution and
     * convolution_overrideable put the same arguments first. */
#define CONVOLUTION(op)                                                        \
    {.name = op,                                                               \
     .kind = MFU_OP_CONVOLUTION,                                               \
     .at = {[MFU_ROLE_INPUT] = AT(0), [MFU_ROLE_WEIGHT] = AT(1),               \
            [MFU_ROLE_STRIDE] = AT(3), [MFU_ROLE_PADDING] = AT(4),             \
            [MFU_ROLE_DILATION] = AT(5), [MFU_ROLE_TRANSPOSED] = AT(6)}}
    CONVOLUTION("aten::convolution"),
    CONVOLUTION("aten::_convolution"),
    CONVOLUTION("aten::convolution_overrideable"),
#undef CONVOLUTION
    /* cudnn_convolution(Tensor self, Tensor weight, int[] padding,
     *   int[] stride, int[] dilation, int groups, ...) */
    {.name = "aten::cudnn_convolution",
     .kind = MFU_OP_CONVOLUTION,
     .at = {[MFU_ROLE_INPUT] = AT(0), [MFU_ROLE_WEIGHT] = AT(1),
            [MFU_ROLE_PADDING] = AT(2), [MFU_ROLE_STRIDE] = AT(3),
            [MFU_ROLE_DILATION] = AT(4)}},
    /* _slow_conv2d_forward(Tensor self, Tensor weight, int[2] kernel_size,
     *   Tensor? bias, int[2] stride, int[2] padding) */
    {.name = "aten::_slow_conv2d_forward",
     .kind = MFU_OP_CONVOLUTION,
     .at = {[MFU_ROLE_INPUT] = AT(0), [MFU_ROLE_WEIGHT] = AT(1),
            [MFU_ROLE_STRIDE] = AT(4), [MFU_ROLE_PADDING] = AT(5)}},
    /* convolution_backward(Tensor grad_output, Tensor input, Tensor weight,
     *   SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding,
     *   SymInt[] dilation, bool transposed, SymInt[] output_padding,
     *   SymInt groups, bool[3] output_mask) */
    {.name = "aten::convolution_backward",
     .kind = MFU_OP_CONVOLUTION_BACKWARD,
     .at = {[MFU_ROLE_GRAD_OUTPUT] = AT(0), [MFU_ROLE_INPUT] = AT(1),
            [MFU_ROLE_WEIGHT] = AT(2), [MFU_ROLE_TRANSPOSED] = AT(7),
            [MFU_ROLE_GROUPS] = AT(9), [MFU_ROLE_OUTPUT_MASK] = AT(10)}},

    /* Attention. q, k, v are the first three arguments of a forward kernel
     * and follow grad_out in a backward one. */
#define ATTENTION(op, kind_, layout_, first, ...)                              \
    {.name = op,                                                               \
     .kind = kind_,                                                            \
     .layout = layout_,                                                        \
     .at = {[MFU_ROLE_QUERY] = AT(first), [MFU_ROLE_KEY] = AT((first) + 1),    \
            [MFU_ROLE_VALUE] = AT((first) + 2), __VA_ARGS__}}
#define SDPA(op, causal)                                                       \
    ATTENTION(op, MFU_OP_ATTENTION, MFU_LAYOUT_BHSD, 0,                        \
              [MFU_ROLE_IS_CAUSAL] = AT(causal))
#define SDPA_MASKED(op, causal, mask)                                          \
    ATTENTION(op, MFU_OP_ATTENTION, MFU_LAYOUT_BHSD, 0,                        \
              [MFU_ROLE_IS_CAUSAL] = AT(causal), [MFU_ROLE_ATTN_MASK] = AT(mask))
#define SDPA_BACKWARD(op, causal)                                              \
    ATTENTION(op, MFU_OP_ATTENTION_BACKWARD, MFU_LAYOUT_BHSD, 1,               \
              [MFU_ROLE_IS_CAUSAL] = AT(causal))
    /* The SDPA family, q: [b, h, s, d].
     * _scaled_dot_product_flash_attention(query, key, value,
     *   float dropout_p, bool is_causal, ...) */
    SDPA("aten::_scaled_dot_product_flash_attention", 4),
    /* ..._flash_attention_for_cpu(query, key, value, dropout_p, is_causal,
     *   *, Tensor? attn_mask, ...) */
    SDPA_MASKED("aten::_scaled_dot_product_flash_attention_for_cpu", 4, 5),
    /* ..._efficient_attention(query, key, value, Tensor? attn_bias,
     *   bool compute_log_sumexp, float dropout_p, bool is_causal, ...) */
    SDPA_MASKED("aten::_scaled_dot_product_efficient_attention", 6, 3),
    /* ..._cudnn_attention(query, key, value, attn_bias, compute_log_sumexp,
     *   dropout_p, bool is_causal, ...) */
    SDPA_MASKED("aten::_scaled_dot_product_cudnn_attention", 6, 3),
    /* ..._fused_attention_overrideable(query, key, value, attn_bias,
     *   dropout_p, bool is_causal, ...) */
    SDPA_MASKED("aten::_scaled_dot_product_fused_attention_overrideable", 5, 3),
    /* _scaled_dot_product_attention_math(query, key, value, attn_mask,
     *   dropout_p, bool is_causal, ...): the math path (meta tensors, CPU
     * fallbacks). Composite: its inner bmms are skipped and its backward is
     * theirs. It computes the full square and then masks it (full_square:
     * executed stays full under causal "half"; ops.h). NB: the
     * TorchDispatchMode fallback sees it only under inference_mode
     * (otherwise it decomposes first and its bmms count: the same executed
     * FLOPs, and model FLOPs never halved). */
    {.name = "aten::_scaled_dot_product_attention_math",
     .kind = MFU_OP_ATTENTION,
     .layout = MFU_LAYOUT_BHSD,
     .at = {[MFU_ROLE_QUERY] = AT(0), [MFU_ROLE_KEY] = AT(1),
            [MFU_ROLE_VALUE] = AT(2), [MFU_ROLE_IS_CAUSAL] = AT(5),
            [MFU_ROLE_ATTN_MASK] = AT(3)},
     .full_square = 1},
    /* ..._flash_attention_backward(grad_out, query, key, value, out,
     *   logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
     *   bool is_causal, ...) */
    SDPA_BACKWARD("aten::_scaled_dot_product_flash_attention_backward", 11),
    /* ..._flash_attention_for_cpu_backward(grad_out, query, key, value, out,
     *   logsumexp, dropout_p, bool is_causal, ...) */
    SDPA_BACKWARD("aten::_scaled_dot_product_flash_attention_for_cpu_backward", 7),
    /* ..._efficient_attention_backward(grad_out_, query, key, value,
     *   attn_bias, out, logsumexp, philox_seed, philox_offset, dropout_p,
     *   grad_input_mask, bool is_causal, ...) */
    SDPA_BACKWARD("aten::_scaled_dot_product_efficient_attention_backward", 11),
    /* ..._cudnn_attention_backward(grad_out, query, key, value, out,
     *   logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q,
     *   cum_seq_k, max_q, max_k, dropout_p, bool is_causal, ...) */
    SDPA_BACKWARD("aten::_scaled_dot_product_cudnn_attention_backward", 14),
    /* ..._fused_attention_overrideable_backward(grad_out, query, key, value,
     *   attn_bias, grad_input_mask, out, logsumexp, cum_seq_q, cum_seq_k,
     *   max_q, max_k, dropout_p, bool is_causal, ...) */
    SDPA_BACKWARD("aten::_scaled_dot_product_fused_attention_overrideable_backward", 13),
#undef SDPA
#undef SDPA_MASKED
#undef SDPA_BACKWARD

    /* Kernel-level attention, q: [b, s, h, d], or packed with cumulative
     * lengths. _flash_attention_forward(query, key, value, Tensor? cum_seq_q,
     *   Tensor? cum_seq_k, SymInt max_q, SymInt max_k, float dropout_p,
     *   bool is_causal, ...) */
    ATTENTION("aten::_flash_attention_forward", MFU_OP_ATTENTION,
              MFU_LAYOUT_BSHD, 0,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(3), [MFU_ROLE_CU_SEQLENS_K] = AT(4),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(5), [MFU_ROLE_MAX_SEQLEN_K] = AT(6),
              [MFU_ROLE_IS_CAUSAL] = AT(8)),
    /* _flash_attention_backward(grad_out, query, key, value, out, logsumexp,
     *   cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, bool is_causal, ...) */
    ATTENTION("aten::_flash_attention_backward", MFU_OP_ATTENTION_BACKWARD,
              MFU_LAYOUT_BSHD, 1,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(6), [MFU_ROLE_CU_SEQLENS_K] = AT(7),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(8), [MFU_ROLE_MAX_SEQLEN_K] = AT(9),
              [MFU_ROLE_IS_CAUSAL] = AT(11)),
    /* _efficient_attention_forward(query, key, value, Tensor? bias,
     *   Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt? max_seqlen_q,
     *   SymInt? max_seqlen_k, float dropout_p, int custom_mask_type, ...) */
    ATTENTION("aten::_efficient_attention_forward", MFU_OP_ATTENTION,
              MFU_LAYOUT_BSHD, 0,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(4), [MFU_ROLE_CU_SEQLENS_K] = AT(5),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(6), [MFU_ROLE_MAX_SEQLEN_K] = AT(7),
              [MFU_ROLE_CUSTOM_MASK_TYPE] = AT(9), [MFU_ROLE_ATTN_MASK] = AT(3)),
    /* _efficient_attention_backward(grad_out_, query, key, value,
     *   Tensor? bias, out, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k,
     *   SymInt max_seqlen_q, SymInt max_seqlen_k, logsumexp, dropout_p,
     *   philox_seed, philox_offset, int custom_mask_type, ...) */
    ATTENTION("aten::_efficient_attention_backward", MFU_OP_ATTENTION_BACKWARD,
              MFU_LAYOUT_BSHD, 1,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(6), [MFU_ROLE_CU_SEQLENS_K] = AT(7),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(8), [MFU_ROLE_MAX_SEQLEN_K] = AT(9),
              [MFU_ROLE_CUSTOM_MASK_TYPE] = AT(14)),
    /* torch.nn.attention.varlen, q: [total, h, d].
     * _varlen_attn(query, key, value, Tensor cu_seq_q, Tensor? cu_seq_k,
     *   int max_q, int max_k, bool is_causal, ...) */
    ATTENTION("torch_attn::_varlen_attn", MFU_OP_ATTENTION, MFU_LAYOUT_THD, 0,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(3), [MFU_ROLE_CU_SEQLENS_K] = AT(4),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(5), [MFU_ROLE_MAX_SEQLEN_K] = AT(6),
              [MFU_ROLE_IS_CAUSAL] = AT(7)),
    /* _varlen_attn_backward(grad_out, query, key, value, out, lse,
     *   cu_seq_q, cu_seq_k, max_q, max_k, bool is_causal, ...) */
    ATTENTION("torch_attn::_varlen_attn_backward", MFU_OP_ATTENTION_BACKWARD,
              MFU_LAYOUT_THD, 1,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(6), [MFU_ROLE_CU_SEQLENS_K] = AT(7),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(8), [MFU_ROLE_MAX_SEQLEN_K] = AT(9),
              [MFU_ROLE_IS_CAUSAL] = AT(10)),

    /* flash-attn 2 (>= 2.7: torch.library custom ops of
     * flash_attn/flash_attn_interface.py, Dao-AILab/flash-attention v2.8.3),
     * q: [b, s, h, d]; causal and window_size = (left, right) as flops.h's
     * mfu_attention_mask. _flash_attn_forward(q, k, v, float dropout_p,
     *   float softmax_scale, bool causal, SymInt window_size_left,
     *   SymInt window_size_right, ...) */
    ATTENTION("flash_attn::_flash_attn_forward", MFU_OP_ATTENTION,
              MFU_LAYOUT_BSHD, 0,
              [MFU_ROLE_IS_CAUSAL] = AT(5), [MFU_ROLE_WINDOW_LEFT] = AT(6),
              [MFU_ROLE_WINDOW_RIGHT] = AT(7)),
    /* _flash_attn_varlen_forward(q, k, v, Tensor cu_seqlens_q,
     *   Tensor cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k,
     *   float dropout_p, float softmax_scale, bool causal,
     *   SymInt window_size_left, SymInt window_size_right, ...),
     * q: [total, h, d] */
    ATTENTION("flash_attn::_flash_attn_varlen_forward", MFU_OP_ATTENTION,
              MFU_LAYOUT_THD, 0,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(3), [MFU_ROLE_CU_SEQLENS_K] = AT(4),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(5), [MFU_ROLE_MAX_SEQLEN_K] = AT(6),
              [MFU_ROLE_IS_CAUSAL] = AT(9), [MFU_ROLE_WINDOW_LEFT] = AT(10),
              [MFU_ROLE_WINDOW_RIGHT] = AT(11)),
    /* _flash_attn_backward(dout, q, k, v, out, softmax_lse, Tensor? dq,
     *   Tensor? dk, Tensor? dv, float dropout_p, float softmax_scale,
     *   bool causal, SymInt window_size_left, SymInt window_size_right, ...) */
    ATTENTION("flash_attn::_flash_attn_backward", MFU_OP_ATTENTION_BACKWARD,
              MFU_LAYOUT_BSHD, 1,
              [MFU_ROLE_IS_CAUSAL] = AT(11), [MFU_ROLE_WINDOW_LEFT] = AT(12),
              [MFU_ROLE_WINDOW_RIGHT] = AT(13)),
    /* _flash_attn_varlen_backward(dout, q, k, v, out, softmax_lse, dq, dk,
     *   dv, Tensor cu_seqlens_q, Tensor cu_seqlens_k, SymInt max_seqlen_q,
     *   SymInt max_seqlen_k, float dropout_p, float softmax_scale,
     *   bool causal, SymInt window_size_left, SymInt window_size_right, ...) */
    ATTENTION("flash_attn::_flash_attn_varlen_backward", MFU_OP_ATTENTION_BACKWARD,
              MFU_LAYOUT_THD, 1,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(9), [MFU_ROLE_CU_SEQLENS_K] = AT(10),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(11), [MFU_ROLE_MAX_SEQLEN_K] = AT(12),
              [MFU_ROLE_IS_CAUSAL] = AT(15), [MFU_ROLE_WINDOW_LEFT] = AT(16),
              [MFU_ROLE_WINDOW_RIGHT] = AT(17)),

    /* FlashAttention-3 (Dao-AILab/flash-attention hopper/: the custom ops of
     * flash_attn_interface.py and the TORCH_LIBRARY(flash_attn_3) ops of
     * flash_api.cpp they call; the outer one counts, the inner is skipped),
     * q: [b, s, h, d], or [total, h, d] with cu_seqlens. The forward ops
     * share their positions: _flash_attn_forward / fwd(q, k, v, k_new,
     *   v_new, qv, out, cu_seqlens_q, cu_seqlens_k, cu_seqlens_k_new,
     *   seqused_q, seqused_k, max_seqlen_q, max_seqlen_k, page_table,
     *   kv_batch_idx, leftpad_k, rotary_cos, rotary_sin, seqlens_rotary,
     *   q_descale, k_descale, v_descale, softmax_scale, bool causal,
     *   window_size_left, window_size_right, attention_chunk, ...) */
#define FA3_FORWARD(op)                                                        \
    ATTENTION(op, MFU_OP_ATTENTION, MFU_LAYOUT_BSHD, 0,                        \
              [MFU_ROLE_CU_SEQLENS_Q] = AT(7), [MFU_ROLE_CU_SEQLENS_K] = AT(8), \
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(12),                                \
              [MFU_ROLE_MAX_SEQLEN_K] = AT(13), [MFU_ROLE_IS_CAUSAL] = AT(24), \
              [MFU_ROLE_WINDOW_LEFT] = AT(25),                                 \
              [MFU_ROLE_WINDOW_RIGHT] = AT(26),                                \
              [MFU_ROLE_ATTENTION_CHUNK] = AT(27))
    FA3_FORWARD("flash_attn_3::_flash_attn_forward"),
    FA3_FORWARD("flash_attn_3::fwd"),
#undef FA3_FORWARD
    /* _flash_attn_backward(dout, q, k, v, out, softmax_lse, cu_seqlens_q,
     *   cu_seqlens_k, sequed_q, sequed_k, max_seqlen_q, max_seqlen_k, dq,
     *   dk, dv, softmax_scale, bool is_causal, window_size_left,
     *   window_size_right, ...) */
    ATTENTION("flash_attn_3::_flash_attn_backward", MFU_OP_ATTENTION_BACKWARD,
              MFU_LAYOUT_BSHD, 1,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(6), [MFU_ROLE_CU_SEQLENS_K] = AT(7),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(10), [MFU_ROLE_MAX_SEQLEN_K] = AT(11),
              [MFU_ROLE_IS_CAUSAL] = AT(16), [MFU_ROLE_WINDOW_LEFT] = AT(17),
              [MFU_ROLE_WINDOW_RIGHT] = AT(18)),
    /* bwd(dout, q, k, v, out, softmax_lse, dq, dk, dv, cu_seqlens_q,
     *   cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q, max_seqlen_k,
     *   softmax_scale, bool is_causal, window_size_left, window_size_right,
     *   ...) */
    ATTENTION("flash_attn_3::bwd", MFU_OP_ATTENTION_BACKWARD, MFU_LAYOUT_BSHD, 1,
              [MFU_ROLE_CU_SEQLENS_Q] = AT(9), [MFU_ROLE_CU_SEQLENS_K] = AT(10),
              [MFU_ROLE_MAX_SEQLEN_Q] = AT(13), [MFU_ROLE_MAX_SEQLEN_K] = AT(14),
              [MFU_ROLE_IS_CAUSAL] = AT(16), [MFU_ROLE_WINDOW_LEFT] = AT(17),
              [MFU_ROLE_WINDOW_RIGHT] = AT(18)),

    /* Higher-order operators (torch.ops.higher_order.*): not dispatcher
     * ops, their arguments are structured. flex_attention(query, key,
     * value, score_mod, block_mask, scale, kernel_options, ...) and
     * flex_attention_backward(query, key, value, out, logsumexp, grad_out,
     * ...), q: [b, h, s, d], block_mask a BlockMask tuple (torch 2.13:
     * (q_len, kv_len, kv_num_blocks, kv_indices, full_kv_num_blocks,
     * full_kv_indices, ..., Q_BLOCK_SIZE, KV_BLOCK_SIZE, mask_mod)). The
     * callers flatten both to (query, key, value, kv_num_blocks,
     * kv_indices, full_kv_num_blocks, full_kv_indices, Q_BLOCK_SIZE,
     * KV_BLOCK_SIZE) (mfu_tracker/flops/counter/_hops.py) and these rows
     * read that list. */
#define FLEX(op, kind_)                                                        \
    ATTENTION(op, kind_, MFU_LAYOUT_BHSD, 0,                                   \
              [MFU_ROLE_KV_NUM_BLOCKS] = AT(3), [MFU_ROLE_KV_INDICES] = AT(4), \
              [MFU_ROLE_FULL_KV_NUM_BLOCKS] = AT(5),                           \
              [MFU_ROLE_FULL_KV_INDICES] = AT(6),                              \
              [MFU_ROLE_Q_BLOCK_SIZE] = AT(7), [MFU_ROLE_KV_BLOCK_SIZE] = AT(8))
    FLEX("higher_order::flex_attention", MFU_OP_ATTENTION),
    FLEX("higher_order::flex_attention_backward", MFU_OP_ATTENTION_BACKWARD),
#undef FLEX
#undef ATTENTION
};

#define TABLE_SIZE (sizeof op_table / sizeof op_table[0])

const mfu_op_spec *mfu_op_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (strcmp(op_table[i].name, name) == 0)
            return &op_table[i];
    return NULL;
}

size_t mfu_op_table_size(void)
{
    return TABLE_SIZE;
}

const mfu_op_spec *mfu_op_table_row(size_t i)
{
    return i < TABLE_SIZE ? &op_table[i] : NULL;
}

int mfu_op_position(const mfu_op_spec *spec, mfu_op_role role)
{
    if (spec == NULL || (unsigned)role >= MFU_ROLE_COUNT)
        return -1;
    return (int)spec->at[role] - 1;
}

/* ---- names ---------------------------------------------------------------- */

static const struct {
    const char *name;
    mfu_arg_need need;
} roles[MFU_ROLE_COUNT] = {
    [MFU_ROLE_A] = {"a", MFU_NEED_TENSOR},
    [MFU_ROLE_B] = {"b", MFU_NEED_TENSOR},
    [MFU_ROLE_INPUT] = {"input", MFU_NEED_TENSOR},
    [MFU_ROLE_WEIGHT] = {"weight", MFU_NEED_TENSOR},
    [MFU_ROLE_GRAD_OUTPUT] = {"grad_output", MFU_NEED_TENSOR},
    [MFU_ROLE_STRIDE] = {"stride", MFU_NEED_INT_LIST},
    [MFU_ROLE_PADDING] = {"padding", MFU_NEED_INT_LIST},
    [MFU_ROLE_DILATION] = {"dilation", MFU_NEED_INT_LIST},
    [MFU_ROLE_TRANSPOSED] = {"transposed", MFU_NEED_INT},
    [MFU_ROLE_GROUPS] = {"groups", MFU_NEED_INT},
    [MFU_ROLE_OUTPUT_MASK] = {"output_mask", MFU_NEED_INT_LIST},
    [MFU_ROLE_QUERY] = {"query", MFU_NEED_TENSOR},
    [MFU_ROLE_KEY] = {"key", MFU_NEED_TENSOR},
    [MFU_ROLE_VALUE] = {"value", MFU_NEED_TENSOR},
    [MFU_ROLE_CU_SEQLENS_Q] = {"cu_seqlens_q", MFU_NEED_OFFSETS},
    [MFU_ROLE_CU_SEQLENS_K] = {"cu_seqlens_k", MFU_NEED_OFFSETS},
    [MFU_ROLE_MAX_SEQLEN_Q] = {"max_seqlen_q", MFU_NEED_INT},
    [MFU_ROLE_MAX_SEQLEN_K] = {"max_seqlen_k", MFU_NEED_INT},
    [MFU_ROLE_IS_CAUSAL] = {"is_causal", MFU_NEED_INT},
    [MFU_ROLE_CUSTOM_MASK_TYPE] = {"custom_mask_type", MFU_NEED_INT},
    [MFU_ROLE_WINDOW_LEFT] = {"window_size_left", MFU_NEED_INT},
    [MFU_ROLE_WINDOW_RIGHT] = {"window_size_right", MFU_NEED_INT},
    [MFU_ROLE_ATTENTION_CHUNK] = {"attention_chunk", MFU_NEED_INT},
    [MFU_ROLE_KV_NUM_BLOCKS] = {"kv_num_blocks", MFU_NEED_VALUES},
    [MFU_ROLE_KV_INDICES] = {"kv_indices", MFU_NEED_VALUES},
    [MFU_ROLE_FULL_KV_NUM_BLOCKS] = {"full_kv_num_blocks", MFU_NEED_VALUES},
    [MFU_ROLE_FULL_KV_INDICES] = {"full_kv_indices", MFU_NEED_VALUES},
    [MFU_ROLE_Q_BLOCK_SIZE] = {"q_block_size", MFU_NEED_INT},
    [MFU_ROLE_KV_BLOCK_SIZE] = {"kv_block_size", MFU_NEED_INT},
    [MFU_ROLE_ATTN_MASK] = {"attn_mask", MFU_NEED_TENSOR},
};

const char *mfu_op_role_name(mfu_op_role role)
{
    return (unsigned)role < MFU_ROLE_COUNT ? roles[role].name : NULL;
}

mfu_arg_need mfu_op_role_need(mfu_op_role role)
{
    return (unsigned)role < MFU_ROLE_COUNT ? roles[role].need : (mfu_arg_need)0;
}

const char *mfu_op_kind_name(mfu_op_kind kind)
{
    switch (kind) {
    case MFU_OP_MM: return "mm";
    case MFU_OP_BMM: return "bmm";
    case MFU_OP_GROUPED_MM: return "grouped_mm";
    case MFU_OP_CONVOLUTION: return "convolution";
    case MFU_OP_CONVOLUTION_BACKWARD: return "convolution_backward";
    case MFU_OP_ATTENTION: return "attention";
    case MFU_OP_ATTENTION_BACKWARD: return "attention_backward";
    }
    return NULL;
}

const char *mfu_op_layout_name(mfu_attn_layout layout)
{
    switch (layout) {
    case MFU_LAYOUT_BHSD: return "bhsd";
    case MFU_LAYOUT_BSHD: return "bshd";
    case MFU_LAYOUT_THD: return "thd";
    case MFU_LAYOUT_NONE: break;
    }
    return NULL;
}

const char *mfu_op_need_name(mfu_arg_need need)
{
    switch (need) {
    case MFU_NEED_TENSOR: return "tensor";
    case MFU_NEED_OFFSETS: return "offsets";
    case MFU_NEED_INT: return "int";
    case MFU_NEED_INT_LIST: return "int_list";
    case MFU_NEED_VALUES: return "values";
    }
    return NULL;
}

size_t mfu_op_inputs(const mfu_op_spec *spec, mfu_op_input *inputs)
{
    size_t n = 0;
    if (spec == NULL || inputs == NULL)
        return 0;
    /* by position: at most MFU_ROLE_COUNT roles, each named once */
    for (int pos = 0; pos < MFU_OP_ARGS_MAX; pos++) {
        for (int r = 0; r < MFU_ROLE_COUNT; r++) {
            if (spec->at[r] == 0 || (int)spec->at[r] - 1 != pos)
                continue;
            inputs[n].position = pos;
            inputs[n].role = (mfu_op_role)r;
            inputs[n].need = roles[r].need;
            n++;
        }
    }
    return n;
}
