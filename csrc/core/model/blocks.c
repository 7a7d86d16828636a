/* blocks.c -- decoder blocks and chunked scans (see blocks.h). */
#include "blocks.h"

static double head_dim_of(const mfu_transformer_dims *d)
{
    return (double)(d->head_dim > 0 ? d->head_dim
                                    : d->hidden_size / (d->num_heads > 0 ? d->num_heads : 1));
}

static double kv_heads_of(const mfu_transformer_dims *d)
{
    return (double)(d->num_kv_heads > 0 ? d->num_kv_heads : d->num_heads);
}

double mfu_norm_params(const mfu_transformer_dims *d, double width)
{
    return d->norm == MFU_NORM_LAYERNORM ? 2.0 * width : width;
}

/* Standard attention (transformers LlamaAttention and its descendants):
 * q_proj [d -> H*Q] (Qwen3-Next: [d -> 2*H*Q], query and output gate),
 * k_proj / v_proj [d -> H_kv*Q], o_proj [H*Q -> d]; q/k norms per head
 * (Qwen3, Gemma 3) or over all heads (OLMo 2: Olmo2Attention q_norm over
 * H*Q, k_norm over H_kv*Q); gpt-oss: one sink logit per head
 * (GptOssAttention.sinks). The output gate of Qwen3-Next is q_proj's
 * second half; AFMoE's (AfmoeAttention.gate_proj) is its own bias-free
 * [d -> H*Q] Linear: the same matmul. */
static mfu_tally gqa_tally(const mfu_transformer_dims *d,
                           const mfu_transformer_options *o)
{
    const double h = (double)d->hidden_size, heads = (double)d->num_heads;
    const double kv = kv_heads_of(d), q = head_dim_of(d);
    const double qw = d->attention_gate ? 2.0 : 1.0;
    const double rank = (double)o->lora_rank;
    const unsigned t = o->lora_targets;
    mfu_tally r = {0};

    r.matmul = h * heads * q * qw + 2.0 * h * kv * q + heads * q * h;
    r.params = r.matmul;
    /* AFMoE's separate gate_proj has no bias (AfmoeAttention) */
    if (d->qkv_bias)
        r.params += heads * q * (d->attention_gate_proj ? 1.0 : qw) + 2.0 * kv * q;
    if (d->attention_out_bias)
        r.params += h;
    if (d->qk_norm == MFU_QK_NORM_HEAD)
        r.params += 2.0 * q;
    else if (d->qk_norm == MFU_QK_NORM_PROJECTION)
        r.params += heads * q + kv * q;
    if (d->attention_sinks)
        r.params += heads;
    r.lora = ((t & MFU_LORA_Q) ? rank * (h + heads * q * qw) : 0.0) +
             ((t & MFU_LORA_K) ? rank * (h + kv * q) : 0.0) +
             ((t & MFU_LORA_V) ? rank * (h + kv * q) : 0.0) +
             ((t & MFU_LORA_O) ? rank * (heads * q + h) : 0.0);
    return r;
}

/* Multi-head latent attention, DeepSeek-V3 (arXiv:2412.19437 §2.1.1;
 * transformers DeepseekV3Attention): q_a_proj [d -> r_q] + q_a_layernorm +
 * q_b_proj [r_q -> H*(d_nope + d_rope)] (or q_proj [d -> H*d_qk] when
 * q_lora_rank is None), kv_a_proj_with_mqa [d -> r_kv + d_rope] +
 * kv_a_layernorm(r_kv), kv_b_proj [r_kv -> H*(d_nope + d_v)], o_proj
 * [H*d_v -> d]; attention_bias puts biases on q_a, kv_a and o. */
static mfu_tally mla_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size, heads = (double)d->num_heads;
    const double rq = (double)d->q_lora_rank, rkv = (double)d->kv_lora_rank;
    const double nope = (double)d->qk_nope_head_dim;
    const double rope = (double)d->qk_rope_head_dim, dv = (double)d->v_head_dim;
    mfu_tally r = {0};

    r.matmul = (rq > 0.0 ? h * rq + rq * heads * (nope + rope)
                         : h * heads * (nope + rope)) +
               h * (rkv + rope) + rkv * heads * (nope + dv) + heads * dv * h;
    r.params = r.matmul + (rq > 0.0 ? rq : 0.0) + rkv; /* the two norms (RMS) */
    if (d->qkv_bias)
        r.params += (rq > 0.0 ? rq : 0.0) + rkv + rope;
    if (d->attention_out_bias)
        r.params += h;
    return r;
}

