/*
 * flops.h -- FLOP formulas: per-op (matmul, convolution, attention) and
 * analytic transformer counts (6N, PaLM, exact per-matmul).
 *
 * Units: FLOPs (one multiply-add = 2 FLOPs). Nothing here knows about time.
 *
 * Two families:
 *
 * 1. Op formulas, `mfu_<op>_flop`. They take tensor dimensions as int64 and
 *    write an exact int64 count; a count that does not fit returns
 *    MFU_ERR_OVERFLOW (never wraps) and a negative dimension returns
 *    MFU_ERR_INVALID_ARGUMENT. The output is written only on MFU_OK. They are
 *    what mfu_op_count (ops.h) counts every aten op with, and they match
 *    torch.utils.flop_counter.FlopCounterMode except where a NB says otherwise.
 *
 * 2. The analytic transformer count, mfu_transformer_flops(), in double (a
 *    training run's total easily exceeds 2^63). It describes a decoder-only
 *    transformer by its dimensions and returns model FLOPs (MFU numerator),
 *    hardware FLOPs (HFU numerator: model + activation recompute) and forward
 *    FLOPs, under the conventions chosen in mfu_transformer_options.
 *
 * Conventions (DESIGN.md §3):
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
 * s_q * s_kv replaced by the query-key pairs a convention counts per
 * sequence (the one rule for windows, DESIGN.md §6):
 *   no mask   (left < 0, right < 0, no chunk)  s_q * s_kv, either convention
 *   causal    (left < 0, right == 0, no chunk) s_q * s_kv; HALF: exactly half
 *                                              (the convention at the top)
 *   a window or a chunk (anything else):
 *     FULL    every query counts its whole span, its edges not clipped:
 *             min(left + 1 + right, its region), an unbounded side adding
 *             no limit, the region being its chunk's keys (all s_kv keys
 *             without a chunk). A causal window of w = left + 1 keys:
 *             s_q * min(s_kv, w).
 *     HALF    the pairs the mask keeps. A causal window of w keys,
 *             s_q == s_kv == s: sum over queries i of min(i + 1, w).
 * A call that carries a window or a chunk counts by the window rule even
 * when it keeps every key (w >= s: FULL s^2, HALF s(s + 1)/2), as the
 * analytic count does for a windowed layer (spans.h): only a plain causal
 * call (or one whose framework dropped the window, as transformers does at
 * s <= w) takes the HALF convention of plain causal, half the square
 * (Megatron's), not the kept pairs. FULL >= HALF always.
 * NB: s_q or s_kv >= 2^62 (with pairs to count) is refused as
 * MFU_ERR_OVERFLOW (the span arithmetic stays in int64).
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
 * here: the mask says what is computed (DESIGN.md §6). flex_attention
 * without a mask is one block over everything: the SDPA formula.
 * MFU_ERR_INVALID_ARGUMENT for a count outside [0, kv_blocks], an index
 * outside the key blocks of s_kv, or dims that do not broadcast.
 */
mfu_status mfu_block_attention_flop(const mfu_attention_shape *shape,
                                    const mfu_block_mask *mask, int64_t *flops);
mfu_status mfu_block_attention_backward_flop(const mfu_attention_shape *shape,
                                             const mfu_block_mask *mask,
                                             int64_t *flops);

/* ------------------------------------------------------------------------
 * Analytic transformer FLOPs (double)
 * ------------------------------------------------------------------------ */

typedef enum mfu_mlp_kind {
    MFU_MLP_GELU = 0,  /* up, down: 2 matrices (GPT-2) */
    MFU_MLP_SWIGLU = 1 /* gate, up, down: 3 matrices (Llama) */
} mfu_mlp_kind;

typedef enum mfu_norm_kind {
    MFU_NORM_RMSNORM = 0,  /* weight only: hidden params */
    MFU_NORM_LAYERNORM = 1 /* weight and bias: 2 * hidden params */
} mfu_norm_kind;

/* LoRA target bits (mfu_transformer_options.lora_targets). On a GELU MLP,
 * UP is the first matrix (GPT-2 c_fc) and DOWN the second (mlp.c_proj);
 * GATE does not exist there. On MoE layers the MLP bits adapt every expert
 * and the shared expert (as peft's name matching does). */
