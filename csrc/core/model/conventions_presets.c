/* conventions_presets.c -- the presets of other frameworks' MFU formulas
 * and their rules by model type (conventions.h). Each row cites the file,
 * function, line and commit whose formula it reproduces, read (not copied)
 * at that commit; tests/test_convention_grid.py transcribes each function
 * by hand and checks the preset against it. */
#include <string.h>

#include "conventions.h"

enum { EMB_EXCLUDED = 0, EMB_COUNTED = 1, EMB_ONCE = 2 };
enum { WIN_PRESET = -1, WIN_SPAN = 0, WIN_SQUARE = 1, WIN_HALF_SPAN = 2, WIN_KEPT = 3 };

/* A quirk of a rule, on at `line` of the preset's source */
#define AT(quirk, at) [MFU_QUIRK_##quirk] = (at)

/* verl/utils/flops_counter.py @ b178a3cd56f58b2d502255daba591e92833930a7:
 * FlopsCounter dispatches on config.model_type through ESTIMATE_FUNC (line
 * 538); a type it does not list gets _estimate_unknown_flops (line 534):
 * MFU 0, after one printed line (line 573). Every function: dense_N =
 * matmul weights + emd_and_lm_head_N = 2*V*d, 6 * dense_N * tokens, and the
 * attention 6 * pairs * head_dim * H (half of PaLM's 12). */
static const mfu_convention_rule verl_rules[] = {
    /* head_dim = getattr(config, "head_dim", d // H) (line 96); the
     * attention 6 * sum(s^2) on every layer (line 115): no window */
    {.model_types = "llama mistral qwen2 qwen3 seed_oss qwen2_5_vl",
     .function = "_estimate_qwen2_flops", .line = 88, .windows = WIN_SQUARE, .windows_line = 115},
    /* moe_mlp_N = d*k*I_moe*3 + d*E: no shared expert or gate; times
     * num_hidden_layers: mlp_only_layers ignored */
    {.model_types = "qwen2_moe qwen3_moe", .function = "_estimate_qwen2_moe_flops", .line = 318,
     .windows = WIN_SQUARE, .windows_line = 347,
     .quirk_line = {AT(NO_SHARED_EXPERT, 335), AT(ALL_MOE, 339)}},
    /* the text_config at head_dim = d // H; images by _estimate_qwen3_vit_flop */
    {.model_types = "qwen3_vl", .function = "_estimate_qwen3_vl_flops", .line = 123,
     .windows = WIN_SQUARE, .windows_line = 152,
     .quirk_line = {AT(HIDDEN_HEAD_DIM, 132), AT(VIT_ESTIMATE, 215)}},
    /* MLA: 3 * sum(s^2) * L * (d_qk + d_v) * H (line 310); no MTP */
    {.model_types = "deepseek_v3", .function = "_estimate_deepseek_v3_flops", .line = 264,
     .windows = WIN_PRESET},
    /* sliding layers s * min(s, w) at 6 */
    {.model_types = "gemma3_text", .function = "_estimate_gemma3_flops", .line = 355,
     .windows = WIN_HALF_SPAN, .windows_line = 405},
    {.model_types = "gpt_oss", .function = "_estimate_gpt_oss_flops", .line = 463,
     .windows = WIN_HALF_SPAN, .windows_line = 516},
    /* qk_norm_params_per_layer = d + H_kv*Q, in dense_N (line 447) */
    {.model_types = "apertus", .function = "_estimate_apertus_flops", .line = 423,
     .windows = WIN_SQUARE, .windows_line = 455, .quirk_line = {AT(QK_NORM_WEIGHTS, 443)}},
    /* listed, but without an analytic count here */
    {.model_types = "qwen2_vl qwen3_vl_moe minicpmv minicpmo glm4v mimo",
     .function = "ESTIMATE_FUNC", .line = 538, .windows = WIN_PRESET,
     .refused = "verl lists it, but this package has no analytic count of the type to "
                "reproduce verl's with"},
    {.function = "_estimate_unknown_flops", .line = 534, .windows = WIN_PRESET,
     .refused = "verl has no formula for it: FlopsCounter logs MFU 0"},
};

