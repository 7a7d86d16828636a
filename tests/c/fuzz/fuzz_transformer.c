/*
 * fuzz_transformer.c -- the analytic path: mfu_transformer_validate(),
 * mfu_sequences_from_lengths() / mfu_sequences_uniform() and
 * mfu_transformer_flops_compute() on fuzzed dims, options and sequence
 * lengths (what the Python layer builds from a user's config / preset and
 * a batch's cu_seqlens, position_ids or attention mask).
 *
 * Input: mode u8, then every dims field, every options field, the window
 * mode, the sequence count and lengths (fi_i64 / fi_i32 / u8 values).
 * Mode bit 0 keeps dims "plausible" (small positive sizes, consistent MoE /
 * GQA / sliding fields) so the compute path is reached often; without it
 * every field is raw. Bit 1 uses mfu_sequences_uniform.
 *
 * Properties:
 *  - validate returns OK or INVALID_ARGUMENT, and on INVALID names a field
 *    (a non-empty string); compute agrees with validate on the dims;
 *  - sequences: OK iff the window and every length are >= 0 (uniform: and
 *    batch, seq_len >= 0); then T, sum s^2, sum s*min(s, w) finite, >= 0,
 *    sum_windowed <= sum_sq;
 *  - compute on OK: every figure finite and >= 0, forward >= attention,
 *    model >= forward, hardware >= model, active params <= params; and the
 *    same call twice gives the same numbers.
 */
#include <math.h>

#include "flops.h"
#include "fuzz_input.h"

static int64_t small_pos(fuzz_input *in, int64_t mod)
{
    return 1 + (int64_t)(fi_bytes_le(in, 2) % (uint64_t)mod);
}

static int64_t raw_or_small(fuzz_input *in, int plausible, int64_t mod)
{
    return plausible ? small_pos(in, mod) : fi_i64(in);
}

