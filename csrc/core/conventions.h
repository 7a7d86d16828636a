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
 * The difference from ours is itemized by switching the choices from ours
 * to the convention's one at a time, in the order above: delta[i] is what
 * the i-th switch changed, and ours + sum(delta) = the convention's count.
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

typedef struct mfu_convention {
    const char *name;
    const char *source; /* file @ commit of the formula reproduced */
    const char *covers; /* the families its formula is written for */
    int choice[MFU_CONVENTION_CHOICES]; /* value indices (names below) */
} mfu_convention;

/* The presets, "mfu_tracker" (ours) first. */
size_t mfu_convention_count(void);
const mfu_convention *mfu_convention_at(size_t index);
const mfu_convention *mfu_convention_find(const char *name);

/* Choice and value names; NULL out of range. */
const char *mfu_convention_choice_name(int choice);
const char *mfu_convention_value_name(int choice, int value);

typedef struct mfu_convention_flops {
    double model_flops;      /* the convention's count of the batch */
    double forward_flops;    /* its forward part (model = 3x, the patch 2x) */
    double attention_flops;  /* its attention core forward (tower included) */
    double vision_flops;     /* its tower model FLOPs (0: excluded) */
    double ours_model_flops; /* row "mfu_tracker"'s count */
    double delta[MFU_CONVENTION_CHOICES]; /* each switch from ours */
} mfu_convention_flops;

/* The count of `batch` (and `vision`, as transformer.h) under `choice`, and
 * the itemized difference from ours. INVALID naming a bad field: a value
 * out of range ("convention.<choice>"), dims or batch as
 * mfu_transformer_flops_compute, or a model with linear-attention / SSM
 * layers ("num_linear_layers" / "num_ssm_layers": no convention covers
 * them). */
mfu_status mfu_convention_compute(const mfu_transformer_dims *dims, const mfu_batch *batch,
                                  const mfu_vision_input *vision,
                                  const int choice[MFU_CONVENTION_CHOICES],
                                  mfu_convention_flops *out, const char **bad_field);

#endif /* MFU_CONVENTIONS_H */