enum {
    MFU_LORA_Q = 1u << 0,
    MFU_LORA_K = 1u << 1,
    MFU_LORA_V = 1u << 2,
    MFU_LORA_O = 1u << 3,
    MFU_LORA_GATE = 1u << 4,
    MFU_LORA_UP = 1u << 5,
    MFU_LORA_DOWN = 1u << 6,
    MFU_LORA_ALL = (1u << 7) - 1u
};

/*
 * A decoder-only transformer. Field names are the Python keyword names, and
 * the validator reports the bad one by that name.
 */
typedef struct mfu_transformer_dims {
    int64_t hidden_size;       /* d */
    int64_t num_layers;        /* L */
    int64_t num_heads;         /* H: query heads */
    int64_t num_kv_heads;      /* H_kv: 1..H, divides H (GQA / MQA);
                                * 0 = H (multi-head attention) */
    int64_t head_dim;          /* Q; 0 = hidden_size / num_heads */
    int64_t intermediate_size; /* dense MLP width (needed by dense layers) */
    int64_t vocab_size;        /* V */
    mfu_mlp_kind mlp;
    mfu_norm_kind norm;
    /* Mixture of experts: 0 experts = every layer dense. */
    int64_t num_experts;                     /* E */
    int64_t experts_per_token;               /* k active experts, 1..E */
    int64_t moe_intermediate_size;           /* each expert's width */
    int64_t shared_expert_intermediate_size; /* 0 = no shared expert */
    int shared_expert_gate;   /* Qwen2-MoE: Linear(d, 1) on the shared expert */
    int64_t num_dense_layers; /* with experts: layers using the dense MLP */
    /* Exact parameter count. */
    int tie_word_embeddings;  /* lm_head shares the token embedding */
    int qkv_bias;             /* q, k, v projections have biases */
    int attention_out_bias;   /* o projection has a bias */
    int mlp_bias;             /* MLP (and expert) matrices have biases */
    int qk_norm;              /* per-head RMSNorm on q and k (Qwen3) */
    int64_t num_positions;    /* learned position table rows (GPT-2); 0 = none */
    /* Attention span. */
    int64_t sliding_window;     /* 0 = full attention */
    int64_t num_sliding_layers; /* layers using the window (0..L) */
} mfu_transformer_dims;

typedef enum mfu_flops_formula {
    /* 6 * N_c * T: the parameter rule, no attention term. */
    MFU_FORMULA_6N = 0,
    /* 6 * N_c * T + 12 * L * H * Q * sum_i s_i * ctx_i (PaLM, torchtitan):
     * the parameter rule plus the attention score/value matmuls. */
    MFU_FORMULA_PALM = 1,
    /* Every matmul the model runs, each 2*m*n*k: q/k/v/o projections (GQA),
     * MLP matrices, router + active experts + shared expert, attention
     * QK^T and AV, lm_head. Biases, norms, softmax, embedding lookups: 0. */
    MFU_FORMULA_MATMUL = 2
} mfu_flops_formula;

typedef enum mfu_recompute {
    MFU_RECOMPUTE_NONE = 0,
    MFU_RECOMPUTE_FULL = 1,     /* each layer's forward runs again in backward */
    MFU_RECOMPUTE_SELECTIVE = 2 /* the attention core (QK^T, softmax, AV) runs
                                 * again in backward (Megatron selective) */
} mfu_recompute;

typedef struct mfu_transformer_options {
    mfu_flops_formula formula;
    mfu_causal causal;
    int include_lm_head;   /* count the lm_head matmul (even when tied) */
    int include_embedding; /* count the embedding tables as if matmul weights */
    mfu_recompute recompute; /* hardware FLOPs only; model FLOPs never change */
    int64_t lora_rank;     /* 0 = full training */
    unsigned lora_targets; /* MFU_LORA_* bits; non-zero iff lora_rank > 0 */
} mfu_transformer_options;