static int flag(fuzz_input *in, int plausible)
{
    uint8_t b = fi_u8(in);
    return plausible ? (b & 1) : (int)(b % 4) - 1; /* raw: -1..2 */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    uint8_t mode = fi_u8(&in);
    int plausible = mode & 1, uniform = (mode >> 1) & 1;
    mfu_transformer_dims d;
    mfu_transformer_options o;
    mfu_sequences seqs;
    mfu_transformer_flops out, out2;
    const char *bad = NULL, *bad2 = NULL;
    mfu_status vst, sst, cst;
    int64_t *lengths;
    size_t count;
    int64_t window;
    uint8_t window_mode;

    mfu_transformer_dims_init(&d);
    mfu_transformer_options_init(&o);
    d.hidden_size = raw_or_small(&in, plausible, 8192);
    d.num_layers = raw_or_small(&in, plausible, 128);
    d.num_heads = raw_or_small(&in, plausible, 128);
    d.num_kv_heads = plausible ? (fi_u8(&in) & 1 ? 0 : d.num_heads)
                               : fi_i64(&in);
    d.head_dim = plausible ? (fi_u8(&in) & 1 ? 0 : small_pos(&in, 256))
                           : fi_i64(&in);
    if (plausible && d.head_dim == 0)
        d.hidden_size = d.num_heads * (d.hidden_size % 256 + 1);
    d.intermediate_size = raw_or_small(&in, plausible, 32768);
    d.vocab_size = raw_or_small(&in, plausible, 262144);
    d.mlp = (mfu_mlp_kind)(plausible ? fi_u8(&in) & 1 : fi_i32(&in));
    d.norm = (mfu_norm_kind)(plausible ? fi_u8(&in) & 1 : fi_i32(&in));
    d.num_experts = plausible ? (fi_u8(&in) & 1 ? 0 : small_pos(&in, 256))
                              : fi_i64(&in);
    if (plausible && d.num_experts > 0) {
        d.experts_per_token = small_pos(&in, d.num_experts);
        d.moe_intermediate_size = small_pos(&in, 4096);
        d.shared_expert_intermediate_size = fi_u8(&in) & 1 ? 0 : small_pos(&in, 8192);
        d.shared_expert_gate = d.shared_expert_intermediate_size > 0 && (fi_u8(&in) & 1);
        d.num_dense_layers = (int64_t)(fi_u8(&in) % (uint64_t)(d.num_layers + 1));
    } else if (!plausible) {
        d.experts_per_token = fi_i64(&in);
        d.moe_intermediate_size = fi_i64(&in);
        d.shared_expert_intermediate_size = fi_i64(&in);
        d.shared_expert_gate = flag(&in, 0);
        d.num_dense_layers = fi_i64(&in);
    }
    d.tie_word_embeddings = flag(&in, plausible);
    d.qkv_bias = flag(&in, plausible);
    d.attention_out_bias = flag(&in, plausible);
    d.mlp_bias = flag(&in, plausible);
    d.qk_norm = flag(&in, plausible);
    d.num_positions = plausible ? (fi_u8(&in) & 1 ? 0 : small_pos(&in, 8192))
                                : fi_i64(&in);
    d.sliding_window = plausible ? (fi_u8(&in) & 1 ? 0 : small_pos(&in, 8192))
                                 : fi_i64(&in);
    d.num_sliding_layers =
        plausible ? (d.sliding_window > 0
                         ? (int64_t)(fi_u8(&in) % (uint64_t)(d.num_layers + 1))
                         : 0)
                  : fi_i64(&in);

    o.formula = (mfu_flops_formula)(plausible ? fi_u8(&in) % 3 : fi_i32(&in));
    o.causal = (mfu_causal)(plausible ? fi_u8(&in) % 2 : fi_i32(&in));
    o.include_lm_head = flag(&in, plausible);
    o.include_embedding = flag(&in, plausible);
    o.recompute = (mfu_recompute)(plausible ? fi_u8(&in) % 3 : fi_i32(&in));
    o.lora_rank = plausible ? (fi_u8(&in) & 1 ? 0 : small_pos(&in, 256))
                            : fi_i64(&in);
    o.lora_targets = plausible
                         ? (o.lora_rank > 0 ? (unsigned)(fi_u8(&in) % MFU_LORA_ALL) + 1u : 0u)
                         : (unsigned)fi_i32(&in);
    if (plausible && d.mlp == MFU_MLP_GELU)
        o.lora_targets &= ~(unsigned)MFU_LORA_GATE;
    if (plausible && o.lora_rank > 0 && o.lora_targets == 0)
        o.lora_targets = MFU_LORA_Q;

    vst = mfu_transformer_validate(&d, &o, &bad);
    FUZZ_CHECK(vst == MFU_OK || vst == MFU_ERR_INVALID_ARGUMENT);
    if (vst != MFU_OK)
        FUZZ_CHECK(bad != NULL && bad[0] != '\0');

    /* The sequences: the model's window, or a fuzzed one. */
    window_mode = fi_u8(&in);
    window = (window_mode & 3) != 0 ? d.sliding_window : fi_i64(&in);
    count = fi_u8(&in) % 65;
    lengths = malloc((count > 0 ? count : 1) * sizeof *lengths);
    if (lengths == NULL)
        abort();
    for (size_t i = 0; i < count; i++)
        lengths[i] = (window_mode & 4) ? (int64_t)fi_bytes_le(&in, 2) : fi_i64(&in);
    if (uniform) {
        int64_t batch = count > 0 ? lengths[0] : 0;
        int64_t seq_len = count > 1 ? lengths[1] : 0;
        int ok = batch >= 0 && seq_len >= 0 && window >= 0;
        sst = mfu_sequences_uniform(batch, seq_len, window, &seqs);
        FUZZ_CHECK(sst == (ok ? MFU_OK : MFU_ERR_INVALID_ARGUMENT));
    } else {
        int ok = window >= 0;
        for (size_t i = 0; i < count; i++)
            ok &= lengths[i] >= 0;
        sst = mfu_sequences_from_lengths(lengths, count, window, &seqs);
        FUZZ_CHECK(sst == (ok ? MFU_OK : MFU_ERR_INVALID_ARGUMENT));
        FUZZ_CHECK(mfu_sequences_from_lengths(NULL, count, window, &seqs) ==
                   (count > 0 ? MFU_ERR_INVALID_ARGUMENT : sst));
    }
    free(lengths);
    if (sst != MFU_OK)
        return 0;
    FUZZ_CHECK(seqs.window == window);
    FUZZ_CHECK(isfinite(seqs.num_tokens) && seqs.num_tokens >= 0.0);
    FUZZ_CHECK(isfinite(seqs.sum_sq) && seqs.sum_sq >= 0.0);
    FUZZ_CHECK(isfinite(seqs.sum_windowed) && seqs.sum_windowed >= 0.0);
    FUZZ_CHECK(seqs.sum_windowed <= seqs.sum_sq);

    bad = NULL;
    cst = mfu_transformer_flops_compute(&d, &o, &seqs, &out, &bad);
    FUZZ_CHECK(cst == MFU_OK || cst == MFU_ERR_INVALID_ARGUMENT);
    if (vst != MFU_OK) {
        FUZZ_CHECK(cst == MFU_ERR_INVALID_ARGUMENT);
        return 0;
    }
    if (cst != MFU_OK) {
        /* valid dims: only the sequences can be refused */
        FUZZ_CHECK(bad != NULL && (strcmp(bad, "seq_lens") == 0 ||
                                   strcmp(bad, "sliding_window") == 0));
        FUZZ_CHECK((strcmp(bad, "seq_lens") == 0) == !(seqs.num_tokens > 0.0));
        return 0;
    }
    FUZZ_CHECK(seqs.num_tokens > 0.0 && window == d.sliding_window);
    {
        const double v[] = {out.model_flops, out.hardware_flops,
                            out.forward_flops, out.attention_flops,
                            out.num_params, out.num_embedding_params,
                            out.num_active_params, out.num_adapter_params,
                            out.num_tokens};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            FUZZ_CHECK(isfinite(v[i]) && v[i] >= 0.0);
    }
    FUZZ_CHECK(out.forward_flops >= out.attention_flops);
    FUZZ_CHECK(out.model_flops >= out.forward_flops);
    FUZZ_CHECK(out.hardware_flops >= out.model_flops);
    FUZZ_CHECK(out.num_active_params <= out.num_params);
    FUZZ_CHECK(out.num_tokens == seqs.num_tokens);
    if (o.formula == MFU_FORMULA_6N)
        FUZZ_CHECK(out.attention_flops == 0.0);

    cst = mfu_transformer_flops_compute(&d, &o, &seqs, &out2, &bad2);
    FUZZ_CHECK(cst == MFU_OK && memcmp(&out, &out2, sizeof out) == 0);
    FUZZ_CHECK(mfu_transformer_flops_compute(&d, &o, &seqs, NULL, &bad2) ==
               MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK(mfu_transformer_flops_compute(&d, &o, NULL, &out2, NULL) ==
               MFU_ERR_INVALID_ARGUMENT);
    return 0;
}
