/*
 * conventions.h -- other frameworks' MFU formulas, as presets of every choice
 * a transformer FLOP count makes, and the itemized difference from ours.
 *
 * A convention is a value for each of eight choices:
 *
 *   formula    "6n" (parameters, no attention term), "palm" (every parameter
 *              a token meets + the attention term), "matmul" (only matmul
 *              weights: no norms, biases)
 *   embedding  "excluded", "counted" (the token table as a matmul weight, on
 *              top of the lm_head even when tied), "once" (every parameter
 *              once: the token table when untied, nothing more when tied;
 *              position tables never)
 *   lm_head    "excluded" / "counted" (V*d per lm_head application)
 *   router     "excluded" / "counted" (the MoE router's d*E matmul)
 *   mtp        "excluded" / "counted" (the config's multi-token prediction
 *              layers: decoder layer, eh_proj, their lm_head)
 *   causal     "full" (s^2 per sequence) / "half" (s^2 / 2) on layers without
 *              a window
 *   windows    "span" (spans.h: the window under the causal choice),
 *              "square" (windows ignored: as an unwindowed layer),
 *              "half_span" (half of s * min(s, w); chunks: half of sum len^2),
 *              "kept" (the unmasked pairs, sum min(pos+1, w), even under
 *              "full")
 *   tower      "excluded" / "counted" (the vision tower, vision.h)
 *
 * With W the weights a token meets (transformer.h; the formula's view, the
 * lm_head and MTP layers as chosen), A the attention core forward over the
 * attention (and MTP) layers by the causal and window choices, and E the
 * embedding term, per batch of T tokens:
 *   model = 6*W*T + 6*E*T - 6*R*T + 3*A + tower model FLOPs
 * (R: the router weights when excluded). Row "mfu_tracker" is this
 * package's default (transformer_flops with no option given); each other row
 * cites the file and commit whose formula it reproduces (conventions.c).
 *
 * Quirks: what a framework's formula does for some model types outside the
 * eight choices (verl's qwen2_moe formula leaves out the shared expert,
 * Megatron-LM pads the vocabulary, ...). Each preset lists rules by model
 * type (conventions_presets.c): the framework's function for them, the
 * windows choice it makes, its quirks, or a refusal (the framework has no
 * formula for the type: it logs MFU 0). The quirks' arithmetic is in
 * conventions_quirks.c.
 *
 * The difference from ours is itemized by switching the choices from ours
 * to the convention's one at a time, in the order above, then turning on
 * its quirks one at a time in MFU_QUIRK_* order: delta[i] / quirk_delta[q]
 * is what each switch changed, and ours + sum(delta) + sum(quirk_delta) =
 * the convention's count.
 */
#ifndef MFU_CONVENTIONS_H
#define MFU_CONVENTIONS_H

#include <stddef.h>

#include "transformer.h"

enum {
    MFU_CHOICE_FORMULA = 0,
    MFU_CHOICE_EMBEDDING,
    MFU_CHOICE_LM_HEAD,
    MFU_CHOICE_ROUTER,
    MFU_CHOICE_MTP,
    MFU_CHOICE_CAUSAL,
    MFU_CHOICE_WINDOWS,
    MFU_CHOICE_TOWER,
    MFU_CONVENTION_CHOICES
};

/* Quirks, in the order they are turned on (their effect: conventions_quirks.c). */
enum {
    MFU_QUIRK_NO_SHARED_EXPERT = 0, /* the shared expert and its gate left out */
    MFU_QUIRK_NO_SHARED_GATE,       /* the shared expert's gate left out */
    MFU_QUIRK_ALL_MOE,              /* every layer counted as an MoE layer */
    MFU_QUIRK_HIDDEN_HEAD_DIM,      /* head_dim = hidden_size / num_heads (floor) */
    MFU_QUIRK_QK_NORM_WEIGHTS,      /* d + H_kv*Q per layer as matmul weights */
    MFU_QUIRK_AV_AT_QK_DIM,         /* MLA's attention x value at d_nope + d_rope */
    MFU_QUIRK_LORA_NORMS,           /* MLA: r_q + r_kv per attention layer (+1 per rank) */
    MFU_QUIRK_MTP_NORMS,            /* 3d per MTP layer */
    MFU_QUIRK_PADDED_VOCAB,         /* V padded up to a multiple of vocab_multiple */
    MFU_QUIRK_QUICK_GEGLU,          /* a gated MLP counted as 2 matrices, not 3 */
    MFU_QUIRK_VIT_ESTIMATE,         /* the tower by the framework's ViT estimate */
    MFU_CONVENTION_QUIRKS
};

/* How a preset counts the model types of one rule. Lines are in the
 * preset's source at its commit; 0 where none applies. */