/* veomni/utils/count_flops.py @ d9774494f5d8042321386c65c9406e732a271501:
 * VeomniFlopsCounter.estimate_func (line 84) by config.model_type; another
 * type gets _estimate_unknown_flops (line 114): 0 FLOPs. base_N = matmul
 * weights + lm_head_N (V*d; "nn.Embedding is a table lookup", line 118);
 * 6 * base_N * tokens; the attention 12 * pairs * head_dim * H (full). */
static const mfu_convention_rule veomni_rules[] = {
    /* head_dim = hidden_size // num_attention_heads */
    {.model_types = "llama", .function = "_estimate_llama_flops", .line = 610,
     .windows = WIN_SQUARE, .windows_line = 637, .quirk_line = {AT(HIDDEN_HEAD_DIM, 618)}},
    {.model_types = "seed_oss", .function = "_estimate_seed_flops", .line = 300,
     .windows = WIN_SQUARE, .windows_line = 327, .quirk_line = {AT(HIDDEN_HEAD_DIM, 308)}},
    /* _compute_qwen_dense_text_flops (line 223): getattr head_dim; 12 *
     * sum(s^2) on every layer (line 259) */
    {.model_types = "qwen2 qwen3", .function = "_estimate_qwen2_flops", .line = 594,
     .windows = WIN_SQUARE, .windows_line = 259},
    /* the towers by _estimate_qwen_vit_flop / _estimate_qwen3_vit_flop */
    {.model_types = "qwen2_5_vl", .function = "_estimate_qwen2_vl_flops", .line = 644,
     .windows = WIN_SQUARE, .windows_line = 259, .quirk_line = {AT(VIT_ESTIMATE, 831)}},
    {.model_types = "qwen3_vl", .function = "_estimate_qwen3_vl_flops", .line = 677,
     .windows = WIN_SQUARE, .windows_line = 259, .quirk_line = {AT(VIT_ESTIMATE, 739)}},
    /* _compute_qwen3_moe_text_flops (line 262): times num_hidden_layers */
    {.model_types = "qwen3_moe", .function = "_estimate_qwen3_moe_flops", .line = 502,
     .windows = WIN_SQUARE, .windows_line = 297, .quirk_line = {AT(ALL_MOE, 281)}},
    /* 12 * sum(s^2) * L * q_head_dim * H: AV at the q head dim */
    {.model_types = "deepseek_v3", .function = "_estimate_deepseek_v3_flops", .line = 334,
     .windows = WIN_PRESET, .quirk_line = {AT(AV_AT_QK_DIM, 376)}},
    /* sliding layers: _compute_sliding_attention_score_sum (line 519) */
    {.model_types = "gpt_oss", .function = "_estimate_gpt_oss_flops", .line = 529,
     .windows = WIN_KEPT, .windows_line = 582},
    {.model_types = "qwen3_next qwen3_5 qwen3_5_text qwen3_5_moe qwen3_5_moe_text",
     .function = "_estimate_qwen3_next_flops", .line = 1075, .windows = WIN_PRESET,
     .refused = "VeOmni's formula for its gated DeltaNet layers (the recurrence at 15 * d_k * "
                "d_v per token and head) is not reproduced"},
    {.model_types = "qwen2_vl qwen3_vl_moe deepseek_v4", .function = "estimate_func", .line = 84,
     .windows = WIN_PRESET,
     .refused = "VeOmni lists it, but this package has no analytic count of the type to "
                "reproduce VeOmni's with"},
    {.function = "_estimate_unknown_flops", .line = 114, .windows = WIN_PRESET,
     .refused = "VeOmni has no formula for it: VeomniFlopsCounter logs MFU 0"},
};