mfu_tally mfu_attention_tally(const mfu_transformer_dims *d,
                              const mfu_transformer_options *o)
{
    return d->attention == MFU_ATTENTION_MLA ? mla_tally(d) : gqa_tally(d, o);
}

double mfu_attention_pair_flops(const mfu_transformer_dims *d)
{
    const double heads = (double)d->num_heads;
    if (d->attention == MFU_ATTENTION_MLA)
        /* QK^T over d_nope + d_rope, AV over d_v */
        return 2.0 * heads * ((double)d->qk_nope_head_dim + (double)d->qk_rope_head_dim +
                              (double)d->v_head_dim);
    return 2.0 * heads * 2.0 * head_dim_of(d);
}

/* SwiGLU / GeGLU (LlamaMLP, Gemma2MLP; Phi3MLP's and Glm4MLP's fused
 * gate_up_proj are the same two matrices): gate, up [d -> I], down [I -> d];
 * two matrices, "gelu" (GPT2MLP c_fc [d -> I], c_proj [I -> d]; the same
 * shape in Starcoder2MLP, ArceeMLP's ReLU^2 and ApertusMLP's xIELU up_proj /
 * down_proj). gpt-oss experts carry biases (2I + d). */
mfu_tally mfu_mlp_tally(const mfu_transformer_dims *d,
                        const mfu_transformer_options *o, double width)
{
    const double h = (double)d->hidden_size, rank = (double)o->lora_rank;
    const int swiglu = d->mlp == MFU_MLP_SWIGLU;
    const unsigned t = o->lora_targets;
    mfu_tally r = {0};

    if (d->mlp == MFU_MLP_NONE)
        return r;
    r.matmul = (swiglu ? 3.0 : 2.0) * h * width;
    r.params = r.matmul + (d->mlp_bias ? (swiglu ? 2.0 : 1.0) * width + h : 0.0);
    r.lora = ((swiglu && (t & MFU_LORA_GATE)) ? rank * (h + width) : 0.0) +
             ((t & MFU_LORA_UP) ? rank * (h + width) : 0.0) +
             ((t & MFU_LORA_DOWN) ? rank * (width + h) : 0.0);
    return r;
}

/* Nemotron-H (transformers nemotron_h/modeling_nemotron_h.py NemotronHMoE,
 * NemotronHExperts): with moe_latent_size l, fc1_latent_proj [d -> l] and
 * fc2_latent_proj [l -> d] (bias: mlp_bias) around experts whose up / down
 * matrices map l -> I -> l, without biases; the router and the shared
 * expert stay at width d. */
mfu_tally mfu_latent_expert_tally(const mfu_transformer_dims *d)
{
    const double m = d->mlp == MFU_MLP_SWIGLU ? 3.0 : 2.0;
    mfu_tally r = {0};

    r.matmul = m * (double)d->moe_latent_size * (double)d->moe_intermediate_size;
    r.params = r.matmul;
    return r;
}

mfu_tally mfu_latent_projection_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size, latent = (double)d->moe_latent_size;
    mfu_tally r = {0};

    r.matmul = 2.0 * h * latent;
    r.params = r.matmul + (d->mlp_bias ? latent + h : 0.0);
    return r;
}

/* Router [d -> E] (+ bias: gpt-oss GptOssTopKRouter), k of E experts
 * (MixtralExperts, Qwen3MoeExperts, DeepseekV3 routed experts), a shared
 * expert (Qwen2MoeSparseMoeBlock.shared_expert with shared_expert_gate
 * [d -> 1]; DeepseekV3MoE.shared_experts of width n_shared * I_moe;
 * Llama4TextMoe.shared_expert). DeepSeek's e_score_correction_bias is a
 * buffer, not a parameter; ERNIE 4.5's (Ernie4_5_MoeStatics) and AFMoE's
 * expert_bias are parameters: router_bias counts their E. Latent experts
 * (Nemotron-H): mfu_latent_expert_tally below. */
mfu_tally mfu_moe_expert_tally(const mfu_transformer_dims *d,
                               const mfu_transformer_options *o)
{
    mfu_tally expert = d->moe_latent_size > 0
                           ? mfu_latent_expert_tally(d)
                           : mfu_mlp_tally(d, o, (double)d->moe_intermediate_size);
    /* NemotronHExperts, ERNIE 4.5 MoE: bias-free experts whatever mlp_bias */
    if (d->unbiased_experts)
        expert.params = expert.matmul;
    return expert;
}