typedef struct mfu_convention_rule {
    const char *model_types; /* space-separated; NULL: every type no other rule lists */
    const char *function;    /* the framework's function that counts them */
    int line;                /* its first line */
    int windows;             /* the windows choice for them; -1: the preset's */
    int windows_line;        /* where the function sets its attention pairs */
    int quirk_line[MFU_CONVENTION_QUIRKS]; /* > 0: the quirk is on, seen there */
    const char *refused;     /* non-NULL: no count; why (what the framework logs) */
} mfu_convention_rule;

typedef struct mfu_convention {
    const char *name;
    const char *framework; /* its name in a sentence ("Megatron-LM") */
    const char *source;    /* file @ commit of the formula reproduced */
    const char *covers;    /* the families its formula is written for */
    int choice[MFU_CONVENTION_CHOICES]; /* value indices (names below) */
    const mfu_convention_rule *rules;   /* the last one lists NULL types */
    size_t num_rules;
} mfu_convention;

/* The presets, "mfu_tracker" (ours) first. */
size_t mfu_convention_count(void);
const mfu_convention *mfu_convention_at(size_t index);
const mfu_convention *mfu_convention_find(const char *name);

/* The rule of `convention` for `model_type` (NULL: the catch-all rule),
 * and its quirks (1u << MFU_QUIRK_*). */
const mfu_convention_rule *mfu_convention_rule_for(const mfu_convention *convention,
                                                   const char *model_type);
unsigned mfu_convention_rule_quirks(const mfu_convention_rule *rule);

/* Choice, value and quirk names; NULL out of range. A quirk's text is a
 * predicate to follow the framework's name ("leaves out the shared
 * expert"). */
const char *mfu_convention_choice_name(int choice);
const char *mfu_convention_value_name(int choice, int value);
const char *mfu_convention_quirk_name(int quirk);
const char *mfu_convention_quirk_text(int quirk);

/* The quirks turned on for one count. */
typedef struct mfu_convention_quirks {
    unsigned bits;          /* 1u << MFU_QUIRK_* */
    int64_t vocab_multiple; /* MFU_QUIRK_PADDED_VOCAB's multiple (>= 1) */
} mfu_convention_quirks;

typedef struct mfu_convention_flops {
    double model_flops;      /* the convention's count of the batch */
    double forward_flops;    /* its forward part (model = 3x, the patch 2x) */
    double attention_flops;  /* its attention core forward (tower included) */
    double vision_flops;     /* its tower model FLOPs (0: excluded) */
    double ours_model_flops; /* row "mfu_tracker"'s count */
    double delta[MFU_CONVENTION_CHOICES];       /* each switch from ours */
    double quirk_delta[MFU_CONVENTION_QUIRKS];  /* each quirk turned on */
} mfu_convention_flops;

/* The count of `batch` (and `vision`, as transformer.h) under `choice` and
 * `quirks` (NULL: none), and the itemized difference from ours. INVALID
 * naming a bad field: a value out of range ("convention.<choice>"), a quirk
 * bit out of range or a vocab_multiple < 1 ("quirks"), dims or batch as
 * mfu_transformer_flops_compute, or a model with linear-attention / SSM
 * layers ("num_linear_layers" / "num_ssm_layers": no convention covers
 * them). */
mfu_status mfu_convention_compute(const mfu_transformer_dims *dims, const mfu_batch *batch,
                                  const mfu_vision_input *vision,
                                  const int choice[MFU_CONVENTION_CHOICES],
                                  const mfu_convention_quirks *quirks,
                                  mfu_convention_flops *out, const char **bad_field);

/* conventions_quirks.c: the dims a count under `quirks` sees, the matmul
 * weights per token they add (`mtp`: MTP layers counted), and the dims of
 * the attention core. */
void mfu_convention_quirk_dims(const mfu_transformer_dims *dims,
                               const mfu_convention_quirks *quirks,
                               mfu_transformer_dims *out);
double mfu_convention_quirk_weights(const mfu_transformer_dims *dims,
                                    const mfu_convention_quirks *quirks, int mtp);
void mfu_convention_quirk_attention_dims(const mfu_transformer_dims *dims,
                                         const mfu_convention_quirks *quirks,
                                         mfu_transformer_dims *out);

/* conventions_towers.c: MFU_QUIRK_VIT_ESTIMATE's tower, verl's and VeOmni's
 * ViT estimate of a Qwen2.5-VL / Qwen3-VL tower over the batch's grids
 * (full training; any other tower: its count, as vision.h); the grids and
 * dims checked as mfu_vision_flops_compute does. */
mfu_status mfu_convention_vit_estimate(const mfu_vision_input *vision, mfu_vision_flops *out,
                                       const char **bad_field);

#endif /* MFU_CONVENTIONS_H */