/* megatron/training/training.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553:
 * one formula for every GPT model, num_floating_point_operations (line
 * 802) -> transformer_flops (line 1009). Its MLA terms add 1 per LoRA rank
 * (lines 1105, 1119), its MTP layers 3d of norms (line 1294), the logits
 * use padded_vocab_size (line 1302; padded to make_vocab_size_divisible_by
 * x TP, megatron/core/tokenizers/utils/build_tokenizer.py line 133), the
 * shared experts carry no gate (line 1283), and the MLP factor is 3 only
 * under --swiglu (line 1070): --quick-geglu, which its gpt-oss recipes run
 * (examples/post_training/modelopt/conf/openai/gpt-oss-20b.sh line 46),
 * counts 2. */
#define MEGATRON_QUIRKS                                                                   \
    AT(NO_SHARED_GATE, 1283), AT(LORA_NORMS, 1105), AT(MTP_NORMS, 1294),                  \
        AT(PADDED_VOCAB, 1302)
static const mfu_convention_rule megatron_rules[] = {
    {.model_types = "gpt_oss", .function = "transformer_flops", .line = 1009,
     .windows = WIN_PRESET, .quirk_line = {MEGATRON_QUIRKS, AT(QUICK_GEGLU, 1070)}},
    {.function = "transformer_flops", .line = 1009, .windows = WIN_PRESET,
     .quirk_line = {MEGATRON_QUIRKS}},
};

/* torchtitan/models/utils.py @ b5bcd76c66d0acb1a08b176d9639425bc55e0b2a and
 * nanoGPT model.py @ 3adf61e154c3fe3fca428ad6bc3818b27a3b8291: parameter
 * rules, the same for every model */
static const mfu_convention_rule torchtitan_rules[] = {
    {.function = "get_dense_model_nparams_and_flops / get_moe_model_nparams_and_flops",
     .windows = WIN_PRESET},
};
static const mfu_convention_rule nanogpt_rules[] = {
    {.function = "GPT.estimate_mfu", .windows = WIN_PRESET},
};
static const mfu_convention_rule ours_rules[] = {
    {.function = "transformer_flops", .windows = WIN_PRESET},
};

#define RULES(r) .rules = (r), .num_rules = sizeof(r) / sizeof((r)[0])