void mfu_moe_tally(const mfu_transformer_dims *d,
                   const mfu_transformer_options *o, mfu_tally *active,
                   mfu_tally *all)
{
    const double h = (double)d->hidden_size, e = (double)d->num_experts;
    const double k = (double)d->experts_per_token;
    const mfu_tally expert = mfu_moe_expert_tally(d, o);
    const mfu_tally latent = d->moe_latent_size > 0 ? mfu_latent_projection_tally(d)
                                                    : (mfu_tally){0};
    mfu_tally shared = {0};

    if (d->shared_expert_intermediate_size > 0) {
        shared = mfu_mlp_tally(d, o, (double)d->shared_expert_intermediate_size);
        if (d->shared_expert_gate) {
            shared.matmul += h;
            shared.params += h;
        }
    }
    *active = *all = (mfu_tally){.matmul = h * e + latent.matmul,
                                 .params = h * e + (d->router_bias ? e : 0.0) + latent.params};
    active->matmul += k * expert.matmul + shared.matmul;
    active->params += k * expert.params + shared.params;
    active->lora = k * expert.lora + shared.lora;
    all->matmul += e * expert.matmul + shared.matmul;
    all->params += e * expert.params + shared.params;
    all->lora = e * expert.lora + shared.lora;
}

double mfu_linear_conv_channels(const mfu_transformer_dims *d)
{
    return 2.0 * (double)d->linear_num_key_heads * (double)d->linear_key_head_dim +
           (double)d->linear_num_value_heads * (double)d->linear_value_head_dim;
}

/* Gated DeltaNet (Qwen3-Next, transformers Qwen3NextGatedDeltaNet):
 * in_proj_qkvz [d -> 2K + 2Vd], in_proj_ba [d -> 2*H_v], conv1d depthwise
 * over 2K + Vd channels (no bias), dt_bias and A_log (H_v each),
 * RMSNormGated(d_v), out_proj [Vd -> d]. */
mfu_tally mfu_linear_attention_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size;
    const double kd = (double)d->linear_num_key_heads * (double)d->linear_key_head_dim;
    const double vd = (double)d->linear_num_value_heads * (double)d->linear_value_head_dim;
    const double hv = (double)d->linear_num_value_heads;
    mfu_tally r = {0};

    r.matmul = h * (2.0 * kd + 2.0 * vd) + h * 2.0 * hv + vd * h;
    r.params = r.matmul + mfu_linear_conv_channels(d) * (double)d->linear_conv_kernel +
               2.0 * hv + (double)d->linear_value_head_dim;
    return r;
}

double mfu_ssm_conv_channels(const mfu_transformer_dims *d)
{
    return (double)d->ssm_num_heads * (double)d->ssm_head_dim +
           2.0 * (double)d->ssm_num_groups * (double)d->ssm_state_size;
}

/* Mamba-2 (Dao & Gu, arXiv:2405.21060; transformers Mamba2Mixer):
 * in_proj [d -> I + (I + 2GN) + H_s] (z, xBC, dt), conv1d depthwise over
 * I + 2GN channels (bias: use_conv_bias), dt_bias / A_log / D (H_s each),
 * MambaRMSNormGated(I) (ssm_norm), out_proj [I -> d] (bias: use_bias; the
 * in_proj bias is ssm_proj_bias, the out_proj one ssm_out_proj_bias). */
mfu_tally mfu_ssm_tally(const mfu_transformer_dims *d)
{
    const double h = (double)d->hidden_size;
    const double inner = (double)d->ssm_num_heads * (double)d->ssm_head_dim;
    const double conv = mfu_ssm_conv_channels(d), hs = (double)d->ssm_num_heads;
    const double proj_out = inner + conv + hs;
    mfu_tally r = {0};

    r.matmul = h * proj_out + inner * h;
    r.params = r.matmul + conv * (double)d->ssm_conv_kernel + 3.0 * hs;
    if (d->ssm_norm) /* Falcon-H1: only with mamba_rms_norm */
        r.params += inner;
    if (d->ssm_conv_bias)
        r.params += conv;
    if (d->ssm_proj_bias)
        r.params += proj_out;
    if (d->ssm_out_proj_bias) /* Falcon-H1: projectors_bias */
        r.params += h;
    return r;
}