/* The sequences of one batch, as the attention term needs them. */
typedef struct mfu_sequences {
    double num_tokens;     /* T = sum_i s_i */
    double sum_sq;         /* sum_i s_i^2 */
    double sum_windowed;   /* sum_i s_i * min(s_i, window) */
    int64_t window;        /* the window sum_windowed used (0 = none) */
} mfu_sequences;

/* Sequences from real (unpadded) lengths; zero lengths are allowed (empty
 * rows), negative ones are not. `window` is the model's sliding window
 * (0 = none). */
mfu_status mfu_sequences_from_lengths(const int64_t *lengths, size_t count,
                                      int64_t window, mfu_sequences *out);

/* `batch` sequences of `seq_len` tokens each. */
mfu_status mfu_sequences_uniform(int64_t batch, int64_t seq_len,
                                 int64_t window, mfu_sequences *out);

typedef struct mfu_transformer_flops {
    double model_flops;    /* MFU numerator for the batch */
    double hardware_flops; /* HFU numerator: model + activation recompute */
    double forward_flops;  /* one forward pass (inference cost) */
    double attention_flops; /* forward attention core (QK^T + AV) inside
                             * forward_flops; 0 for the 6N formula */
    double num_params;      /* N: every parameter once (tied counted once) */
    double num_embedding_params; /* N_emb: token (+ position) tables */
    double num_active_params; /* N with only the k active experts */
    double num_adapter_params; /* LoRA A and B matrices (all experts) */
    double num_tokens;        /* T */
} mfu_transformer_flops;

/* Defaults: a dense SwiGLU/RMSNorm layout with everything else zero; options
 * PALM, FULL, lm_head included, embedding excluded, no recompute, no LoRA. */
void mfu_transformer_dims_init(mfu_transformer_dims *dims);
void mfu_transformer_options_init(mfu_transformer_options *options);

/* Check dims and options; on error set *bad_field to the offending field's
 * (Python keyword) name and return MFU_ERR_INVALID_ARGUMENT. */
mfu_status mfu_transformer_validate(const mfu_transformer_dims *dims,
                                    const mfu_transformer_options *options,
                                    const char **bad_field);

/*
 * The analytic count. `seqs` must come from mfu_sequences_* with the
 * window of `dims` (else bad field "sliding_window") and have T > 0 (else
 * "seq_lens"). Let d, L, H, H_kv, Q, I, V, E, k be the dims, and per token:
 *   attention projections  d*H*Q + 2*d*H_kv*Q + H*Q*d
 *   dense MLP              m*d*I           (m = 2 GELU, 3 SwiGLU)
 *   MoE MLP (active)       d*E + k*m*d*I_moe + m*d*I_shared (+ d if gated)
 *   lm_head                V*d
 * N_c (6N/PALM) is the active parameter count of the layers and final norm,
 * plus V*d for the lm_head when included, plus N_emb when the embedding is
 * included; MATMUL uses only the matmul weights above (no biases or norms).
 * Attention core per layer: 4*H*Q*ctx where ctx = sum_i s_i^2 (full
 * layers) or sum_i s_i*min(s_i, window) (sliding layers); HALF halves it.
 *   forward  = 2*W*T + 2*N_adapter*T + A
 *   model    = 6*W*T + 6*N_adapter*T + 3*A           (full training)
 *            = 4*W*T + 6*N_adapter*T + 3*A           (LoRA: frozen W gets
 *              forward + input-gradient, no weight gradient)
 *   hardware = model (+ A with selective recompute, + the layers' forward
 *              with full recompute)
 * where W = N_c (or the matmul weights), A = the attention core forward
 * (0 for 6N), N_adapter = active LoRA parameters.
 * NB: the PaLM term 12*L*H*Q*S per token is 3*A/T for uniform sequences of
 * length S. NB (LoRA): the first layer's frozen projections whose input
 * does not require grad skip their input gradient in autograd; this count
 * still includes it (<= 2 * their params per token).
 */
mfu_status mfu_transformer_flops_compute(const mfu_transformer_dims *dims,
                                         const mfu_transformer_options *options,
                                         const mfu_sequences *seqs,
                                         mfu_transformer_flops *out,
                                         const char **bad_field);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MFU_FLOPS_H */