/* choice order: formula, embedding, lm_head, router, mtp, causal, windows, tower */
static const mfu_convention conventions[] = {
    /* this package's default: transformer_flops() with no option given */
    {.name = "mfu_tracker", .framework = "mfu_tracker",
     .source = "mfu_tracker (csrc/core/model/transformer.h)",
     .covers = "every family of _C.transformer_families()",
     .choice = {1, EMB_EXCLUDED, 1, 1, 1, MFU_CAUSAL_FULL, WIN_SPAN, 1}, RULES(ours_rules)},
    /* matmul weights (router, active experts, MLA's lora projections), the
     * embedding row on top of the lm_head, no MTP, the qwen2_5_vl text
     * formula (no tower) */
    {.name = "verl", .framework = "verl", .source = "verl/utils/flops_counter.py @ b178a3c",
     .covers = "llama, mistral, qwen2, qwen3, seed_oss, qwen2_moe, qwen3_moe, deepseek_v3, "
               "gemma3_text, gpt_oss, apertus, qwen2_5_vl (text), qwen3_vl",
     .choice = {2, EMB_COUNTED, 1, 1, 0, MFU_CAUSAL_HALF, WIN_SQUARE, 0}, RULES(verl_rules)},
    /* the towers of qwen2_5_vl / qwen3_vl by its ViT estimates (a quirk) */
    {.name = "veomni", .framework = "VeOmni", .source = "veomni/utils/count_flops.py @ d977449",
     .covers = "llama, qwen2, qwen3, qwen3_moe, seed_oss, deepseek_v3, gpt_oss, qwen2_5_vl, "
               "qwen3_vl",
     .choice = {2, EMB_EXCLUDED, 1, 1, 0, MFU_CAUSAL_FULL, WIN_SQUARE, 1}, RULES(veomni_rules)},
    /* 3 * 2 * tokens * (MLP, routed + shared experts, qkv and out
     * projections, logits d * V * (1 + MTP)) -- no router, no embedding --
     * + core attention 3 * 2 * sum(s^2) * kv_channels * H / 2 * 2 (causal
     * half), no windows; MTP layers as decoder layers + eh_proj */
    {.name = "megatron", .framework = "Megatron-LM",
     .source = "megatron/training/training.py @ d98e8a6",
     .covers = "GPT-style dense and MoE decoders (GQA, MLA)",
     .choice = {2, EMB_EXCLUDED, 1, 0, 1, MFU_CAUSAL_HALF, WIN_SQUARE, 0},
     RULES(megatron_rules)},
    /* 6 * (parameters - embedding; tied: all parameters, the shared one
     * once; MoE: router + shared + routed experts * top_k / E) + 6 * L * H
     * * (d_qk + d_v) * seq_len (full, every full-attention layer, windows
     * ignored); the vision encoder left out ("TODO") */
    {.name = "torchtitan", .framework = "torchtitan",
     .source = "torchtitan/models/utils.py @ b5bcd76",
     .covers = "llama3, qwen3 (dense and MoE), deepseek_v3, gpt_oss; the rule applies to any "
               "decoder",
     .choice = {1, EMB_EXCLUDED, 1, 1, 0, MFU_CAUSAL_FULL, WIN_SQUARE, 0},
     RULES(torchtitan_rules)},
    /* N = get_num_params() (every parameter once, the position table wpe
     * not), flops_per_token = 6 * N + 12 * L * H * Q * T */
    {.name = "nanogpt", .framework = "nanoGPT", .source = "nanoGPT model.py @ 3adf61e",
     .covers = "GPT (nanoGPT); the rule applies to any dense decoder",
     .choice = {1, EMB_ONCE, 1, 1, 0, MFU_CAUSAL_FULL, WIN_SQUARE, 0}, RULES(nanogpt_rules)},
};

size_t mfu_convention_count(void)
{
    return sizeof conventions / sizeof conventions[0];
}

const mfu_convention *mfu_convention_at(size_t index)
{
    return index < mfu_convention_count() ? &conventions[index] : NULL;
}

const mfu_convention *mfu_convention_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < mfu_convention_count(); i++)
        if (strcmp(conventions[i].name, name) == 0)
            return &conventions[i];
    return NULL;
}

/* Whether the space-separated `list` holds `word`. */
static int lists(const char *list, const char *word)
{
    const size_t n = strlen(word);
    for (const char *p = list; *p != '\0';) {
        const size_t len = strcspn(p, " ");
        if (len == n && n > 0 && strncmp(p, word, n) == 0)
            return 1;
        p += len;
        p += strspn(p, " ");
    }
    return 0;
}

const mfu_convention_rule *mfu_convention_rule_for(const mfu_convention *convention,
                                                   const char *model_type)
{
    if (convention == NULL || convention->num_rules == 0)
        return NULL;
    for (size_t i = 0; model_type != NULL && i < convention->num_rules; i++)
        if (convention->rules[i].model_types != NULL &&
            lists(convention->rules[i].model_types, model_type))
            return &convention->rules[i];
    return &convention->rules[convention->num_rules - 1];
}

unsigned mfu_convention_rule_quirks(const mfu_convention_rule *rule)
{
    unsigned bits = 0u;
    for (int q = 0; rule != NULL && q < MFU_CONVENTION_QUIRKS; q++)
        if (rule->quirk_line[q] > 0)
            bits |= 1u << q;
    return bits;
}