/*
 * The gated delta rule as transformers' torch fallback runs it
 * (qwen3_next/modeling_qwen3_next.py torch_chunk_gated_delta_rule, chunk
 * C = linear_chunk_size = 64, each sequence padded to whole chunks; FLA's
 * chunk_gated_delta_rule uses the same chunk). Per value head (q and k are
 * repeated to H_v heads), per chunk, with d_k, d_v:
 *   k_beta @ k^T, q @ k^T              2 * 2*C^2*d_k
 *   k_cumdecay @ S, q @ S              2 * 2*C*d_k*d_v
 *   intra @ v_new                      2*C^2*d_v
 *   k^T @ v_new (state update)         2*C*d_k*d_v
 * forward = chunks * (4C^2 d_k + 2C^2 d_v + 6C d_k d_v). Model: 3x, then
 * the backward that runs in training (docs/flops.md, "Only what reaches the
 * loss gets a backward"), per value head:
 *   - 2 * 2*C*d_k*d_v per sequence: the first chunk's two reads of the zero
 *     initial state (no gradient to it);
 *   - 2 * 2*C*d_k*d_v per sequence: the last chunk's state update, whose
 *     result (the final state) no loss reads, runs no backward;
 *   + 2*C^2*(d_k + d_v) per chunk, gated DeltaNet only: the two
 *     unit-triangular solves (torch.linalg.solve_triangular, for the values
 *     and the decayed keys) are not matmuls and their forward is not
 *     counted, by the counter either; each one's backward forms the
 *     triangle's gradient with a matmul of [C, d] by [d, C].
 * KDA (family_mla.h) inverts its intra-chunk system with an in-place row
 * recurrence instead: no solve, no such backward.
 */
mfu_status mfu_deltanet_scan(const mfu_transformer_dims *d,
                             const mfu_batch *batch, mfu_scan_flops *out)
{
    const double c = (double)d->linear_chunk_size, dk = (double)d->linear_key_head_dim;
    const double dv = (double)d->linear_value_head_dim;
    const double hv = (double)d->linear_num_value_heads;
    const double solves = d->linear_kind == MFU_LINEAR_KDA ? 0.0 : 2.0 * c * c * (dk + dv);
    mfu_chunking ch;
    mfu_status st = mfu_batch_chunking(batch, d->linear_chunk_size, &ch);
    if (st != MFU_OK)
        return st;
    out->forward = hv * ch.chunks *
                   (4.0 * c * c * dk + 2.0 * c * c * dv + 6.0 * c * dk * dv);
    out->model = 3.0 * out->forward + hv * ch.chunks * solves -
                 hv * ch.nonempty * 2.0 * 4.0 * c * dk * dv;
    return MFU_OK;
}

/*
 * The SSD scan as transformers' torch fallback runs it
 * (mamba2/modeling_mamba2.py mamba2_chunk_scan, chunk C = chunk_size from
 * the config, each sequence padded to whole chunks; the reference is the
 * chunked SSD algorithm, arXiv:2405.21060 §6). Per head, per chunk, with
 * head dim P and state N (B and C repeated to every head of a group):
 *   C @ B^T (G)                      2*C^2*N
 *   (G * L) @ x (Y_diag)             2*C^2*P
 *   B_decay^T @ x (chunk states)     2*C*P*N
 *   C @ states (Y_off)               2*C*N*P
 * and per sequence the inter-chunk pass over its n chunks, a [n+1, n+1]
 * decay matrix times the states: 2*(n+1)^2*P*N. Every operand needs a
 * gradient: model = 3x forward.
 */
mfu_status mfu_ssd_scan(const mfu_transformer_dims *d, const mfu_batch *batch,
                        mfu_scan_flops *out)
{
    const double c = (double)d->ssm_chunk_size, p = (double)d->ssm_head_dim;
    const double n = (double)d->ssm_state_size, hs = (double)d->ssm_num_heads;
    mfu_chunking ch;
    mfu_status st = mfu_batch_chunking(batch, d->ssm_chunk_size, &ch);
    if (st != MFU_OK)
        return st;
    out->forward = hs * (ch.chunks * (2.0 * c * c * n + 2.0 * c * c * p +
                                      4.0 * c * p * n) +
                         2.0 * ch.chunks_sq * p * n);
    out->model = 3.0 * out->forward;
    return MFU_OK;
}
